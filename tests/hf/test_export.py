"""save_pretrained / from_pretrained and 'synthformer export': safetensors only, tied tensors once, the tokenizer in
transformers' form, a model card; the exported folder loads with the Auto classes in a fresh offline process and
gives the native logits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM  # noqa: E402

from synthformer.cli.main import main  # noqa: E402
from synthformer.hf import SynthesizerForCausalLM, SynthesizerForConditionalGeneration  # noqa: E402
from synthformer.tasks import load_run  # noqa: E402
from tests.tasks.helpers import classification_config, lm_config, seq2seq_config, write_yaml  # noqa: E402

from .helpers import decoding_kinds, source_batch, tiny_lm, tiny_seq2seq  # noqa: E402

pytestmark = pytest.mark.usefixtures("restore_logging")

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}

# run in a fresh interpreter: registers the Auto classes, loads each (folder, Auto class, text), prints the logits
LOADER = r"""
import json, sys, torch
import synthformer.hf
import transformers
from transformers import AutoTokenizer
results = []
for folder, auto_class, text in json.loads(sys.argv[1]):
    model = getattr(transformers, auto_class).from_pretrained(folder).eval()
    enc = AutoTokenizer.from_pretrained(folder)([text], return_tensors="pt")
    with torch.no_grad():
        if model.config.is_encoder_decoder:
            logits = model(**enc, decoder_input_ids=torch.tensor([[model.config.bos_id]])).logits
        else:
            logits = model(input_ids=enc.input_ids).logits
    results.append({"class": type(model).__name__, "ids": enc.input_ids.tolist(), "logits": logits.tolist()})
print(json.dumps(results))
"""


def load_in_fresh_process(jobs: list[tuple[Path, str, str]]) -> list[dict]:
    """Load each exported folder with an Auto class in a new interpreter, offline."""
    env = {**os.environ, **OFFLINE}
    done = subprocess.run([sys.executable, "-c", LOADER, json.dumps([(str(f), c, t) for f, c, t in jobs])],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("tie", [True, False])
def test_save_and_load_keep_the_weights_and_the_ties(tie, tmp_path, monkeypatch):
    for key, value in OFFLINE.items():
        monkeypatch.setenv(key, value)
    native = tiny_lm("R+V", tie_embeddings=tie)
    SynthesizerForCausalLM.from_native(native).save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "generation_config.json",
                                                           "model.safetensors"]  # no pickle
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        assert ("model.lm_head.weight" in f.keys()) != tie  # a tied tensor is written once
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert (loaded.model.lm_head.weight is loaded.model.embed.token.weight) == tie
    ids = torch.randint(4, 24, (2, 6))
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids).logits, native(input_ids=ids)["logits"])


@pytest.mark.parametrize("kind", decoding_kinds())
def test_every_kind_round_trips(kind, tmp_path):
    native = tiny_lm(kind)
    SynthesizerForCausalLM.from_native(native).save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert not any(t.is_meta for t in [*loaded.parameters(), *loaded.buffers()])
    ids = torch.randint(4, 24, (2, 6))
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids).logits, native(input_ids=ids)["logits"])


def test_a_shared_vocabulary_seq2seq_saves_one_table(tmp_path):
    native = tiny_seq2seq("R")
    SynthesizerForConditionalGeneration.from_native(native).save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        names = set(f.keys())
    assert "model.src_embed.token.weight" in names and "model.tgt_embed.token.weight" not in names
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert loaded.model.lm_head.weight is loaded.model.src_embed.token.weight
    src, tgt = source_batch(), torch.randint(4, 24, (3, 4))
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=src, decoder_input_ids=tgt).logits,
                           native(src_ids=src, tgt_ids=tgt)["logits"])


def train(tmp: Path, name: str, config: dict, capsys) -> Path:
    run_dir = tmp / name
    assert main(["train", str(write_yaml(tmp / f"{name}.yaml", config)), "--run-dir", str(run_dir), "-q"]) == 0
    capsys.readouterr()
    return run_dir


def test_exported_runs_load_offline_in_a_fresh_process(tmp_path, capsys):
    runs = {"lm": train(tmp_path, "lm", lm_config(tmp_path), capsys),
            "rev": train(tmp_path, "rev", seq2seq_config(), capsys),
            "cls": train(tmp_path, "cls", classification_config(tmp_path), capsys)}
    assert main(["eval", str(runs["lm"])]) == 0
    for name, run_dir in runs.items():
        assert main(["export", str(run_dir), str(tmp_path / f"{name}_hf")]) == 0
        assert f"exported {run_dir} to {tmp_path / f'{name}_hf'}" in capsys.readouterr().out
    out_dir = tmp_path / "lm_hf"
    assert not any(p.suffix in (".bin", ".pt", ".pkl") for p in out_dir.iterdir())
    card = (out_dir / "README.md").read_text()
    assert "decoder self-attention: `R+V`" in card and "bits_per_character" in card and "`corpus.txt`" in card
    assert "pipeline_tag: text-generation" in card
    config = json.loads((tmp_path / "cls_hf" / "config.json").read_text())
    assert config["encoder_kind"] == "R+V" and config["id2label"] == {"0": "0", "1": "1"}

    lm, rev, cls = load_in_fresh_process([(tmp_path / "lm_hf", "AutoModelForCausalLM", "def add"),
                                          (tmp_path / "rev_hf", "AutoModelForSeq2SeqLM", "1 2 3"),
                                          (tmp_path / "cls_hf", "AutoModelForSequenceClassification", "a witty movie")])
    run = load_run(runs["lm"])
    assert lm["class"] == "SynthesizerForCausalLM" and lm["ids"] == [run.tokenizer.encode("def add")]
    with torch.no_grad():
        native = run.model(input_ids=torch.tensor(lm["ids"]))["logits"]
    torch.testing.assert_close(torch.tensor(lm["logits"]), native, rtol=1e-5, atol=1e-5)

    run = load_run(runs["rev"])
    assert rev["ids"] == [run.tokenizer.encode("1 2 3", add_eos=True)]  # the data pipeline's source framing
    with torch.no_grad():
        native = run.model(src_ids=torch.tensor(rev["ids"]), tgt_ids=torch.tensor([[run.tokenizer.bos_id]]))
    torch.testing.assert_close(torch.tensor(rev["logits"]), native["logits"], rtol=1e-5, atol=1e-5)

    run = load_run(runs["cls"])
    assert cls["class"] == "SynthesizerForSequenceClassification"
    with torch.no_grad():
        native = run.model(input_ids=torch.tensor([run.tokenizer.encode("a witty movie")]))["logits"]
    torch.testing.assert_close(torch.tensor(cls["logits"]), native, rtol=1e-5, atol=1e-5)


def test_export_refuses_a_non_empty_folder_and_a_missing_run(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("x")
    assert main(["export", str(tmp_path / "nope"), str(tmp_path / "new")]) == 2
    assert "run directory not found" in capsys.readouterr().err
    run_dir = tmp_path / "nope"
    assert main(["export", str(run_dir), str(tmp_path / "out")]) == 2
    assert "is not empty; choose another folder or pass --overwrite" in capsys.readouterr().err


def test_export_without_the_hf_extra_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "synthformer.hf.export", None)  # as if transformers were not installed
    assert main(["export", str(tmp_path / "run"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "needs the hf extra" in err and "pip install 'synthformer[hf]'" in err
