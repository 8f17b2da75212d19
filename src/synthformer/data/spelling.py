"""Can a tokenizer spell the strings a task must produce? The round-trip check run before any training.

A text-to-text model answers by generating text that is then compared with the task's labels
(``not_entailment``, ``3.8``, ``True``). If the tokenizer maps a character of a label to ``<unk>`` (a
SentencePiece vocabulary trained with ``character_coverage`` below 1 and no byte fallback drops rare characters:
IMDb has ``_`` about once in 80,000 characters), even a perfect model's answer decodes to something that is no
label and is scored wrong, silently. :func:`unspellable` finds such strings; the task layer turns the first one into
a one-line refusal before the run trains anything.

The test is the one scoring applies: ``decode(encode(s)).strip() == s`` (decoded answers are stripped before they
are compared with the labels).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .tokenizer_base import Tokenizer

__all__ = ["Misspelling", "first_misspelling", "spells", "unspellable"]


@dataclass(frozen=True)
class Misspelling:
    """A string the tokenizer cannot round-trip: ``what`` names where it comes from (e.g. ``"rte label"``),
    ``decoded`` is what comes back."""

    what: str
    text: str
    decoded: str

    def message(self, tokenizer: Tokenizer) -> str:
        """One line naming the string, what it becomes, and the fix."""
        base = getattr(tokenizer, "base", tokenizer)  # a sentinel tokenizer wraps the kind that spells
        kind = base.kind
        fix = (_sentencepiece_fix(tokenizer) if kind == "sentencepiece" else
               "use a tokenizer that spells every character (tokenizer: bpe, the byte-level default, or byte)")
        harm = ("a correct answer would be scored wrong" if self.what.endswith("target") else
                "the model would not read it as written")
        return (f"the {kind} tokenizer cannot spell the {self.what} {self.text!r}: it decodes as "
                f"{self.decoded!r}, so {harm}; {fix}; a pretrained run's tokenizer (init_from) is fixed: pretrain "
                f"again with such a tokenizer")


def _sentencepiece_fix(tokenizer: Tokenizer) -> str:
    """The way out for a SentencePiece vocabulary that cannot spell a string. Byte fallback (every character
    spelled) is the default only for a trained model of :data:`~.tokenizer_spm.BYTE_FALLBACK_MIN_PIECES` pieces or
    more: the message says so, with the ``task.vocab_size`` that reaches it (the sentinels come on top)."""
    from .tokenizer_spm import BYTE_FALLBACK_MIN_PIECES

    base = getattr(tokenizer, "base", tokenizer)
    sentinels = tokenizer.vocab_size - base.vocab_size
    if getattr(base, "byte_fallback", False):  # every character is spelled: the text itself changes (NFKC)
        return ("it normalizes text as SentencePiece does (NFKC, runs of spaces collapsed), so no vocabulary of this "
                "kind writes it as given: use a tokenizer that keeps text as it is (tokenizer: bpe or byte)")
    t5 = "or use T5's own spiece.model (task.tokenizer_options.model_file)"
    if base.vocab_size >= BYTE_FALLBACK_MIN_PIECES:  # big enough for the default: turned off, or read from a file
        return (f"this vocabulary of {base.vocab_size:,} pieces has no byte fallback (task.tokenizer_options."
                "byte_fallback=false, or a model file without it): train it with task.tokenizer_options.byte_fallback"
                f"=true (the default from {BYTE_FALLBACK_MIN_PIECES:,} pieces), {t5}")
    least = BYTE_FALLBACK_MIN_PIECES + sentinels
    counted = f", its {sentinels} sentinels included" if sentinels else ""
    return (f"this vocabulary has no byte fallback, which a trained one gets by default only from "
            f"{BYTE_FALLBACK_MIN_PIECES:,} pieces (task.vocab_size {least:,} or more{counted}; this one has "
            f"{base.vocab_size:,} pieces): train it with task.vocab_size={least} or more, or with "
            f"task.tokenizer_options.byte_fallback=true (which needs room for its 256 byte pieces), {t5}")


def spells(tokenizer: Tokenizer, text: str) -> bool:
    """Whether ``text`` survives ``encode`` then ``decode`` (stripped) exactly."""
    return tokenizer.decode(tokenizer.encode(text)).strip() == text


def unspellable(tokenizer: Tokenizer, strings: Mapping[str, Iterable[str]]) -> list[Misspelling]:
    """Every string of ``strings`` (``{what: strings}``) that ``tokenizer`` cannot round-trip, in order; each
    distinct string is tried once."""
    found: list[Misspelling] = []
    seen: set[str] = set()
    for what, texts in strings.items():
        for text in texts:
            if text in seen:
                continue
            seen.add(text)
            decoded = tokenizer.decode(tokenizer.encode(text)).strip()
            if decoded != text:
                found.append(Misspelling(what, text, decoded))
    return found


def first_misspelling(tokenizer: Tokenizer, strings: Mapping[str, Iterable[str]]) -> Misspelling | None:
    """The first of :func:`unspellable`, or None when the tokenizer spells them all."""
    missing = unspellable(tokenizer, strings)
    return missing[0] if missing else None
