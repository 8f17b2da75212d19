"""``synthformer train --dry-run``: the plan of a run from its config alone (synthformer.bench.plan).

It must work for every registered task type and generator, never read or tokenize the corpus (a 1 GB sparse
file that is not even text plans in about a second), and describe a prepared corpus from its manifest, with the
problems it can see as warnings or errors."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pytest

from synthformer.bench.plan import format_plan, plan_run
from synthformer.cli.main import main
from synthformer.tasks import get_generator, get_task_type, list_generators, list_task_types, load_run_config

TINY_MODEL = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}
TINY_TRAIN = {"steps": 1000, "batch_size": 4, "grad_accum": 2}
#: What a file-based config of a task type needs besides its training file.
TYPE_SETTINGS = {"seq2seq": {"format": "tsv"}, "text_to_text": {"options": {"tasks": ["rte", "sst2"]}},
                 "dialogue": {"format": "jsonl"}, "retrieval": {"format": "lra_tsv"}}


def sparse_file(path: Path, size: int = 2**30) -> Path:
    """A ``size``-byte file of zeros that takes no disk space: reading it would take seconds, tokenizing minutes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.truncate(size)
    return path


def run_config(tmp_path: Path, task: dict, **train) -> object:
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps({"task": task, "model": TINY_MODEL, "train": {**TINY_TRAIN, **train}}))
    return load_run_config(path)


def test_every_task_type_and_generator_plans_without_reading_data(tmp_path):
    big = sparse_file(tmp_path / "data" / "big.txt")
    tasks = [{"type": t, "train": str(big.parent if get_task_type(t).formats == ("glue",) else big),
              "max_len": 16, **TYPE_SETTINGS.get(t, {})} for t in list_task_types() if get_task_type(t).reads_files]
    one_each = {get_generator(g)[0].name: g for g in list_generators()}  # algorithmic:copy, :reverse, ...: one
    tasks += [{"type": get_generator(g)[0].task_type, "generator": g, "max_len": 16} for g in one_each.values()]
    start = time.perf_counter()
    for task in tasks:
        plan = plan_run(run_config(tmp_path, task), processes=2)
        assert plan.parameters == plan.trainable > 0, task  # no Fix kind: everything trains
        assert plan.tokens_per_step["input"] == 4 * 2 * 2 * 16, task  # batch x accumulation x processes x length
        assert plan.flops_method == "counted" and plan.flops_per_step > 6 * plan.parameters, task
        assert plan.memory["weights"] == 4 * plan.parameters and plan.memory["activations"] > 0, task
        assert plan.memory["optimizer"] == 8 * plan.trainable, task  # AdamW: two fp32 moments
        assert not plan.errors, (task, plan.errors)
        if "generator" not in task:
            assert plan.data.sources[0]["bytes"] == 2**30, task
        assert any(line.startswith("FLOPs:") for line in format_plan(plan))
    assert time.perf_counter() - start < 10 * len(tasks)  # generous: the point is that nothing is tokenized


def test_cli_dry_run_of_a_huge_untokenizable_corpus_takes_a_second(tmp_path, capsys):
    big = sparse_file(tmp_path / "corpus.txt")  # NUL bytes: the char tokenizer would refuse them, after minutes
    (tmp_path / "valid.txt").write_bytes(b"\xff\xfe not utf-8")
    config = tmp_path / "lm.yaml"
    config.write_text(json.dumps({"task": {"type": "lm", "train": str(big), "valid": str(tmp_path / "valid.txt"),
                                           "tokenizer": "char", "max_len": 32},
                                  "model": TINY_MODEL, "train": {"steps": 10, "batch_size": 2}}))
    start = time.perf_counter()
    assert main(["train", str(config), "--dry-run", "--run-dir", str(tmp_path / "run"), "train.bf16=true"]) == 0
    assert time.perf_counter() - start < 5  # about one second here; reading 1 GB would be far more
    out = capsys.readouterr().out
    assert "1.00 GiB" in out and "train.steps" not in out.split("data:")[0]
    assert "bf16 autocast" in out and "[1] memory per process" in out
    assert not (tmp_path / "run").exists()  # nothing written
    assert main(["train", str(config), "--dry-run", "--json", "--processes", "4"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["tokens_per_step"] == {"input": 2 * 4 * 32, "total": 2 * 4 * 32} and plan["processes"] == 4
    assert plan["data"]["sources"][0]["bytes"] == 2**30 and plan["memory_formula"].startswith("memory per process")


def test_bf16_activations_are_traced_in_bf16(tmp_path):
    """torch.autocast leaves meta tensors alone: the plan casts the inputs of the ops autocast runs in bf16."""
    task = {"type": "lm", "generator": "pystdlib", "max_len": 64}
    fp32, bf16 = (plan_run(run_config(tmp_path, task, bf16=flag)) for flag in (False, True))
    assert bf16.memory_method == fp32.memory_method == "traced"
    assert 0.5 * fp32.memory["activations"] < bf16.memory["activations"] < fp32.memory["activations"]
    assert bf16.memory["weights"] == fp32.memory["weights"] and bf16.flops_per_step == fp32.flops_per_step


def test_a_failing_bf16_trace_is_redone_in_fp32(tmp_path, monkeypatch):
    from synthformer.bench import plan as plan_module

    def fail(*args, **kwargs):
        raise RuntimeError("expected scalar type torch.float32 but found torch.bfloat16")

    monkeypatch.setattr(plan_module._MetaAutocast, "__torch_function__", fail)
    task = {"type": "lm", "generator": "pystdlib", "max_len": 64}
    fp32, bf16 = (plan_run(run_config(tmp_path, task, bf16=flag)) for flag in (False, True))
    assert bf16.memory_method == "traced in fp32" and bf16.flops_method == "counted"
    assert bf16.memory == fp32.memory and bf16.flops_per_step == fp32.flops_per_step


def test_missing_training_file_is_fatal(tmp_path, capsys):
    config = tmp_path / "lm.yaml"
    config.write_text(json.dumps({"task": {"type": "lm", "train": str(tmp_path / "gone.txt"), "valid_fraction": 0.1},
                                  "model": TINY_MODEL}))
    assert main(["train", str(config), "--dry-run"]) == 2
    captured = capsys.readouterr()
    assert "error:      task.train: no file at" in captured.out  # the plan is printed, the problem in it
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "the run would fail: task.train: no file at" in err[0]


def test_missing_prepared_folder_is_fatal_and_the_plan_still_prints(tmp_path, capsys):
    """The shipped C4 configs name task.prepared before anyone has prepared it: the plan prints and says so."""
    config = tmp_path / "lm.yaml"
    config.write_text(json.dumps({"task": {"type": "lm", "prepared": str(tmp_path / "not-yet")}, "model": TINY_MODEL}))
    assert main(["train", str(config), "--dry-run"]) == 2
    captured = capsys.readouterr()
    assert "data:       a prepared corpus that cannot be read" in captured.out
    assert "no such prepared folder; run 'synthformer prepare" in captured.err.strip().splitlines()[-1]


# --------------------------------------------------------------------------------------------------------------
# a prepared corpus, described from its manifest


def prepared_corpus(folder: Path, *, documents: int = 10, tokens: int = 4000, layout: str = "documents") -> Path:
    """A prepared folder in the shared format (two train shards, one valid shard) with files of the right sizes."""
    folder.mkdir(parents=True)
    (folder / "tokenizer.json").write_text('{"kind": "bpe"}')
    fields = ["text"] if layout == "documents" else ["source", "target"]
    splits = {}
    for split, shards in (("train", 2), ("valid", 1)):
        entries = []
        for k in range(shards):
            name = f"{split}-{k:05d}"
            counts = {f: tokens // shards for f in fields}
            for f in fields:
                (folder / f"{name}.{f}.bin").write_bytes(b"\0" * 2 * counts[f])
                np.save(folder / f"{name}.{f}.idx.npy", np.zeros(documents // shards + 1, dtype=np.int64))
            entries.append({"name": name, "documents": documents // shards, "tokens": counts})
        splits[split] = {"tokens": {f: tokens for f in fields}, "documents": documents, "shards": entries}
    sha = hashlib.sha256((folder / "tokenizer.json").read_bytes()).hexdigest()
    manifest = {"format": "synthformer-prepared", "version": 1, "task_type": "lm" if layout == "documents" else
                "seq2seq", "layout": layout, "fields": fields, "dtype": "uint16",
                "tokenizer": {"file": "tokenizer.json", "sha256": sha, "kind": "bpe", "vocab_size": 1000},
                "splits": splits}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def prepared_plan(tmp_path: Path, folder: Path, task: dict | None = None, **train):
    run = run_config(tmp_path, task or {"type": "lm", "train": str(tmp_path / "unused.txt"), "max_len": 16},
                     **train)
    run.task.prepared = str(folder)  # the task.prepared setting of the prepared-corpus branch
    return plan_run(run, processes=1, run_dir=tmp_path / "run")


def test_prepared_corpus_plan_from_the_manifest(tmp_path):
    folder = prepared_corpus(tmp_path / "prep")
    plan = prepared_plan(tmp_path, folder, steps=10)  # 4000 tokens / 16 = 250 examples; 10 x 8 = 80 of them
    assert plan.vocab_size == 1000 and "prepared" in plan.vocab_source
    assert plan.data.prepared["splits"]["train"] == {"documents": 10, "tokens": {"text": 4000}, "shards": 2}
    assert plan.data.examples_per_epoch == 250 and plan.data.epochs == pytest.approx(80 / 250)
    assert not plan.errors
    assert [w for w in plan.warnings if "of one epoch" in w]  # 32% of the data never seen
    assert "train: 2 shard(s), 10 documents, 4,000 text tokens" in "\n".join(plan.data.lines())
    many = prepared_plan(tmp_path, folder, steps=1000)
    assert many.data.epochs == pytest.approx(32) and [w for w in many.warnings if "repeats the training data" in w]


def test_prepared_corpus_problems(tmp_path):
    folder = prepared_corpus(tmp_path / "prep")
    (folder / "train-00001.text.bin").unlink()
    with (folder / "valid-00000.text.bin").open("r+b") as f:
        f.truncate(10)
    errors = prepared_plan(tmp_path, folder).errors
    assert any("train-00001.text.bin: shard file missing" in e for e in errors)
    assert any("valid-00000.text.bin: 10 bytes, the manifest says 8000" in e for e in errors)

    other = prepared_corpus(tmp_path / "prep2")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "synthformer_tokenizer.json").write_text('{"kind": "char"}')  # a resumed run's own
    errors = prepared_plan(tmp_path, other).errors
    assert len(errors) == 1 and "the run's tokenizer differs from the prepared corpus's" in errors[0]

    # the messages of the prepared format's own reader, the ones training gives
    assert "missing: the folder holds no finished prepare" in prepared_plan(tmp_path, tmp_path / "run").errors[0]
    assert "no such prepared folder" in prepared_plan(tmp_path, tmp_path / "nowhere").errors[0]


def test_prepared_pairs_that_would_be_truncated(tmp_path):
    folder = prepared_corpus(tmp_path / "pairs", layout="pairs")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["splits"]["train"]["longest"] = {"source": 40, "target": 8}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    task = {"type": "seq2seq", "train": str(tmp_path / "unused.tsv"), "max_len": 16, "max_target_len": 12}
    plan = prepared_plan(tmp_path, folder, task, steps=1)
    assert plan.data.examples_per_epoch == 10  # a pair is an example
    assert [w for w in plan.warnings if "longest source has 40 tokens, task.max_len is 16" in w]
    assert not [w for w in plan.warnings if "longest target" in w]


def test_positions_shorter_than_the_task_are_fatal(tmp_path, capsys):
    config = tmp_path / "lm.yaml"
    config.write_text(json.dumps({"task": {"type": "lm", "generator": "pystdlib", "max_len": 64},
                                  "model": TINY_MODEL}))
    assert main(["train", str(config), "--dry-run", "model.max_len=32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.max_len: must be an integer >= 64" in err[0]


def test_a_model_the_config_cannot_describe_is_one_error_line_as_in_a_real_run(tmp_path, capsys):
    # V takes no k: a kind option meant for FR reaches every self-attention layer (the real run refuses it too)
    config = tmp_path / "lm.yaml"
    config.write_text(json.dumps({"task": {"type": "lm", "generator": "pystdlib", "max_len": 64},
                                  "model": TINY_MODEL}))
    assert main(["train", str(config), "--dry-run", "model.kind_options={k: 32}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot build the model: unknown option(s) ['k'] for attention kind 'V'" in err[0]


def test_a_resumed_run_plans_with_its_own_vocabulary(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "model_config.json").write_text(json.dumps({"arch": "lm", "vocab_size": 777}))
    run = run_config(tmp_path, {"type": "lm", "generator": "pystdlib", "max_len": 16})
    plan = plan_run(run, run_dir=tmp_path / "run")
    assert plan.vocab_size == 777 and plan.vocab_source.endswith("model_config.json")
    assert plan_run(run).vocab_size != 777


@pytest.mark.parametrize("suffix", ["", "@best", "@latest", "@40"])
def test_the_plan_reads_the_vocabulary_of_init_from_with_a_checkpoint_suffix(tmp_path: Path, suffix: str) -> None:
    """``init_from: RUN@best`` names a checkpoint inside RUN: the dry run reads RUN's model config, not RUN@best's."""
    from synthformer.bench.plan_data import DataPlan, _run_tokenizers, plan_vocabulary
    from synthformer.common.config import from_dict
    from synthformer.tasks import RunConfig
    from synthformer.train import RunDir

    from ..tasks.helpers import classification_config

    pre = RunDir(tmp_path / "pre")
    pre.path.mkdir()
    pre.model_config_path.write_text(json.dumps({"vocab_size": 321, "num_classes": 3}), encoding="utf-8")
    pre.tokenizer_path.write_text("{}", encoding="utf-8")
    run = from_dict(RunConfig, {**classification_config(tmp_path), "init_from": f"{pre.path}{suffix}"})
    size, where, classes = plan_vocabulary(run, DataPlan("files"))
    assert (size, classes) == (321, 3) and where == str(pre.model_config_path)
    assert _run_tokenizers(run, None) == [pre.tokenizer_path]
