"""Two processes with torchrun (gloo on CPU): replicas stay identical and resume is exact (DDP); a loss spike on one
process is skipped by both; DDP and FSDP2 train as one process does on the same global batch, and checkpoints move
between 1 and 2 processes.

The two-process runs are jobs of the suite's one torchrun launch (tests/two_processes.py, the fixture
``two_processes``); the tests check what each job wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.two_processes import ONE_LAUNCH, rewind, train_one


@ONE_LAUNCH
def test_torchrun_two_processes_train_and_agree(two_processes):
    root = two_processes.root / "agree"  # ddp_script.py's job
    weights = {(name, r): load_file(root / f"{name}-rank{r}.safetensors")
               for name in ("reference", "run") for r in (0, 1)}
    ref = weights["reference", 0]
    # Both replicas agree, and the stopped-and-resumed run equals the uninterrupted one bit for bit.
    for w in weights.values():
        assert w.keys() == ref.keys() and all(torch.equal(w[k], ref[k]) for k in ref)

    from synthformer.train import load_checkpoint

    run = root / "run"
    ck = load_checkpoint(run)
    assert ck.step == 10 and len(ck.rng_states) == 2 and ck.trainer_state["world_size"] == 2
    assert not torch.equal(ck.rng_states[0]["torch"], ck.rng_states[1]["torch"])  # per-process dropout
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [d["step"] for d in lines if "loss" in d] == [2, 4, 6, 8, 10]
    assert [d["step"] for d in lines if "eval_loss" in d] == [3, 6, 9, 10]
    result = json.loads((root / "result.json").read_text())
    assert result["loss"] < lines[0]["loss"]  # it learned


@ONE_LAUNCH
def test_a_loss_spike_on_one_process_is_skipped_by_both(two_processes):
    from tests.reliability.long_runs import cases

    assert cases("spike-two") == ("spike-rank1",)
    root = two_processes.root / "spike"  # spike_script.py's job: process 1's loss of step 3 spikes, process 0's not
    views = [json.loads((root / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert views[0] == views[1] and views[0]["skipped"] == 1  # the same decision, the same reference
    rank0, rank1 = (load_file(root / f"rank{r}.safetensors") for r in (0, 1))
    assert all(torch.equal(rank0[k], rank1[k]) and torch.isfinite(rank0[k]).all() for k in rank0)
    lines = [json.loads(x) for x in (root / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [d["skipped_steps"] for d in lines if "loss" in d] == [0, 0, 1, 1, 1, 1]
    recent = views[0]["reference"]["loss_reference"]["recent"]
    assert len(recent) == 5 and max(recent) < 100  # the spike's loss never joined the reference

    from synthformer.train import load_checkpoint

    assert load_checkpoint(root / "run").trainer_state["loss_reference"] == views[0]["reference"]["loss_reference"]


# ----------------------------------------------------------------------------------------------------------------
# DDP and FSDP2 against one process on the same global batch; checkpoints moved between world sizes

#: Tolerances of 2 processes against 1 on the same global batch: the same sums in another order (float32). AdamW
#: divides each gradient by its own running size, so the rounding differences of small gradients reach the weights
#: relatively unshrunk: 1e-4 is a hundredth of one update at lr 1e-2.
LOSS_TOL = 1e-5
WEIGHT_TOL = 1e-4
#: Key biases are compared apart: softmax over the keys ignores a key bias, so its true gradient is 0 and what it
#: gets is rounding noise, which AdamW scales up to a sizeable part of an update whatever the order of the sums.
KEY_BIAS_TOL = 0.2 * 1e-2 * 6  # a fifth of 6 full updates


def weights(run: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(run / "checkpoints" / f"step_{step:06d}" / "model.safetensors")


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], key_bias: bool = False) -> float:
    """Max abs difference over every tensor, the key biases left out; or over the key biases alone."""
    assert a.keys() == b.keys()
    diffs = []
    for k in a:
        d = (a[k] - b[k]).abs()
        if k.endswith("qk.bias"):  # (2 d,): query bias, then key bias
            diffs.append(d[d.numel() // 2:] if key_bias else d[: d.numel() // 2])
        elif k.endswith("key.bias") == key_bias:
            diffs.append(d)
    return max(float(d.max()) for d in diffs)


def metric(run: Path, name: str = "loss") -> dict[int, float]:
    """``name`` by step in the run's metrics.jsonl."""
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return {d["step"]: d[name] for d in lines if name in d}


@ONE_LAUNCH
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_processes_equal_one_and_checkpoints_move_between_world_sizes(mode, two_processes, tmp_path):
    single, job = two_processes.single, two_processes.root / mode  # parallel_script.py's job in this mode
    two = job / "two"
    measured = {}

    # Replicas (DDP) or the shards gathered on each process (FSDP) agree, and are what the checkpoint holds.
    rank0, rank1 = (load_file(job / f"two-rank{r}.safetensors") for r in (0, 1))
    assert all(torch.equal(rank0[k], rank1[k]) for k in rank0)
    assert all(torch.equal(rank0[k], v) for k, v in weights(two, 6).items())
    if mode == "fsdp":  # sharded indeed: each block is a unit, and each process holds part of every block tensor
        shards = json.loads((job / "shards.json").read_text())
        # fully_shard subclasses each unit (TransformerBlock -> FSDPTransformerBlock)
        assert shards["units"] == ["FSDPSeq2SeqTransformer", "FSDPTransformerBlock", "FSDPTransformerBlock",
                                   "FSDPSynthesizerCrossAttention"]
        blocks = {n: s for n, s in shards["sizes"].items() if ".layers." in n}
        assert blocks and all(local < whole for local, whole in blocks.values())

    # The same checkpoint format as one process (tied weights once, the optimizer's numbered state)...
    assert weights(two, 1).keys() == weights(single, 1).keys()
    opt_one, opt_two = (torch.load(r / "checkpoints/step_000003/optimizer.pt", weights_only=True)
                        for r in (single, two))
    assert opt_one["state"].keys() == opt_two["state"].keys()
    assert [g["params"] for g in opt_one["param_groups"]] == [g["params"] for g in opt_two["param_groups"]]
    measured["exp_avg step 3"] = max(float((opt_one["state"][i]["exp_avg"] - s["exp_avg"]).abs().max())
                                     for i, s in opt_two["state"].items())
    # ... and the same numbers: first loss, weights after step 1 and after step 6.
    loss_one, loss_two = metric(single), metric(two)
    measured["loss"] = max(abs(loss_one[s] - loss_two[s]) for s in range(1, 7))
    measured["eval loss"] = max(abs(metric(single, "eval_loss")[s] - metric(two, "eval_loss")[s]) for s in (3, 6))
    measured["grad norm"] = max(abs(metric(single, "grad_norm")[s] - metric(two, "grad_norm")[s]) for s in (1, 6))
    assert sorted(metric(two, "eval_probe")) == [3, 6]  # a forward pass on one process alone did not hang
    measured["weights step 1"] = max_diff(weights(single, 1), weights(two, 1))
    measured["weights step 6"] = max_diff(weights(single, 6), weights(two, 6))
    measured["key bias step 6"] = max_diff(weights(single, 6), weights(two, 6), key_bias=True)

    # 1 -> 2: the resumed processes start from the checkpoint's weights and end where one process did.
    resumed = job / "one_to_two"  # the launch's fixture rewound `single` to step 3 there
    for r in (0, 1):
        start = load_file(job / f"resumed-rank{r}.safetensors")
        assert all(torch.equal(start[k], v) for k, v in weights(single, 3).items())
    measured["1->2 weights step 6"] = max_diff(weights(single, 6), weights(resumed, 6))
    measured["1->2 loss"] = max(abs(loss_one[s] - metric(resumed)[s]) for s in range(4, 7))

    # 2 -> 1: likewise, in this process (on a copy: the launch's runs are shared by the tests).
    back = rewind(two, tmp_path / "two_to_one", 3)
    with train_one(back, resume=True) as trainer:
        assert trainer.step == 3
        state = trainer.model.state_dict()
        assert all(torch.equal(state[k], v) for k, v in weights(two, 3).items())
        trainer.train()
    measured["2->1 weights step 6"] = max_diff(weights(two, 6), weights(back, 6))
    measured["2->1 loss"] = max(abs(loss_two[s] - metric(back)[s]) for s in range(4, 7))

    print(f"\n{mode} max abs differences:", {k: f"{v:.1e}" for k, v in measured.items()})
    assert loss_two[6] < loss_two[1]  # it learned
    for key, value in measured.items():
        assert value <= (LOSS_TOL if "loss" in key else KEY_BIAS_TOL if "key" in key else WEIGHT_TOL), (key, value)


def test_accelerate_sharding_setups_are_refused(tmp_path):
    """accelerate's own FSDP/DeepSpeed wrappers would make checkpoints that cannot be saved whole: refused, before
    anything in the run directory changes, and the directory is not left locked."""
    from types import SimpleNamespace

    from accelerate.utils import DistributedType
    from toymodels import CountingDataset, ToyLM

    from synthformer.common.config import ConfigError
    from synthformer.train import Run, TrainConfig, Trainer

    for kind in (DistributedType.FSDP, DistributedType.DEEPSPEED):
        acc = SimpleNamespace(is_main_process=True, process_index=0, num_processes=1, distributed_type=kind)
        with Run.open(tmp_path / "run") as run, pytest.raises(
                ConfigError, match=rf"^accelerate is configured for {kind.value}: .*train\.distributed"):
            Trainer(ToyLM(), CountingDataset(8), TrainConfig(steps=1, batch_size=2), run, accelerator=acc,
                    progress=False)
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
