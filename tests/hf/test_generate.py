"""generate() through GenerationMixin on the native cache: sampling, top-k / top-p, stopping criteria, beam search
with a length penalty, several returned sequences; what the cache holds and what it refuses."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from transformers import StoppingCriteria, StoppingCriteriaList  # noqa: E402

from synthformer.hf import SynthesizerCache, SynthesizerForCausalLM, SynthesizerForConditionalGeneration  # noqa: E402
from synthformer.hf.cache import CACHE_NAME  # noqa: E402

from .helpers import source_batch, tiny_lm, tiny_seq2seq  # noqa: E402
from .test_parity import prompts  # noqa: E402


def lm(kind: str = "R", **overrides) -> SynthesizerForCausalLM:
    return SynthesizerForCausalLM.from_native(tiny_lm(kind, **overrides)).eval()


def generate_twice(model, inputs: torch.Tensor, **options) -> tuple[torch.Tensor, torch.Tensor]:
    """The same seeded call with the native cache and with the prefix recomputed at every step."""
    torch.manual_seed(0)
    cached = model.generate(inputs, **options)
    torch.manual_seed(0)
    recomputed = model.generate(inputs, use_cache=False, **options)
    return cached, recomputed


@pytest.mark.parametrize("kind", ["V", "R", "D+V"])
def test_sampling_is_the_same_with_and_without_the_cache(kind):
    model, ids = lm(kind), prompts()
    cached, recomputed = generate_twice(model, ids, do_sample=True, max_new_tokens=12, temperature=1.5,
                                        eos_token_id=None)
    assert torch.equal(cached, recomputed)
    torch.manual_seed(1)
    assert not torch.equal(model.generate(ids, do_sample=True, max_new_tokens=12, temperature=1.5,
                                          eos_token_id=None), cached)  # it does sample


def test_top_k_and_top_p_keep_only_the_allowed_tokens():
    model, ids = lm(), prompts()
    greedy = model.generate(ids, do_sample=False, max_new_tokens=8, eos_token_id=None)
    for options in ({"top_k": 1}, {"top_p": 1e-6, "top_k": 0}):
        torch.manual_seed(0)
        assert torch.equal(model.generate(ids, do_sample=True, max_new_tokens=8, eos_token_id=None, **options),
                           greedy)
    torch.manual_seed(0)
    out = model.generate(ids, do_sample=True, top_k=3, temperature=3.0, max_new_tokens=12, eos_token_id=None)
    with torch.no_grad():
        logits = model(input_ids=out).logits[:, ids.shape[1] - 1 : -1]  # (B, 12, V) scores of each new token
    top3 = logits.topk(3, dim=-1).indices  # (B, 12, 3)
    assert bool((top3 == out[:, ids.shape[1]:, None]).any(-1).all())


class StopAfter(StoppingCriteria):
    """Stops every sequence once it is ``length`` tokens long."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __call__(self, input_ids, scores, **kwargs):
        return torch.full((input_ids.shape[0],), input_ids.shape[1] >= self.length, dtype=torch.bool)


def test_stopping_criteria_and_eos_end_generation():
    model, ids = lm(), prompts()
    out = model.generate(ids, do_sample=False, max_new_tokens=20, eos_token_id=None,
                         stopping_criteria=StoppingCriteriaList([StopAfter(ids.shape[1] + 5)]))
    assert out.shape == (3, ids.shape[1] + 5)
    # a chosen stop token: each row ends at its first occurrence, then padding
    free = model.generate(ids, do_sample=False, max_new_tokens=10, eos_token_id=None)
    stop = int(free[0, ids.shape[1] + 2])
    out = model.generate(ids, do_sample=False, max_new_tokens=10, eos_token_id=stop, pad_token_id=0)
    row = out[0, ids.shape[1]:].tolist()
    assert row[: row.index(stop) + 1] == free[0, ids.shape[1]: ids.shape[1] + row.index(stop) + 1].tolist()
    assert set(row[row.index(stop) + 1 :]) <= {0}


def test_stop_strings_with_the_exported_tokenizer():
    from synthformer.data.tokenizer_kinds import CharTokenizer
    from synthformer.hf.tokenizer import to_hf_tokenizer

    tokenizer = to_hf_tokenizer(CharTokenizer("abcdefghijklmnopqrst"))  # 24 ids: the tiny models' vocabulary
    model = lm("R")
    ids = tokenizer(["kqt"], return_tensors="pt").input_ids
    free = tokenizer.decode(model.generate(ids, do_sample=False, max_new_tokens=12, eos_token_id=None)[0, 3:])
    assert free == "ppppppbbbbbb"
    out = model.generate(ids, do_sample=False, max_new_tokens=12, eos_token_id=None, stop_strings=["pb"],
                         tokenizer=tokenizer)
    assert tokenizer.decode(out[0, 3:]) == "ppppppb"


@pytest.mark.parametrize("kind", ["V", "R"])
def test_beam_search_with_length_penalty_and_several_sequences(kind):
    model = SynthesizerForConditionalGeneration.from_native(tiny_seq2seq(kind)).eval()
    src = source_batch()
    cached, recomputed = generate_twice(model, src, num_beams=4, length_penalty=0.6, num_return_sequences=2,
                                        max_new_tokens=10, do_sample=False)
    assert cached.shape[0] == 6 and torch.equal(cached, recomputed)
    lm_model = lm(kind)
    cached, recomputed = generate_twice(lm_model, prompts(), num_beams=3, length_penalty=1.5, max_new_tokens=8,
                                        do_sample=False)
    assert torch.equal(cached, recomputed)


def test_beam_sampling_and_group_options_run_on_the_cache():
    model, ids = lm(), prompts()
    cached, recomputed = generate_twice(model, ids, num_beams=2, do_sample=True, max_new_tokens=6)
    assert torch.equal(cached, recomputed)


def test_the_cache_of_random_holds_half_the_bytes_of_vanilla():
    sizes = {}
    for kind in ("V", "R", "D", "FR"):
        out = lm(kind).generate(prompts(), do_sample=False, max_new_tokens=4, return_dict_in_generate=True)
        cache = out[CACHE_NAME]
        assert isinstance(cache, SynthesizerCache) and cache.get_seq_length() == 4 + 4 - 1
        sizes[kind] = cache.bytes_per_token()
    assert sizes["R"] == sizes["D"] == sizes["FR"] == sizes["V"] / 2  # values only, no keys


def test_what_the_cache_refuses():
    model = lm()
    cache = model.new_cache()
    assert (cache.get_seq_length(), cache.nbytes(), cache.batch_size) == (0, 0, -1)
    ids = prompts()
    model(input_ids=ids, past_key_values=cache)
    with pytest.raises(NotImplementedError, match="cannot crop 2 tokens"):
        cache.crop(2)
    with pytest.raises(ValueError, match="already holds a native cache"):
        cache.start(model.model.init_cache(3))
    with pytest.raises(TypeError, match="must be a SynthesizerCache"):
        model(input_ids=ids, past_key_values=object())
    with pytest.raises(ValueError, match="would read 27 positions .* max_len is 24"):
        model.generate(ids, max_new_tokens=24)
    assert model.generate(ids, max_new_tokens=21).shape == (3, 25)  # 4 + 21 - 1 = 24 positions: the most
    cache.batch_repeat_interleave(2)
    assert cache.batch_size == 6
    cache.reset()
    assert not cache.started


@pytest.mark.parametrize("model_kind", ["lm", "seq2seq"])
def test_the_cache_goes_in_as_cache_or_past_key_values_and_comes_out_under_transformers_name(model_kind):
    # transformers 5.24 renamed past_key_values to cache in generate() and in the model outputs; a forward that
    # ignored the new name started an empty cache at every step (cached sampling then differed from recomputed)
    if model_kind == "lm":
        model, inputs = lm(), {"input_ids": prompts()}
        positions = prompts().shape[1]  # the whole prompt goes through the decoder
    else:
        model = SynthesizerForConditionalGeneration.from_native(tiny_seq2seq("R")).eval()
        source = source_batch()
        inputs = {"input_ids": source, "decoder_input_ids": torch.full((source.shape[0], 1), 2)}
        positions = 1  # one decoder position; the source is encoder memory, not cached positions
    logits = {}
    for name in ("cache", "past_key_values"):
        cache = model.new_cache()
        with torch.no_grad():
            out = model(**inputs, **{name: cache})
        assert out[CACHE_NAME] is cache
        assert cache.get_seq_length() == positions
        logits[name] = out.logits
    assert torch.equal(logits["cache"], logits["past_key_values"])
    with pytest.raises(ValueError, match="pass the cache once"):
        model(**inputs, cache=model.new_cache(), past_key_values=model.new_cache())
