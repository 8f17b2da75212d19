"""The example whose attention the heatmaps show: an example of the run's data (by index) or a text of the user's,
framed the way the run's model reads it, and the tokens each stack sees (the heatmaps' tick labels)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from synthformer.generate import greedy_search
from synthformer.tasks import LoadedRun

__all__ = ["Example", "dataset_example", "text_example"]

#: Which batch entry holds the tokens each stack reads, by preference.
_STACK_INPUTS = {"encoder": ("src_ids", "input_ids"), "decoder": ("tgt_ids", "input_ids")}


@dataclass
class Example:
    """One example as a batch of one, and the tokens each stack reads.

    Attributes:
        batch: the model's keyword arguments (tensors with a batch axis of 1).
        tokens: ``{"encoder" | "decoder": the tokens of that stack's input}``, one string per position.
        source: where it came from (for the report): ``"valid example 3"`` or ``"--example text"``.
    """

    batch: dict[str, Tensor]
    tokens: dict[str, list[str]]
    source: str


def _tokens(loaded: LoadedRun, batch: dict[str, Tensor]) -> dict[str, list[str]]:
    tok = loaded.tokenizer
    out = {}
    for stack, names in _STACK_INPUTS.items():
        name = next((n for n in names if n in batch), None)
        if name is not None and getattr(loaded.model, stack, None) is not None:  # only the stacks the model has
            out[stack] = [tok.id_to_token(int(i)) for i in batch[name][0]]
    return out


def dataset_example(loaded: LoadedRun, dataset: Any, index: int, split: str) -> Example:
    """Example ``index`` of ``dataset`` (the run's tokenized ``split``).

    Raises:
        ValueError: ``index`` out of range (naming it and the split's size).
    """
    if not 0 <= index < len(dataset):
        raise ValueError(f"--example-index {index} is out of range: the {split} split has {len(dataset)} examples "
                         f"(expected 0 to {len(dataset) - 1})")
    batch = dataset.collate([dataset[index]])
    return Example(batch, _tokens(loaded, batch), f"{split} example {index}")


def text_example(loaded: LoadedRun, text: str) -> Example:
    """``text`` framed for the run's architecture: an LM or classifier reads its tokens (the first ``max_len``);
    an encoder-decoder reads it as the source (+ ``<eos>``) and its own greedy translation as the target.

    Raises:
        ValueError: the text gives no token, or the architecture is not lm, classifier or seq2seq.
    """
    tok, max_len = loaded.tokenizer, loaded.model_config.max_len
    config = loaded.model_config
    ids = tok.encode(text, add_eos=config.encoder_decoder)  # sources end with <eos>, as in Seq2SeqDataset
    if not text or not ids:
        raise ValueError(f"--example {text!r} gives no token with this run's tokenizer (expected some text)")
    ids = ids[:max_len]
    src = torch.tensor([ids], dtype=torch.long)  # (1, L)
    if config.decoder_only or config.classifier:
        batch = {"input_ids": src}
    elif config.encoder_decoder:
        out = greedy_search(loaded.model, src, max_new_tokens=max_len - 1)
        target = out.to_lists(strip_eos=tok.eos_id)[0]
        tgt = torch.tensor([[tok.bos_id, *target]], dtype=torch.long)  # (1, T): <bos> y1 .. yn, teacher-forced
        batch = {"src_ids": src, "tgt_ids": tgt}
    else:
        raise ValueError(f"--example: cannot frame a text for a model of arch {config.arch!r} (expected a "
                         "decoder-only, encoder-decoder or classifier architecture); use --example-index")
    shown = text if len(text) <= 30 else text[:29] + "\u2026"
    return Example(batch, _tokens(loaded, batch), f"the text {shown!r}")
