"""``synthformer bench --lra-table2`` (``synthformer.bench.lra``): LRA's Table 2 harness on tiny shapes: a row per
kind, length and causality with positive times and memory, the memory guard and the out-of-memory path, bad options
as one-line errors. No timing is asserted beyond "positive"."""

from __future__ import annotations

import math

import pytest

from synthformer.bench import lra
from synthformer.bench.cli import main
from synthformer.bench.lra import LRA_KINDS, run_lra_table2

TINY = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}
# the memory guard's meta-device trace is tested on its own below (its first use imports torch's compiler stack)
FAST = {"lengths": [16], "batch_size": 1, "warmup": 0, "repeats": 1, "overrides": TINY, "threads": 1,
        "memory_guard": False}


def test_every_kind_gets_a_measured_row_with_positive_times_and_its_flop_limit():
    rows = run_lra_table2(causal="none", memory=False, **FAST)
    assert [r["kind"] for r in rows] == list(LRA_KINDS)
    for r in rows:
        assert r["status"] == "measured" and r["L"] == 16 and r["causal"] is False
        assert r["step_ms"] > 0 and r["params"] > 0 and r["speed_vs_V"] > 0 and r["speed_limit"] > 0
        assert math.isnan(r["peak_mib"])  # memory=False
    v = rows[0]
    assert v["speed_vs_V"] == 1.0 and v["speed_limit"] == 1.0
    # R computes no logits: its limit is above 1 (fewer multiply-adds than V); D+V does both V's and D's: below 1
    limits = {r["kind"]: r["speed_limit"] for r in rows}
    assert limits["R"] > 1.0 > limits["D+V"]


def test_peak_memory_is_measured_for_attention_kinds_and_whole_mixers_alike():
    """One profiled step per model (the same path for every kind, so two kinds and V cover it)."""
    rows = run_lra_table2(kinds=["R", "Linformer"], causal="none", **FAST)
    for r in rows:
        assert r["peak_mib"] > 0 and r["memory_vs_V"] > 0
    assert rows[0]["memory_vs_V"] == 1.0
    # a model of its own per kind: R's L x L alignment per head replaces V's Q and K projections
    assert rows[1]["kind"] == "R" and rows[1]["params"] != rows[0]["params"]


def test_causal_rows_compare_with_their_own_bidirectional_row_and_linformer_is_skipped():
    rows = run_lra_table2(kinds=["R", "Linformer"], causal="both", memory=False, **FAST)
    causal = {r["kind"]: r for r in rows if r["causal"]}
    assert set(causal) == {"V", "R", "Linformer"}
    assert causal["Linformer"]["status"] == "skipped" and "cannot be causal" in causal["Linformer"]["reason"]
    assert math.isnan(causal["Linformer"]["step_ms"])
    for kind in ("V", "R"):
        assert causal[kind]["causal_speedup"] > 0
        # L = 16: a causal layer needs 136 of the 256 query-key pairs, so its multiply-adds are fewer
        assert causal[kind]["causal_limit"] > 1.0
    assert all(math.isnan(r["peak_mib"]) for r in rows)  # memory=False


def test_a_kind_over_the_memory_limit_is_skipped_with_its_estimate_not_run():
    rows = run_lra_table2(kinds=["R"], causal="none", memory_limit=1, **{**FAST, "memory_guard": True})
    assert [r["status"] for r in rows] == ["skipped", "skipped"]
    assert "memory limit" in rows[1]["reason"] and rows[1]["estimated_mib"] > 0
    assert math.isnan(rows[1]["step_ms"]) and math.isnan(rows[1]["speed_vs_V"])


def test_an_allocation_failure_is_reported_as_out_of_memory_and_the_run_goes_on(monkeypatch):
    build = lra._build

    def failing(m, *args):
        if m.kind == "R":
            raise RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate 68719476736 bytes.")
        return build(m, *args)

    monkeypatch.setattr(lra, "_build", failing)
    rows = run_lra_table2(kinds=["R", "FR"], causal="none", memory=False, **FAST)
    status = {r["kind"]: r["status"] for r in rows}
    assert status == {"V": "measured", "R": "out of memory", "FR": "measured"}
    assert "not enough memory" in rows[1]["reason"]


def test_the_memory_estimate_sees_the_quadratic_attention_of_v():
    """The guard's estimate for V grows by at least the L x L probabilities of each layer (B x H x L^2 floats)."""
    config = {n: lra.row_config(lra.lra_text_config(n, TINY), LRA_KINDS["V"]) for n in (32, 64)}
    need = {n: lra._estimate(lra._Model("V", c, False), 2)[0] for n, c in config.items()}
    assert need[64] - need[32] >= 2 * TINY["n_heads"] * (64**2 - 32**2) * 4


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--kinds", "V", "Performer"], "'Performer'"),
        (["--lengths", "1024", "0"], "got 0"),
        (["--lengths", "-8"], "got -8"),
        (["--batch-size", "0"], "batch_size must be an integer >= 1, got 0"),
        (["--set", "max_len=8"], "max_len"),
        (["--memory-limit", "0"], "--memory-limit must be a positive number of GiB, got 0.0"),
    ],
)
def test_bad_options_are_one_line_errors_naming_the_value(argv, named, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--lra-table2", *argv], prog="synthformer bench")
    assert exc.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("synthformer bench --lra-table2: error:") and named in error


def test_the_command_prints_the_tables_and_writes_md_and_csv(tmp_path, capsys):
    argv = ["--lra-table2", "--kinds", "R", "--lengths", "16", "--batch-size", "1", "--warmup", "0", "--repeats",
            "1", "--causal", "none", "--no-memory", "--no-memory-guard", "--no-progress", "--threads", "1", "--out",
            str(tmp_path / "t2"),
            "--set", *(f"{k}={v}" for k, v in TINY.items())]
    assert main(argv, prog="synthformer bench") == 0
    out = capsys.readouterr().out
    assert "command: synthformer bench --lra-table2 --kinds R" in out
    assert "| kind | 16 speed (limit) | 16 memory |" in out and "\n| R | " in out
    assert "goal R: speed within 10% of its FLOP-ratio limit" in out
    csv = (tmp_path / "t2.csv").read_text().splitlines()
    assert csv[0].startswith("kind,model,L,causal,status") and len(csv) == 3
