"""``init_from`` a T5-architecture run (V self-attention) into Synthesizer mixtures: through the real code path
(``load_pretrained_weights``), the grown model's logits at step 0 are the pretrained model's bit for bit, in eval
mode and in training (no dropout), with padding and T5's relative position bias, for every kind that can grow."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from synthformer.common.config import from_dict
from synthformer.models import build_model
from synthformer.tasks import RunConfig, load_run, train_run
from synthformer.tasks.run.init_from import load_pretrained_weights

from ..attention.test_grown_mixtures import GROWABLE
from .helpers import seq2seq_config

T5_MODEL = {"variant": "t5", "positions": "none", "position_bias": "t5", "n_layers": 2, "d_model": 32,
            "n_heads": 4, "encoder_kind": "V", "decoder_kind": "V"}


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory) -> Path:
    """A one-step T5-architecture run whose query and key weights are then spread as a trained model's are."""
    tmp = tmp_path_factory.mktemp("t5run")
    cfg = seq2seq_config(steps=1, eval_every=0, save_every=1)
    cfg["model"].update(T5_MODEL)
    train_run(from_dict(RunConfig, cfg), tmp / "pre")
    file = load_run(tmp / "pre").checkpoint / "model.safetensors"
    weights = load_file(str(file))
    assert any(name.endswith("self_attn.synth.qk.weight") for name in weights)
    # wide logits (peaked attention), where the rounding of different paths shows
    save_file({k: v * 6 if k.endswith(".qk.weight") else v for k, v in weights.items()}, str(file))
    return tmp / "pre"


def _grown(pretrained: Path, kind: str) -> torch.nn.Module:
    """The pretrained model grown into ``kind`` (both stacks) by ``init_from``'s own loading."""
    loaded = load_run(pretrained)
    run = dataclasses.replace(loaded.config.with_model(encoder_kind=kind, decoder_kind=kind),
                              init_from=str(pretrained))
    model = build_model(dataclasses.replace(loaded.model_config, encoder_kind=kind, decoder_kind=kind))
    report = load_pretrained_weights(run, model)
    assert report.grown["encoder.layers.1.self_attn"] == {"kind": kind, "pretrained_part": "V"}
    return model


def test_models_grown_from_a_t5_run_start_at_its_logits_bit_for_bit(pretrained):
    loaded = load_run(pretrained)
    vocab = loaded.model_config.vocab_size
    torch.manual_seed(0)
    src, tgt = torch.randint(4, vocab, (3, 8)), torch.randint(4, vocab, (3, 6))
    src[1, 5:] = tgt[2, 4:] = 0  # padding (pad id 0) in the source and in a target
    with torch.no_grad():
        expected = loaded.model(src, tgt)["logits"]
    loaded.model.train()
    expected_train = loaded.model(src, tgt)["logits"]
    assert expected.abs().max() > 5  # wide logits: a test that could fail
    for kind in [f"{k}+V" for k in GROWABLE] + ["R+D+V"]:
        model = _grown(pretrained, kind).eval()
        with torch.no_grad():
            assert torch.equal(model(src, tgt)["logits"], expected), kind
        model.train()  # the run's dropout is 0: training's forward too, now with a graph for the new parts
        logits = model(src, tgt)["logits"]
        assert torch.equal(logits, expected_train), kind
        logits.logsumexp(-1).sum().backward()
        new = model.get_submodule("decoder.layers.0.self_attn.synth.parts.0")
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in new.parameters()), kind
