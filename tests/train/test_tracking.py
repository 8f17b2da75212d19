"""``train.log_with``: experiment trackers (accelerate's) receive what ``metrics.jsonl`` receives, offline."""

from __future__ import annotations

import importlib.util
import json

import pytest
from toymodels import CountingDataset, ToyLM

from synthformer.common.config import ConfigError, from_dict
from synthformer.train import Run, TrainConfig, Trainer, seed_everything
from synthformer.train.tracking import TRACKERS, check_trackers


@pytest.mark.parametrize("bad", [["tensorbord"], ["tensorboard", "comet"]])
def test_an_unknown_tracker_is_a_config_error_naming_it_and_the_valid_ones(bad):
    with pytest.raises(ConfigError, match=rf"log_with: unknown tracker '{bad[-1]}'; valid: tensorboard, wandb, mlflow"):
        from_dict(TrainConfig, {"log_with": bad})


def test_a_single_tracker_name_is_a_list_of_one_and_none_is_the_default():
    assert TrainConfig(log_with="tensorboard").log_with == ["tensorboard"]
    assert TrainConfig().log_with == []
    with pytest.raises(ConfigError, match="tracker_project"):
        TrainConfig(tracker_project=" ")


@pytest.mark.parametrize("name", sorted(TRACKERS))
def test_a_tracker_without_its_package_names_the_package_to_install(name):
    if importlib.util.find_spec(TRACKERS[name]) is not None:
        check_trackers([name])  # installed: nothing to say
        return
    with pytest.raises(ConfigError, match=rf"'{name}' needs the '{name}' package: pip install {name}"):
        check_trackers([name])


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None, reason="needs the tensorboard package")
def test_tensorboard_tracker_receives_the_metrics_lines_offline(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    seed_everything(0)
    cfg = TrainConfig(steps=4, batch_size=4, lr=1e-2, log_every=2, save_every=0, log_with=["tensorboard"],
                      tracker_project="toy")
    with Run.open(tmp_path / "run") as run, Trainer(ToyLM(), CountingDataset(16), cfg, run, progress=False) as trainer:
        trainer.train()
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    logged = {d["step"]: d["loss"] for d in lines if "loss" in d}
    events = EventAccumulator(str(tmp_path / "run" / "trackers" / "toy"))
    events.Reload()
    # the same records: every training line's loss at its step (float32 in the event file)
    assert {e.step: e.value for e in events.Scalars("loss")} == pytest.approx(logged, rel=1e-6)
    assert sorted(logged) == [2, 4]
