"""docs/benchmarks.md's section 1 and 2 tables (the attention layer, decoding) from the records that
``benchmarks/speed/measure_all.sh`` writes (``benchmarks/results/bench_*.jsonl``, one entry per measurement run, the
newest one used), and the helpers every benchmark table shares: the newest entry of a record, its provenance line,
the placeholder, the Markdown. The model-level, ``generate()``, goal, backend and thread tables are in
``bench_goals.py``.

Most tables here are a function of the newest entry, ``table(entry) -> Markdown``, listed in
``doc_tables/registry.py`` with the record it reads (which adds the provenance line, or the placeholder while there is
no record); the tables of two records are builders of their own. Columns that no record gives (the speed and decoding
targets) come from the constants below, each naming its source.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, latest  # noqa: E402 - benchmarks/records.py
from speed.summarize import pivot  # noqa: E402 - the module tables' layout: kinds x lengths

#: The speed targets for forward+backward at every length: kind -> ("speed-up", least speed-up over V) or
#: ("time", largest time ratio to V).
SPEED_TARGETS: dict[str, tuple[str, float]] = {
    "R": ("speed-up", 1.8), "Fix": ("speed-up", 1.8), "FR": ("speed-up", 1.8),
    "D": ("time", 1.0), "FD": ("time", 1.0), "R+V": ("time", 1.6), "D+V": ("time", 1.6),
}  # fmt: skip
#: The decoding targets: the cache of these kinds is half of V's; R's per-token latency at this
#: context is at most this fraction of V's.
DECODING_HALF_CACHE_KINDS, DECODING_LATENCY_CONTEXT, DECODING_LATENCY_RATIO = ("R", "D"), 512, 0.8
#: The columns of the allocator comparison: the kinds whose times were found to depend on glibc's
#: ``malloc`` thresholds.
ALLOCATOR_KINDS = ["D", "FD", "R+V", "D+V", "Conv"]
MODES = {"fwd+bwd": "forward+backward", "fwd": "forward"}


def newest(name: str, table: str | None = None) -> tuple[dict[str, Any] | None, str]:
    """The newest entry of ``bench_NAME.jsonl`` (of ``table`` when given) and the record's path."""
    path = RESULTS / f"bench_{name}.jsonl"
    entries = latest(path, table)
    entry = max(entries.values(), key=lambda e: str(e.get("date", ""))) if entries else None
    return entry, str(path.relative_to(ROOT))


#: records whose benchmark starts several training processes itself (up to 3 x 2 threads on 2 cores)
STARTS_PROCESSES = frozenset({"bench_threads"})


def cpu_use(entry: dict[str, Any]) -> str:
    """How the CPU was used, from the entry's ``shared_cpu`` flag and its 1-minute load average at the start and
    the end. A benchmark's own threads make a load of about the core count, so a load above the cores plus one is
    other work running beside it, whatever the flag says."""
    if entry.get("shared_cpu"):
        return "CPU shared with other work: not a publishable timing"
    load = [x for x in entry.get("load_1min") or [] if isinstance(x, (int, float)) and not math.isnan(x)]
    if entry.get("table") in STARTS_PROCESSES:
        load = load[:1]  # its own processes raise the load at the end: only the start tells of other work
    cores = re.search(r"(\d+) CPUs", str(entry.get("machine", "")))
    when = " at the start" + " and end" * (len(load) > 1)
    loads = " and ".join(f"{x:.1f}" for x in load)
    if load and cores and max(load) > int(cores[1]) + 1:
        return (f"1-minute load {loads}{when} on {cores[1]} CPUs: "
                "other work ran beside it, so the times are not those of a quiet machine")
    return "nothing else running" + (f" (1-minute load {loads}{when})" if load else "")


def note(entry: dict[str, Any], record: str) -> str:
    """The provenance line under a benchmark table; a shared or busy CPU is said plainly."""
    return (f"Record: `{record}` ({entry.get('date')}; commit {entry.get('commit')}; {entry.get('machine')}; torch "
            f"{entry.get('torch')}; {entry.get('threads')} thread{'' if entry.get('threads') == 1 else 's'}; "
            f"{cpu_use(entry)}; `{entry.get('command')}`).")


#: What writes every ``bench_*.jsonl`` record but the LRA ones (``benchmarks/speed/measure_all.sh``'s steps)
MEASURE_ALL = "bash benchmarks/speed/measure_all.sh"


def placeholder(record: str, command: str = MEASURE_ALL) -> str:
    """What a table shows until ``command`` has written its record."""
    return f"(not measured yet: `{command}` writes `{record}`)"


def markdown(header: list[str], rows: Iterable[list[str]], align: str = "---:") -> str:
    """A Markdown table: the first column left-aligned, the others ``align``."""
    lines = ["| " + " | ".join(header) + " |", "|---|" + f"{align}|" * (len(header) - 1)]
    return "\n".join([*lines, *("| " + " | ".join(cells) + " |" for cells in rows)])


def yes(ok: bool) -> str:
    return "yes" if ok else "no"


def find(rows: Iterable[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    """The first row whose fields equal ``match``."""
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def module_table(mode: str, value: str) -> Callable[[dict[str, Any]], str]:
    """The kinds x lengths table of ``value`` (``ratio_to_V``, ``peak_MiB``, ``ms``) for ``mode`` of an entry."""

    def table(entry: dict[str, Any]) -> str:
        return pivot([r for r in entry["rows"] if r.get(value) is not None and not _nan(r.get(value))], mode, value)

    return table


def v_ms_table(entry: dict[str, Any]) -> str:
    """V's own time in ms per mode and length: what the module tables' ratios are relative to."""
    rows = entry["rows"]
    lengths = sorted({r["L"] for r in rows})
    body = []
    for mode, label in MODES.items():
        cells = [find(rows, kind="V", L=n, mode=mode) for n in lengths]
        body.append([f"V, {label} (ms)", *("" if c is None else f"{c['ms']:,.1f}" for c in cells)])
    return markdown(["mode", *(f"L={n}" for n in lengths)], body)


def _target(kind: str, ratio: float) -> tuple[str, bool]:
    """The speed target of ``kind`` as text, and whether a time ratio to V meets it."""
    what, bound = SPEED_TARGETS[kind]
    if what == "speed-up":
        return f"speed-up >= {bound:g}", 1 / ratio >= bound
    return f"time <= {bound:g}x V", ratio <= bound


def targets_l256_table(entry: dict[str, Any]) -> str:
    """The speed targets at L=256 (forward+backward, the dedicated run with more repeats)."""
    body = []
    for r in entry["rows"]:
        target, ok = _target(r["kind"], r["ratio_to_V"]) if r["kind"] in SPEED_TARGETS else ("baseline", None)
        body.append([r["kind"], f"{r['ms']:.1f}", f"{r['ratio_to_V']:.2f}", f"{1 / r['ratio_to_V']:.2f}", target,
                     "" if ok is None else yes(ok)])
    header = ["kind", "ms", "time / V's", "speed-up vs V", "target", "holds"]
    return markdown(header, body)


def long_table(entry: dict[str, Any]) -> str:
    """L=512 and 1024 (forward+backward, the dedicated run): V's ms, every kind's ratio, its speed target."""
    rows = entry["rows"]
    lengths = sorted({r["L"] for r in rows})
    body = [["V (ms)", *(f"{find(rows, kind='V', L=n)['ms']:,.1f}" for n in lengths), "", ""]]
    for kind in dict.fromkeys(r["kind"] for r in rows if r["kind"] != "V"):
        cells = {n: find(rows, kind=kind, L=n) for n in lengths}
        ratios = [f"{c['ratio_to_V']:.2f}" if c else "" for c in cells.values()]
        if kind not in SPEED_TARGETS:
            body.append([kind, *ratios, "", ""])
            continue
        misses = [f"L={n}" for n, c in cells.items() if c and not _target(kind, c["ratio_to_V"])[1]]
        body.append([kind, *ratios, _target(kind, 1.0)[0], "yes" if not misses else "no at " + ", ".join(misses)])
    header = ["kind", *(f"L={n}" for n in lengths), "target", "holds"]
    return markdown(header, body)


def allocator_table() -> str:
    """L=1024, default glibc ``malloc`` against the tuned thresholds: V's ms and the kinds' time ratios to V."""
    found = {which: newest("allocator", f"allocator-{which}") for which in ("default", "tuned")}
    if any(entry is None for entry, _ in found.values()):
        return placeholder(found["default"][1])
    body = []
    for mode, label in MODES.items():
        for which, (entry, _) in found.items():
            v = find(entry["rows"], kind="V", mode=mode)
            cells = [find(entry["rows"], kind=k, mode=mode) for k in ALLOCATOR_KINDS]
            body.append([f"{which}, {label}", f"{v['ms']:,.1f}" if v else "",
                         *(f"{c['ratio_to_V']:.2f}" if c else "" for c in cells)])
    notes = "\n\n".join(f"{which.capitalize()}: " + note(entry, record) for which, (entry, record) in found.items())
    return markdown(["malloc, mode", "V (ms)", *ALLOCATOR_KINDS], body) + "\n\n" + notes


def causal_bf16_table() -> str:
    """L=256, time ratio to V: causal fp32 (forward+backward), bidirectional bf16 autocast (both modes); the
    columns of a record not written yet are left out."""
    found = {name: newest(name) for name in ("causal", "bf16")}
    columns = [(name, mode, label) for name, mode, label in (("causal", "fwd+bwd", "causal, fp32"),
               ("bf16", "fwd+bwd", "bidirectional, bf16 autocast"), ("bf16", "fwd", "bf16, forward only"))
               if found[name][0] is not None]
    if not columns:
        return placeholder(found["causal"][1])
    kinds = dict.fromkeys(r["kind"] for name, _, _ in columns for r in found[name][0]["rows"])
    body = []
    for kind in kinds:
        cells = [find(found[name][0]["rows"], kind=kind, mode=mode) for name, mode, _ in columns]
        body.append([kind, *(f"{c['ratio_to_V']:.2f}" if c else "" for c in cells)])
    notes = [f"{'Causal' if name == 'causal' else name}: " + (note(entry, record) if entry else placeholder(record))
             for name, (entry, record) in found.items()]
    return "\n\n".join([markdown(["kind", *(label for _, _, label in columns)], body), *notes])


def fr_memory_table(entry: dict[str, Any]) -> str:
    """FR at L=4096, B=1, forward+backward: peak memory and time of the SDPA path against the materialized one."""
    paths = {r["path"]: r for r in entry["rows"]}
    labels = {"sdpa": "SDPA (fused kernel)", "materialized": "materialized L x L"}
    body = [[labels.get(p, p), f"{r['peak_MiB']:,.1f}", f"{r['ms']:,.0f}"] for p, r in paths.items()]
    if {"sdpa", "materialized"} <= paths.keys():
        body.append(["SDPA / materialized", f"{paths['sdpa']['peak_MiB'] / paths['materialized']['peak_MiB']:.3f}",
                     f"{paths['sdpa']['ms'] / paths['materialized']['ms']:.2f}"])
    return markdown(["FR path", "peak MiB", "ms"], body)


def decode_table(entry: dict[str, Any]) -> str:
    """Section 2: microseconds per token (ratio to V) per context, the cache size ratio, and V's cache size."""
    rows = entry["rows"]
    contexts = sorted({r["context"] for r in rows})
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    cell = {(r["kind"], r["context"]): r for r in rows}
    body = []
    for kind in kinds:
        cells = [f"{cell[kind, c]['us_per_token']:,.0f} ({cell[kind, c]['ratio_to_V']:.2f})" for c in contexts]
        body.append([kind, *cells, f"{cell[kind, contexts[-1]]['cache_ratio_to_V']:.2f}"])
    body.append(["V's cache (MiB)", *(f"{cell['V', c]['cache_MiB']:.1f}" for c in contexts), ""])
    header = ["kind", *(f"ctx {c}: us/token (x V)" for c in contexts), "cache vs V"]
    return markdown(header, body)


def decode_targets_table(entry: dict[str, Any]) -> str:
    """The decoding targets against the decoding record: half-size caches, R's latency at context 512."""
    rows = entry["rows"]
    last = max(r["context"] for r in rows)
    caches = {k: find(rows, kind=k, context=last) for k in DECODING_HALF_CACHE_KINDS}
    half = all(c is not None and abs(c["cache_ratio_to_V"] - 0.5) < 0.005 for c in caches.values())
    latency = find(rows, kind="R", context=DECODING_LATENCY_CONTEXT)
    body = [[f"cache of {' and '.join(caches)} half of V's", ", ".join(
        f"{k} {c['cache_ratio_to_V']:.2f}" for k, c in caches.items() if c), yes(half)]]
    if latency is not None:
        body.append([f"R's time per token at context {DECODING_LATENCY_CONTEXT} at most {DECODING_LATENCY_RATIO}x V's",
                     f"{latency['ratio_to_V']:.2f}", yes(latency["ratio_to_V"] <= DECODING_LATENCY_RATIO)])
    return markdown(["target", "measured", "holds"], body, align="---")
