"""Cross-attention through the registry: every cross-capable kind against the slow reference (forward and
gradients, padded sources), decoding with cached memory keys and values, the kind checks, and compatibility with
the encoder-decoder's former ``CrossAttention`` (initialization, parameter order, checkpoints, outputs, losses).

Kinds come from ``cross_kinds()``: a kind registered later is covered automatically.
"""

from __future__ import annotations

import math
import re

import pytest
import torch
from safetensors.torch import load_model, save_file
from torch import Tensor, nn
from torch.func import functional_call

from synthformer.attention import SynthesizingFunction, check_cross_kind, cross_kinds, parse_kind, register, unregister
from synthformer.attention.cross import SynthesizerCrossAttention

from ..models.helpers import tiny_model, train
from .conftest import D_MODEL, HEADS, MAX_LEN, MIXTURES
from .reference import reference_cross_forward

CROSS_KINDS = cross_kinds() + [m for m in MIXTURES if all(p.supports_cross for p in parse_kind(m))]
SOURCE = 6  # source length S (target positions go up to MAX_LEN = 8)


def build_cross(kind: str, seed: int = 0, max_len: int = MAX_LEN, **options) -> SynthesizerCrossAttention:
    torch.manual_seed(seed)
    attn = SynthesizerCrossAttention(D_MODEL, HEADS, max_len, kind, **options).double()
    with torch.no_grad():  # move every mixture weight off 1/N so alpha is exercised
        for name, p in attn.named_parameters():
            if name.endswith("alpha_logits"):
                p.copy_(torch.randn_like(p))
    return attn


def memory_padding(batch: int = 4, length: int = SOURCE) -> Tensor:
    """Nothing on sample 0, right padding on 1, an all-padding source on 2, left padding on 3."""
    mask = torch.zeros(batch, length, dtype=torch.bool)
    mask[1, length - 2 :] = True
    mask[2] = True
    mask[3, :3] = True
    return mask


def _inputs(batch: int = 4, target: int = 4) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(batch, target, D_MODEL, generator=g, dtype=torch.float64, requires_grad=True)
    memory = torch.randn(batch, SOURCE, D_MODEL, generator=g, dtype=torch.float64, requires_grad=True)
    return x, memory


def _cross(attn: SynthesizerCrossAttention, x: Tensor, memory: Tensor, mask: Tensor | None, start: int) -> Tensor:
    k, v = attn.memory_kv(memory)  # (B, H, S, e) or None, (B, H, S, d_h)
    return attn(x, k, v, mask, start)


def _grads(attn: nn.Module, inputs: list[Tensor], out: Tensor, w: Tensor) -> tuple[Tensor, ...]:
    params = [p for p in attn.parameters() if p.requires_grad]
    # R, Fix and FR read no target token: their gradient with respect to it is zero
    return torch.autograd.grad((out * w).sum(), [*inputs, *params], materialize_grads=True)


def _assert_matches_reference(attn, padded: bool, start: int) -> None:
    x, memory = _inputs()
    mask = memory_padding() if padded else None
    out = _cross(attn, x, memory, mask, start)
    ref = reference_cross_forward(attn, x, memory, mask, start)
    assert out.shape == x.shape
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
    w = torch.randn_like(out)
    got, want = _grads(attn, [x, memory], out, w), _grads(attn, [x, memory], ref, w)
    for g, r in zip(got, want, strict=True):
        assert torch.isfinite(g).all()
        torch.testing.assert_close(g, r, atol=1e-10, rtol=0)


@pytest.mark.parametrize("start", [0, 3], ids=["start0", "start3"])
@pytest.mark.parametrize("padded", [False, True], ids=["nopad", "pad"])
@pytest.mark.parametrize("kind", CROSS_KINDS)
def test_matches_reference(kind, padded, start):
    """Output and gradients (target, memory, every parameter) equal the equations, with padded sources."""
    _assert_matches_reference(build_cross(kind), padded, start)


@pytest.mark.parametrize("padded", [False, True], ids=["nopad", "pad"])
def test_v_materialized_path_matches_reference(padded):
    """V alone runs through the fused kernel; its materialized path (as a mixture part uses it) agrees too."""
    attn = build_cross("V")
    attn.use_fast_paths = False
    _assert_matches_reference(attn, padded, start=2)


@pytest.mark.parametrize("kind", CROSS_KINDS)
def test_all_padding_source_gives_zeros_never_nan(kind):
    attn = build_cross(kind)
    x, memory = _inputs()
    out = _cross(attn, x, memory, memory_padding(), 0)
    # sample 2 has no real source token: zero attention output, so each row is the output bias
    torch.testing.assert_close(out[2], attn.out.bias.expand(x.shape[1], -1), atol=1e-12, rtol=0)
    grads = _grads(attn, [x, memory], out, torch.ones_like(out))
    assert all(torch.isfinite(g).all() for g in grads)
    assert grads[0][2].abs().max() == 0 and grads[1][2].abs().max() == 0  # sample 2 attends to nothing


@pytest.mark.parametrize("kind", CROSS_KINDS)
def test_padded_source_positions_get_no_weight(kind):
    """Changing the memory at padded positions changes nothing."""
    attn = build_cross(kind)
    x, memory = _inputs()
    mask = memory_padding()
    before = _cross(attn, x, memory, mask, 1)
    changed = memory.detach().masked_fill(mask[..., None], 5.0)
    torch.testing.assert_close(_cross(attn, x, changed, mask, 1), before, atol=1e-12, rtol=0)


@pytest.mark.parametrize("kind", CROSS_KINDS)
def test_decoding_with_cached_memory_equals_full_forward(kind):
    """Keys and values of the memory computed once; the target fed in pieces at their positions."""
    attn = build_cross(kind).eval()
    x, memory = _inputs(batch=4, target=MAX_LEN)
    mask = memory_padding()
    with torch.no_grad():
        k, v = attn.memory_kv(memory)
        full = attn(x, k, v, mask)
        pieces, start = [], 0
        for size in (1, 3, 1, 2, 1):  # single steps and chunks
            pieces.append(attn(x[:, start : start + size], k, v, mask, start))
            start += size
    assert start == MAX_LEN
    torch.testing.assert_close(torch.cat(pieces, 1), full, atol=1e-12, rtol=0)


@pytest.mark.parametrize("kind", ["V", "R", "D", "FD", "FR+V"])
def test_gradcheck(kind):
    """torch.autograd.gradcheck in float64 on a tiny shape: target, memory and every trained parameter."""
    attn = build_cross(kind)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, D_MODEL, generator=g, dtype=torch.float64, requires_grad=True)
    memory = torch.randn(2, 4, D_MODEL, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[False] * 4, [False, False, True, True]])
    assert torch.autograd.gradcheck(lambda x, m: _cross(attn, x, m, mask, 2), (x, memory), eps=1e-6, atol=1e-7)

    named = {n: p for n, p in attn.named_parameters() if p.requires_grad}
    leaves = tuple(p.detach().clone().requires_grad_(True) for p in named.values())
    whole = _MemoryAndTarget(attn)

    def by_params(*ps):
        params = {f"attn.{n}": p for n, p in zip(named, ps, strict=True)}
        return functional_call(whole, params, (x.detach(), memory.detach(), mask, 2))

    assert torch.autograd.gradcheck(by_params, leaves, eps=1e-6, atol=1e-7)


class _MemoryAndTarget(nn.Module):
    """memory_kv then forward as one call, so that functional_call can substitute the parameters of both."""

    def __init__(self, attn: SynthesizerCrossAttention) -> None:
        super().__init__()
        self.attn = attn

    def forward(self, x: Tensor, memory: Tensor, mask: Tensor | None, start: int) -> Tensor:
        return _cross(self.attn, x, memory, mask, start)


# ---------------------------------------------------------------- which kinds


def test_cross_kinds_are_the_kinds_that_can_attend_over_a_memory():
    assert cross_kinds() == ["V", "R", "Fix", "FR", "D", "FD", "Bottleneck", "GLU"]
    assert check_cross_kind("random+vanilla") == "R+V"
    assert check_cross_kind("dense") == "D"


@pytest.mark.parametrize("kind", ["Conv", "ConvReluConv", "R+Conv", "Nope", "LightConv", ""])
def test_check_cross_kind_names_the_kind_and_lists_the_valid_ones(kind):
    named = re.escape(f"cross-attention kind {kind!r}")
    listed = re.escape(f"cross-capable kinds: {', '.join(cross_kinds())}, or a '+'-joined mixture")
    with pytest.raises(ValueError, match=f"{named} .*{listed}"):
        check_cross_kind(kind)
    with pytest.raises(ValueError, match=named):
        SynthesizerCrossAttention(D_MODEL, HEADS, MAX_LEN, kind)


def test_a_convolution_refuses_cross_mode():
    with pytest.raises(ValueError, match="'Conv' cannot be used for cross-attention"):
        parse_kind("Conv")[0](D_MODEL, HEADS, MAX_LEN, cross=True)


def test_a_kind_registered_later_joins_the_cross_kinds():
    @register("Near")
    class Near(SynthesizingFunction):
        """Logit -|i - j| over target position i and source position j."""

        input_dependent = False
        supports_cross = True

        def cross_logits(self, x, keys, start=0, memory_k=None):
            q = torch.arange(start, start + x.shape[1], dtype=x.dtype)
            k = torch.arange(keys, dtype=x.dtype)
            return -(q[:, None] - k[None, :]).abs().expand(1, self.n_heads, -1, -1)  # (1, H, T, S)

        @classmethod
        def num_params(cls, d_model, n_heads, max_len, **options):
            return 0

    try:
        assert "Near" in cross_kinds()
        attn = build_cross("Near+V")
        x, memory = _inputs()
        out = _cross(attn, x, memory, memory_padding(), 2)
        assert out.shape == x.shape and torch.isfinite(out).all()
    finally:
        unregister("Near")


@pytest.mark.parametrize("kind", CROSS_KINDS)
def test_num_params_counts_the_module(kind):
    attn = build_cross(kind)
    trained = sum(p.numel() for p in attn.parameters() if p.requires_grad)
    assert SynthesizerCrossAttention.num_params(D_MODEL, HEADS, MAX_LEN, kind) == trained


def test_input_errors_name_the_bad_value():
    attn = build_cross("V")
    x, memory = _inputs()
    with pytest.raises(ValueError, match=f"source length {MAX_LEN + 1} exceeds max_len {MAX_LEN}"):
        attn.memory_kv(torch.randn(1, MAX_LEN + 1, D_MODEL, dtype=torch.float64))
    k, v = attn.memory_kv(memory)
    with pytest.raises(ValueError, match=f"target length {MAX_LEN + 1} exceeds max_len {MAX_LEN}"):
        attn(x, k, v, start=MAX_LEN - 3)
    with pytest.raises(ValueError, match="'V' needs k as returned by memory_kv, got None"):
        attn(x, None, v)
    with pytest.raises(ValueError, match=rf"\(batch, keys\) = \(4, {SOURCE}\)"):
        attn(x, k, v, torch.zeros(4, SOURCE - 1, dtype=torch.bool))


# ---------------------------------------------------------------- the former CrossAttention (V, R, D)

# The encoder-decoder's CrossAttention before it went through the registry: state-dict names in the order of its
# parameters (optimizer states are indexed by that order), and the names they have in this layer.
LEGACY_ORDER = {
    "V": ["value.weight", "value.bias", "out.weight", "out.bias", "query.weight", "query.bias", "key.weight",
          "key.bias"],
    "R": ["R", "value.weight", "value.bias", "out.weight", "out.bias"],
    "D": ["W2", "b2", "value.weight", "value.bias", "out.weight", "out.bias", "w1.weight", "w1.bias"],
}
RENAMED = {"query.weight": "synth.query.weight", "query.bias": "synth.query.bias", "key.weight": "synth.key.weight",
           "key.bias": "synth.key.bias", "R": "synth.R", "W2": "synth.W2", "b2": "synth.b2",
           "w1.weight": "synth.W1.weight", "w1.bias": "synth.W1.bias"}

def _legacy_draws(kind: str, d: int, heads: int, max_len: int) -> tuple[dict[str, Tensor], Tensor]:
    """The former CrossAttention's parameters drawn after ``torch.manual_seed(0)`` in its order (value, output
    projection, then the kind's), by name in its parameter order; and the next draw of the generator."""
    def named(prefix: str, layer: nn.Linear) -> dict[str, Tensor]:
        return {f"{prefix}.weight": layer.weight, f"{prefix}.bias": layer.bias}

    torch.manual_seed(0)
    tensors = named("value", nn.Linear(d, d)) | named("out", nn.Linear(d, d))
    if kind == "V":
        tensors |= named("query", nn.Linear(d, d))
        tensors |= named("key", nn.Linear(d, d))
    elif kind == "R":
        tensors["R"] = torch.randn(heads, max_len, max_len)
    else:
        tensors |= named("w1", nn.Linear(d, d))
        bound = 1.0 / math.sqrt(d // heads)
        tensors["W2"] = torch.empty(heads, max_len, d // heads).uniform_(-bound, bound)
        tensors["b2"] = torch.empty(heads, max_len).uniform_(-bound, bound)
    following = torch.rand(4)
    return {name: tensors[name].detach() for name in LEGACY_ORDER[kind]}, following


@pytest.mark.parametrize("kind", ["V", "R", "D"])
def test_initialization_and_parameter_order_are_the_former_ones(kind):
    """Same random draws in the same order (so a seeded model is the same), parameters in the same order."""
    legacy, following = _legacy_draws(kind, 32, 4, 24)  # the tiny seq2seq model's sizes
    torch.manual_seed(0)
    attn = SynthesizerCrossAttention(32, 4, 24, kind)
    assert torch.equal(torch.rand(4), following)  # the layers built after it draw the same numbers
    params = list(attn.named_parameters())
    assert [name for name, _ in params] == [RENAMED.get(name, name) for name in legacy]
    for (name, p), want in zip(params, legacy.values(), strict=True):
        assert torch.equal(p.detach(), want), name
    assert list(attn.parameters()) == [p for _, p in params]


def _legacy_inputs() -> tuple[Tensor, Tensor, Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 4, 8, generator=g, dtype=torch.float64)
    memory = torch.randn(2, 5, 8, generator=g, dtype=torch.float64)
    return x, memory, torch.tensor([[False] * 5, [False, False, False, True, True]])


def _assert_holds_the_former_tensors(attn: SynthesizerCrossAttention, legacy: dict[str, Tensor]) -> None:
    """``attn`` holds each tensor of the former layer under its new name (``RENAMED``), and its output on a padded
    source equals the paper's equations (reference.py) computed from those tensors."""
    params = dict(attn.named_parameters())
    assert set(params) == {RENAMED.get(name, name) for name in legacy}
    for name, tensor in legacy.items():
        assert torch.equal(params[RENAMED.get(name, name)].detach(), tensor.double()), name
    x, memory, mask = _legacy_inputs()
    with torch.no_grad():
        y = _cross(attn, x, memory, mask, start=1)
        ref = reference_cross_forward(attn, x, memory, mask, start=1)
    torch.testing.assert_close(y, ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", ["V", "R", "D"])
def test_same_seed_gives_the_former_weights_and_the_papers_output(kind):
    _assert_holds_the_former_tensors(build_cross(kind, seed=0, max_len=6), _legacy_draws(kind, 8, 2, 6)[0])


@pytest.mark.parametrize("kind", ["V", "R", "D"])
def test_a_state_dict_with_the_former_names_loads(kind, tmp_path):
    """Directly, under a parent's prefix, and through safetensors' load_model (the checkpoint loader's path)."""
    legacy = {name: t.double() for name, t in _legacy_draws(kind, 8, 2, 6)[0].items()}
    attn = build_cross(kind, seed=5, max_len=6)  # other weights, to be overwritten
    assert attn.load_state_dict(legacy) is not None
    _assert_holds_the_former_tensors(attn, legacy)

    parent = nn.Module()
    parent.cross_attn = build_cross(kind, seed=6, max_len=6)
    parent.load_state_dict({f"cross_attn.{name}": t for name, t in legacy.items()}, strict=True)
    _assert_holds_the_former_tensors(parent.cross_attn, legacy)

    path = tmp_path / "model.safetensors"
    save_file({f"cross_attn.{name}": t.contiguous() for name, t in legacy.items()}, str(path))
    parent.cross_attn = build_cross(kind, seed=7, max_len=6)
    load_model(parent, str(path), strict=True)
    _assert_holds_the_former_tensors(parent.cross_attn, legacy)
    # and the layer saves under its own names, which load back
    assert set(attn.state_dict()) == {RENAMED.get(name, name) for name in legacy}
    build_cross(kind, seed=8, max_len=6).load_state_dict(attn.state_dict(), strict=True)


# Measured on the former CrossAttention (commit 6b771a6): tiny_model("seq2seq", cross_kind=kind, dropout=p,
# attention_dropout=p) of tests/models/helpers.py, then train(model, "seq2seq", steps=8); the loss of every step.
# Regression pin: no oracle reproduces a seeded training run's draws (init, dropout masks, batches), and these
# losses are what keeps seeded seq2seq runs from before the registry reproducible; the layer's function itself is
# checked against reference.py above.
LEGACY_LOSSES = {
    ("V", 0.0): [4.881453514099121, 3.8924410343170166, 3.7004618644714355, 3.3271708488464355, 2.8848507404327393,
                 2.825259208679199, 2.766407012939453, 2.679967164993286],
    ("V", 0.1): [4.627985954284668, 3.8543174266815186, 3.635110855102539, 3.29707407951355, 2.866203784942627,
                 2.839350938796997, 2.757631540298462, 2.6886343955993652],
    ("R", 0.0): [5.09340763092041, 3.9393720626831055, 3.570958137512207, 3.2169480323791504, 2.8059210777282715,
                 2.813446283340454, 2.797976493835449, 2.709353446960449],
    ("R", 0.1): [4.790195465087891, 3.9124596118927, 3.626410961151123, 3.258356809616089, 2.863894462585449,
                 2.8649985790252686, 2.8296267986297607, 2.7405946254730225],
    ("D", 0.0): [4.747077465057373, 3.8394272327423096, 3.609593152999878, 3.2842965126037598, 2.90767765045166,
                 2.87138032913208, 2.7934763431549072, 2.7042129039764404],
    ("D", 0.1): [4.5371503829956055, 3.8566155433654785, 3.6193687915802, 3.301213264465332, 2.9063117504119873,
                 2.8847081661224365, 2.79258131980896, 2.729252338409424],
}


@pytest.mark.parametrize(("kind", "dropout"), list(LEGACY_LOSSES))
def test_a_seq2seq_model_trains_to_the_former_losses(kind, dropout):
    """Same seed, same initial weights and the same losses as before (bitwise on the machine that measured them;
    the tolerance only allows for another CPU's float32 kernels)."""
    model = tiny_model("seq2seq", cross_kind=kind, dropout=dropout, attention_dropout=dropout)
    losses = train(model, "seq2seq", steps=8)
    assert losses == pytest.approx(LEGACY_LOSSES[kind, dropout], rel=1e-6)
