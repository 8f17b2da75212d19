"""Every synthformer tokenizer kind exports as a PreTrainedTokenizerFast giving the same ids."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from tokenizers import pre_tokenizers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from synthformer.data import SentinelTokenizer  # noqa: E402
from synthformer.data.tokenizer_kinds import ByteTokenizer, CharTokenizer, FixedVocabTokenizer  # noqa: E402
from synthformer.data.tokenizer_subword import BPETokenizer, WordTokenizer  # noqa: E402
from synthformer.hf.tokenizer import byte_symbols, to_hf_tokenizer  # noqa: E402
from synthformer.models import ClassifierConfig, LMConfig, Seq2SeqConfig  # noqa: E402

TEXTS = ["Hello, world!\nSecond line: café ünïcode — ok.", "the cat sat on the mat. the dog!"]
SAMPLES = [*TEXTS, "zzz unknown ☃ chars\ttab", "( [MAX 1 ( 2 3 ) ] )"]

TOKENIZERS = {
    "char": lambda: CharTokenizer.train(TEXTS),
    "byte": ByteTokenizer,
    "word": lambda: WordTokenizer.train(TEXTS),
    "bpe": lambda: BPETokenizer.train(TEXTS, vocab_size=300, min_frequency=1),
    "fixed": lambda: FixedVocabTokenizer(["[MAX", "]", "1", "2", "3"], ignore=("(", ")")),
}


@pytest.mark.parametrize("kind", list(TOKENIZERS))
def test_same_ids_and_text_as_the_native_tokenizer(kind, tmp_path):
    native = TOKENIZERS[kind]()
    to_hf_tokenizer(native).save_pretrained(tmp_path)
    hf = AutoTokenizer.from_pretrained(tmp_path)
    assert (hf.pad_token_id, hf.unk_token_id, hf.bos_token_id, hf.eos_token_id) == (0, 1, 2, 3)
    assert len(hf) == native.vocab_size
    for text in SAMPLES:
        ids = native.encode(text)
        assert hf(text).input_ids == ids
        if native.unk_id not in ids:  # <unk> is a special token for transformers: skipped when decoding
            assert hf.decode(ids, skip_special_tokens=True) == native.decode(ids)


def test_byte_symbols_are_the_byte_level_alphabet():
    symbols = byte_symbols()
    assert len(set(symbols)) == 256 and set(symbols) == set(pre_tokenizers.ByteLevel.alphabet())


def test_the_data_pipeline_framing_is_added():
    native = CharTokenizer.train(TEXTS)
    small = dict(vocab_size=native.vocab_size, d_model=8, n_heads=2)
    seq2seq = to_hf_tokenizer(native, Seq2SeqConfig(**small))
    assert seq2seq("the").input_ids == native.encode("the", add_eos=True)
    cls = to_hf_tokenizer(native, ClassifierConfig(**small, num_classes=2, pooling="cls"))
    assert cls("the").input_ids == native.encode("the", add_bos=True)
    lm = to_hf_tokenizer(native, LMConfig(**small), max_len=64)
    assert lm("the").input_ids == native.encode("the") and lm.model_max_length == 64


def test_sentinels_added_to_a_kind_export_at_their_ids(tmp_path):
    native = SentinelTokenizer(BPETokenizer.train(TEXTS, vocab_size=300, min_frequency=1), 3)
    to_hf_tokenizer(native).save_pretrained(tmp_path)
    hf = AutoTokenizer.from_pretrained(tmp_path)
    assert len(hf) == native.vocab_size
    text = "the cat <extra_id_1> the mat <extra_id_0>"
    ids = native.encode_with_sentinels(text)
    assert hf(text).input_ids == ids and native.sentinel_id(1) in ids
