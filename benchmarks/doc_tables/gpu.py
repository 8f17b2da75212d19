"""docs/benchmarks.md's GPU section from the records of ``benchmarks/speed/gpu_suite.py``
(``benchmarks/results/gpu_*.jsonl``, added by ``gpu_suite.py --collect OUT`` after a run): the compiled kernels'
test outcomes, every kind against SDPA (FlashAttention) in fp32 and bf16, LRA's Table 2 and the paper's Table 4 on
the GPU. Each table is a function of the newest GPU run's entries (smoke runs on a CPU are never shown), listed in
``doc_tables/registry.py`` with its record; until a run is recorded each says how to make one.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, read_entries  # noqa: E402

from doc_tables.bench import markdown  # noqa: E402 - the sibling module
from synthformer.bench.lra_report import table2_markdown  # noqa: E402
from synthformer.bench.table import to_markdown  # noqa: E402

RUN = "python benchmarks/speed/gpu_suite.py --out OUT"
COLLECT = "python benchmarks/speed/gpu_suite.py --collect OUT"
PATH_LABELS = {"sdpa": "SDPA", "triton": "Triton", "pytorch": "PyTorch"}


def newest_run(name: str) -> tuple[list[dict[str, Any]], str]:
    """The entries of ``gpu_NAME.jsonl`` from the newest GPU run (runs are named by their start time), and the
    record's path; a row written twice in a run: its last entry."""
    path = RESULTS / f"gpu_{name}.jsonl"
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in read_entries(path):
        if not entry.get("smoke") and "suite_run" in entry and "row" in entry:
            runs.setdefault(str(entry["suite_run"]), {})[str(entry["row"])] = entry
    return (list(runs[max(runs)].values()) if runs else []), str(path.relative_to(ROOT))


def placeholder(record: str) -> str:
    """What a table shows until a GPU run's records are collected into ``record``."""
    return f"(not measured yet: no GPU run recorded yet in `{record}`: `{RUN}` on a GPU machine, then `{COLLECT}`)"


def gpu_note(entries: list[dict[str, Any]], record: str) -> str:
    """The provenance line: the record, the run, the GPU and machine, versions, commit and command."""
    e = entries[0]
    return (f"Record: `{record}` (GPU run of {e.get('suite_run')}; {e.get('gpu')}; {e.get('machine')}; torch "
            f"{e.get('torch')}, CUDA {e.get('cuda')}, Triton {e.get('triton')}; commit {e.get('commit')}; "
            f"`{e.get('command')}`).")


def _outcomes(cases: list[dict[str, Any]]) -> str:
    if not cases:
        return ""
    passed = sum(c["outcome"] == "passed" for c in cases)
    failed = sum(c["outcome"] in ("failed", "error") for c in cases)
    text = f"{passed}/{len(cases)} passed"
    return text + (f", **{failed} failed**" if failed else "")


def correctness_table(entries: list[dict[str, Any]]) -> str:
    """Per kind, the compiled-kernel tests that passed, by dtype and causality; the failures' messages under it."""
    entry = entries[-1]
    cases = entry.get("cases", [])
    if not cases:
        return f"No test case ran: {entry.get('status')}, pytest said `{entry.get('summary')}`."
    columns = sorted({(c["dtype"], c["causal"]) for c in cases}, key=lambda k: (k[0] != "fp32", k[1]))
    kinds = list(dict.fromkeys(c["kind"] for c in cases))
    body = [[kind, *(_outcomes([c for c in cases if (c["kind"], c["dtype"], c["causal"]) == (kind, d, causal)])
                     for d, causal in columns)] for kind in kinds]
    header = ["kind", *(f"{d}, {'causal' if causal else 'bidirectional'}" for d, causal in columns)]
    failures = [f"- `{case}`: {message}" for case, message in entry.get("failures", {}).items()]
    ended = f"pytest: `{entry.get('summary')}` ({entry.get('status')}; `{' '.join(entry.get('tests', []))}`)."
    return "\n\n".join([markdown(header, body), *(["Failures:\n\n" + "\n".join(failures)] if failures else []),
                        ended])


def _ratio(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    if row.get("status") == "out of memory":
        return "out of memory"
    return "" if math.isnan(row["ratio_to_V"]) else f"{row['ratio_to_V']:.2f}"


def attention_table(entries: list[dict[str, Any]]) -> str:
    """Every kind's forward + backward time as a ratio to V's (SDPA) per dtype and length, through each path;
    V's own row in ms."""
    rows = [r for e in entries for r in e.get("rows", [])]
    if not rows:
        return "No length finished within the run's budget."
    columns = sorted({(r["dtype"], r["L"]) for r in rows}, key=lambda k: (k[0] != "fp32", k[1]))
    keys = list(dict.fromkeys((r["kind"], r["path"]) for r in rows))
    found = {(r["kind"], r["path"], r["dtype"], r["L"]): r for r in rows}
    body = []
    for kind, path in keys:
        cells = [found.get((kind, path, d, n)) for d, n in columns]
        if kind == "V":
            body.append([f"V, {PATH_LABELS.get(path, path)} (ms)",
                         *("" if c is None else f"{c['ms']:,.2f}" for c in cells)])
        else:
            body.append([f"{kind}, {PATH_LABELS.get(path, path)}", *(_ratio(c) for c in cells)])
    first = next(e for e in entries if e.get("rows"))
    skipped = [e for e in entries if str(e.get("status", "")).startswith("skipped")]
    shape = (f"B={first.get('batch')}, d_model {first.get('d_model')}, {first.get('heads')} heads, bidirectional, "
             f"median of {first.get('repeats')} after {first.get('warmup')} warm-up rounds, CUDA events."
             + "".join(f" Not started for the budget: {e['row'].removeprefix('skipped ')} ({e.get('reason')})."
                       for e in skipped))
    return markdown(["kind, path", *(f"{d} L={n}" for d, n in columns)], body) + "\n\n" + shape


def lra_table(entries: list[dict[str, Any]]) -> str:
    """LRA's Table 2 on the GPU, through the function that prints it in ``synthformer bench --lra-table2``."""
    rows = [r for e in entries for r in e.get("rows", [])]
    if not rows:
        return "No length finished within the run's budget."
    return table2_markdown(rows) + f"\n\nBatch {rows[0]['batch_size']} sequences per step (LRA used 32)."


def table4_table(entries: list[dict[str, Any]]) -> str:
    """The paper's Table 4 (``lm-base``) on the GPU, through ``synthformer bench``'s own table, per dtype."""
    parts = []
    for e in sorted(entries, key=lambda e: e.get("dtype") != "fp32"):
        first = e["rows"][0]
        parts.append(f"{e.get('dtype')}, batch {first['batch_size']} x {first['seq_len']} tokens:\n\n"
                     + to_markdown(e["rows"]))
    return "\n\n".join(parts)


def suite_table(entries: list[dict[str, Any]]) -> str:
    """How each piece of the run ended, and its seconds."""
    body = [[e["row"], str(e.get("status")), f"{e.get('seconds', float('nan')):.0f}"] for e in entries]
    return markdown(["piece", "how it ended", "seconds"], body, align="---")
