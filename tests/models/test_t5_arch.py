"""T5's architecture as the encoder-decoder's ``variant="t5"``: its parts (RMS norm, relative position buckets,
initialisation), its config checks, and T5's relative position bias with every attention kind (added to the
pre-softmax logits, once per mixture) on every path: fast paths, plain path and the slow reference."""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import SynthesizerAttention
from synthformer.attention.fast.settings import fast_path_settings
from synthformer.common.config import ConfigError
from synthformer.models import Seq2SeqConfig, build_model
from synthformer.models.t5 import RMSNorm, relative_position_bucket

from ..attention.conftest import D_MODEL, HEADS, MAX_LEN, build, padding
from ..attention.reference import reference_forward
from .helpers import assert_cached_decoding_equals_forward

T5_TINY = dict(vocab_size=64, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=16, dropout=0.0, pad_id=0,
               bos_id=0, eos_id=1, variant="t5", positions="none", position_bias="t5")


def test_rms_norm_scales_by_the_root_mean_square_without_centring_and_accumulates_in_fp32():
    norm = RMSNorm(4)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 0.5, 1.0]))
    x = torch.tensor([[3.0, -1.0, 2.0, 6.0]])
    rms = (x.pow(2).mean() + 1e-6).sqrt()
    torch.testing.assert_close(norm(x), norm.weight * x / rms)
    big = torch.full((1, 4), 300.0, dtype=torch.float16)  # 300^2 overflows fp16: the variance is taken in fp32
    assert torch.isfinite(norm.half()(big)).all()


@pytest.mark.parametrize("relative,bidirectional,bucket", [
    (0, True, 0), (-1, True, 1), (1, True, 17), (-7, True, 7), (-8, True, 8), (-200, True, 15), (200, True, 31),
    (5, False, 0), (-5, False, 5), (-15, False, 15), (-20, False, 17), (-127, False, 31), (-500, False, 31),
])
def test_relative_position_buckets_are_t5s(relative, bidirectional, bucket):
    # exact up to half a direction's buckets, then log-spaced up to max_distance 128 (32 buckets)
    got = relative_position_bucket(torch.tensor([relative]), bidirectional, 32, 128)
    assert got.tolist() == [bucket]


def test_the_t5_variant_has_t5s_parts_and_initialisation():
    torch.manual_seed(0)
    model = build_model(Seq2SeqConfig(**{**T5_TINY, "d_model": 64, "d_ff": 128}))
    names = dict(model.named_parameters())
    assert not [n for n in names if n.endswith(".bias")]  # no biases anywhere
    assert "encoder.relative_bias.embedding.weight" in names and "decoder.relative_bias.embedding.weight" in names
    assert not [n for n in names if "layers.1" in n and "relative" in n]  # one table per stack, not per layer
    d, dh = 64, 16
    qk = model.encoder.layers[0].self_attn.synth.qk.weight.detach()
    stds = {"q": qk[:d].std(), "k": qk[d:].std(), "embedding": model.src_embed.token.weight.detach().std(),
            "wo": model.encoder.layers[0].ffn.wo.weight.detach().std()}
    expected = {"q": (d * dh) ** -0.5, "k": d**-0.5, "embedding": 1.0, "wo": 128**-0.5}
    for name, std in stds.items():
        assert abs(float(std) / expected[name] - 1) < 0.15, name
    assert model.encoder.layers[0].self_attn.synth.scale == 1.0  # T5's dot product is not scaled


@pytest.mark.parametrize("changes,match", [
    ({"positions": "sinusoidal"}, "positions='sinusoidal' is not T5's"),
    ({"ffn": "conv_relu"}, "ffn='conv_relu' is not T5's"),
    ({"variant": "transformer", "positions": "learned", "ffn": "gated-gelu"}, "ffn='gated-gelu'"),
    ({"decoder_kind": "LightConv"}, "decoder_kind='LightConv' is a whole token mixer"),
    ({"variant": "transformer", "positions": "learned", "encoder_kind": "Linformer"}, "encoder_kind='Linformer'"),
    ({"position_bias": "alibi"}, "position_bias must be one of"),
    ({"relative_attention_max_distance": 8}, "relative_attention_max_distance must exceed"),
])
def test_settings_t5_cannot_have_are_one_line_errors(changes, match):
    with pytest.raises(ValueError, match=match) as err:
        Seq2SeqConfig(**{**T5_TINY, **changes})
    assert "\n" not in str(err.value)


def test_a_whole_token_mixer_with_the_position_bias_is_a_config_error():
    with pytest.raises(ConfigError, match="LightConv"):
        Seq2SeqConfig(**{**T5_TINY, "encoder_kind": "LightConv"})


def test_old_seq2seq_configs_load_unchanged():
    old = {k: v for k, v in Seq2SeqConfig().to_dict().items()
           if k not in ("variant", "position_bias", "relative_attention_num_buckets",
                        "relative_attention_max_distance", "scale_decoder_outputs")}
    config = Seq2SeqConfig.from_dict(old)
    assert (config.variant, config.position_bias, config.scale_decoder_outputs) == ("transformer", "none", False)


BIAS_KINDS = ["V", "R", "FR", "D", "FD", "Conv", "R+V", "D+V"]


def bias_for(heads: int, length: int, seed: int = 3) -> torch.Tensor:
    return torch.randn(1, heads, length, length, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kind", BIAS_KINDS)
def test_the_position_bias_is_added_to_the_logits_of_every_kind_on_every_path(kind, causal):
    attn = build(kind, causal=causal).eval()
    b, length = 3, 6
    x = torch.randn(b, length, D_MODEL, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    mask, bias = padding(b, length), bias_for(HEADS, length)
    expected = reference_forward(attn, x, mask, bias)  # softmax(mask(S(X) + bias)) G(X): the mixed S, once
    with torch.no_grad():
        fast = attn(x, key_padding_mask=mask, position_bias=bias)
        with fast_path_settings(features="sdpa"):
            sdpa = attn(x, key_padding_mask=mask, position_bias=bias)
        attn.use_fast_paths = False
        plain = attn(x, key_padding_mask=mask, position_bias=bias)
        unbiased = attn(x, key_padding_mask=mask)
    real = ~mask[..., None]  # rows of padded queries are not compared (they differ between paths by design)
    for got in (fast, sdpa, plain):
        torch.testing.assert_close(got * real, expected * real, atol=1e-10, rtol=1e-10)
    assert not torch.allclose(unbiased * real, expected * real)  # the bias does change the output


@pytest.mark.parametrize("kind", ["V", "R+V", "D"])
def test_cached_decoding_with_the_bias_equals_the_full_forward(kind):
    attn = build(kind, causal=True).eval()
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    bias = bias_for(HEADS, MAX_LEN)
    with torch.no_grad():
        full = attn(x, position_bias=bias)
        cache = attn.init_cache(2, dtype=torch.float64)
        steps = []
        for t in range(MAX_LEN):
            y, cache = attn(x[:, t : t + 1], cache=cache, position_bias=bias[:, :, t : t + 1, : t + 1])
            steps.append(y)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-10, rtol=1e-10)


def test_a_bias_of_the_wrong_shape_is_refused():
    attn = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="V")
    with pytest.raises(ValueError, match=r"position_bias must have shape \(1 or 2, 2, 5, 5\)"):
        attn(torch.randn(2, 5, D_MODEL), position_bias=torch.zeros(1, HEADS, 4, 5))


@pytest.mark.parametrize("ffn", ["relu", "gated-gelu"])
def test_a_t5_model_with_a_mixture_decodes_with_its_cache_as_its_full_forward(ffn):
    torch.manual_seed(0)
    model = build_model(Seq2SeqConfig(**{**T5_TINY, "ffn": ffn, "encoder_kind": "D+V", "decoder_kind": "R+V",
                                         "scale_decoder_outputs": True})).eval()
    src = torch.randint(2, 64, (2, 7))
    src[1, 5:] = 0
    tgt = torch.randint(2, 64, (2, 6))
    assert_cached_decoding_equals_forward(model, src, tgt)


@pytest.mark.parametrize("kind", ["R+V", "FR+V", "D+V", "FD+V", "R+D+V"])
def test_a_mixture_grown_from_v_starts_at_vs_output_bit_for_bit_and_every_new_part_gets_a_gradient(kind):
    from synthformer.tasks.run.grow import rename_grown_keys, start_grown_mixtures_

    torch.manual_seed(0)
    options = {"bias": False, "scaled": False}  # T5's V
    old = torch.nn.ModuleDict({"attn": SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="V", **options)})
    with torch.no_grad():
        for p in old.parameters():
            p.mul_(8.0)  # trained-like spread weights: wide logits
    new = torch.nn.ModuleDict({"attn": SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind=kind, **options)})
    grown = {"attn": kind.split("+").index("V")}
    new.load_state_dict(rename_grown_keys(old.state_dict(), grown), strict=False)
    start_grown_mixtures_(new, grown)
    x = torch.randn(2, 6, D_MODEL)
    bias = torch.randn(1, HEADS, 6, 6, requires_grad=True)  # T5's relative position bias (learned)
    with torch.no_grad():
        assert torch.equal(new["attn"].eval()(x, position_bias=bias), old["attn"].eval()(x, position_bias=bias))
    y = new["attn"].train()(x, position_bias=bias)  # no attention dropout: training starts at V's output too
    assert torch.equal(y, old["attn"].train()(x, position_bias=bias))
    y.pow(2).sum().backward()
    for n, part in enumerate(new["attn"].synth.parts):
        if n != grown["attn"]:
            assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in part.parameters()), part.name
    assert new["attn"].synth.alpha_logits.grad.abs().sum() > 0
