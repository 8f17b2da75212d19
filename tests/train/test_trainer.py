"""The training loop: learning, exact resume after a kill or an interrupt, run-dir safety, logging."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest
import torch
from torch.utils.data import DataLoader
from toymodels import CountingDataset, ParityDataset, ToyClassifier, ToyLM, open_run, state_equal

from synthformer.train import TrainConfig, Trainer, latest_checkpoint, seed_everything
from synthformer.train.checkpoint import list_checkpoints

# 64 examples / batch 4 = 16 micro-batches per epoch, 2 per step: 20 steps run through 2.5 epochs.
BASE = dict(steps=20, batch_size=4, lr=1e-2, grad_accum=2, warmup_steps=3, save_every=4, log_every=2, seed=3)


def make_model(init_seed: int = 0) -> ToyLM:
    seed_everything(init_seed)
    return ToyLM(dropout=0.2)


def make_trainer(run_dir, model=None, data=None, *, resume=False, overwrite=False, **kwargs) -> Trainer:
    overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in TrainConfig.__dataclass_fields__}
    cfg = TrainConfig(**{**BASE, **overrides})
    return Trainer(
        model if model is not None else make_model(), data if data is not None else CountingDataset(64),
        cfg, open_run(run_dir, resume=resume, overwrite=overwrite), progress=False, **kwargs,
    )


def train_lines(run_dir) -> list[dict]:
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: d[k] for k in ("step", "loss", "lr")} for d in lines if "loss" in d]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted 20-step run: final model and logged (step, loss, lr)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same intra-op threading as the tests that compare with it
    try:
        run = tmp_path_factory.mktemp("reference")
        trainer = make_trainer(run)
        trainer.train()
        return trainer.model, train_lines(run)
    finally:
        torch.set_num_threads(threads)


def test_loss_falls(tmp_path):
    trainer = make_trainer(tmp_path, steps=40, warmup_steps=0, save_every=0, log_every=5)
    trainer.train()
    losses = [d["loss"] for d in train_lines(tmp_path)]
    assert losses[0] > 1.5  # ln(16) = 2.77 at init
    assert losses[-1] < 0.35 * losses[0], losses


def test_kill_and_resume_is_bit_identical(tmp_path, reference):
    ref_model, ref_lines = reference
    killed = make_trainer(tmp_path)
    killed.model.crash_at = 2 * 10 + 1  # first micro-batch of step 11: checkpoint 8 exists, steps 9-10 are lost
    with pytest.raises(RuntimeError, match="simulated crash"):
        killed.train()
    del killed  # the process is gone
    assert latest_checkpoint(tmp_path).name == "step_000008"

    # A fresh process: a differently initialised model, loaded from the checkpoint.
    resumed = make_trainer(tmp_path, model=make_model(init_seed=123), resume=True)
    assert resumed.step == 8
    resumed.train()
    assert state_equal(resumed.model, ref_model)
    # The log of the resumed run is the uninterrupted one: lines from the lost steps 9-10 were dropped.
    assert train_lines(tmp_path) == ref_lines


def test_keyboard_interrupt_mid_step_saves_last_completed_step(tmp_path, reference):
    trainer = make_trainer(tmp_path)
    trainer.model.crash_at = 2 * 9 + 2  # second micro-batch of step 10
    trainer.model.crash_with = KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert latest_checkpoint(tmp_path).name == "step_000009"
    resumed = make_trainer(tmp_path, model=make_model(7), resume=True)
    resumed.train()
    assert state_equal(resumed.model, reference[0])


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_finishes_the_step_saves_and_stops(tmp_path, reference):
    trainer = make_trainer(tmp_path)

    def ctrl_c(call: int) -> None:
        if call == 2 * 9 + 1:  # during step 10
            os.kill(os.getpid(), signal.SIGINT)

    trainer.model.on_call = ctrl_c
    # the handler in force before training: Python's default, or SIG_IGN in a shell's background job
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert trainer.step == 10
    assert latest_checkpoint(tmp_path).name == "step_000010"
    assert signal.getsignal(signal.SIGINT) is before  # handler restored
    resumed = make_trainer(tmp_path, model=make_model(7), resume=True)
    resumed.train()
    assert state_equal(resumed.model, reference[0])


def test_resume_with_a_seeded_dataloader_is_bit_identical(tmp_path):
    def loader():
        return DataLoader(CountingDataset(64), batch_size=4, shuffle=True,
                          generator=torch.Generator().manual_seed(5))

    ref = make_trainer(tmp_path / "ref", data=loader())
    ref.train()
    killed = make_trainer(tmp_path / "run", data=loader())
    killed.model.crash_at = 2 * 10 + 1
    with pytest.raises(RuntimeError):
        killed.train()
    resumed = make_trainer(tmp_path / "run", model=make_model(9), data=loader(), resume=True)
    assert resumed.batches_consumed == 16
    resumed.train()
    assert state_equal(resumed.model, ref.model)


def test_training_further_after_train_returns_continues_exactly(tmp_path, reference):
    trainer = make_trainer(tmp_path, steps=12)
    trainer.train()
    trainer.config.steps = 20  # inverse-sqrt does not depend on the total, so this is the reference run
    trainer.train()
    assert trainer.step == 20 and state_equal(trainer.model, reference[0])


def test_evaluation_does_not_change_the_trajectory(tmp_path, reference):
    calls = []

    def eval_fn(model):
        calls.append(model.training)
        torch.rand(3)  # a metric that draws random numbers must not shift the training RNG
        return {"acc": 0.5, "eval_custom": torch.tensor(2.0)}

    trainer = make_trainer(tmp_path, eval_every=3, eval_data=CountingDataset(10, seed=1), eval_fn=eval_fn)
    trainer.train()
    assert state_equal(trainer.model, reference[0])
    assert calls == [False] * 7  # steps 3, 6, ..., 18 and the final step 20, each in eval mode
    evals = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if "eval_loss" in x]
    assert [e["step"] for e in evals] == [3, 6, 9, 12, 15, 18, 20]
    assert all(e["eval_acc"] == 0.5 and e["eval_custom"] == 2.0 and e["eval_loss"] > 0 for e in evals)
    assert evals[-1]["eval_loss"] < evals[0]["eval_loss"]


def test_metrics_lines_and_token_count(tmp_path):
    trainer = make_trainer(tmp_path, steps=4, log_every=2, warmup_steps=2, lr=1e-2)
    trainer.train()
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [d["step"] for d in lines] == [2, 4]
    assert set(lines[0]) >= {"step", "loss", "lr", "tokens_per_s", "grad_norm"}
    assert lines[0]["lr"] == pytest.approx(1e-2 * 1 / 2)  # the lr used by step 2 (index 1) of the warm-up
    assert lines[1]["lr"] == pytest.approx(1e-2 * (2 / 3) ** 0.5)  # index 3: inverse sqrt after warm-up
    assert lines[0]["tokens_per_s"] > 0
    # 8 examples per step with 7 counted labels each (the first label is -100).
    state = json.loads((latest_checkpoint(tmp_path) / "trainer_state.json").read_text())
    assert state["tokens_seen"] == 4 * 8 * 7 and state["batches_consumed"] == 8
    assert (tmp_path / "config.yaml").read_text().startswith("steps: 4")


def test_elapsed_time_is_recorded_and_continues_over_a_resume(tmp_path):
    trainer = make_trainer(tmp_path, steps=4, log_every=2, save_every=2)
    trainer.train()
    trainer.close()
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    times = [d["elapsed_s"] for d in lines]
    assert all(t > 0 for t in times) and times == sorted(times)
    saved = json.loads((latest_checkpoint(tmp_path) / "trainer_state.json").read_text())["elapsed_s"]
    assert saved >= times[-1]
    resumed = make_trainer(tmp_path, steps=6, log_every=2, save_every=2, resume=True)
    resumed.train()  # the time axis of the second sitting starts where the checkpoint's ended
    resumed.close()
    after = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert after[-1]["step"] == 6 and after[-1]["elapsed_s"] > saved


def test_classification_counts_examples(tmp_path):
    seed_everything(0)
    trainer = Trainer(ToyClassifier(), ParityDataset(32), TrainConfig(steps=3, batch_size=4, lr=1e-2),
                      open_run(tmp_path), progress=False)
    trainer.train()
    assert trainer.tokens_seen == 3 * 4


def test_refuses_to_overwrite_a_run(tmp_path):
    first = make_trainer(tmp_path, steps=2, save_every=1)
    first.train()
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "checkpoints").rglob("*")}
    with pytest.raises(FileExistsError, match="resume=True.*overwrite=True"):
        make_trainer(tmp_path, steps=2)
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "checkpoints").rglob("*")} == before
    # Explicit overwrite starts over.
    again = make_trainer(tmp_path, steps=1, overwrite=True)
    assert not (tmp_path / "metrics.jsonl").exists() and list_checkpoints(tmp_path) == []
    again.train()
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000001"]
    with pytest.raises(ValueError, match="contradict"):
        make_trainer(tmp_path, resume=True, overwrite=True)


def test_unrelated_files_do_not_block_a_fresh_run(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    make_trainer(tmp_path, steps=1).train()
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_resume_without_checkpoint_starts_fresh_and_finished_run_is_a_no_op(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 9.0}\n')  # a run killed before its first save
    trainer = make_trainer(tmp_path, steps=2, resume=True)
    assert trainer.step == 0
    assert (tmp_path / "metrics.jsonl").read_text() == ""  # its lines described lost steps
    trainer.train()
    done = make_trainer(tmp_path, steps=2, resume=True)
    assert done.step == 2
    before = (tmp_path / "metrics.jsonl").read_text()
    done.train()
    assert (tmp_path / "metrics.jsonl").read_text() == before


def test_bf16_runs_under_autocast(tmp_path):
    seen = []
    trainer = make_trainer(tmp_path, steps=2, bf16=True)
    trainer.model.on_call = lambda call: seen.append(torch.is_autocast_enabled("cpu"))
    trainer.train()
    assert seen == [True] * 4
    assert trainer.model.emb.weight.dtype == torch.float32  # weights stay fp32
    assert torch.isfinite(torch.tensor(trainer.recorder.last_metrics["loss"]))


def test_tensorboard_missing_gives_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # makes the import fail
    with pytest.raises(ImportError, match="pip install tensorboard"):
        make_trainer(tmp_path, tensorboard=True)


def test_bad_model_output_and_tiny_dataset_errors(tmp_path):
    class NoLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(2, 2)

        def forward(self, input_ids, labels=None):
            return {"logits": self.w.weight}

    with pytest.raises(TypeError, match="'loss'"):
        make_trainer(tmp_path / "a", model=NoLoss(), steps=1).train()
    with pytest.raises(ValueError, match="too few"):
        make_trainer(tmp_path / "b", data=CountingDataset(3))


def test_resume_with_adafactor_and_cosine_is_bit_identical(tmp_path):
    opts = dict(steps=8, optimizer="adafactor", schedule="cosine", min_lr=1e-3, weight_decay=0.01, save_every=3)
    ref = make_trainer(tmp_path / "ref", **opts)
    ref.train()
    killed = make_trainer(tmp_path / "run", **opts)
    killed.model.crash_at = 2 * 5 + 1
    with pytest.raises(RuntimeError):
        killed.train()
    resumed = make_trainer(tmp_path / "run", model=make_model(4), resume=True, **opts)
    assert resumed.step == 3
    resumed.train()
    assert state_equal(resumed.model, ref.model)
