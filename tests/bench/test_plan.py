"""``synthformer train --dry-run``: the plan of a run from its config alone (synthformer.bench.plan).

It must work for every registered task type and generator, never read or tokenize the corpus (a 1 GB sparse
file that is not even text plans in about a second), and describe a prepared corpus from its manifest, with the
problems it can see as warnings, errors (the run would stop) or missing inputs (not there yet: the plan goes on).
That the plan agrees with the run it plans: tests/cli/test_dry_run_pipeline.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

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


def test_a_missing_training_file_is_missing_and_the_plan_exits_0(tmp_path, capsys):
    """A dry run plans a run to come: its data not there yet is a line of the plan, not an error."""
    config = tmp_path / "lm.yaml"
    config.write_text(json.dumps({"task": {"type": "lm", "train": str(tmp_path / "gone.txt"), "valid_fraction": 0.1},
                                  "model": TINY_MODEL}))
    assert main(["train", str(config), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert f"missing:    task.train: no file at {tmp_path / 'gone.txt'} (put the data there" in captured.out
    assert "error" not in captured.out + captured.err


def test_a_missing_prepared_folder_is_missing_and_the_plan_still_prints(tmp_path, capsys):
    """The shipped C4 configs name task.prepared before anyone has prepared it: the plan prints and says so."""
    config = tmp_path / "lm.yaml"
    config.write_text(json.dumps({"task": {"type": "lm", "prepared": str(tmp_path / "not-yet")}, "model": TINY_MODEL}))
    assert main(["train", str(config), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "data:       a prepared corpus that cannot be read" in captured.out
    (line,) = [line for line in captured.out.splitlines() if line.startswith("missing:")]
    assert "no such prepared folder; run 'synthformer prepare CONFIG --out" in line
    assert not captured.err.strip()


# --------------------------------------------------------------------------------------------------------------
# a prepared corpus, described from its manifest


def prepared_corpus(folder: Path, *, layout: str = "documents") -> Path:
    """A prepared folder written by the prepared format's writer: documents (ten of 400 byte tokens, 4,000 in two
    train shards; one valid shard) or pairs (ten pairs, the longest source of 40 tokens, targets of 8)."""
    from synthformer.data import ByteTokenizer
    from synthformer.data.prepared import write_prepared

    if layout == "documents":
        splits = {"train": [("x" * 399,)] * 10, "valid": [("y" * 99,)] * 2}  # each document ends with <eos>
        write_prepared(folder, ByteTokenizer(), splits, shard_tokens=2000)
    else:
        pairs = [("s" * 40, "t" * 8)] + [("s" * 10, "t" * 8)] * 9
        write_prepared(folder, ByteTokenizer(), {"train": pairs}, layout="pairs", task_type="seq2seq")
    return folder


def prepared_plan(tmp_path: Path, folder: Path, task: dict | None = None, **train):
    run = run_config(tmp_path, task or {"type": "lm", "train": str(tmp_path / "unused.txt"), "max_len": 16},
                     **train)
    run.task.prepared = str(folder)  # the task.prepared setting of the prepared-corpus branch
    return plan_run(run, processes=1, run_dir=tmp_path / "run")


def test_prepared_corpus_plan_from_the_manifest(tmp_path):
    from synthformer.tasks.prepared.reading import prepared_data

    folder = prepared_corpus(tmp_path / "prep")
    plan = prepared_plan(tmp_path, folder, steps=10)  # blocks of 16 + 1 of 4000 tokens: 249; 10 x 8 = 80 of them
    assert plan.vocab_size == 260 and "prepared" in plan.vocab_source  # the corpus's byte tokenizer
    assert plan.data.prepared["splits"]["train"] == {"documents": 10, "tokens": {"text": 4000}, "shards": 2}
    assert plan.data.examples_per_epoch == 249 and plan.data.epochs == pytest.approx(80 / 249)
    run = run_config(tmp_path, {"type": "lm", "prepared": str(folder), "max_len": 16})
    assert len(prepared_data(run, splits=("train",)).datasets["train"]) == 249  # the run's
    assert not plan.errors and not plan.missing
    assert [w for w in plan.warnings if "of one epoch" in w]  # 32% of the data never seen
    assert "train: 2 shard(s), 10 documents, 4,000 text tokens" in "\n".join(plan.data.lines())
    many = prepared_plan(tmp_path, folder, steps=1000)
    assert many.data.epochs == pytest.approx(8000 / 249) and [w for w in many.warnings if "repeats the training" in w]


def test_prepared_corpus_problems_are_the_runs(tmp_path):
    """The plan opens the corpus with the run's own checks (open_prepared, its ids not scanned): the first problem
    the run would stop on is the plan's error, in the run's words; a corpus not there yet is missing."""
    from synthformer.data import CharTokenizer

    folder = prepared_corpus(tmp_path / "prep")
    (folder / "train-00001.text.bin").unlink()
    (error,) = prepared_plan(tmp_path, folder).errors
    assert "train-00001.text.bin: missing (a shard of split 'train')" in error

    cut = prepared_corpus(tmp_path / "cut")
    with (cut / "valid-00000.text.bin").open("r+b") as f:
        f.truncate(10)
    (error,) = prepared_plan(tmp_path, cut).errors
    assert "valid-00000.text.bin: 10 bytes where the manifest says 400" in error

    other = prepared_corpus(tmp_path / "prep2")
    (tmp_path / "run").mkdir()
    CharTokenizer.train(["abc"]).save(tmp_path / "run" / "synthformer_tokenizer.json")  # a resumed run's own
    (error,) = prepared_plan(tmp_path, other).errors
    assert "the corpus was tokenized with another tokenizer than the one given" in error

    unfinished = prepared_plan(tmp_path, tmp_path / "run")  # a folder without a manifest: a prepare not finished
    assert not unfinished.errors and "missing: the folder holds no finished prepare" in unfinished.missing[0]
    nowhere = prepared_plan(tmp_path, tmp_path / "nowhere")
    assert not nowhere.errors and "no such prepared folder" in nowhere.missing[0]


def test_prepared_pairs_that_would_be_truncated(tmp_path):
    folder = prepared_corpus(tmp_path / "pairs", layout="pairs")
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


def test_a_resumed_run_plans_with_its_own_tokenizer(tmp_path):
    from synthformer.data import CharTokenizer

    (tmp_path / "run").mkdir()
    tok = CharTokenizer.train(["the run's own alphabet"])
    tok.save(tmp_path / "run" / "synthformer_tokenizer.json")
    run = run_config(tmp_path, {"type": "lm", "train": str(tmp_path / "corpus.txt"), "tokenizer": "char",
                                "max_len": 16})
    plan = plan_run(run, run_dir=tmp_path / "run")
    assert plan.vocab_size == tok.vocab_size and plan.vocab_source.endswith("synthformer_tokenizer.json")
    assert plan.model_config["pad_id"] == tok.pad_id and plan.model_config["eos_id"] == tok.eos_id
    assert plan_run(run).vocab_size != tok.vocab_size


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory) -> Path:
    """A finished tiny classification run (checkpoints at steps 3 and 6, the best by accuracy kept)."""
    from synthformer.common.config import from_dict
    from synthformer.tasks import RunConfig, train_run

    from ..tasks.helpers import classification_config

    root = tmp_path_factory.mktemp("pretrained")
    run = from_dict(RunConfig, classification_config(root, keep_best="accuracy"))
    train_run(run, root / "pre")
    return root / "pre"


@pytest.mark.parametrize("suffix", ["", "@best", "@latest", "@6"])
def test_the_plan_takes_the_tokenizer_of_init_from_with_a_checkpoint_suffix(tmp_path: Path, pretrained: Path,
                                                                            suffix: str) -> None:
    """``init_from: RUN@best`` names a checkpoint inside RUN: the dry run takes RUN's tokenizer, as the run does,
    and checks the model against RUN's."""
    from synthformer.common.config import from_dict
    from synthformer.data import load_tokenizer
    from synthformer.tasks import RunConfig
    from synthformer.train import RunDir

    from ..tasks.helpers import classification_config

    cfg = classification_config(tmp_path)
    plan = plan_run(from_dict(RunConfig, {**cfg, "init_from": f"{pretrained}{suffix}"}))
    tokenizer = RunDir(pretrained).tokenizer_path
    assert plan.vocab_size == load_tokenizer(tokenizer).vocab_size and plan.vocab_source == str(tokenizer)
    assert plan.model_config["num_classes"] == 2 and not plan.missing and not plan.errors


def test_an_init_from_run_not_there_yet_is_missing(tmp_path: Path, pretrained: Path) -> None:
    from synthformer.common.config import from_dict
    from synthformer.tasks import RunConfig

    from ..tasks.helpers import classification_config

    cfg = classification_config(tmp_path)
    for spec, words in ((tmp_path / "later", "run directory not found"), (f"{pretrained}@40", "step_000040 is not a "
                                                                           "complete checkpoint")):
        plan = plan_run(from_dict(RunConfig, {**cfg, "init_from": str(spec)}))
        (line,) = plan.missing
        assert words in line and "the pretrained run is made by: synthformer train" in line, line
        assert "at most" in plan.vocab_source or "assumed" in plan.vocab_source  # planned from the settings
