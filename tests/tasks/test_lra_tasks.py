"""The Long Range Arena tasks end to end through the command line: each shipped ``configs/lra_*.yaml`` (its task,
pooling, head and positions kept; the model made tiny, the data tiny and local) trains, evaluates and predicts; one
goes through ``synthformer study``; the ListOps cache writes LRA's files once and reads them back."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from synthformer.cli.main import main
from synthformer.data import load_tokenizer
from synthformer.tasks import load_run_config, prepare_data
from synthformer.tasks.suites.lra import listops_generator
from synthformer.train.rundir import RunDir

from .helpers import write_yaml

pytestmark = pytest.mark.usefixtures("restore_logging")

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TINY = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}
STEPS = {"steps": 2, "batch_size": 4, "eval_every": 2, "eval_steps": 1, "save_every": 2, "log_every": 1,
         "warmup_steps": 1}
#: the LRA numbers each shipped config must keep: (task.max_len, pooling, head, positions)
LRA = {"lra_listops": (2001, "cls", "mlp", "sinusoidal"), "lra_text": (1001, "cls", "mlp", "sinusoidal"),
       "lra_text_4k": (4001, "cls", "mlp", "sinusoidal"), "lra_retrieval": (4001, "cls", "mlp", "sinusoidal"),
       "lra_image": (1025, "cls", "mlp", "learned"), "lra_pathfinder": (1024, "mean", "mlp", "sinusoidal"),
       "lra_pathx": (16384, "mean", "mlp", "learned")}
#: the configs reduced to CPU size: LRA's pooling, head and positions kept, the length reduced
LRA_CPU = {"lra_listops_cpu": (301, "cls", "mlp", "sinusoidal")}


def test_every_shipped_lra_config_has_lra_settings() -> None:
    assert {p.stem for p in CONFIGS.glob("lra_*.yaml")} == set(LRA) | set(LRA_CPU)
    for name, (max_len, pooling, head, positions) in LRA_CPU.items():
        run = load_run_config(CONFIGS / f"{name}.yaml")
        assert (run.task.max_len, run.model.pooling, run.model.head, run.model.positions) == (max_len, pooling,
                                                                                             head, positions), name
    for name, (max_len, pooling, head, positions) in LRA.items():
        run = load_run_config(CONFIGS / f"{name}.yaml")
        assert (run.task.max_len, run.model.pooling, run.model.head, run.model.positions) == (max_len, pooling,
                                                                                             head, positions), name
    listops = load_run_config(CONFIGS / "lra_listops.yaml").task.generator_options
    assert (listops["num_train"], listops["num_valid"], listops["num_test"]) == (96000, 2000, 2000)
    assert (listops["min_length"], listops["max_length"], listops["max_depth"], listops["max_args"]) == (500, 2000,
                                                                                                         10, 10)


def shipped(name: str, tmp: Path, **task: Any) -> Path:
    """The shipped config ``name`` with a tiny model and schedule and the ``task`` keys replaced."""
    cfg = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text(encoding="utf-8"))
    cfg["task"].update(task)
    cfg["model"].update(TINY)
    cfg["train"].update(STEPS)
    return write_yaml(tmp / f"{name}.yaml", cfg)


def cli(capsys, *argv: Any) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def train_eval_generate(capsys, config: Path, run_dir: Path, prompt: str | None) -> dict[str, Any]:
    out = cli(capsys, "train", config, "--run-dir", run_dir, "-q")
    assert "trained 2 steps" in out
    cli(capsys, "eval", run_dir, "--split", "test")
    report = json.loads((run_dir / "eval_test.json").read_text(encoding="utf-8"))
    if prompt is not None:
        label, prob = cli(capsys, "generate", run_dir, "--prompt", prompt).strip().split("\t")
        assert label in json.loads((run_dir / "labels.json").read_text(encoding="utf-8"))
        assert 0.0 < float(prob) <= 1.0
    return report


def metrics_of(report: dict[str, Any]) -> dict[str, Any]:
    return report.get("metrics", report)


def test_listops_trains_and_its_cache_is_written_once(tmp_path: Path, capsys, monkeypatch) -> None:
    cache = tmp_path / "cache"
    options = {"num_train": 24, "num_valid": 8, "num_test": 8, "min_length": 10, "max_length": 40, "max_depth": 4,
               "max_args": 4, "seed": 0, "cache_dir": str(cache)}
    config = shipped("lra_listops", tmp_path, generator_options=options, max_len=41)
    report = train_eval_generate(capsys, config, tmp_path / "run", "[MAX 2 [MIN 4 7 ] 0 ]")
    assert metrics_of(report)["examples"] == 8
    (folder,) = cache.iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["basic_test.tsv", "basic_train.tsv", "basic_val.tsv"]
    # the files hold what the generator draws, and a second run reads them instead of drawing again
    direct = listops_generator.generate_listops(8, seed=2, min_length=10, max_length=40, max_depth=4, max_args=4)
    assert listops_generator.read_listops_tsv(folder / "basic_test.tsv") == direct
    monkeypatch.setattr(listops_generator, "generate_listops", lambda *a, **k: pytest.fail("drew again"))
    cli(capsys, "eval", tmp_path / "run", "--split", "test")


def test_text_trains_on_bytes(tmp_path: Path, capsys) -> None:
    reviews = [{"text": f"{word} movie, {word} acting." * 4, "label": int(word == "great")}
               for word in ("great", "awful", "great", "dull", "great", "poor")] * 4
    for name in ("train", "test"):
        (tmp_path / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in reviews) + "\n", encoding="utf-8")
    config = shipped("lra_text", tmp_path, train=str(tmp_path / "train.jsonl"), valid=str(tmp_path / "test.jsonl"),
                     test=str(tmp_path / "test.jsonl"), max_len=33)
    report = train_eval_generate(capsys, config, tmp_path / "run", "great movie")
    assert metrics_of(report)["examples"] == 24
    assert load_tokenizer(RunDir(tmp_path / "run").tokenizer_path).kind == "byte"


def test_retrieval_trains_a_dual_encoder(tmp_path: Path, capsys) -> None:
    rows = [f"{i % 2}\tP{i}\tQ{i}\tpaper number {i} on parsing\tanother paper {i % 3}" for i in range(24)]
    for name in ("train", "eval", "test"):
        (tmp_path / f"pairs.{name}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    config = shipped("lra_retrieval", tmp_path, train=str(tmp_path / "pairs.train.tsv"),
                     valid=str(tmp_path / "pairs.eval.tsv"), test=str(tmp_path / "pairs.test.tsv"), max_len=40)
    report = train_eval_generate(capsys, config, tmp_path / "run", "paper one\tpaper two")
    assert metrics_of(report)["examples"] == 24
    assert json.loads((tmp_path / "run" / "model_config.json").read_text(encoding="utf-8"))["arch"] == "dual_encoder"


def test_image_trains_on_cifar_batches(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"):
        with (folder / name).open("wb") as f:
            pickle.dump({b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": [0, 1, 2, 3]}, f,
                        protocol=2)
    config = shipped("lra_image", tmp_path, train=str(folder), test=str(folder / "test_batch"), valid_fraction=0.2)
    report = train_eval_generate(capsys, config, tmp_path / "run", None)
    assert metrics_of(report)["examples"] == 4


def test_pathfinder_trains_on_generated_images(tmp_path: Path, capsys) -> None:
    options = {"size": 32, "num_train": 8, "num_valid": 4, "num_test": 4, "seed": 0}
    config = shipped("lra_pathfinder", tmp_path, generator_options=options)
    report = train_eval_generate(capsys, config, tmp_path / "run", None)
    assert metrics_of(report)["examples"] == 4


def test_pathx_data_is_one_token_per_pixel(tmp_path: Path) -> None:
    # no training here: a step at 16,384 tokens is no tiny test (V materializes 16K x 16K scores under dropout)
    options = {"size": 128, "num_train": 2, "num_valid": 2, "num_test": 0, "seed": 0}
    data = prepare_data(load_run_config(shipped("lra_pathx", tmp_path, generator_options=options)))
    item = data.datasets["train"][0]
    assert item["input_ids"].shape == (128 * 128,) and data.model_config.max_len == 128 * 128
    assert data.tokenizer.vocab_size == 260 and data.label_set == ["0", "1"]


def test_an_lra_config_runs_as_a_study(tmp_path: Path, capsys) -> None:
    options = {"size": 32, "num_train": 8, "num_valid": 4, "num_test": 0, "seed": 0}
    config = shipped("lra_pathfinder", tmp_path, generator_options=options)
    out = cli(capsys, "study", config, "--kinds", "V,R", "--seeds", "1", "--out", tmp_path / "study", "--threads", "1")
    assert "2 runs of 2 steps" in out
    assert (tmp_path / "study" / "R" / "seed0" / "study_result.json").is_file()
