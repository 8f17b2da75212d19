"""``benchmarks/speed/gpu_suite.py`` in its CPU smoke mode (tiny shapes, seconds): every piece writes its entries to the
folder it is given as soon as it finishes, each naming the machine and the GPU; the budget stops what would not
fit; ``--collect`` and ``doc_tables/gpu.py`` turn a run's records into docs/benchmarks.md's GPU tables. No timing
is asserted: only the structure, and that the numbers are finite and positive."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from .scripts import doc_builders, load_script


@pytest.fixture()
def suite(monkeypatch):
    return load_script("speed/gpu_suite", monkeypatch)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _positive(*numbers: float) -> bool:
    return all(math.isfinite(x) and x > 0 for x in numbers)


def test_the_smoke_run_records_every_piece_and_the_docs_build_from_it(suite, monkeypatch, tmp_path):
    out = tmp_path / "out"
    pieces = ["attention-fp32", "lra-table2", "table4-fp32"]
    assert suite.main(["--out", str(out), "--smoke", "--in-process", "--pieces", *pieces]) == 0
    status = _read(out / "gpu_suite.jsonl")
    assert [(e["row"], e["status"]) for e in status] == [(p, "ok") for p in pieces]
    attention, lra, table4 = (_read(out / f"gpu_{n}.jsonl") for n in ("attention", "lra_table2", "table4"))
    everything = status + attention + lra + table4
    assert len({e["suite_run"] for e in everything}) == 1
    for e in everything:  # the machine and the GPU in every entry, and how it was run
        assert e["gpu"] == "none" and e["machine"] and e["smoke"] is True and e["command"].startswith("python ")
    assert [e["row"] for e in attention] == ["fp32 L=16", "fp32 L=32"]  # one entry per length, each when done
    rows = [r for e in attention for r in e["rows"]]
    assert {(r["kind"], r["path"]) for r in rows} == {("V", "sdpa"), ("R", "pytorch"), ("D", "pytorch")}
    assert all(_positive(r["ms"], r["ratio_to_V"]) and r["status"] == "measured" for r in rows)
    assert [r["kind"] for r in lra[0]["rows"]] == ["V", "R"] and _positive(*(r["step_ms"] for r in lra[0]["rows"]))
    assert _positive(*(r["steps_per_s"] for r in table4[0]["rows"])) and table4[0]["row"] == "fp32"

    # collected (smoke entries are never collected: re-marked here as a GPU run's), then built into the docs
    for name in ("gpu_suite", "gpu_attention", "gpu_lra_table2", "gpu_table4"):
        (out / f"{name}.jsonl").write_text("".join(json.dumps({**e, "smoke": False}) + "\n"
                                                   for e in _read(out / f"{name}.jsonl")))
    results = tmp_path / "results"
    added = suite.collect(out, results)
    assert added["gpu_attention"] == 2 and added["gpu_correctness"] == 0
    docs = load_script("doc_tables/gpu", monkeypatch)
    monkeypatch.setattr(docs, "RESULTS", results)
    monkeypatch.setattr(docs, "ROOT", tmp_path)
    tables = doc_builders(monkeypatch)
    assert "| attention-fp32 | ok |" in tables["gpu-suite"]()
    text = tables["gpu-attention"]()
    assert "| kind, path | fp32 L=16 | fp32 L=32 |" in text and "| V, SDPA (ms) |" in text and "| D, PyTorch |" in text
    assert "| R |" in tables["gpu-lra-table2"]() and "| Transformer |" in tables["gpu-table4"]()
    assert tables["gpu-correctness"]().startswith("(not measured yet: no GPU run recorded yet")


def test_smoke_entries_are_never_collected_nor_shown(suite, monkeypatch, tmp_path):
    entry = {"table": "gpu_suite", "row": "table4-fp32", "status": "ok", "seconds": 1.0, "suite_run": "r",
             "smoke": True}
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "gpu_suite.jsonl").write_text(json.dumps(entry) + "\n")
    assert suite.collect(tmp_path / "out", tmp_path / "results")["gpu_suite"] == 0
    docs = load_script("doc_tables/gpu", monkeypatch)
    monkeypatch.setattr(docs, "RESULTS", tmp_path / "out")
    monkeypatch.setattr(docs, "ROOT", tmp_path)
    assert doc_builders(monkeypatch)["gpu-suite"]().startswith("(not measured yet")


def test_a_piece_is_not_started_without_the_time_it_needs(suite, tmp_path):
    out = tmp_path / "out"
    assert suite.main(["--out", str(out), "--smoke", "--budget-s", "0", "--min-start-s", "1"]) == 1
    assert {e["status"].split(" (")[0] for e in _read(out / "gpu_suite.jsonl")} == {"skipped: budget"}
    assert [e["row"] for e in _read(out / "gpu_suite.jsonl")] == suite.PIECES
    # within a piece, a length starts only when the last one's time, scaled by the lengths squared, fits
    runner = suite.Suite(out, True, time.time() + 0.2, "r", "python benchmarks/speed/gpu_suite.py")
    done: list[int] = []

    def measure(length: int) -> None:
        time.sleep(0.05)
        done.append(length)

    runner.lengths([16, 64, 128], measure, "gpu_attention")
    assert done == [16]  # 64 would need 16x the first length's 0.05 s
    skipped = _read(out / "gpu_attention.jsonl")[-1]
    assert skipped["status"] == "skipped: budget" and skipped["row"] == "skipped [64, 128]"


def test_a_timed_piece_runs_in_a_process_of_its_own(suite, tmp_path):
    out = tmp_path / "out"
    assert suite.main(["--out", str(out), "--smoke", "--pieces", "attention-bf16"]) == 0
    (status,) = _read(out / "gpu_suite.jsonl")
    assert status["status"] == "ok" and status["row"] == "attention-bf16"
    entries = _read(out / "gpu_attention.jsonl")  # written by the child, with the suite's command and run
    assert [e["row"] for e in entries] == ["bf16 L=16", "bf16 L=32"]
    for entry in entries:
        assert entry["suite_run"] == status["suite_run"]
        assert entry["command"] == f"python benchmarks/speed/gpu_suite.py --out {out} --smoke --pieces attention-bf16"
        assert _positive(*(r["ms"] for r in entry["rows"]))


PYTEST_OUTPUT = """\
tests/attention/test_triton_gpu.py::test_compiled_kernels_equal_the_plain_path[D-bidir-max_len-fp32] PASSED [ 25%]
tests/attention/test_triton_gpu.py::test_compiled_kernels_equal_the_plain_path[D-causal-shorter-bf16] PASSED [ 50%]
tests/attention/test_triton_gpu.py::test_compiled_kernels_equal_the_plain_path[R+V-bidir-max_len-bf16] FAILED [ 75%]
tests/attention/test_triton.py::test_triton_kernels_equal_the_plain_path[GLU-causal-max_len] PASSED [100%]

=========================== short test summary info ============================
FAILED tests/attention/test_triton_gpu.py::test_compiled_kernels_equal_the_plain_path[R+V-bidir-max_len-bf16] - \
CompilationError: tl.dot operands must have the same dtype
==================== 1 failed, 3 passed in 42.10s ====================
"""


def test_the_test_outcomes_are_read_per_kind_dtype_and_causality(suite, monkeypatch, tmp_path):
    parsed = suite.parse_pytest(PYTEST_OUTPUT)
    assert [(c["kind"], c["dtype"], c["causal"], c["outcome"]) for c in parsed["cases"]] == [
        ("D", "fp32", False, "passed"), ("D", "bf16", True, "passed"), ("R+V", "bf16", False, "failed"),
        ("GLU", "fp32", True, "passed")]
    assert parsed["failures"] == {"R+V-bidir-max_len-bf16": "CompilationError: tl.dot operands must have the same "
                                                            "dtype"}
    assert parsed["summary"] == "1 failed, 3 passed in 42.10s"
    docs = load_script("doc_tables/gpu", monkeypatch)
    text = docs.correctness_table([{"status": "exit 1", "tests": ["tests/attention/test_triton_gpu.py"], **parsed}])
    assert "| kind | fp32, bidirectional | fp32, causal | bf16, bidirectional | bf16, causal |" in text
    assert "| R+V |  |  | 0/1 passed, **1 failed** |  |" in text and "| D | 1/1 passed |  |  | 1/1 passed |" in text
    assert "`R+V-bidir-max_len-bf16`: CompilationError" in text
