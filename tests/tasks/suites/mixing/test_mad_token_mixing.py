"""The MAD benchmarks through the task type ``token_mixing`` (by name, ``generator: mixing:<benchmark>``): every one
loads its three splits with the options checked there, and one trains end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synthformer.cli.main import main
from synthformer.common.config import ConfigError
from synthformer.tasks import TaskConfig, load_raw_data
from synthformer.tasks.suites.mixing import mad_copying, mad_fuzzy_recall, mad_memorization, mad_recall  # noqa: F401
from synthformer.tasks.suites.mixing.sequences import get_benchmark

from ...helpers import TINY_MODEL, TINY_TRAIN, write_yaml

SMALL: dict[str, dict[str, Any]] = {
    "recall": {"seq_len": 16},
    "noisy_recall": {"seq_len": 16},
    "fuzzy_recall": {"seq_len": 16},
    "selective_copy": {"seq_len": 16, "num_tokens_to_copy": 4},
    "memorization": {"seq_len": 16},
}


def small(name: str) -> dict[str, Any]:
    return {"num_train": 32, "num_valid": 8, "num_test": 8, **SMALL[name]}


@pytest.mark.parametrize("name", list(SMALL))
def test_loads_through_the_generator(name: str) -> None:
    opts = small(name)
    raw = load_raw_data(TaskConfig(type="token_mixing", generator=f"mixing:{name}", generator_options=opts,
                                   max_len=16))
    assert {k: len(v) for k, v in raw.splits.items()} == {"train": 32, "valid": 8, "test": 8}
    assert {len(s.tokens) for split in raw.splits.values() for s in split} == {17}
    assert raw.splits["train"] == get_benchmark(name).make(32, 0, get_benchmark(name).check(
        {**get_benchmark(name).option_defaults, **opts}))  # split k is drawn with seed + k


@pytest.mark.parametrize("name,option,value", [("recall", "seq_len", 15), ("noisy_recall", "frac_noise", 2),
                                               ("selective_copy", "seq_len", 8)])
def test_a_bad_option_is_refused_when_the_config_is_read(name: str, option: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"task\.generator_options\.{option}: "):
        load_raw_data(TaskConfig(type="token_mixing", generator=f"mixing:{name}",
                                 generator_options={**small(name), option: value}, max_len=16))


def test_selective_copy_trains_end_to_end_through_the_cli(tmp_path: Path) -> None:
    config = {"task": {"type": "token_mixing", "generator": "mixing:selective_copy",
                       "generator_options": small("selective_copy"), "max_len": 16},
              "model": {**TINY_MODEL, "decoder_kind": "R+V"},
              "train": {**TINY_TRAIN, "steps": 3, "eval_every": 3, "save_every": 3}}
    run_dir = tmp_path / "run"
    assert main(["train", str(write_yaml(tmp_path / "copy.yaml", config)), "--run-dir", str(run_dir),
                 "--no-progress", "-q"]) == 0
    assert main(["eval", str(run_dir), "--split", "test"]) == 0
    report = json.loads((run_dir / "eval_test.json").read_text())
    metrics = report.get("metrics", report)
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["answers"] == 8 * 4
