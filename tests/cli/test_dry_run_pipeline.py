"""``synthformer train CONFIG --dry-run`` and the run it plans agree, because the plan takes the run's own setup steps
(``synthformer.tasks.run.setup``).

Three shipped configs (an LM, a seq2seq and a classification one), at tiny sizes by overrides, are trained for one
real step; the plan of that run (``--run-dir`` holding its tokenizer, as a resumed run keeps it) must give what the
run built and saw: the model config (every shape the memory depends on: d_model, layers, heads, lengths), the
parameters (total and trainable), the frozen parts, the optimizer state, the examples and positions of a step and
its number of micro-batches. The plan made before the run, when no tokenizer exists yet, agrees on everything but the
vocabulary. A dry run writes nothing, freezes once and starts no run; an input not there yet is a ``missing:``
line naming what makes it, and the dry run exits 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synthformer.bench.plan import plan_run
from synthformer.cli.main import main
from synthformer.tasks import load_run_config, train_run

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
#: One step of 2 micro-batches of 4 examples of at most 32 positions, no evaluation or checkpoint on the way.
TINY = ["train.steps=1", "train.batch_size=4", "train.grad_accum=2", "train.eval_every=0", "train.save_every=0",
        "train.log_every=1", "train.eval_steps=1", "task.max_len=32"]
CASES = {
    "lm_tiny_shakespeare.yaml": ["task.train_limit=20000"],  # characters
    "mt_multi30k_de_en.yaml": ["task.train_limit=300", "task.eval_limit=20", "task.max_target_len=24",
                               "eval.train_decode_examples=0", "train.freeze=[embeddings]"],
    "cls_sst2.yaml": ["task.train_limit=300", "task.eval_limit=20", "train.freeze=[embeddings]"],
}
#: Model config keys that follow the tokenizer and the labels: known to the plan only once they exist.
VOCABULARY_KEYS = {"vocab_size", "tgt_vocab_size", "pad_id", "bos_id", "eos_id", "num_classes"}


def _run_config(name: str) -> Any:
    run = load_run_config(CONFIGS / name, [*TINY, *CASES[name]])
    if run.task.missing_data():
        pytest.skip(f"the data set {run.task.data!r} is not on this machine")
    return run


def _train_one_step(run: Any, run_dir: Path) -> dict[str, Any]:
    """Train ``run`` for its one step; return the trainer and the shapes of every micro-batch it read."""
    seen: dict[str, Any] = {"shapes": []}

    def hook(trainer: Any) -> None:
        forward = trainer._forward

        def recording(model: Any, batch: Any) -> Any:
            seen["shapes"].append({k: tuple(v.shape) for k, v in batch.items() if hasattr(v, "shape")})
            return forward(model, batch)

        trainer._forward = recording
        seen["trainer"] = trainer

    train_run(run, run_dir, on_trainer=hook)
    return seen


def _unique(model: Any, trainable: bool) -> int:
    """Parameter entries of a real model, a tied tensor once (by storage), counted here, not by the library."""
    return sum({p.data_ptr(): p.numel() for p in model.parameters() if p.requires_grad or not trainable}.values())


@pytest.mark.parametrize("name", list(CASES))
def test_the_plan_and_the_run_agree(name: str, tmp_path: Path) -> None:
    run = _run_config(name)
    before = plan_run(run)
    seen = _train_one_step(run, tmp_path / "run")
    plan = plan_run(run, run_dir=tmp_path / "run")
    trainer = seen["trainer"]
    model = trainer.model

    # the model: its whole config, so every shape the memory depends on
    saved = json.loads((tmp_path / "run" / "model_config.json").read_text(encoding="utf-8"))
    assert plan.model_config == saved
    assert plan.vocab_source == str(tmp_path / "run" / "synthformer_tokenizer.json")
    assert {k: v for k, v in before.model_config.items() if k not in VOCABULARY_KEYS} == \
        {k: v for k, v in saved.items() if k not in VOCABULARY_KEYS}
    if "upper bound" in before.vocab_source:
        assert before.vocab_size >= plan.vocab_size

    # the parameters, the frozen parts, the optimizer
    assert (plan.parameters, plan.trainable) == (_unique(model, False), _unique(model, True))
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    assert bool(frozen) == bool(run.train.freeze) == (plan.parameters > plan.trainable)
    if run.train.freeze:
        assert "frozen: embeddings" in plan.recipe and all("emb" in n for n in frozen), frozen
    state = trainer._optimizer.state  # AdamW's two moments per parameter it holds (its step counters aside)
    assert plan.memory["optimizer"] == sum(t.numel() * t.element_size() for s in state.values()
                                           for k, t in s.items() if k != "step")
    assert plan.memory["weights"] == 4 * plan.parameters and plan.memory["gradients"] == 4 * plan.trainable

    # the data of a step: micro-batches, examples, positions
    shapes = seen["shapes"]
    assert trainer.batches_consumed == len(shapes) == plan.grad_accum * plan.steps == 2
    source = "src_ids" if "src_ids" in shapes[0] else "input_ids"
    assert sum(s[source][0] for s in shapes) == plan.examples_per_step == 8
    assert all(s[source][1] <= plan.lengths["input"] for s in shapes)
    if name.startswith("lm_"):  # packed text: every example is exactly max_len long
        assert sum(s[source][0] * s[source][1] for s in shapes) == plan.tokens_per_step["input"]
    if "target" in plan.lengths:
        assert all(s["tgt_ids"][1] <= plan.lengths["target"] for s in shapes)
    assert plan.lengths == before.lengths and plan.tokens_per_step == before.tokens_per_step
    assert not plan.errors and not plan.missing


@pytest.mark.usefixtures("restore_logging")
def test_a_dry_run_freezes_once_starts_no_run_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    import synthformer.tasks.run.setup as setup
    from synthformer.train import Run

    name = "cls_sst2.yaml"
    _run_config(name)
    calls = {"freeze": 0, "start": 0}
    freeze, start = setup.freeze_parts, Run.start

    def counting_freeze(*args: Any, **kwargs: Any) -> int:
        calls["freeze"] += 1
        return freeze(*args, **kwargs)

    def counting_start(self: Run, *args: Any, **kwargs: Any) -> None:
        calls["start"] += 1
        start(self, *args, **kwargs)

    monkeypatch.setattr(setup, "freeze_parts", counting_freeze)
    monkeypatch.setattr(Run, "start", counting_start)
    argv = ["train", str(CONFIGS / name), *TINY, *CASES[name], "--run-dir", str(tmp_path / "run")]
    assert main([*argv, "--dry-run"]) == 0
    assert calls == {"freeze": 1, "start": 0} and not (tmp_path / "run").exists()
    assert "frozen: embeddings" in capsys.readouterr().out


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize(("name", "overrides", "words"), [
    ("lm_tiny_shakespeare.yaml", ["task.train={tmp}/not-yet.txt"], "task.train: no file at {tmp}/not-yet.txt"),
    ("t5_small_pretrain_c4.yaml", ["task.prepared={tmp}/c4"],
     "{tmp}/c4: no such prepared folder; run 'synthformer prepare CONFIG --out {tmp}/c4' first"),
    ("t5_cpu_glue.yaml", ["init_from={tmp}/pre"], "init_from: run directory not found: {tmp}/pre; the pretrained run "
                                                  "is made by: synthformer train ITS_CONFIG --run-dir {tmp}/pre"),
])
def test_a_missing_input_is_named_and_the_dry_run_exits_0(name: str, overrides: list[str], words: str,
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = ["train.batch_size=2", "task.max_len=32"]  # a quick trace: the point is the data, not the sizes
    argv = ["train", str(CONFIGS / name), *small, *(o.format(tmp=tmp_path) for o in overrides), "--dry-run"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    words = words.format(tmp=tmp_path)
    assert [line for line in out.splitlines() if line.startswith(f"missing:    {words}")], out
    assert "error" not in err
    assert main([*argv, "--json"]) == 0
    assert [m for m in json.loads(capsys.readouterr().out)["missing"] if m.startswith(words)]
