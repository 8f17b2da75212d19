"""A converted T5 checkpoint as a run directory (``synthformer convert t5``): eval, generate, resume, export and
``init_from`` work on it, and Synthesizers grown from it (``R+V``, ``D+V``) start with its output bit for bit."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from transformers import AutoModelForSeq2SeqLM, T5Config, T5ForConditionalGeneration  # noqa: E402

from synthformer.cli.main import main  # noqa: E402
from synthformer.common.config import (
    ConfigError,  # noqa: E402
    from_dict,  # noqa: E402
)
from synthformer.data.tokenizer_kinds import CharTokenizer  # noqa: E402
from synthformer.hf.export import export_run  # noqa: E402  (importing synthformer.hf registers the Auto classes)
from synthformer.hf.t5_run import convert_t5  # noqa: E402
from synthformer.tasks import RunConfig, generate_texts, load_run, train_run  # noqa: E402

from ..tasks.helpers import seq2seq_config, write_yaml  # noqa: E402

VOCAB = 100  # the 4 specials of synthformer's tokenizers (pad 0, unk 1, bos 2, eos 3) and 96 characters


def char_tokenizer() -> CharTokenizer:
    return CharTokenizer.train(["".join(chr(c) for c in range(33, 33 + VOCAB - 4))])


@pytest.fixture(scope="module")
def t5_folder(tmp_path_factory) -> Path:
    """A tiny random T5 (v1.1 shape) saved with save_pretrained, with the tokenizer whose ids it uses."""
    folder = tmp_path_factory.mktemp("t5") / "hf"
    torch.manual_seed(0)
    config = T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, dropout_rate=0.0,
                      feed_forward_proj="gated-gelu", pad_token_id=0, eos_token_id=3, decoder_start_token_id=2)
    T5ForConditionalGeneration(config).save_pretrained(folder)
    char_tokenizer().save(folder / "synthformer_tokenizer.json")
    return folder


@pytest.fixture(scope="module")
def converted(t5_folder: Path, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("run")
    config = write_yaml(tmp / "reverse.yaml", seq2seq_config(steps=1, eval_every=0, save_every=1))
    assert main(["convert", "t5", str(t5_folder), str(config), "--run-dir", str(tmp / "t5"), "-q"]) == 0
    return tmp / "t5"


def reference_logits(folder: Path, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    hf = T5ForConditionalGeneration.from_pretrained(folder).eval()
    with torch.no_grad():
        return hf(input_ids=src, attention_mask=(src != 0).long(), decoder_input_ids=tgt).logits


SRC = torch.tensor([[10, 11, 12, 13, 3], [14, 15, 3, 0, 0]])
TGT = torch.tensor([[2, 20, 21, 22], [2, 23, 24, 25]])


def test_the_run_directory_loads_generates_and_exports_with_t5s_logits(converted, t5_folder, tmp_path):
    loaded = load_run(converted)
    assert loaded.step == 0 and loaded.model_config.variant == "t5" and loaded.model_config.position_bias == "t5"
    with torch.no_grad():
        ours = loaded.model(SRC, TGT)["logits"]
    torch.testing.assert_close(ours, reference_logits(t5_folder, SRC, TGT), atol=1e-5, rtol=0)
    out = generate_texts(loaded, ["12345"], max_new_tokens=4)
    assert len(out) == 1 and isinstance(out[0].output, str)
    exported = AutoModelForSeq2SeqLM.from_pretrained(export_run(converted, tmp_path / "exported")).eval()
    with torch.no_grad():
        logits = exported(input_ids=SRC, attention_mask=(SRC != 0).long(), decoder_input_ids=TGT).logits
    torch.testing.assert_close(logits, ours, atol=1e-5, rtol=0)


def test_training_resumes_from_the_converted_checkpoint(converted, tmp_path):
    run_dir = Path(shutil.copytree(converted, tmp_path / "copy"))  # the other tests keep the step-0 run
    result = train_run(load_run(run_dir).config, run_dir, resume=True)
    assert result.metrics and load_run(run_dir).step == 1


@pytest.mark.parametrize("kind", ["R+V", "D+V"])
def test_a_synthesizer_grown_from_t5_starts_with_t5s_logits(converted, t5_folder, tmp_path, kind):
    # the converted run's own config.yaml, the kinds grown (what the docs tell users to run)
    run = load_run(converted).config.with_model(encoder_kind=kind, decoder_kind=kind)
    seen = {}

    def logits_at_step_0(trainer) -> None:
        model = trainer.model
        with torch.no_grad():
            seen["logits"] = model.eval()(SRC, TGT)["logits"]
        model.train()

    train_run(dataclasses.replace(run, init_from=str(converted)), tmp_path / "grown", on_trainer=logits_at_step_0)
    with torch.no_grad():  # the converted run's own (V) model: the same logits bit for bit
        assert torch.equal(seen["logits"], load_run(converted).model(SRC, TGT)["logits"])
    torch.testing.assert_close(seen["logits"], reference_logits(t5_folder, SRC, TGT), atol=1e-5, rtol=0)
    record = json.loads((tmp_path / "grown" / "init_from.json").read_text())
    new = "R" if kind == "R+V" else "W2"
    assert f"encoder.layers.0.self_attn.synth.parts.0.{new}" in record["newly_initialised"]
    assert "decoder.layers.1.self_attn.synth.alpha_logits" in record["newly_initialised"]
    assert not [n for n in record["newly_initialised"] if ".parts.1." in n]  # V's part came from T5
    assert record["grown"]["encoder.layers.0.self_attn"] == {"kind": kind, "pretrained_part": "V"}


def test_a_tokenizer_whose_vocabulary_is_not_the_checkpoints_is_a_one_line_error(t5_folder, tmp_path):
    small = CharTokenizer.train(["abcdef"])
    small.save(tmp_path / "small.json")
    config = from_dict(RunConfig, seq2seq_config())
    with pytest.raises(ConfigError, match=f"the tokenizer has {small.vocab_size} ids but the T5 checkpoint's "
                                          f"vocabulary has {VOCAB}") as err:
        convert_t5(t5_folder, tmp_path / "run", config, tokenizer=tmp_path / "small.json")
    assert "\n" not in str(err.value) and not (tmp_path / "run").exists()
