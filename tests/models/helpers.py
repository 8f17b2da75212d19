"""Tiny configs, data and a training loop shared by the model and generation tests."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from synthformer.models import ModelConfig, build_model

PAD, BOS, EOS = 0, 2, 3
FIRST_TOKEN = 4  # ids below are special tokens

TINY = dict(d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=24, dropout=0.0, vocab_size=16)


def tiny_config(arch: str, **overrides) -> ModelConfig:
    """A model small enough to train for a few steps in well under a second."""
    base = dict(TINY, arch=arch)
    if arch in ("classifier", "dual_encoder"):
        base["num_classes"] = 2
    base.update(overrides)
    return ModelConfig.from_dict(base)  # the arch picks the config class


def tiny_model(arch: str, seed: int = 0, **overrides) -> nn.Module:
    torch.manual_seed(seed)
    return build_model(tiny_config(arch, **overrides))


def lm_batch(g: torch.Generator, batch: int = 16, length: int = 12, vocab: int = 16) -> dict[str, torch.Tensor]:
    """Counting sequences (next token = current + 1 over the non-special ids): learnable by any mixer."""
    span = vocab - FIRST_TOKEN
    start = torch.randint(0, span, (batch, 1), generator=g)
    seq = FIRST_TOKEN + (start + torch.arange(length + 1)) % span  # (B, L + 1)
    return {"input_ids": seq[:, :-1], "labels": seq[:, 1:].clone()}


def copy_batch(g: torch.Generator, batch: int = 16, length: int = 8, vocab: int = 16) -> dict[str, torch.Tensor]:
    """Seq2seq copy task with right-padded sources of varying length."""
    src = torch.randint(FIRST_TOKEN, vocab, (batch, length), generator=g)
    lengths = torch.randint(length // 2, length + 1, (batch,), generator=g)
    pad = torch.arange(length)[None, :] >= lengths[:, None]  # (B, S)
    src = src.masked_fill(pad, PAD)
    tgt = torch.cat([torch.full((batch, 1), BOS), src], dim=1)  # <bos> y
    labels = torch.cat([src, torch.full((batch, 1), PAD)], dim=1)  # y <eos>
    labels[torch.arange(batch), lengths] = EOS
    labels = labels.masked_fill(labels == PAD, -100)
    return {"src_ids": src, "src_padding_mask": pad, "tgt_ids": tgt, "labels": labels}


def cls_batch(g: torch.Generator, batch: int = 16, length: int = 10, vocab: int = 16) -> dict[str, torch.Tensor]:
    """Label 1 iff token FIRST_TOKEN occurs among the real (non-padding) tokens."""
    ids = torch.randint(FIRST_TOKEN + 1, vocab, (batch, length), generator=g)
    labels = torch.randint(0, 2, (batch,), generator=g)
    where = torch.randint(0, length // 2, (batch,), generator=g)
    ids[labels == 1, where[labels == 1]] = FIRST_TOKEN
    lengths = torch.randint(length // 2 + 1, length + 1, (batch,), generator=g)
    pad = torch.arange(length)[None, :] >= lengths[:, None]
    return {"input_ids": ids.masked_fill(pad, PAD), "padding_mask": pad, "labels": labels}


def pair_batch(g: torch.Generator, batch: int = 16, length: int = 10, vocab: int = 16) -> dict[str, torch.Tensor]:
    """Two texts per example (the dual encoder's batch): label 1 iff token FIRST_TOKEN occurs in either."""
    first, second = cls_batch(g, batch, length, vocab), cls_batch(g, batch, length, vocab)
    return {"input_ids_1": first["input_ids"], "padding_mask_1": first["padding_mask"],
            "input_ids_2": second["input_ids"], "padding_mask_2": second["padding_mask"],
            "labels": first["labels"] | second["labels"]}


def compress_batch(g: torch.Generator, batch: int = 16, length: int = 8, vocab: int = 16) -> dict[str, torch.Tensor]:
    """MAD's compression: random tokens then one aggregation token (the last id); labels: the tokens to rebuild."""
    ids = torch.randint(FIRST_TOKEN, vocab - 1, (batch, length), generator=g)
    ids[:, -1] = vocab - 1  # (B, L): x_1 .. x_{L-1}, then the aggregation token
    return {"input_ids": ids, "labels": ids[:, :-1].clone()}


BATCHES = {"lm": lm_batch, "seq2seq": copy_batch, "classifier": cls_batch, "dual_encoder": pair_batch,
           "compressor": compress_batch}


def train(model: nn.Module, arch: str, steps: int = 30, lr: float = 3e-3, seed: int = 0) -> list[float]:
    """Adam on fresh batches of the arch's toy task; returns the loss of every step."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        loss = model(**BATCHES[arch](g))["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def replace(config: ModelConfig, **changes) -> ModelConfig:
    return dataclasses.replace(config, **changes)


def assert_cached_decoding_equals_forward(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor) -> None:
    """An encoder-decoder's logits decoded one target token at a time with its cache equal its full forward's:
    src (B, S), tgt (B, T)."""
    with torch.no_grad():
        memory, mask = model.encode(src)
        full = model.decode(tgt, memory, mask)  # (B, T, V)
        cache = model.init_cache(memory, mask)
        steps = [model.decode_step(tgt[:, t : t + 1], cache)[0] for t in range(tgt.shape[1])]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
