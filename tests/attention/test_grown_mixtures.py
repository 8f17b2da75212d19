"""A mixture grown from a pretrained V layer (``init_from`` a V run into ``R+V``, ``D+V``, ...) starts at V's output
bit for bit in float32, on every path V takes (SDPA with and without padding, T5's position bias, causal layers,
decoding, given positions, the plain path), in eval mode and in training without attention dropout; its new parts
get the whole mixture's gradient, and from the first update on the layer computes what an ordinary mixture does."""

from __future__ import annotations

import copy

import pytest
import torch

from synthformer.attention import SynthesizerAttention, registered_kinds
from synthformer.attention.mixture import grown_alpha_logits
from synthformer.common.config import ConfigError
from synthformer.tasks.run.grow import rename_grown_keys, start_grown_mixtures_

D, H, L = 32, 4, 12
T5_V = {"bias": False, "scaled": False}  # T5's V: no biases, the scale folded into the queries' initialisation


def _grow(kind: str, causal: bool = False, dtype=torch.float32, dropout: float = 0.0, **options):
    """(pretrained V layer with trained-like spread weights, the mixture grown from it), both in eval mode."""
    torch.manual_seed(0)
    opts = {**T5_V, **options}
    old = torch.nn.ModuleDict({"attn": SynthesizerAttention(D, H, L, "V", causal, dropout, **opts)}).to(dtype)
    with torch.no_grad():
        for p in old.parameters():
            p.mul_(8.0)  # wide logits, as a trained model's: small rounding differences would show
    new = torch.nn.ModuleDict({"attn": SynthesizerAttention(D, H, L, kind, causal, dropout, **opts)}).to(dtype)
    grown = {"attn": kind.split("+").index("V")}
    new.load_state_dict(rename_grown_keys(old.state_dict(), grown), strict=False)
    start_grown_mixtures_(new, grown)
    return old["attn"].eval(), new["attn"].eval()


def _growable() -> tuple[list[str], list[str]]:
    """(the registered kinds that can be a new part next to V, those that cannot), found by growing each."""
    ok, refused = [], []
    with torch.random.fork_rng(devices=[]):  # collecting leaves the global seed state as it was
        for name in registered_kinds():
            if name == "V":
                continue
            try:
                _grow(f"{name}+V")
                ok.append(name)
            except ConfigError:
                refused.append(name)
    return ok, refused


GROWABLE, REFUSED = _growable()
#: every registered kind grown next to V, V first once, and mixtures of three and four parts
GROWN_KINDS = [f"{k}+V" for k in GROWABLE] + ["V+R", "R+D+V", "R+FR+D+V"]


def _twin(new: SynthesizerAttention) -> SynthesizerAttention:
    """The same weights as an ordinary mixture (never in the grown state)."""
    twin = copy.deepcopy(new)
    twin.synth.end_growth()
    return twin


def test_every_kind_is_grown_or_refused_and_the_usual_ones_grow():
    assert {"R", "FR", "D", "FD"} <= set(GROWABLE) and "Fix" in REFUSED
    for name in REFUSED:
        with pytest.raises(ConfigError, match=rf"init_from: attn \({name}\+V\): attention kind '{name}' cannot"):
            _grow(f"{name}+V")


@pytest.mark.parametrize("n_parts", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_pretrained_parts_weight_is_a_power_of_two(n_parts, dtype):
    for part in (0, n_parts - 1):
        logits = torch.tensor(grown_alpha_logits(n_parts, part), dtype=dtype)
        alpha = torch.softmax(logits, -1)
        assert alpha[part] == (1 / n_parts if n_parts in (2, 4) else 0.5)
        assert torch.frexp(alpha[part]).mantissa == 0.5 and torch.isclose(alpha.sum(), torch.ones((), dtype=dtype))
        assert (alpha > 0).all()  # every new part keeps a share, hence a gradient


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("kind", GROWN_KINDS)
def test_a_grown_mixture_starts_at_the_pretrained_output_bit_for_bit(kind, causal):
    old, new = _grow(kind, causal)
    x = torch.randn(3, L, D)
    pad = torch.zeros(3, L, dtype=torch.bool)
    pad[1, L - 5 :] = True
    bias = 4 * torch.randn(1, H, L, L)  # T5's relative position bias
    cases = {"plain": {}, "padding": {"key_padding_mask": pad}, "bias": {"position_bias": bias},
             "padding and bias": {"key_padding_mask": pad, "position_bias": bias}}
    with torch.no_grad():
        for name, kwargs in cases.items():
            assert torch.equal(new(x, **kwargs), old(x, **kwargs)), name
        new.use_fast_paths = old.use_fast_paths = False
        assert torch.equal(new(x, key_padding_mask=pad), old(x, key_padding_mask=pad)), "the plain path"
        new.use_fast_paths = old.use_fast_paths = True
    # training without attention dropout: the same value, with a graph; T5's bias is learned (SDPA's CPU kernel
    # depends on whether its inputs need a gradient)
    new.train(), old.train()
    bias.requires_grad_()
    for name, kwargs in cases.items():
        assert torch.equal(new(x, **kwargs), old(x, **kwargs)), f"{name}, training"
    assert new.synth.grown_view() is not None  # no backward pass yet: still grown


def test_left_padded_positions_and_decoding_start_at_the_pretrained_output():
    old, new = _grow("R+V", causal=True)
    x = torch.randn(2, L, D)
    pad = torch.zeros(2, L, dtype=torch.bool)
    pad[1, :4] = True
    positions = (~pad).long().cumsum(-1).sub(1).clamp(min=0)
    with torch.no_grad():
        assert torch.equal(new(x, key_padding_mask=pad, positions=positions),
                           old(x, key_padding_mask=pad, positions=positions))
        steps = {}
        for name, layer in (("old", old), ("new", new)):
            cache = layer.init_cache(2)
            out = [layer(x[:, :5], pad[:, :5], cache)[0]]  # a prompt of 5, then one token at a time
            out += [layer(x[:, t : t + 1], pad[:, : t + 1], cache)[0] for t in range(5, L)]
            steps[name] = torch.cat(out, 1)
    assert torch.equal(steps["new"], steps["old"])


@pytest.mark.parametrize("kind", ["R+V", "D+V", "R+D+V"])
def test_in_float64_too(kind):
    old, new = _grow(kind, dtype=torch.float64)
    x = torch.randn(2, L, D, dtype=torch.float64)
    with torch.no_grad():
        assert torch.equal(new(x), old(x))


@pytest.mark.parametrize("kind", ["R+V", "D+V", "FR+V", "R+D+V"])
def test_the_new_parts_get_the_whole_mixtures_gradient_then_the_grown_state_ends(kind):
    _, new = _grow(kind)
    twin = _twin(new)
    new.train(), twin.train()
    x = torch.randn(2, L, D)
    weight = torch.randn(2, L, D)  # a linear loss: both layers' outputs get the same gradient
    (new(x) * weight).sum().backward()
    (twin(x) * weight).sum().backward()
    grads = dict(twin.named_parameters())
    for name, p in new.named_parameters():
        if name.startswith("out."):  # reads the attention's output, V's exact one here: equal to rounding
            torch.testing.assert_close(p.grad, grads[name].grad)
        else:  # everything before it gets the ordinary mixture's gradient, bit for bit
            assert torch.equal(p.grad, grads[name].grad), name
    old_part = kind.split("+").index("V")
    for n, part in enumerate(new.synth.parts):
        if n != old_part:
            assert any(p.grad.abs().sum() > 0 for p in part.parameters()), part.name
    assert new.synth.alpha_logits.grad.abs().sum() > 0
    assert new.synth.grown_view() is None  # a backward pass: an update may follow


def test_after_an_update_the_layer_computes_what_an_ordinary_mixture_does():
    _, new = _grow("D+V")
    x = torch.randn(2, L, D)
    new.train()
    new(x).pow(2).sum().backward()
    torch.optim.SGD(new.parameters(), lr=1e-3).step()
    twin = _twin(new)  # the updated weights, never grown
    with torch.no_grad():
        assert torch.equal(new.eval()(x), twin.eval()(x))


def test_any_in_place_change_of_a_new_part_ends_the_grown_state():
    _, new = _grow("R+V")
    twin = _twin(new)
    x = torch.randn(2, L, D)
    with torch.no_grad():
        for layer in (new, twin):
            layer.synth.parts[0].R.add_(0.01)
        assert new.synth.grown_view() is None
        assert torch.equal(new(x), twin(x))
    _, new = _grow("R+V")
    new.load_state_dict(new.state_dict())  # copies into the tensors in place: it could hold any values
    assert new.synth.grown_view() is None


def test_with_attention_dropout_only_a_forward_without_graph_stays_exact():
    old, new = _grow("R+V", dropout=0.2)
    twin = _twin(new)
    x = torch.randn(2, L, D)
    old.train(), new.train(), twin.train()
    with torch.no_grad():  # V's own path, its own dropout draws
        torch.manual_seed(1)
        expected = old(x)
        torch.manual_seed(1)
        assert torch.equal(new(x), expected)
    # with a graph for the new parts: the ordinary path (two paths could not share one dropout mask)
    torch.manual_seed(2)
    ordinary = twin(x)
    torch.manual_seed(2)
    assert torch.equal(new(x), ordinary)
