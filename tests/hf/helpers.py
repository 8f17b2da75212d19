"""Tiny native models for the Hugging Face tests, with weights spread out so that decoding does not collapse onto
one token (a freshly initialised tiny model predicts nearly the same distribution everywhere)."""

from __future__ import annotations

import torch

from synthformer.attention import available_mixers, contract, get_mixer
from synthformer.models import ClassifierConfig, LMConfig, Seq2SeqConfig, build_model

VOCAB, D_MODEL, HEADS, MAX_LEN = 24, 16, 2, 24
SMALL = dict(vocab_size=VOCAB, d_model=D_MODEL, n_heads=HEADS, n_layers=1, d_ff=32, max_len=MAX_LEN, dropout=0.0)
MIXTURES = ["R+V", "D+V"]


def decoding_kinds() -> list[str]:
    """Every registered name that can be causal (Linformer cannot), and two of the paper's mixtures."""
    names = [name for name in available_mixers() if contract.supports_causal(get_mixer(name))]
    return names + MIXTURES


def spread(model: torch.nn.Module, seed: int = 0, std: float = 0.6) -> torch.nn.Module:
    """Redraw every parameter from N(0, std) (LayerNorm gains stay 1) and switch to eval mode."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                continue
            p.copy_(torch.randn(p.shape, generator=gen) * std)
    return model.eval()


def tiny_lm(kind: str = "V", seed: int = 0, **overrides) -> torch.nn.Module:
    torch.manual_seed(seed)
    return spread(build_model(LMConfig(**{**SMALL, "decoder_kind": kind, **overrides})), seed)


def tiny_seq2seq(kind: str = "V", seed: int = 0, **overrides) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = Seq2SeqConfig(**{**SMALL, "decoder_kind": kind, "encoder_kind": "V", **overrides})
    return spread(build_model(config), seed)


def tiny_classifier(kind: str = "V", seed: int = 0, **overrides) -> torch.nn.Module:
    torch.manual_seed(seed)
    return spread(build_model(ClassifierConfig(**{**SMALL, "encoder_kind": kind, "num_classes": 3, **overrides})), seed)


def source_batch(seed: int = 1, batch: int = 3, length: int = 9) -> torch.Tensor:
    """(B, S) source ids without specials, right padding on row 1."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (batch, length), generator=gen)
    src[1, length - 3 :] = 0
    return src
