"""The tables of the results pages that are no benchmark's: ``synthformer compare``'s, IMDb's, the data-at-scale
goals, the studies' (``docs/figures/study-*/results.json`` with the ``provenance.json`` beside it), the probes',
Table 3's, the same-seed noise floor, the out-of-reach compute, and the single facts the docs quote inline
(``<!-- n:NAME | ROW | COLUMN -->``) without showing their table. Every table ends with a line saying where its
numbers come from and how they were measured (date, commit, threads, shared or quiet CPU). ``doc_tables/registry.py``
names each; ``compare_table`` and ``imdb_table`` are given their record's rows by it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, latest, provenance, read_entries  # noqa: E402
from studies import seed_studies, table3  # noqa: E402 - the noise floor's record and pairing; Table 3's layout

from doc_tables import baselines  # noqa: E402 - the baseline rows (benchmarks/studies/baselines.py's record)

FIGURES = ROOT / "docs" / "figures"


COMPARE_KINDS = ("V", "R", "D", "R+V")  # the kinds of the no-argument `synthformer compare`, in its order


def compare_table(entries: list[dict[str, Any]], record: str) -> str:
    """``synthformer compare``'s table from the rows of ``compare.jsonl``, one row per kind."""
    lines = ["| kind | params | steps | val loss (nats/char) | bits/char | tokens/s | train s | wall s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for e in entries:
        lines.append(f"| {e['row']} | {e['parameters']:,} | {e['steps']} | {e['valid_loss']:.4f} | "
                     f"{e['metric_value']:.4f} | {e['tokens_per_second']:,.0f} | {e['train_seconds']:.1f} | "
                     f"{e['wall_seconds']:.1f} |")
    baseline = entries[0]["baseline"]
    total = sum(e["process_wall_s"] for e in entries)
    whole = "Whole job" if len(entries) == 4 else f"Whole job so far ({len(entries)} of 4 kinds)"
    return "\n".join([*lines, "", f"Baseline: {baseline['name']} {baseline['value']:.2f}. {whole}: {total:.0f} s "
                      f"({total / 60:.1f} min), the `synthformer compare --kinds KIND` processes together. "
                      + provenance(entries, record)])


IMDB_LABELS = {"V": "Transformer (V)", "R": "Syn (R)", "FR": "Syn (FR), k = 32", "FR+V": "Syn (FR+V), k = 32",
                "Linformer": "Linformer, k = 32"}


def imdb_table(entries: list[dict[str, Any]], record: str) -> str:
    """IMDb and the paper's Table 7 from the rows of ``imdb.jsonl``: accuracy, training time without the periodic
    validation, steps/s and its ratio to V's (when V is recorded)."""
    lines = ["| model (kind) | params | test accuracy | valid accuracy | training time | steps/s | "
             "steps/s vs Transformer |", "|---|---:|---:|---:|---:|---:|---:|"]
    speed = {e["row"]: e["steps"] / e["train_s"] for e in entries}
    for e in entries:
        ratio = f"{speed[e['row']] / speed['V']:.2f}" if "V" in speed else "n/a"
        minutes = f"{e['train_s']:,.1f} s ({e['train_s'] / 60:.1f} min)"
        lines.append(f"| {IMDB_LABELS[e['row']]} | {e['parameters']:,} | {100 * e['test']['accuracy']:.2f}% | "
                     f"{100 * e['valid']['eval_accuracy']:.2f}% | {minutes} | {speed[e['row']]:.2f} | {ratio} |")
    row, note = baselines.imdb_row()
    return "\n".join([*lines, *([row] if row else []), "", provenance(entries, record) + " " + note])


def data_goals_table() -> str:
    """The data-at-scale goals (docs/data.md) from ``bench_data.jsonl`` (``benchmarks/speed/data.py --all``) through
    the script's own ``goals``, so the docs and the script's printed verdicts cannot differ."""
    from speed import (
        data as bench_data,  # the sibling script (its imports are light: torch is imported only to measure)
    )

    path = RESULTS / f"{bench_data.TABLE}.jsonl"
    found = latest(path, bench_data.TABLE)
    if not found:
        return "(no recorded row yet: `python benchmarks/speed/data.py --all`)"
    small, big = bench_data.parse_args(["--all"]).sizes
    lines = ["| goal | measured | result |", "|---|---|---|"]
    for goal, measured, ok in bench_data.goals(found, small, big):
        lines.append(f"| {goal} | {measured} | {bench_data.verdict(goal, ok)} |")
    entries = list(found.values())
    return "\n".join([*lines, "", provenance(entries, str(path.relative_to(ROOT)))])


def _variant_rows(rows: list[dict[str, Any]]) -> list[Any]:
    """A study's ``results.json`` rows as :class:`~synthformer.study.VariantRow` (a null p-value reads "n/a")."""
    from synthformer.study import VariantRow

    fields = VariantRow.__dataclass_fields__
    return [VariantRow(**{k: v for k, v in r.items() if k in fields}) for r in rows]


def study_table(name: str) -> str:
    """A study's table exactly as ``synthformer study`` writes it (``results.md``), rebuilt from its
    ``results.json``, and the provenance from ``provenance.json`` beside it."""
    from synthformer.study import StudyTable
    from synthformer.study.table import format_markdown

    folder = FIGURES / f"study-{name}"
    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    rows = _variant_rows(data["rows"])
    meta = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    note = (f"Record: `docs/figures/study-{name}/results.json` (run {meta['date']}, results committed "
            f"{meta['results_committed']} in {meta['commit'].split()[0]}, the run's own commit unrecorded; "
            f"{meta['machine']}; {meta['threads']} thread per process, "
            f"{'CPU shared with other work' if meta['shared_cpu'] else 'nothing else running'}).")
    return baselines.study_row(name, format_markdown(StudyTable(data["metric"], rows)) + "\n\n" + note)


def probe_table(task: str) -> str:
    """The study of one cross-segment matching probe from ``probe.jsonl`` (``benchmarks/studies/probe_study.py
    record``): the study module's table over both lengths (one study each; a row's label names its length), the runs
    finished when each was recorded, and the provenance."""
    from synthformer.study import StudyTable
    from synthformer.study.table import format_markdown

    path = RESULTS / "probe.jsonl"
    found = latest(path, "probe")
    entries = [found[key] for key in sorted((k for k in found if found[k].get("task") == task),
                                            key=lambda k: found[k]["length"])]
    if not entries:
        return f"(no recorded row yet: `python benchmarks/studies/probe_study.py record --tasks {task}`)"
    rows = [{**r, "label": f"{r['label']}, max_len={e['length']}"} for e in entries for r in e["rows"]]
    done = "; ".join(f"max_len {e['length']}: {e['runs_done']} of {e['runs_total']}" for e in entries)
    return baselines.probe_rows(task, [e["length"] for e in entries], (
        format_markdown(StudyTable(entries[0]["metric"], _variant_rows(rows))) + "\n\n"
        + f"Runs finished when recorded: {done}. " + provenance(entries, str(path.relative_to(ROOT)))))


def table3_results() -> str:
    """Table 3 (summarization and dialogue, differences to V, the seed spread) through ``table3.table``, with
    the baseline row of each block."""
    datasets = list(table3.CONFIGS)
    found, note = baselines.table3_baselines(datasets, {d: table3._family(d) for d in datasets})
    return table3.table(datasets, list(table3.KINDS), ROOT / "runs" / "table3", table3.DEFAULT_RECORD,
                        baselines=found).rstrip() + "\n\n" + note


def table3_times() -> str:
    """Table 3's wall times per model from ``table3.jsonl``: training, threads and lane, evaluation, finish time."""
    recorded = table3.read_record(table3.DEFAULT_RECORD)
    lines = ["| dataset | model | seed | training | threads | evaluation (test) | finished |",
             "|---|---|---:|---:|---|---:|---|"]
    for dataset in table3.CONFIGS:
        for kind in table3.KINDS:
            for seed in sorted(s for (d, k, s) in recorded if (d, k) == (dataset, kind)):
                e = recorded[dataset, kind, seed]
                lines.append(f"| {dataset} | {kind} | {seed} | {e['train_seconds']:,.0f} s | "
                             f"{e.get('lane', e.get('threads'))} | {e['eval_seconds']:.0f} s | {e['finished']} |")
    return "\n".join(lines)


# ----------------------------------------------------------------- facts quoted inline (the README, reliability.md)

def compare_job() -> str:
    """The whole ``synthformer compare`` job from ``compare.jsonl``: its four ``compare --kinds KIND`` processes'
    wall time together, in seconds and minutes (the number the README and both ``--help`` texts round)."""
    found = latest(RESULTS / "compare.jsonl", "compare")
    entries = [found[k] for k in COMPARE_KINDS if k in found]
    if len(entries) < len(COMPARE_KINDS):
        return "(no complete record yet: `python benchmarks/studies/results_runs.py --table compare`)"
    total = sum(e["process_wall_s"] for e in entries)
    rows = ["| job | seconds | minutes |", "|---|---:|---:|", f"| compare | {total:.0f} | {total / 60:.1f} |"]
    return "\n".join(rows)


def suite_time() -> str:
    """The newest passing ``python -m pytest`` timing of ``suite_time.jsonl`` (``benchmarks/speed/suite_time.py``):
    seconds, minutes, tests passed. A run with a failure stays in the record but is not the suite's time (a failing
    test can end early or skip its work)."""
    passing = [e for e in read_entries(RESULTS / "suite_time.jsonl")
               if e.get("table") == "suite_time" and e.get("row") == "suite" and e.get("status") == 0]
    if not passing:
        return "(no passing timing recorded yet: `python benchmarks/speed/suite_time.py`)"
    e = passing[-1]
    rows = ["| run | seconds | minutes | passed | machine | date |", "|---|---:|---:|---:|---|---|",
            f"| suite | {e['wall_seconds']:.0f} | {e['wall_seconds'] / 60:.1f} | {e.get('passed', 0)} | "
            f"{e['machine']} | {e['date']} |"]
    return "\n".join(rows)


# ----------------------------------------------------------------- the noise floor, the out-of-reach compute

def noise_floor_table() -> str:
    """The noise floor: what two runs of one seed and one library source differ by under different CPU kernels or on
    different hosts (``benchmarks/studies/seed_studies.py``'s repro and noise studies), the amount no seed explains.
    One row per same-seed pair (valid and, where recorded, test), the metric's difference last."""
    rows = []
    for split in ("valid", "test"):
        for p in seed_studies.noise_pairs(split):
            rows.append(f"| {p['study']} | {p['variant']} | {p['seed']} | {split} | {p['a']} | {p['value_a']:.4f} | "
                        f"{p['b']} | {p['value_b']:.4f} | {p['difference']:.4f} |")
    if not rows:
        return ("(no same-seed pair recorded yet: `python benchmarks/studies/seed_studies.py run --studies shk-repro "
                "shk-noise`)")
    metrics = {e["study"].removesuffix("-noise").removesuffix("-repro"): e["metric"]
               for e in seed_studies.latest(seed_studies.RECORD, seed_studies.TABLE).values()}
    named = "; ".join(f"{study}: {metric}" for study, metric in sorted(metrics.items()))
    return "\n".join(["| study | kind | seed | split | run a | value a | run b | value b | difference |",
                      "|---|---|---:|---|---|---:|---|---:|---:|", *rows]) + (
        f"\n\nMetrics: {named}. A pair is two runs of one study, kind and seed from the same library source (the "
        "git tree of `src/`), under torch's kernels for the host's instructions against its kernels without AVX "
        "(`ATEN_CPU_CAPABILITY=default`: the closest one machine comes to a second CPU), or on two hosts. Record: "
        "`benchmarks/results/seed_studies.jsonl`.")


REACH_ORDER = ("pathfinder", "listops", "text", "t5-base")


def _steps(entry: dict) -> str:
    return " + ".join(f"{s['steps']:,} x {s['examples_per_step']}" for s in entry["stages"])


def reach_table() -> str:
    """The compute the tables no model learns here would need (``benchmarks/studies/reach.py``'s record), one row per
    published recipe: training FLOPs, the rate it is priced at (and where that rate was measured), the days on this
    CPU."""
    found = latest(RESULTS / "reach.jsonl", "reach")
    rows = [found[name] for name in REACH_ORDER if name in found]
    if not rows:
        return "(no record yet: `python benchmarks/studies/reach.py`)"
    lines = ["| table | published recipe (steps x batch) | training FLOPs | rate here (GFLOP/s) "
             "| days on one core here |",
             "|---|---|---:|---:|---:|"]
    for e in rows:
        lines.append(f"| {e['label']} | {_steps(e)} | {e['flops']:.2e} | {e['flops_per_second'] / 1e9:.1f} | "
                     f"{e['days']:,.0f} |")
    rated = "; ".join(f"{e['row']}: `{e['measured_on']['record']}` row {e['measured_on']['row']} "
                      f"({e['measured_on']['steps']} steps in {e['measured_on']['train_s']:.0f} s, "
                      f"{e['measured_on']['threads']} thread)" for e in rows)
    return "\n".join(lines) + (
        "\n\nTraining FLOPs: forward + backward of every optimizer step of the recipe (FlopCounterMode on the meta "
        "device, `train --dry-run`'s count), evaluation left out. Rate: the FLOPs per second this project's "
        f"recorded CPU-size run of the same task reached ({rated}); larger models usually run faster per FLOP, so "
        "the days are the order of magnitude, not a schedule. Sources: "
        + "; ".join(f"{e['row']}: {e['source']}" for e in rows) + ".\n\n"
        + provenance(rows, "benchmarks/results/reach.jsonl"))
