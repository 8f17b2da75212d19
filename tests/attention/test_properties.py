"""Registry-wide property tests: each rule of the attention semantics, for every registered kind and mixture.

A kind registered later (by the library or a user) is covered automatically through ``ALL_KINDS``.
"""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import SynthesizerAttention, get_kind, parse_kind, register, registered_kinds, unregister
from synthformer.attention.base import SynthesizingFunction

from .conftest import D_MODEL, HEADS, MAX_LEN, TOKEN_LOCAL_KINDS, build, padding


def _parts(kind: str) -> list[type[SynthesizingFunction]]:
    return parse_kind(kind)


# ---------------------------------------------------------------- lengths


def test_output_shape_and_cropping(kind):
    attn = build(kind)
    for length in (1, 3, MAX_LEN):
        x = torch.randn(2, length, D_MODEL, dtype=torch.float64)
        assert attn(x).shape == (2, length, D_MODEL)
        assert attn.attention_weights(x).shape == (2, HEADS, length, length)


def test_longer_than_max_len_names_both_numbers(kind):
    attn = build(kind)
    with pytest.raises(ValueError, match=rf"^sequence length {MAX_LEN + 1} exceeds max_len {MAX_LEN} of this "
                                         rf"attention layer; build the layer with max_len >= {MAX_LEN + 1}"):
        attn(torch.randn(1, MAX_LEN + 1, D_MODEL, dtype=torch.float64))


def test_a_dtype_mismatch_names_both_dtypes(kind):
    attn = build(kind)  # float64 parameters
    with pytest.raises(TypeError, match=r"input dtype torch.float32 differs from the layer's parameters "
                                        r"\(torch.float64\): convert the layer"):
        attn(torch.randn(1, 3, D_MODEL, dtype=torch.float32))


def test_length_dependent_parameters_are_sized_for_max_len(kind):
    """Parameters held directly by a synthesizing function (not its Linear layers) that have a length axis."""
    attn = build(kind)
    parts = attn.synth.parts if hasattr(attn.synth, "parts") else [attn.synth]
    length_params = {"R", "R1", "R2", "W2", "b2", "weight", "bias", "weight2", "bias2"}
    for part in parts:
        for name, p in [*part.named_parameters(recurse=False), *part.named_buffers(recurse=False)]:
            if name in length_params:
                assert p.shape[1] == MAX_LEN, (name, tuple(p.shape))


def test_cropping_uses_the_first_positions(kind):
    """A length-L batch sees the same weights as the first L rows/columns of a max_len batch (R, FR)."""
    attn = build(kind, causal=True)
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    full = attn(x)
    part = attn(x[:, :5])
    torch.testing.assert_close(part, full[:, :5], atol=1e-10, rtol=0)


# ---------------------------------------------------------------- softmax and masks


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_rows_are_distributions(kind, causal):
    attn = build(kind, causal=causal)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64)
    mask = padding(3, MAX_LEN)
    w = attn.attention_weights(x, mask)
    assert torch.isfinite(w).all() and (w >= 0).all()
    allowed = ~mask[:, None, None, :]
    if causal:
        allowed = allowed & torch.ones(MAX_LEN, MAX_LEN, dtype=torch.bool).tril()
    has_key = allowed.any(-1)  # (B, 1, L)
    sums = w.sum(-1)
    torch.testing.assert_close(sums[has_key.expand_as(sums)], torch.ones_like(sums[has_key.expand_as(sums)]))
    assert (sums[~has_key.expand_as(sums)] == 0).all()
    assert (w.masked_select(~allowed.expand_as(w)) == 0).all()


def test_causal_never_reads_the_future(kind):
    attn = build(kind, causal=True)
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    x2 = x.clone()
    x2[:, 5:] = torch.randn_like(x2[:, 5:])
    torch.testing.assert_close(attn(x)[:, :5], attn(x2)[:, :5], atol=1e-12, rtol=0)
    w = attn.attention_weights(x)
    assert (w.triu(1) == 0).all()


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_padding_content_never_leaks(kind, causal):
    attn = build(kind, causal=causal)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64)
    mask = padding(3, MAX_LEN)
    x2 = x.clone()
    x2[mask] = torch.randn_like(x2[mask]) * 10
    real = ~mask
    torch.testing.assert_close(attn(x, mask)[real], attn(x2, mask)[real], atol=1e-10, rtol=0)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_right_padding_equals_the_unpadded_sequence(kind, causal):
    attn = build(kind, causal=causal)
    x = torch.randn(1, MAX_LEN, D_MODEL, dtype=torch.float64)
    mask = torch.zeros(1, MAX_LEN, dtype=torch.bool)
    mask[0, 5:] = True
    torch.testing.assert_close(attn(x, mask)[:, :5], attn(x[:, :5]), atol=1e-10, rtol=0)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_fully_masked_rows_give_zeros_not_nan(kind, causal):
    attn = build(kind, causal=causal)
    for fast in (False, True):
        attn.use_fast_paths = fast
        x = torch.randn(2, 5, D_MODEL, dtype=torch.float64, requires_grad=True)
        mask = torch.zeros(2, 5, dtype=torch.bool)
        mask[1] = True  # every key of sample 1 is padding
        y = attn(x, mask)
        y.sum().backward()
        assert torch.isfinite(y).all() and torch.isfinite(x.grad).all()
        assert all(torch.isfinite(p.grad).all() for p in attn.parameters() if p.grad is not None)
        # with every weight zero the attention output is 0, so the layer returns the output bias
        torch.testing.assert_close(y[1], attn.out.bias.detach().expand(5, -1), atol=1e-12, rtol=0)
        assert torch.isfinite(attn.attention_weights(x.detach(), mask)).all()
        assert (attn.attention_weights(x.detach(), mask)[1] == 0).all()
        attn.zero_grad()


def test_padding_mask_validation(kind):
    attn = build(kind)
    x = torch.randn(2, 4, D_MODEL, dtype=torch.float64)
    with pytest.raises(TypeError, match="bool"):
        attn(x, torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"\(2, 4\)"):
        attn(x, torch.zeros(2, 5, dtype=torch.bool))


# ---------------------------------------------------------------- what each kind depends on


def test_input_independent_kinds_share_one_alignment(kind):
    attn = build(kind)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64)
    w = attn.attention_weights(x)
    if attn.synth.input_dependent:
        assert not torch.allclose(w[0], w[1]), "an input-dependent kind gave identical alignments"
    else:
        assert torch.equal(w[0], w[1]) and torch.equal(w[1], w[2])
        torch.testing.assert_close(w, attn.attention_weights(torch.randn_like(x)), atol=0, rtol=0)


def test_token_local_kinds_are_listed():
    """The parametrization below is not empty: the paper's token-local kinds are found by their flag."""
    assert {"D", "FD", "Bottleneck", "GLU"} <= set(TOKEN_LOCAL_KINDS)


@pytest.mark.parametrize("kind", TOKEN_LOCAL_KINDS)
def test_token_local_kinds_compute_row_i_from_token_i(kind):
    attn = build(kind)
    assert attn.synth.token_local
    x = torch.randn(1, MAX_LEN, D_MODEL, dtype=torch.float64)
    j = 3
    x2 = x.clone()
    x2[0, j] += torch.randn(D_MODEL, dtype=torch.float64)
    w, w2 = attn.attention_weights(x), attn.attention_weights(x2)
    others = [i for i in range(MAX_LEN) if i != j]
    torch.testing.assert_close(w[:, :, others], w2[:, :, others], atol=0, rtol=0)
    assert not torch.allclose(w[:, :, j], w2[:, :, j])


def test_token_local_flag_is_right_for_the_paper_kinds():
    assert [k for k in ("D", "FD", "Bottleneck", "GLU") if not get_kind(k).token_local] == []
    assert [k for k in ("V", "R", "Fix", "FR", "Conv", "ConvReluConv") if get_kind(k).token_local] == []
    assert [k for k in ("R", "Fix", "FR") if get_kind(k).input_dependent] == []


def test_fd_columns_are_an_outer_product_and_all_distinct():
    attn = build("FD")
    x = torch.randn(1, MAX_LEN, D_MODEL, dtype=torch.float64)
    logits = attn.synth.logits(x)  # (1, H, L, L)
    fd = attn.synth
    assert fd.a * fd.b >= MAX_LEN
    for h in range(HEADS):
        for i in range(MAX_LEN):
            row = logits[0, h, i]
            assert len(set(row.tolist())) == MAX_LEN, "FD columns repeat: tiling is not an outer product"


def test_fr_logits_are_r1_r2t_with_distinct_rows():
    attn = build("FR")
    fr = attn.synth
    logits = fr.logits(torch.zeros(1, MAX_LEN, D_MODEL, dtype=torch.float64))[0]
    torch.testing.assert_close(logits, fr.R1 @ fr.R2.transpose(-1, -2), atol=1e-12, rtol=0)
    assert not torch.allclose(logits[:, 0], logits[:, 1])
    assert fr.R1.shape == (HEADS, MAX_LEN, 8)  # the paper's k = 8


def test_fr_rank_option():
    attn = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="FR", k=32)
    assert attn.synth.R1.shape[-1] == 32


# ---------------------------------------------------------------- parameters


def test_parameter_count_follows_table_1(kind):
    attn = build(kind)
    trained = sum(p.numel() for p in attn.parameters() if p.requires_grad)
    assert trained == SynthesizerAttention.num_params(D_MODEL, HEADS, MAX_LEN, kind)


@pytest.mark.parametrize(
    "kind,formula",
    [  # Table 1 with d = d_model, l = max_len, k = 8, for the layer's H heads; biases listed apart
        ("V", lambda d, H, l: 2 * d * d + 2 * d),
        ("R", lambda d, H, l: H * l * l),
        ("Fix", lambda d, H, l: 0),
        ("FR", lambda d, H, l: 2 * H * l * 8),
        ("D", lambda d, H, l: d * d + d * l + (d + H * l)),
    ],
)
def test_table_1_formulas(kind, formula):
    d, H, l = 512, 8, 256
    assert get_kind(kind).num_params(d, H, l) == formula(d, H, l)
    g = SynthesizerAttention(64, 4, 16, kind=kind)
    assert sum(p.numel() for p in g.synth.parameters() if p.requires_grad) == formula(64, 4, 16)


def test_fd_formula():
    fd = get_kind("FD")
    d, H, l = 512, 8, 256  # a = b = 16
    assert fd.num_params(d, H, l) == d * d + d * (16 + 16) + d + H * 32


def test_no_query_key_projection_without_dot_product(kind):
    attn = build(kind)
    has_v = any(p.name == "V" for p in _parts(kind))
    names = [n for n, _ in attn.named_parameters()]
    assert any(".qk." in f".{n}" for n in names) == has_v
    assert attn.synth.uses_qk == has_v


def test_random_has_no_qk_flops():
    """R computes exactly the value and output projections and one P @ V product: no Q or K."""
    from torch.utils.flop_counter import FlopCounterMode

    B, L, d, H = 2, 16, 64, 4
    attn = SynthesizerAttention(d, H, L, kind="R")
    with FlopCounterMode(display=False) as counter:
        attn(torch.randn(B, L, d))
    projections = 2 * (2 * B * L * d * d)
    mixing = 2 * B * L * L * d
    assert counter.get_total_flops() == projections + mixing


def test_random_alignment_is_a_trained_saved_parameter():
    attn = build("R")
    assert isinstance(attn.synth.R, torch.nn.Parameter) and attn.synth.R.requires_grad
    assert "synth.R" in attn.state_dict()
    attn(torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)).sum().backward()
    assert attn.synth.R.grad is not None and attn.synth.R.grad.abs().sum() > 0


def test_fixed_alignment_is_frozen_but_saved_and_restored():
    attn = build("Fix", seed=1)
    assert "synth.R" in attn.state_dict()
    assert not any(p is attn.synth.R for p in attn.parameters())
    other = build("Fix", seed=2)
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    assert not torch.allclose(attn(x), other(x))
    other.load_state_dict(attn.state_dict())
    torch.testing.assert_close(attn(x), other(x), atol=0, rtol=0)
    attn.requires_grad_(True)
    assert not attn.synth.R.requires_grad


def test_random_softmax_rows_sum_to_one():
    """The bug where softmax is never applied to R (rows summing to ~0.04) is impossible."""
    attn = build("R")
    w = attn.attention_weights(torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64))
    torch.testing.assert_close(w.sum(-1), torch.ones(2, HEADS, MAX_LEN, dtype=torch.float64))


def test_mixture_weights_are_learned_per_head_and_sum_to_one():
    attn = build("R+D+V")
    alpha = attn.synth.alpha()
    assert alpha.shape == (HEADS, 3)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(HEADS, dtype=torch.float64))
    assert (alpha > 0).all()
    attn(torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)).sum().backward()
    assert attn.synth.alpha_logits.grad.abs().sum() > 0
    fresh = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="R+V")
    torch.testing.assert_close(fresh.synth.alpha(), torch.full((HEADS, 2), 0.5))


def test_mixture_is_the_alpha_weighted_sum_of_its_parts():
    attn = build("R+V")
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    r, v = attn.synth.parts
    alpha = attn.synth.alpha()
    want = alpha[:, 0, None, None] * r.logits(x) + alpha[:, 1, None, None] * v.logits(x)
    torch.testing.assert_close(attn.synth.logits(x), want)
    # V's part is scaled by 1/sqrt(d_h)
    q, k = v.qk(x).chunk(2, -1)
    dh = D_MODEL // HEADS
    q0, k0 = q[..., :dh], k[..., :dh]
    torch.testing.assert_close(v.logits(x)[:, 0], q0 @ k0.transpose(-1, -2) / dh**0.5)


# ---------------------------------------------------------------- names, options, registry


def test_aliases_and_case():
    assert SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="random+vanilla").kind == "R+V"
    assert SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="dense").kind == "D"
    assert SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="factorized_random").kind == "FR"
    assert SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="fr+d").kind == "FR+D"


def test_unknown_kind_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown attention kind 'Q'.*valid kinds: V") as err:
        SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="R+Q")
    for name in registered_kinds():
        assert name in str(err.value)


@pytest.mark.parametrize("bad", ["", "R+", "R+R", 3])
def test_malformed_kinds(bad):
    with pytest.raises(ValueError):
        SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind=bad)


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['rank'\].*valid options( for this kind)?: k"):
        SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="FR", rank=4)
    with pytest.raises(TypeError, match=r"\['k'\].*'D'"):  # an option of a kind that is not in the layer
        SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="D", k=4)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"d_model": 10, "n_heads": 3}, "divisible"),
        ({"max_len": 0}, "max_len"),
        ({"dropout": 1.0}, "dropout"),
        ({"kind": "FD", "a": 2, "b": 2}, "a \\* b >= max_len"),
        ({"kind": "FR", "k": 0}, "rank"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    args = {"d_model": D_MODEL, "n_heads": HEADS, "max_len": MAX_LEN, **kwargs}
    with pytest.raises(ValueError, match=match):
        SynthesizerAttention(**args)


def test_bad_input_shape():
    attn = build("R")
    # names the expected width and the shape it got (whatever the wording: shell and baselines share this rule)
    with pytest.raises(ValueError, match=rf"\b{D_MODEL}\b.*\(2, 4, {D_MODEL + 1}\)"):
        attn(torch.randn(2, 4, D_MODEL + 1, dtype=torch.float64))


def test_a_user_kind_registers_and_joins_mixtures():
    @register("TestBand", aliases=("test_band",))
    class Band(SynthesizingFunction):
        """Logit -|i - j|: a fixed local window (a user's synthesizing function)."""

        input_dependent = False

        def logits(self, x, start=0, state=None, key_padding_mask=None):
            t = x.shape[1]
            q = torch.arange(start, start + t, dtype=x.dtype)
            k = torch.arange(start + t, dtype=x.dtype)
            return -(q[:, None] - k[None, :]).abs().expand(1, self.n_heads, t, start + t)

        @classmethod
        def num_params(cls, d_model, n_heads, max_len, **options):
            return 0

    try:
        assert "TestBand" in registered_kinds()
        attn = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="test_band+V")
        assert attn(torch.randn(2, MAX_LEN, D_MODEL)).shape == (2, MAX_LEN, D_MODEL)
        with pytest.raises(ValueError, match="already registered"):
            register("testband")(Band)
    finally:
        unregister("TestBand")
    assert "TestBand" not in registered_kinds()


def test_dropout_only_in_training(kind):
    torch.manual_seed(0)
    attn = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind=kind, dropout=0.5).double()
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    attn.eval()
    torch.testing.assert_close(attn(x), attn(x), atol=0, rtol=0)
    attn.train()
    assert not torch.allclose(attn(x), attn(x))


def test_bf16_autocast_runs_and_stays_close_to_fp32(kind):
    torch.manual_seed(0)
    attn = SynthesizerAttention(32, 4, 16, kind=kind)
    x = torch.randn(2, 16, 32, requires_grad=True)
    mask = torch.zeros(2, 16, dtype=torch.bool)
    mask[1, 10:] = True
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = attn(x, mask)
    low.float().sum().backward()
    assert torch.isfinite(low).all() and torch.isfinite(x.grad).all()
    assert (low.float() - attn(x, mask)).abs().max().item() < 0.1


def test_fd_factor_sizes():
    from synthformer.attention.dense import factor_sizes

    assert factor_sizes(256, None, None) == (16, 16)  # the paper's a * b = l
    assert factor_sizes(512, None, None) == (16, 32)
    assert factor_sizes(97, None, None) == (10, 10)  # a prime: ceil(sqrt(l)) and crop
    assert factor_sizes(512, 8, None) == (8, 64)
    with pytest.raises(ValueError, match="a \\* b >= max_len"):
        factor_sizes(512, 8, 8)
