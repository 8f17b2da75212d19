"""The ``sentencepiece`` kind gives Hugging Face's ``T5Tokenizer``'s ids for the same ``spiece.model``, sentinels
included (transformers 5.x: ``T5Tokenizer`` is backed by ``tokenizers``; it converts a ``spiece.model`` found by
``from_pretrained`` through ``sentencepiece`` and ``protobuf``; ``T5Tokenizer(vocab_file=...)`` ignores the file)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sentencepiece", reason="the sentencepiece kind needs the 'hf' extra")
pytest.importorskip("transformers", reason="the comparison needs the 'hf' extra")
pytest.importorskip("google.protobuf", reason="transformers reads a spiece.model through protobuf ('hf' extra)")

from transformers import T5Tokenizer  # noqa: E402

TEXTS = [
    "The big cat sat on the red mat.",
    "  leading, trailing   and  repeated   spaces  ",
    "Unseen letters: Zürich, ½, ﬁ (NFKC), 東京",
    "The <extra_id_0> sat on <extra_id_1> mat.",
    "glued<extra_id_5>to words<extra_id_99>",
]


@pytest.fixture(scope="module")
def t5_tokenizer(spm_tokenizer, tmp_path_factory) -> T5Tokenizer:
    folder: Path = tmp_path_factory.mktemp("t5")
    spm_tokenizer.base.save_model(folder / "spiece.model")
    return T5Tokenizer.from_pretrained(folder, extra_ids=100)


def test_same_vocabulary_and_special_ids(spm_tokenizer, t5_tokenizer) -> None:
    assert len(t5_tokenizer) == spm_tokenizer.vocab_size == 200
    assert (t5_tokenizer.pad_token_id, t5_tokenizer.eos_token_id, t5_tokenizer.unk_token_id) == (0, 1, 2)
    assert [t5_tokenizer.convert_tokens_to_ids(f"<extra_id_{i}>") for i in range(100)] == spm_tokenizer.sentinel_ids


@pytest.mark.parametrize("text", TEXTS)
def test_same_ids_for_the_same_text(spm_tokenizer, t5_tokenizer, text: str) -> None:
    # T5Tokenizer reads <extra_id_N> in the text as the sentinel and appends </s>: encode_with_sentinels does both
    ours = spm_tokenizer.encode_with_sentinels(text, add_eos=True)
    assert ours == t5_tokenizer(text).input_ids
    if "<extra_id_" not in text:
        assert ours == spm_tokenizer.encode(text, add_eos=True)


def test_exports_as_t5s_tokenizer_framed_as_the_run(spm_tokenizer, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from synthformer.hf.tokenizer import to_hf_tokenizer
    from synthformer.models import LMConfig, Seq2SeqConfig

    small = dict(vocab_size=spm_tokenizer.vocab_size, d_model=8, n_heads=2, pad_id=0, bos_id=0, eos_id=1)
    to_hf_tokenizer(spm_tokenizer, Seq2SeqConfig(**small)).save_pretrained(tmp_path)
    hf = AutoTokenizer.from_pretrained(tmp_path)
    assert (len(hf), hf.pad_token_id, hf.eos_token_id, hf.unk_token_id) == (200, 0, 1, 2)
    for text in TEXTS:  # an encoder-decoder's source: the text and </s>, as T5Tokenizer frames it
        assert hf(text).input_ids == spm_tokenizer.encode_with_sentinels(text, add_eos=True)
    lm = to_hf_tokenizer(spm_tokenizer, LMConfig(**small))
    assert lm(TEXTS[0]).input_ids == spm_tokenizer.encode(TEXTS[0])  # a decoder-only model's text: no </s>
