"""T5 span corruption: lengths, masks, the corrupt/restore round trip, sentinel tokens, measured statistics."""

from __future__ import annotations

import numpy as np
import pytest

from synthformer.data import SentinelTokenizer, build_tokenizer, load_tokenizer
from synthformer.data.span_corruption import (
    ArrayStream,
    SpanCorruptionDataset,
    corrupt,
    corrupt_arrays,
    random_spans_noise_mask,
    restore,
    t5_lengths,
)

TEXT = ("Thank you for inviting me to your party last week. The weather was fine, the music loud, and the cake "
        "— a lemon one — was gone before nine. Ünïcödé survives too: naïve café, 東京. " * 6)


def _inputs_for(tokens_length: int, density: float = 0.15, mean: float = 3.0) -> int:
    noise = round(tokens_length * density)
    return tokens_length - noise + round(noise / mean) + 1


@pytest.mark.parametrize("inputs_length", [512, 256, 128, 64, 20])
def test_t5_lengths_fill_the_inputs_exactly_as_t5_computes(inputs_length: int) -> None:
    tokens_length, targets_length = t5_lengths(inputs_length)
    assert _inputs_for(tokens_length) <= inputs_length < _inputs_for(tokens_length + 1)
    noise = round(tokens_length * 0.15)
    assert targets_length == noise + round(noise / 3) + 1


def test_t5_lengths_known_value() -> None:
    assert t5_lengths(512) == (568, 114)  # T5's random_spans_helper at the defaults
    assert t5_lengths(1024, 0.5, 3.0)[1] <= 1024  # the 50% adjustment keeps targets <= inputs


def test_mask_counts_and_shape() -> None:
    rng = np.random.default_rng(0)
    for length in (568, 141, 37, 2):
        mask = random_spans_noise_mask(length, 0.15, 3.0, rng)
        assert mask.shape == (length,) and mask.dtype == bool
        noise = min(max(round(length * 0.15), 1), length - 1)
        assert int(mask.sum()) == noise
        assert not mask[0]  # T5 interleaves non-noise first
        starts = int((mask[1:] & ~mask[:-1]).sum())
        assert starts == min(max(round(noise / 3), 1), noise)


def test_masks_are_seeded_per_example() -> None:
    a = random_spans_noise_mask(141, 0.15, 3.0, np.random.default_rng([0, 1, 5]))
    b = random_spans_noise_mask(141, 0.15, 3.0, np.random.default_rng([0, 1, 5]))
    c = random_spans_noise_mask(141, 0.15, 3.0, np.random.default_rng([0, 1, 6]))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_span_statistics_match_the_nominal_values_over_many_examples() -> None:
    stream = np.arange(5000 * 141) % 50 + 10
    ds = SpanCorruptionDataset(stream, 128, list(range(1000, 1100)), bos_id=2, eos_id=3, pad_id=0)
    assert len(ds) == 5000
    assert ds.stats.noise_density == pytest.approx(0.15, abs=0.002)
    assert ds.stats.mean_span_length == pytest.approx(3.0, abs=0.05)
    # the span lengths vary (uniform random segmentation), they are not all 3
    lengths = []
    for i in range(200):
        labels = ds[i]["labels"].tolist()
        run = 0
        for t in labels[:-1]:
            if t >= 1000:
                if run:
                    lengths.append(run)
                run = 0
            else:
                run += 1
    assert len(set(lengths)) > 3 and np.mean(lengths) == pytest.approx(3.0, abs=0.2)


def test_corrupt_layout_and_closing_sentinel() -> None:
    tokens = list(range(10, 20))
    mask = [False, False, True, True, False, False, False, True, False, False]
    inputs, targets = corrupt(tokens, mask, [100, 101, 102])
    assert inputs == [10, 11, 100, 14, 15, 16, 101, 18, 19]
    assert targets == [100, 12, 13, 101, 17, 102]  # each sentinel then its span; a closing sentinel
    assert restore(inputs, targets, [100, 101, 102]) == tokens
    with pytest.raises(ValueError, match="more sentinels"):
        corrupt(tokens, mask, [100, 101])


@pytest.mark.parametrize("kind", ["char", "byte", "bpe"])
def test_example_round_trip_restores_the_text_exactly(kind: str) -> None:
    tok = SentinelTokenizer(build_tokenizer(kind, [TEXT], 400 if kind == "bpe" else None), 100)
    ids = tok.encode(TEXT)
    ds = SpanCorruptionDataset(ids, 32, tok.sentinel_ids, bos_id=tok.bos_id, eos_id=tok.eos_id, pad_id=tok.pad_id)
    pieces = []
    for i in range(len(ds)):
        item = ds[i]
        src = item["src_ids"].tolist()
        labels = item["labels"].tolist()
        assert src[-1] == tok.eos_id and labels[-1] == tok.eos_id and item["tgt_ids"][0] == tok.bos_id
        assert len(src) <= 32 and tok.is_sentinel(labels[-2])
        assert any(tok.is_sentinel(t) for t in src)
        pieces += restore(src[:-1], labels[:-1], tok.sentinel_ids)
    assert pieces == ids
    assert tok.decode(pieces) == TEXT


def test_the_array_form_of_corrupt_equals_the_reference() -> None:
    rng = np.random.default_rng(3)
    sentinels = list(range(1000, 1008))
    for length in (2, 3, 10, 40):
        for _ in range(50):  # masks of every shape: noise first, last, all but one, runs of any length
            tokens = rng.integers(5, 900, length)
            mask = rng.random(length) < rng.uniform(0.05, 0.95)
            if mask.all() or not mask.any():
                continue
            try:
                expected = corrupt(tokens.tolist(), mask, sentinels)
            except ValueError:
                with pytest.raises(ValueError, match="more sentinels"):
                    corrupt_arrays(tokens, mask, np.array(sentinels))
                continue
            got = corrupt_arrays(tokens, mask, np.array(sentinels))
            assert (got[0].tolist(), got[1].tolist()) == expected


def _items(ds: SpanCorruptionDataset) -> list[tuple[list[int], list[int]]]:
    return [(ds[i]["src_ids"].tolist(), ds[i]["labels"].tolist()) for i in range(len(ds))]


def test_each_epoch_draws_fresh_noise_over_the_same_pieces() -> None:
    ids = np.random.default_rng(1).integers(10, 900, 1000).tolist()
    sentinels = list(range(1000, 1100))
    ds = SpanCorruptionDataset(ids, 32, sentinels, bos_id=2, eos_id=3, pad_id=0, seed=4, salt=9)
    epochs = []
    for epoch in (0, 1, 2, 1):
        ds.set_epoch(epoch)
        epochs.append(_items(ds))
    assert epochs[1] == epochs[3]  # a function of (seed, salt, example, epoch): repeatable, e.g. after a resume
    for a, b in ((0, 1), (1, 2), (0, 2)):  # new spans nearly everywhere ...
        assert sum(x != y for x, y in zip(epochs[a], epochs[b], strict=True)) > 0.9 * len(ds)
    for items in epochs:  # ... over the same raw pieces, with the same lengths and span statistics
        restored = [t for src, labels in items for t in restore(src[:-1], labels[:-1], sentinels)]
        assert restored == ids
        assert [max(len(src), len(labels)) for src, labels in items] == ds.lengths
    assert ds.stats.noise_density == pytest.approx(0.15, abs=0.01)


def test_a_streamed_token_source_gives_the_same_examples_without_per_example_state() -> None:
    ids = np.random.default_rng(2).integers(10, 900, 333)
    kwargs = {"bos_id": 2, "eos_id": 3, "pad_id": 0, "seed": 1, "salt": 5}
    memory = SpanCorruptionDataset(ids.tolist(), 32, list(range(1000, 1100)), **kwargs)
    streamed = SpanCorruptionDataset(ArrayStream(ids.astype(np.uint16)), 32, list(range(1000, 1100)), **kwargs)
    assert streamed.lazy_order and not memory.lazy_order and not hasattr(streamed, "lengths")
    for epoch in (0, 3):
        memory.set_epoch(epoch)
        streamed.set_epoch(epoch)
        assert _items(streamed) == _items(memory)
    assert vars(streamed.stats) == vars(memory.stats)


def test_sentinels_never_collide_with_text() -> None:
    base = build_tokenizer("char", [TEXT + "<extra_id_0>"])
    tok = SentinelTokenizer(base, 10)
    assert tok.vocab_size == base.vocab_size + 10
    assert tok.sentinel_ids == list(range(base.vocab_size, base.vocab_size + 10))
    literal = tok.encode("<extra_id_0>")
    assert literal == base.encode("<extra_id_0>") and not any(tok.is_sentinel(t) for t in literal)
    ids = tok.encode_with_sentinels("Thank you <extra_id_0> me <extra_id_9>.", add_eos=True)
    assert ids.count(tok.sentinel_id(0)) == 1 and tok.sentinel_id(9) in ids and ids[-1] == tok.eos_id
    assert tok.decode(ids) == "Thank you <extra_id_0> me <extra_id_9>."
    assert tok.token_to_id("<extra_id_3>") == tok.sentinel_id(3)
    assert tok.id_to_token(tok.sentinel_id(3)) == "<extra_id_3>"
    with pytest.raises(ValueError, match="sentinels 0..9"):
        tok.encode_with_sentinels("x <extra_id_10>")
    with pytest.raises(IndexError):
        tok.sentinel_id(10)


@pytest.mark.parametrize("kind", ["char", "byte", "word", "bpe"])
def test_sentinel_tokenizer_saves_and_loads(kind: str, tmp_path) -> None:
    tok = SentinelTokenizer(build_tokenizer(kind, [TEXT], 300 if kind == "bpe" else None), 7)
    path = tok.save(tmp_path / "tok.json")
    back = load_tokenizer(path)
    assert back == tok and isinstance(back, SentinelTokenizer) and back.vocab_size == tok.vocab_size
    assert back.encode_with_sentinels("cake <extra_id_6>") == tok.encode_with_sentinels("cake <extra_id_6>")


def test_sentinel_tokenizer_rejects_bad_arguments() -> None:
    base = build_tokenizer("byte", [])
    with pytest.raises(ValueError, match="num_sentinels"):
        SentinelTokenizer(base, 0)
    with pytest.raises(ValueError, match="already has sentinels"):
        SentinelTokenizer(SentinelTokenizer(base, 3), 3)


def test_word_tokenizer_sentinels_decode_with_spaces() -> None:
    tok = SentinelTokenizer(build_tokenizer("word", ["thank you for inviting me"]), 3)
    ids = tok.encode_with_sentinels("thank you <extra_id_0> me")
    assert tok.decode(ids) == "thank you <extra_id_0> me"
