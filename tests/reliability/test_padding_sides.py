"""Left padding gives what right padding gives, for every model family, every registered token mixer and each
interface (the cases of ``padding_sides.py``); ``docs/reliability.md`` shows their count and table.

Before (reported): a left-padded source made a trained digit-reversal model answer '5454321111' for '12345', a
classifier's logits moved by 0.24, silently: the encoders read a token's column as its position."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from synthformer.generate import greedy_search
from synthformer.models import ClassifierConfig, DualEncoderConfig, LMConfig, Seq2SeqConfig, build_model
from tests.hf.helpers import SMALL, spread

from .padding_sides import CASES, HF, headline, table

DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"
ROWS = [[5, 6, 7], [8, 9, 10, 11, 12, 13, 14], [15, 16, 17, 18, 19]]  # 3 lengths: every row padded to 8
WIDTH, NEW = 8, 3
TARGET = torch.tensor([[2, 9, 4, 11], [2, 5, 5, 6], [2, 20, 7, 8]])  # (B, T) decoder inputs <bos> y1 y2 y3


def padded(rows: list[list[int]], side: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, WIDTH) ids padded with 0 on ``side`` and the padding mask (B, WIDTH), True at padding."""
    ids = torch.zeros(len(rows), WIDTH, dtype=torch.long)
    for i, row in enumerate(rows):
        cols = slice(WIDTH - len(row), WIDTH) if side == "left" else slice(0, len(row))
        ids[i, cols] = torch.tensor(row)
    return ids, ids == 0


def build(key: str, variant: str) -> torch.nn.Module:
    """The tiny native model of a case, its weights spread out (a fresh tiny model predicts nearly one
    distribution everywhere, which would hide a difference)."""
    torch.manual_seed(0)
    t5 = dict(variant="t5", positions="none", position_bias="t5", norm="pre")
    config = {
        "lm": lambda: LMConfig(**SMALL, decoder_kind=variant),
        "seq2seq": lambda: Seq2SeqConfig(**SMALL, encoder_kind=variant, decoder_kind="V", cross_kind="V"),
        "cross": lambda: Seq2SeqConfig(**SMALL, encoder_kind="V", decoder_kind="V", cross_kind=variant),
        "t5": lambda: Seq2SeqConfig(**SMALL, encoder_kind=variant, decoder_kind="V", **t5),
        "classifier": lambda: ClassifierConfig(**SMALL, encoder_kind=variant, num_classes=3),
        "pooling": lambda: ClassifierConfig(**SMALL, encoder_kind="R+V", pooling=variant, num_classes=3),
        "dual": lambda: DualEncoderConfig(**SMALL, encoder_kind=variant),
    }[key]()
    return spread(build_model(config))


def wrap(native: torch.nn.Module) -> torch.nn.Module:
    """The Hugging Face class a family is exported as, around ``native``."""
    pytest.importorskip("transformers")
    from synthformer.hf import (
        SynthesizerForCausalLM,
        SynthesizerForConditionalGeneration,
        SynthesizerForSequenceClassification,
    )

    cls = {"lm": SynthesizerForCausalLM, "seq2seq": SynthesizerForConditionalGeneration,
           "classifier": SynthesizerForSequenceClassification}[native.config.arch]
    return cls.from_native(native).eval()


@torch.no_grad()
def outputs(key: str, model: torch.nn.Module, hf: bool, side: str) -> list[torch.Tensor]:
    """What a case compares, from the rows padded on ``side``."""
    ids, pad = padded(ROWS, side)
    mask = (~pad).long()  # transformers' attention mask
    if key == "lm":  # logits at the real tokens, row by row: (real tokens, V)
        logits = model(input_ids=ids, attention_mask=mask).logits if hf else model(ids, padding_mask=pad)["logits"]
        return [logits[~pad]]
    if key in ("seq2seq", "cross", "t5"):
        if hf:
            return [model(input_ids=ids, attention_mask=mask, decoder_input_ids=TARGET).logits,
                    model.generate(ids, attention_mask=mask, max_new_tokens=NEW, do_sample=False)]
        return [model(ids, TARGET, src_padding_mask=pad)["logits"],
                greedy_search(model, ids, pad, max_new_tokens=NEW).tokens]
    if key == "dual":
        other, other_pad = padded(ROWS[::-1], side)
        return [model(ids, other, pad, other_pad)["logits"]]
    return [model(input_ids=ids, attention_mask=mask).logits if hf else model(ids, padding_mask=pad)["logits"]]


@pytest.mark.parametrize(("key", "api", "variant"), CASES, ids=["-".join(c) for c in CASES])
def test_left_padding_gives_what_right_padding_gives(key: str, api: str, variant: str) -> None:
    model = build(key, variant).eval()
    if api == HF:
        model = wrap(model)
    left, right = outputs(key, model, api == HF, "left"), outputs(key, model, api == HF, "right")
    for got, expected in zip(left, right, strict=True):
        if got.is_floating_point():
            torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
        else:  # generated tokens
            assert torch.equal(got, expected)


def test_the_doc_shows_these_cases() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert headline() in text, f"docs/reliability.md: the 'Padding side' headline is {headline()}"
    assert table() in text, f"docs/reliability.md: replace the 'Padding side' table by\n{table()}"
