"""ModelConfig validation, (de)serialization and the named presets."""

from __future__ import annotations

import dataclasses

import pytest

from synthformer.models import ModelConfig, build_model, get_preset, list_presets, num_parameters

from .helpers import tiny_config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(d_model=30, n_heads=4), r"d_model \(30\) must be divisible by n_heads \(4\)"),
        (dict(n_layers=0), r"n_layers must be a positive integer, got 0"),
        (dict(n_layers=True), r"n_layers must be a positive integer, got True"),
        (dict(ffn="gelu"), r"ffn must be one of 'relu', 'conv_relu', got 'gelu'"),
        (dict(norm="sandwich"), r"norm must be one of 'pre', 'post', got 'sandwich'"),
        (dict(positions="rotary"), r"positions must be one of 'sinusoidal', 'learned', got 'rotary'"),
        (dict(dropout=1.0), r"dropout must be a number in \[0, 1\), got 1.0"),
        (dict(label_smoothing=-0.1), r"label_smoothing must be a number in \[0, 1\), got -0.1"),
        (dict(decoder_kind="Q"), r"decoder_kind='Q' is not a known token mixer: unknown attention kind 'Q'"),
        (dict(decoder_kind=["V", "R", "D"]), r"decoder_kind has 3 entries but the decoder has 2 layers"),
        (dict(decoder_kind=["V", "X"]), r"decoder_kind\[1\]='X' is not a known token mixer"),
        (dict(decoder_kind_options=[{}]), r"decoder_kind_options has 1 entries but the decoder has 2 layers"),
        (dict(num_classes=3),
         r"num_classes: not a setting of arch 'lm' \(LMConfig\) \(num_classes=3 is a setting of arch 'classifier' "
         r"and 'dual_encoder'\)"),
        (dict(tgt_vocab_size=10), r"tgt_vocab_size: not a setting of arch 'lm'.*is a setting of arch 'seq2seq'"),
        (dict(n_decoder_layers=2), r"n_decoder_layers: not a setting of arch 'lm'.*is a setting of arch 'seq2seq'"),
        (dict(cross_kind="R"), r"cross_kind: not a setting of arch 'lm'.*cross_kind='R' is a setting of "
                                 r"arch 'seq2seq'"),
        (dict(pad_id=16), r"pad_id must be an integer in \[0, 16\) \(the vocabulary\), got 16"),
        (dict(kind_options=[1]), r"kind_options must be a dict"),
        (dict(encoder_kind="R"), r"encoder_kind: not a setting of arch 'lm'.*valid settings: .*decoder_kind"),
        (dict(encoder_kind_options={"k": 4}), r"encoder_kind_options: not a setting of arch 'lm'"),
        (dict(pooling="cls"), r"pooling: not a setting of arch 'lm'.*pooling='cls' is a setting of arch 'classifier'"),
        (dict(ffn_kernel_size=5), r"ffn_kernel_size=5 is only used by ffn='conv_relu', got ffn='relu'"),
    ],
)
def test_lm_config_errors_name_the_bad_value(changes, message):
    with pytest.raises(ValueError, match=message):
        tiny_config("lm", **changes)


def test_arch_specific_errors():
    with pytest.raises(ValueError, match=r"arch must be one of 'lm', 'seq2seq', 'classifier', 'dual_encoder'"
                                         r"(, '\w+')*, "  # and any a suite registers (the compressor)
                                         r"got 'decoder'"):
        tiny_config("decoder")
    with pytest.raises(ValueError, match=r"num_classes must be an integer >= 2 for arch='classifier', got None"):
        tiny_config("classifier", num_classes=None)
    with pytest.raises(ValueError, match=r"label_smoothing: not a setting of arch 'classifier'"):
        tiny_config("classifier", label_smoothing=0.1)
    with pytest.raises(ValueError, match=r"decoder_kind: not a setting of arch 'classifier'"):
        tiny_config("classifier", decoder_kind="R")
    with pytest.raises(ValueError, match=r"cross_kind='Conv': .*cross-capable kinds: V, R, Fix, FR, D"):
        tiny_config("seq2seq", cross_kind="Conv")
    assert tiny_config("seq2seq", cross_kind="FR+V").cross_kind == "FR+V"  # any cross-capable kind or mixture
    with pytest.raises(ValueError, match=r"eos_id must be an integer in \[0, 8\)"):
        tiny_config("seq2seq", tgt_vocab_size=8, eos_id=9)


def test_unknown_mixer_option_fails_at_build_time():
    with pytest.raises(TypeError, match="unknown option"):
        build_model(tiny_config("lm", decoder_kind="V", kind_options={"k": 4}))


def test_edited_config_is_revalidated_by_build_model():
    config = tiny_config("lm")
    config.n_heads = 5  # dataclasses do not re-run __post_init__ on assignment
    with pytest.raises(ValueError, match=r"d_model \(32\) must be divisible by n_heads \(5\)"):
        build_model(config)


def test_per_layer_kinds_and_options_reach_the_layers():
    config = tiny_config(
        "seq2seq",
        encoder_kind=["FR", "LightConv"],
        encoder_kind_options=[{"k": 4}, {"kernel_size": 5}],
        decoder_kind="R+V",
        n_decoder_layers=3,
    )
    model = build_model(config)
    enc = model.encoder.layers
    assert enc[0].self_attn.kind == "FR" and enc[0].self_attn.synth.options["k"] == 4
    assert type(enc[1].self_attn).__name__ == "LightConv" and enc[1].self_attn.kernel_size == 5
    assert len(model.decoder.layers) == 3
    assert all(layer.self_attn.kind == "R+V" and layer.self_attn.causal for layer in model.decoder.layers)


def test_dict_round_trip_and_unknown_keys():
    config = tiny_config("seq2seq", decoder_kind=["R", "V"], kind_options={"init_std": 0.5})
    assert ModelConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match=r"d_modle: not a setting of arch 'lm' \(LMConfig\); valid settings: .*"):
        ModelConfig.from_dict({"arch": "lm", "d_modle": 64})
    with pytest.raises(ValueError, match=r"a model config needs 'arch'"):
        ModelConfig.from_dict({"d_model": 64})
    with pytest.raises(ValueError, match=r"arch must be one of 'lm', 'seq2seq', 'classifier', 'dual_encoder'"
                                         r"(, '\w+')*, "  # and any a suite registers (the compressor)
                                         r"got 'decoder'"):
        ModelConfig.from_dict({"arch": "decoder"})


# model_config.json of the presets as the version before the per-architecture configs wrote them (one class for
# every architecture: the fields of the other architectures at their defaults)
_OLD_COMMON = {"vocab_size": 8000, "d_model": 128, "n_heads": 4, "d_ff": 512, "ffn_kernel_size": 3, "dropout": 0.1,
               "attention_dropout": 0.0, "norm": "pre", "positions": "sinusoidal", "kind_options": {},
               "pad_id": 0, "bos_id": 2, "eos_id": 3, "tgt_vocab_size": None, "num_classes": None,
               "n_decoder_layers": None, "tie_embeddings": True, "encoder_kind": "V", "decoder_kind": "V",
               "cross_kind": "V", "encoder_kind_options": None, "decoder_kind_options": None,
               "label_smoothing": 0.0, "pooling": "mean"}
OLD_FILES = {
    "lm-small": {**_OLD_COMMON, "arch": "lm", "n_layers": 2, "ffn": "conv_relu", "max_len": 128},
    "mt-small": {**_OLD_COMMON, "arch": "seq2seq", "n_layers": 3, "ffn": "relu", "max_len": 128,
                 "label_smoothing": 0.1},
    "cls-small": {**_OLD_COMMON, "arch": "classifier", "n_layers": 2, "ffn": "relu", "max_len": 256,
                  "num_classes": 2},
}


@pytest.mark.parametrize("preset", list(OLD_FILES))
def test_model_configs_written_by_the_previous_version_load(preset: str) -> None:
    assert ModelConfig.from_dict(OLD_FILES[preset]) == get_preset(preset)
    # a field the architecture never had, at a value the old version could not have written, is refused
    with pytest.raises(ValueError, match="not a setting of arch"):
        ModelConfig.from_dict({**OLD_FILES[preset], "num_classes": 7} if preset != "cls-small"
                              else {**OLD_FILES[preset], "cross_kind": "R"})


def test_presets():
    assert set(list_presets()) >= {"lm-base", "mt-base", "cls-base", "lm-small", "mt-small", "cls-small"}
    for name in ("lm-base", "mt-base", "cls-base"):
        c = get_preset(name)
        assert (c.n_layers, c.d_model, c.d_ff, c.n_heads) == (6, 512, 2048, 8)
    assert get_preset("lm-base").max_len == 256 and get_preset("lm-base").ffn == "conv_relu"
    assert get_preset("mt-base").max_len == 256 and get_preset("mt-base").label_smoothing == 0.1
    assert get_preset("cls-base").max_len == 512 and get_preset("cls-base").arch == "classifier"
    assert get_preset("lm-small") is not get_preset("lm-small")  # fresh objects: callers may edit them
    with pytest.raises(ValueError, match=r"unknown model preset 'lm-huge'; available presets: lm-base"):
        get_preset("lm-huge")


def test_small_presets_build_and_run():
    import torch

    for name in ("lm-small", "mt-small", "cls-small"):
        config = dataclasses.replace(get_preset(name), vocab_size=50, dropout=0.0)
        model = build_model(config)
        ids = torch.randint(4, 50, (2, 7))
        batch = {"input_ids": ids} if config.arch != "seq2seq" else {"src_ids": ids, "tgt_ids": ids}
        assert torch.isfinite(model(**batch)["logits"]).all()
        assert num_parameters(model) < 3_000_000  # sized for a 2-core CPU


def test_lm_base_parameter_count_matches_the_formula():
    """Embedding (tied, counted once) + 6 x (V attention 4d^2+4d, conv_relu FFN, 2 LayerNorms) + final LayerNorm."""
    c = get_preset("lm-base")
    d, f, k, v = c.d_model, c.d_ff, c.ffn_kernel_size, c.vocab_size
    attention = 4 * d * d + 4 * d  # Q, K (Table 1's 2d^2) + value and output projections, with biases
    ffn = k * d * f + f + f * d + d  # width-3 convolution d -> d_ff, then linear d_ff -> d
    layer = attention + ffn + 2 * 2 * d
    expected = v * d + c.n_layers * layer + 2 * d
    assert num_parameters(build_model(c)) == expected
