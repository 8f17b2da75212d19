"""The models' ``head_dim`` (T5's ``d_kv``): every attention layer of the language model and the encoder-decoder
(cross-attention included) gets heads of that width, the config refuses it for mixers without a head width, the
default builds the models as before, and the run config takes ``model.head_dim``."""

from __future__ import annotations

import pytest
import torch

from synthformer.common.config import ConfigError
from synthformer.models import ClassifierConfig, LMConfig, Seq2SeqConfig, build_model, num_parameters

from .helpers import tiny_config, tiny_model


def _state_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("arch", ["lm", "seq2seq"])
def test_head_dim_defaults_to_none_and_builds_the_model_as_before(arch):
    config = tiny_config(arch)
    assert config.head_dim is None and config.attention_head_dim is None and config.to_dict()["head_dim"] is None
    old = {k: v for k, v in config.to_dict().items() if k != "head_dim"}  # a model_config.json from before
    assert type(config).from_dict(old) == config
    same = tiny_model(arch, head_dim=config.d_model // config.n_heads)  # the width d_model // n_heads: no change
    assert _state_equal(tiny_model(arch), same)


def test_every_attention_layer_of_the_encoder_decoder_gets_the_width():
    model = tiny_model("seq2seq", head_dim=16, n_heads=2, encoder_kind=["R", "D+V"], decoder_kind="FR+V",
                       cross_kind="R+V")  # d_model 32: 2 heads of 16 = 32, 4 heads of 16 = 64 below
    wide = tiny_model("seq2seq", head_dim=16, encoder_kind=["R", "D+V"], decoder_kind="FR+V", cross_kind="R+V")
    for layer in [*wide.encoder.layers, *wide.decoder.layers]:
        assert (layer.self_attn.head_dim, layer.self_attn.inner_dim) == (16, 64)
        assert layer.self_attn.out.weight.shape == (32, 64)
    for layer in wide.decoder.layers:
        assert (layer.cross_attn.head_dim, layer.cross_attn.value.weight.shape) == (16, (64, 32))
    assert num_parameters(wide) > num_parameters(model)
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, 16, (2, 7), generator=g)
    tgt = torch.randint(4, 16, (2, 5), generator=g)
    wide.eval()
    with torch.no_grad():
        full = wide(src_ids=src, tgt_ids=tgt)["logits"]  # (B, T, V)
        memory, mask = wide.encode(src)
        assert torch.allclose(wide.decode(tgt, memory, mask), full, atol=1e-6)


def test_the_language_model_decodes_step_by_step_with_a_head_dim():
    model = tiny_model("lm", head_dim=12, decoder_kind="R+V").eval()
    ids = torch.randint(4, 16, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(ids)["logits"]
        cache = model.init_cache(2)
        steps = []
        for t in range(ids.shape[1]):
            logits, cache = model.decode_step(ids[:, t : t + 1], cache)
            steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=0)
    assert model.decoder.layers[0].self_attn.value.weight.shape == (4 * 12, 32)


def test_d_model_need_not_be_divisible_by_n_heads_with_a_head_dim():
    config = tiny_config("lm", d_model=30, n_heads=4, head_dim=8)
    assert build_model(config)(torch.randint(4, 16, (1, 5)))["logits"].shape == (1, 5, 16)
    with pytest.raises(ValueError, match=r"d_model \(30\) must be divisible by n_heads \(4\)"):
        tiny_config("lm", d_model=30, n_heads=4)


@pytest.mark.parametrize("bad", [0, -1, True, 8.0])
def test_a_bad_head_dim_is_named(bad):
    with pytest.raises(ValueError, match=rf"head_dim must be a positive integer, got {bad!r}"):
        tiny_config("seq2seq", head_dim=bad)


def test_a_mixer_without_a_head_width_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^head_dim=16: decoder_kind='LightConv' takes no attention head width: "
                                          r"it is a whole token mixer without a head_dim option"):
        tiny_config("lm", decoder_kind="LightConv", head_dim=16)
    with pytest.raises(ConfigError, match=r"^head_dim=16: encoder_kind\[1\]='DynamicConv' takes no attention"):
        tiny_config("seq2seq", encoder_kind=["V", "DynamicConv"], head_dim=16)
    with pytest.raises(ConfigError, match=r"^head_dim=4 in the options of encoder layer 0: encoder_kind='LightConv'"):
        tiny_config("classifier", encoder_kind="LightConv", kind_options={"head_dim": 4})
    # d_model // n_heads (32 // 4) is every mixer's own width: nothing to refuse, nothing changed
    same = tiny_model("lm", decoder_kind="LightConv", head_dim=8)
    assert _state_equal(same, tiny_model("lm", decoder_kind="LightConv"))


def test_the_classifier_keeps_its_head_dim_and_takes_the_attention_width_as_an_option():
    """The classifier's ``head_dim`` is its MLP head's width (as before); its attention's width is the mixers'
    ``head_dim`` option, through ``kind_options``."""
    config = tiny_config("classifier", head="mlp", head_dim=24, encoder_kind=["R+V", "Linformer"],
                         kind_options={"head_dim": 16})
    assert isinstance(config, ClassifierConfig) and config.attention_head_dim is None and config.head_width == 24
    model = build_model(config)
    assert model.encoder.layers[0].self_attn.inner_dim == 64 and model.encoder.layers[1].self_attn.head_dim == 16
    assert model.head[0].out_features == 24


def test_a_run_config_takes_model_head_dim():
    """The translation config of the heads study, at 32 heads of 16 (``model.head_dim=16``)."""
    from synthformer.tasks.run.config import load_run_config

    run = load_run_config("configs/mt_multi30k_de_en.yaml", ["model.encoder_kind=R", "model.decoder_kind=R",
                                                             "model.n_heads=32", "model.head_dim=16"])
    assert isinstance(run.model, Seq2SeqConfig) and (run.model.n_heads, run.model.head_dim) == (32, 16)
    with pytest.raises(ConfigError, match=r"model: head_dim=16: decoder_kind='LightConv' takes no attention"):
        load_run_config("configs/mt_multi30k_de_en.yaml", ["model.decoder_kind=LightConv", "model.head_dim=16"])
    assert LMConfig.attention_head_dim_field == "head_dim" and ClassifierConfig.attention_head_dim_field is None
