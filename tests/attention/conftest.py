"""Shared fixtures: every registered kind and the paper's mixtures, tiny float64 shapes."""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import SynthesizerAttention, registered_kinds

#: the mixtures of the paper's Tables 2-7 and a three-part one
MIXTURES = ["R+V", "D+V", "R+D", "FR+V", "FR+D", "Fix+V", "R+D+V"]
ALL_KINDS = registered_kinds() + MIXTURES

D_MODEL, HEADS, MAX_LEN = 8, 2, 8


def kinds_where(flag: str) -> list[str]:
    """The kinds of ``ALL_KINDS`` whose built synthesizing function has ``flag`` set (e.g. ``"token_local"``).

    For parametrizing a property over the kinds it applies to, so no test instance is generated only to skip.
    Built under a forked RNG: collecting the tests leaves the global seed state as it was.
    """
    with torch.random.fork_rng(devices=[]):
        return [k for k in ALL_KINDS if getattr(SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind=k).synth, flag)]


#: kinds whose logit row i is computed from token i alone (D, FD, Bottleneck, GLU)
TOKEN_LOCAL_KINDS = kinds_where("token_local")
#: kinds with a low-rank feature form of their logits (the fused SDPA paths)
FEATURE_KINDS = kinds_where("has_features")


def build(
    kind: str, causal: bool = False, dtype=torch.float64, seed: int = 0, heads: int = HEADS, **options
) -> SynthesizerAttention:
    torch.manual_seed(seed)
    attn = SynthesizerAttention(D_MODEL, heads, MAX_LEN, kind=kind, causal=causal, **options).to(dtype)
    with torch.no_grad():  # move every mixture weight off 1/N so alpha is exercised
        for name, p in attn.named_parameters():
            if name.endswith("alpha_logits"):
                p.copy_(torch.randn_like(p))
    return attn


def padding(batch: int, length: int) -> torch.Tensor:
    """Right padding on sample 1, left padding on sample 2 (the decoder case), nothing on sample 0."""
    mask = torch.zeros(batch, length, dtype=torch.bool)
    if batch > 1 and length > 1:
        mask[1, length - (length // 2) :] = True
    if batch > 2:
        mask[2, : max(1, length // 2)] = True
    return mask


@pytest.fixture(params=ALL_KINDS)
def kind(request) -> str:
    return request.param
