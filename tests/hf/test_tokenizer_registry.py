"""A tokenizer kind is one class: defining it (its ids, its file state and its ``tokenizers`` backend) is enough for
its files to load through ``load_tokenizer`` and for it to export to Hugging Face, with no edit elsewhere.

The kinds here are defined inside a module-scoped fixture and removed from the registry when the module's tests end,
so the rest of the suite (which may list the registered kinds) never sees them, even when these tests are
deselected.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("transformers")

from transformers import AutoTokenizer  # noqa: E402

from synthformer.data import SentinelTokenizer, load_tokenizer  # noqa: E402
from synthformer.data.tokenizer_base import _KINDS, SPECIAL_TOKENS, UNK, Tokenizer  # noqa: E402
from synthformer.hf.tokenizer import to_hf_tokenizer, tokenizers_backend  # noqa: E402

TEXTS = ["0123456789", "31 41 59\n26", "x9y8"]  # unknown characters (letters, spaces) too


def _define_kinds() -> tuple[type[Tokenizer], type[Tokenizer]]:
    """Two tokenizer kinds of single characters from a fixed alphabet: one that exports, one that does not."""

    class _Alphabet(Tokenizer):
        # no ``kind`` of its own: an abstract intermediate, not registered
        def __init__(self, chars: str = "0123456789") -> None:
            self.chars = chars

        @property
        def vocab_size(self) -> int:
            return len(SPECIAL_TOKENS) + len(self.chars)

        def _encode(self, text: str) -> list[int]:
            return [self.token_to_id(ch) or self.unk_id for ch in text]

        def _decode(self, ids: list[int]) -> str:
            return "".join(self.id_to_token(i) for i in ids)

        def id_to_token(self, token_id: int) -> str:
            self._check_id(token_id)
            return (list(SPECIAL_TOKENS) + list(self.chars))[token_id]

        def token_to_id(self, token: str) -> int | None:
            vocab = list(SPECIAL_TOKENS) + list(self.chars)
            return vocab.index(token) if token in vocab else None

        def _state(self) -> dict[str, Any]:
            return {"chars": self.chars}

        @classmethod
        def _from_state(cls, state: dict[str, Any]) -> Tokenizer:
            return cls(state["chars"])

    class DigitsTokenizer(_Alphabet):
        kind = "test_registry_digits"

        def tokenizers_backend(self) -> Any:
            from tokenizers import Regex, models, pre_tokenizers
            from tokenizers import Tokenizer as Backend

            vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *self.chars])}
            backend = Backend(models.WordLevel(vocab=vocab, unk_token=UNK))
            backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
            backend.add_special_tokens(list(SPECIAL_TOKENS))
            return backend

    class SilentTokenizer(_Alphabet):
        kind = "test_registry_silent"  # no tokenizers_backend: the default refuses

    return DigitsTokenizer, SilentTokenizer


@pytest.fixture(scope="module")
def kinds():
    digits, silent = _define_kinds()
    try:
        yield digits, silent
    finally:
        for cls in (digits, silent):
            _KINDS.pop(cls.kind, None)


def test_defining_the_class_registers_the_kind(kinds):
    digits, silent = kinds
    assert _KINDS[digits.kind] is digits
    assert _KINDS[silent.kind] is silent
    assert "_Alphabet" not in {cls.__name__ for cls in _KINDS.values()}


def test_a_new_kind_loads_from_its_file_and_exports_with_the_same_ids(kinds, tmp_path):
    digits, _ = kinds
    path = digits("0123456789").save(tmp_path / "tok.json")
    native = load_tokenizer(path)
    assert type(native) is digits and native.chars == "0123456789"
    backend = tokenizers_backend(native)
    assert backend.get_vocab_size(with_added_tokens=True) == native.vocab_size
    assert any(native.unk_id in native.encode(text) for text in TEXTS)  # unknown characters are covered too
    for text in TEXTS:
        assert backend.encode(text, add_special_tokens=False).ids == native.encode(text)
    to_hf_tokenizer(native).save_pretrained(tmp_path / "hf")
    hf = AutoTokenizer.from_pretrained(tmp_path / "hf")
    assert [hf(text).input_ids for text in TEXTS] == [native.encode(text) for text in TEXTS]


def test_a_new_kind_exports_with_sentinels(kinds, tmp_path):
    digits, _ = kinds
    native = load_tokenizer(SentinelTokenizer(digits(), num_sentinels=3).save(tmp_path / "tok.json"))
    assert isinstance(native, SentinelTokenizer) and type(native.base) is digits
    hf = to_hf_tokenizer(native)
    assert len(hf) == native.vocab_size
    for i in range(3):
        assert hf.convert_tokens_to_ids(f"<extra_id_{i}>") == native.sentinel_id(i)
    text = "12<extra_id_0>3"
    assert hf(text).input_ids == [*native.encode("12"), native.sentinel_id(0), *native.encode("3")]
    assert hf(text).input_ids == native.encode_with_sentinels(text)


def test_a_kind_without_the_method_gives_a_clear_error(kinds, tmp_path):
    _, silent = kinds
    native = load_tokenizer(silent().save(tmp_path / "tok.json"))
    assert type(native) is silent
    message = r"'test_registry_silent' cannot be exported to Hugging Face.*SilentTokenizer.*tokenizers_backend\(\)"
    with pytest.raises(ValueError, match=message):
        tokenizers_backend(native)
    with pytest.raises(ValueError, match=message):
        to_hf_tokenizer(native)
    with pytest.raises(ValueError, match=message):  # with sentinels: the base kind is the one that cannot export
        to_hf_tokenizer(SentinelTokenizer(native, num_sentinels=2))
