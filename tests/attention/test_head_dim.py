"""A head width of its own (``head_dim``): every kind, every path of the speed wing, decoding and cross-attention
with heads wider than ``d_model / n_heads``; the default built exactly as before; the refusals.

The reference path of a ``head_dim`` layer is checked against the paper's equations in ``test_reference.py``
(``test_head_dim_matches_reference``, and its gradcheck); here every other path is checked against it.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from synthformer.attention import (
    SynthesizerAttention,
    SynthesizingFunction,
    build_mixer,
    paths,
    register,
    takes_head_dim,
    unregister,
)
from synthformer.attention.fast.settings import fast_path_settings

from .conftest import ALL_KINDS, D_MODEL, HEADS, MAX_LEN, build, kinds_where, padding
from .reference import reference_cross_forward
from .test_cross_attention import CROSS_KINDS, _grads, _inputs, build_cross, memory_padding
from .test_fused import _assert_same

#: the brief's shape: 4 heads of 8 in a width-16 model, so the attention is twice as wide as the model inside
WIDE_D, WIDE_H, WIDE_E = 16, 4, 8


def wide(kind: str, causal: bool = False, seed: int = 0, **options) -> SynthesizerAttention:
    """A float64 layer of 4 heads of width 8 over d_model 16, mixture weights off 1/N (as conftest's ``build``)."""
    torch.manual_seed(seed)
    attn = SynthesizerAttention(WIDE_D, WIDE_H, MAX_LEN, kind=kind, causal=causal, head_dim=WIDE_E,
                                **options).double()
    with torch.no_grad():
        for name, p in attn.named_parameters():
            if name.endswith("alpha_logits"):
                p.copy_(torch.randn_like(p))
    return attn


def _x(batch: int = 3, length: int = MAX_LEN) -> torch.Tensor:
    return torch.randn(batch, length, WIDE_D, dtype=torch.float64, requires_grad=True)


# ---------------------------------------------------------------- the default is the layer as it was


def test_the_default_draws_the_parameters_it_always_drew():
    """Without head_dim the layer draws what it drew before the option existed, in the same order: the kind's
    tensors, then the value and output projections, all d x d (same seed, same parameters)."""
    d, h, length = 16, 4, 8
    for kind in ("R", "V", "D"):
        torch.manual_seed(5)
        if kind == "R":
            want = [torch.randn(h, length, length)]
        elif kind == "V":
            want = list(nn.Linear(d, 2 * d).parameters())
        else:
            w1 = nn.Linear(d, d)
            bound = 1.0 / math.sqrt(d // h)
            w2 = torch.empty(h, length, d // h).uniform_(-bound, bound)
            want = [w2, torch.empty(h, length).uniform_(-bound, bound), *w1.parameters()]
        want += [*nn.Linear(d, d).parameters(), *nn.Linear(d, d).parameters()]  # G(X), then the output projection
        torch.manual_seed(5)
        layer = SynthesizerAttention(d, h, length, kind=kind)
        got = list(layer.synth.parameters()) + list(layer.value.parameters()) + list(layer.out.parameters())
        assert [tuple(p.shape) for p in got] == [tuple(p.shape) for p in want], kind
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True)), kind


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_head_dim_of_d_model_over_n_heads_changes_nothing(kind):
    """``head_dim=d_model // n_heads`` (and None) build the same layer bit for bit: same parameters, same output."""
    plain, given = build(kind, causal=True), build(kind, causal=True, head_dim=D_MODEL // HEADS)
    assert list(plain.state_dict()) == list(given.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), given.state_dict().values(),
                                                 strict=True))
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64)
    mask = padding(3, MAX_LEN)
    assert torch.equal(plain(x, mask), given(x, mask))
    assert plain.inner_dim == D_MODEL and "head_dim" not in repr(plain)


# ---------------------------------------------------------------- the widths


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_widths_and_counts_follow_head_dim(kind):
    attn = wide(kind, causal=True)
    inner = WIDE_H * WIDE_E
    assert (attn.head_dim, attn.inner_dim) == (WIDE_E, inner) and f"head_dim={WIDE_E}" in repr(attn)
    assert attn.value.weight.shape == (inner, WIDE_D) and attn.out.weight.shape == (WIDE_D, inner)
    trained = sum(p.numel() for p in attn.parameters() if p.requires_grad)
    assert trained == SynthesizerAttention.num_params(WIDE_D, WIDE_H, MAX_LEN, kind, head_dim=WIDE_E)
    assert trained != SynthesizerAttention.num_params(WIDE_D, WIDE_H, MAX_LEN, kind)  # the width is counted
    x = _x()
    assert attn(x).shape == x.shape
    assert attn.attention_weights(x.detach()).shape == (3, WIDE_H, MAX_LEN, MAX_LEN)
    cache = attn.init_cache(3)
    assert cache.values.shape == (3, WIDE_H, MAX_LEN, WIDE_E)


def test_the_kinds_widths_inside():
    """V's queries and keys, D's and FD's hidden layers, GLU's unit and ConvReluConv's first convolution are
    ``H d_h`` wide; V's scale is ``1 / sqrt(d_h)``."""
    inner = WIDE_H * WIDE_E
    v = wide("V").synth
    assert v.qk.weight.shape == (2 * inner, WIDE_D) and v.scale == 1 / math.sqrt(WIDE_E)
    assert wide("D").synth.W1.weight.shape == (inner, WIDE_D)
    assert wide("D").synth.W2.shape == (WIDE_H, MAX_LEN, WIDE_E)
    assert wide("FD").synth.WA.shape[-1] == WIDE_E
    assert wide("GLU").synth.W1.weight.shape == (2 * inner, WIDE_D)
    assert wide("ConvReluConv").synth.weight2.shape[2] == WIDE_E
    assert wide("ConvReluConv", causal=True).synth.init_state(2, None, torch.float64)["h"].shape[1] == inner


def test_d_model_need_not_be_divisible_by_n_heads_with_a_head_dim():
    attn = SynthesizerAttention(10, 3, MAX_LEN, kind="R+V", head_dim=4)
    assert attn(torch.randn(2, 5, 10)).shape == (2, 5, 10)
    with pytest.raises(ValueError, match=r"d_model=10 must be divisible by n_heads=3"):
        SynthesizerAttention(10, 3, MAX_LEN, kind="R+V")


# ---------------------------------------------------------------- every path of the speed wing

INPUT_DEPENDENT = kinds_where("input_dependent")
SHARED = [k for k in ALL_KINDS if k not in INPUT_DEPENDENT]
FEATURE_DEPENDENT = [k for k in kinds_where("has_features") if k in INPUT_DEPENDENT]

#: (path, the settings that send a call there, causal, padded, kinds): every path the wing registers
FORCED = [
    ("blocks", dict(features="blocks", fused="never", block_size=(2, 2)), False, True, INPUT_DEPENDENT),
    ("blocks", dict(features="blocks", fused="never", block_size=(1, 4)), True, True, INPUT_DEPENDENT),
    ("fused", dict(features="blocks", fused="always"), False, True, INPUT_DEPENDENT),
    ("fused", dict(features="blocks", fused="always", causal_chunk=3), True, True, INPUT_DEPENDENT),
    ("sdpa", dict(features="sdpa", width_multiple=1), True, True, FEATURE_DEPENDENT),
    ("sdpa", dict(features="sdpa"), False, False, FEATURE_DEPENDENT),
    ("shared_alignment", {}, False, True, SHARED),
    ("causal_shared", dict(causal_shared_min_len=0, causal_chunk=3), True, False, SHARED),
    ("sdpa", dict(fr_sdpa_min_len=0), False, True, ["FR"]),  # long FR: exactly SDPA over R1, R2
]
CASES = [pytest.param(path, settings, causal, padded, kind, id=f"{path}-{kind}-{'causal' if causal else 'bidir'}"
                      f"{'-pad' if padded else ''}")
         for path, settings, causal, padded, kinds in FORCED for kind in kinds]


@pytest.mark.parametrize("path,settings,causal,padded,kind", CASES)
def test_every_path_equals_the_reference_path(path, settings, causal, padded, kind):
    """The path forced by ``settings`` serves the call (the counter says so) and gives the reference path's output
    and gradients (input and every parameter) with heads twice as wide as d_model / n_heads."""
    attn = wide(kind, causal=causal)
    x = _x()
    mask = padding(3, MAX_LEN) if padded else None
    paths.reset_path_calls()
    with fast_path_settings(**settings):
        fast = attn(x, mask)
    assert paths.path_calls()[path] == 1, paths.path_calls()
    attn.use_fast_paths = False
    plain = attn(x, mask)
    torch.testing.assert_close(fast, plain, atol=1e-10, rtol=0)
    w = torch.randn_like(fast)
    inputs = [x, *(p for p in attn.parameters() if p.requires_grad)]
    got = torch.autograd.grad((fast * w).sum(), inputs, allow_unused=True)
    want = torch.autograd.grad((plain * w).sum(), inputs, allow_unused=True)
    _assert_same(list(got), list(want), atol=1e-10)


def test_the_forced_paths_cover_every_path_of_the_wing():
    wing = set(paths.registered_paths()) - {"reference", "triton"}  # triton: test_triton.py, Triton's interpreter
    assert wing <= {path for path, *_ in FORCED}


@pytest.mark.parametrize("plain_max", [16, 0], ids=["plain-steps", "fast-steps"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_decoding_equals_the_full_forward(kind, plain_max):
    """Chunks of 3, 1 and 4 positions over a left-padded batch, through the plain path or the fast paths."""
    attn = wide(kind, causal=True)
    x = _x().detach()
    mask = padding(3, MAX_LEN)
    full = attn(x, mask)
    cache, outs, start = attn.init_cache(3), [], 0
    with fast_path_settings(decode_plain_max_new=plain_max):
        for size in (3, 1, 4):
            y, cache = attn(x[:, start : start + size], key_padding_mask=mask[:, : start + size], cache=cache)
            outs.append(y)
            start += size
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", CROSS_KINDS)
def test_cross_attention_matches_the_reference(kind):
    """The decoder's attention over a memory with head_dim: the paper's logits, values of width d_h (test
    inputs of D_MODEL = 8, 2 heads of width 6: wider than 4)."""
    attn = build_cross(kind, head_dim=6)
    assert attn.value.weight.shape == (12, D_MODEL) and attn.out.weight.shape == (D_MODEL, 12)
    trained = sum(p.numel() for p in attn.parameters() if p.requires_grad)
    assert trained == type(attn).num_params(D_MODEL, HEADS, MAX_LEN, kind, head_dim=6)
    x, memory = _inputs()
    mask = memory_padding()
    for fast in (True, False):
        attn.use_fast_paths = fast
        k, v = attn.memory_kv(memory)
        out = attn(x, k, v, mask, 2)
        ref = reference_cross_forward(attn, x, memory, mask, 2)
        torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
        w = torch.randn_like(out)
        for g, r in zip(_grads(attn, [x, memory], out, w), _grads(attn, [x, memory], ref, w), strict=True):
            torch.testing.assert_close(g, r, atol=1e-10, rtol=0)


# ---------------------------------------------------------------- refusals (the counts: tests/bench/test_flops.py)


@pytest.mark.parametrize("bad", [0, -2, True, 2.0, "8"])
def test_a_bad_head_dim_is_named(bad):
    with pytest.raises(ValueError, match=rf"head_dim must be None \(d_model // n_heads\) or a positive int, "
                                         rf"got {bad!r}"):
        SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="R", head_dim=bad)


@pytest.mark.parametrize("name", ["LightConv", "DynamicConv"])
def test_the_convolutions_have_no_head_width_to_set(name):
    assert not takes_head_dim(name)
    with pytest.raises(ValueError, match=rf"token mixer '{name}' takes no head_dim \(got head_dim=8\)"):
        build_mixer(name, D_MODEL, HEADS, MAX_LEN, head_dim=8)
    assert build_mixer(name, D_MODEL, HEADS, MAX_LEN, head_dim=None)(torch.randn(1, 3, D_MODEL)).shape == (1, 3, 8)


def test_linformer_takes_a_head_dim():
    assert takes_head_dim("Linformer") and all(takes_head_dim(k) for k in ALL_KINDS)
    torch.manual_seed(0)
    mixer = build_mixer("Linformer", WIDE_D, WIDE_H, MAX_LEN, head_dim=WIDE_E, k=4)
    assert mixer.q_proj.weight.shape == (WIDE_H * WIDE_E, WIDE_D) and mixer.out_proj.weight.shape == (WIDE_D, 32)
    assert sum(p.numel() for p in mixer.parameters()) == type(mixer).num_params(WIDE_D, WIDE_H, MAX_LEN,
                                                                                head_dim=WIDE_E, k=4)
    x = torch.randn(2, 5, WIDE_D)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    y = mixer(x, mask)
    x2 = x.clone()
    x2[1, 3:] = 100.0  # padded positions: their content must not reach the real ones
    assert y.shape == x.shape and torch.allclose(mixer(x2, mask)[1, :3], y[1, :3], atol=1e-6)


def test_a_kind_that_does_not_declare_it_refuses_another_width():
    @register("TestNarrow")
    class Narrow(SynthesizingFunction):
        """A user's kind with a d x d projection of its own: it cannot follow a head_dim."""

        input_dependent = False

        def logits(self, x, start=0, state=None, key_padding_mask=None):
            t = x.shape[1]
            return x.new_zeros(1, self.n_heads, t, start + t)

        @classmethod
        def num_params(cls, d_model, n_heads, max_len, **options):
            return 0

    try:
        assert not takes_head_dim("TestNarrow+V")
        with pytest.raises(ValueError, match=r"attention kind 'TestNarrow' does not take head_dim=8 .*"
                                             r"supports_head_dim = True"):
            SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="TestNarrow+V", head_dim=8)
        with pytest.raises(ValueError, match=r"TestNarrow of 'TestNarrow' do not take head_dim=8"):
            SynthesizerAttention.num_params(D_MODEL, HEADS, MAX_LEN, kind="TestNarrow", head_dim=8)
        same = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="TestNarrow", head_dim=D_MODEL // HEADS)
        assert same.inner_dim == D_MODEL  # d_model // n_heads: the width every kind has
    finally:
        unregister("TestNarrow")
