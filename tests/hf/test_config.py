"""SynthesizerConfig carries every native setting and round-trips to the native typed configs."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from transformers import AutoConfig  # noqa: E402

from synthformer.hf import SynthesizerConfig  # noqa: E402
from synthformer.models import ClassifierConfig, LMConfig, Seq2SeqConfig  # noqa: E402

NATIVE = [
    LMConfig(vocab_size=50, d_model=16, n_heads=2, n_layers=2, decoder_kind=["R", "FR+V"], kind_options={"k": 4},
             decoder_kind_options=[{}, {"k": 2}], ffn="conv_relu", positions="learned", tie_embeddings=False),
    Seq2SeqConfig(vocab_size=50, tgt_vocab_size=30, d_model=16, n_heads=2, n_decoder_layers=2, encoder_kind="D",
                  decoder_kind="R+V", cross_kind="V", label_smoothing=0.1),
    ClassifierConfig(vocab_size=50, d_model=16, n_heads=2, num_classes=3, encoder_kind="LightConv", pooling="max"),
]


@pytest.mark.parametrize("native", NATIVE, ids=lambda c: c.arch)
def test_round_trip_through_config_json(native, tmp_path):
    config = SynthesizerConfig.from_native(native)
    assert config.model_type == "synthesizer" and config.arch == native.arch
    assert config.to_native() == native
    config.save_pretrained(tmp_path)
    written = json.loads((tmp_path / "config.json").read_text())
    for key, value in native.to_dict().items():  # every native setting is in the file, defaults included
        assert written[key] == value
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(loaded, SynthesizerConfig) and loaded.to_native() == native


def test_hugging_face_names_are_aliases_of_the_native_ones():
    config = SynthesizerConfig.from_native(NATIVE[1])
    assert (config.hidden_size, config.num_attention_heads, config.max_position_embeddings) == (16, 2, 256)
    ids = (config.pad_token_id, config.bos_token_id, config.eos_token_id, config.decoder_start_token_id)
    assert ids == (0, 2, 3, 2)
    assert config.is_encoder_decoder and config.tie_word_embeddings
    config.pad_token_id = 1
    assert config.pad_id == 1 and config.to_native().pad_id == 1
    classifier = SynthesizerConfig.from_native(NATIVE[2])
    assert classifier.num_labels == 3 and not classifier.is_encoder_decoder


def test_bad_settings_are_refused_with_the_native_message():
    with pytest.raises(ValueError, match="num_classes.*not a setting of arch 'lm'"):
        SynthesizerConfig(arch="lm", num_classes=3)
    with pytest.raises(ValueError, match="decoder_kind='nope' is not a known token mixer"):
        SynthesizerConfig(arch="lm", decoder_kind="nope")
    with pytest.raises(ValueError, match="arch must be one of"):
        SynthesizerConfig(arch="tagger")
    config = SynthesizerConfig(arch="lm", d_model=16, n_heads=2)
    config.n_heads = 3  # edited after creation: to_native checks again
    with pytest.raises(ValueError, match="divisible by n_heads"):
        config.to_native()


def test_classifier_labels_come_from_id2label():
    config = SynthesizerConfig(arch="classifier", id2label={0: "neg", 1: "pos"})
    assert config.num_classes == 2 and config.to_native().num_classes == 2
    with pytest.raises(ValueError, match="expected one label per class"):
        SynthesizerConfig(arch="classifier", num_classes=3, id2label={0: "neg", 1: "pos"})
