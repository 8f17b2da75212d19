"""docs/results/mixing.md's tables, from ``benchmarks/results/mixing.jsonl`` and ``mixing_lr.jsonl``
(``benchmarks/studies/mixing_study.py record`` / ``choose``): accuracy per kind and setting with its 95% interval over
the seeds and the trivial baselines beside it, the verdicts against V by the project's noise rule
(:func:`synthformer.stats.table_verdicts`: paired differences, Holm across the kinds of one setting), the learning
rate each kind was given, and each kind's training speed: as the study's runs saw it, and measured on a quiet machine
(``benchmarks/results/mixing_speed.jsonl``, ``benchmarks/speed/mixing_speed.py``).
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, latest, provenance, read_entries  # noqa: E402
from studies import mixing_study as study  # noqa: E402 - the sibling script: settings and kinds live there

from doc_tables.bench import markdown, note  # noqa: E402 - the benchmark tables' Markdown and provenance line

CALIBRATION = RESULTS / "mixing_calibration.jsonl"
MIXTURE = RESULTS / "mixing_mixture.jsonl"
SPEED_TABLE = "mixing_speed"
SPEED_COMMAND = "python benchmarks/speed/mixing_speed.py"

#: What each kind is claimed to do against V (the expected shape, tested and not assumed): kinds without
#: query-key interaction are worse at recall; the mixtures keep V's dot product and match it within 0.05.
MATCH_MARGIN = 0.05


def claim(kind: str) -> str:
    """The claim the verdict column tests for ``kind``."""
    return f"{kind} matches V within {MATCH_MARGIN:g}" if "+V" in kind else f"{kind} is worse than V"


def _entries() -> dict[str, dict[str, Any]]:
    return study.current_entries()  # at each setting's budget now: an earlier budget's entries are history


def _record_name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def interval(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% Student-t interval (nan with one value): the noise rule's own
    interval (:func:`synthformer.stats.summarize_differences`, applied to the values themselves)."""
    from synthformer.stats import summarize_differences

    summary = summarize_differences(values)
    return summary.mean, summary.high - summary.mean


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "—"
    mean, half = interval([float(v) for v in entry["test"] if v is not None] or [float(v) for v in entry["valid"]])
    n = len(entry["seeds"])
    return f"{mean:.3f}" + (f" ± {half:.3f}" if math.isfinite(half) else "") + f" ({n})"


def accuracy_table(family: str) -> str:
    """Test accuracy (mean ± 95% interval, seeds) per kind and setting of ``family``, with the baselines."""
    found = _entries()
    settings = [s for s in study.SETTINGS if s.family == family]
    used = [e for e in found.values() if e["family"] == family]
    if not used:
        return (f"(no recorded row yet: `python benchmarks/studies/mixing_study.py record --families {family}` after "
                f"`run --stage seeds --families {family}`)")
    lines = ["| kind | " + " | ".join(s.name for s in settings) + " |",
             "|---|" + "---:|" * len(settings)]
    for kind in study.KINDS:
        lines.append(f"| {kind} | " + " | ".join(_cell(found.get(f"{s.name}-{kind}")) for s in settings) + " |")
    for label, key in (("best context-free guess", "context_free"), ("a context value at random", "context_guess")):
        cells = []
        for s in settings:
            values = [e.get("baselines", {}).get(key) for e in used if e["setting"] == s.name]
            values = [v for v in values if v is not None]
            cells.append(f"{values[0]:.3f}" if values else "—")
        if any(c != "—" for c in cells):
            lines.append(f"| *{label}* | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + provenance(used, _record_name(study.RECORD))


def verdict_table(family: str) -> str:
    """Per setting of ``family``, each kind's verdict against V by the noise rule, on the test accuracy."""
    from synthformer.stats import table_verdicts

    found = _entries()
    settings = [s for s in study.SETTINGS if s.family == family]
    used = [e for e in found.values() if e["family"] == family]
    if not used:
        return f"(no recorded row yet: `python benchmarks/studies/mixing_study.py record --families {family}`)"
    columns: dict[str, dict[str, str]] = {}
    for s in settings:
        rows = [e for e in used if e["setting"] == s.name]
        records = [(e["kind"], seed, float(t)) for e in rows for seed, t in zip(e["seeds"], e["test"], strict=True)
                   if t is not None]
        kinds = {e["kind"] for e in rows}
        if "V" not in kinds:
            continue
        baseline = next((e["baselines"]["context_free"] for e in rows if "baselines" in e), None)
        claims = {k: claim(k) for k in study.KINDS if k in kinds and k != "V"}
        if not claims:
            continue
        columns[s.name] = table_verdicts(records, claims, metric="accuracy", baseline=baseline).verdict_column()
    if not columns:
        return "(no setting has V and another kind recorded yet)"
    names = list(columns)
    lines = ["| kind | claim | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for kind in study.KINDS:
        if kind == "V":
            continue
        lines.append(f"| {kind} | {claim(kind)} | " + " | ".join(columns[n].get(kind, "—") for n in names) + " |")
    return "\n".join(lines) + "\n\n" + provenance(used, _record_name(study.RECORD))


def rates_table() -> str:
    """The learning rate each kind was given per grid (a column per grid's setting), with the grid's validation
    accuracies."""
    found = study.current_choices()
    if not found:
        return ("(no choice recorded yet at the current budget: `python benchmarks/studies/mixing_study.py run "
                "--stage lr`, then `choose`)")
    grids = [g for g in study.LR_SETTING if any(study.grid_of(e) == g for e in found.values())]
    lines = ["| kind | " + " | ".join(study.LR_SETTING[g] for g in grids) + " |", "|---|" + "---|" * len(grids)]
    for kind in study.KINDS:
        cells = []
        for grid in grids:
            e = found.get(f"{grid}-{kind}")
            if e is None:
                cells.append("—")
                continue
            grid = ", ".join(f"{v.split('train.lr=')[-1]}: {acc:.2f}" for v, (acc, _) in sorted(e["grid"].items()))
            cells.append(f"**{e['lr']:g}** ({grid})")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + provenance(list(found.values()), _record_name(study.LR_RECORD))


def earlier_grid_table(family: str = "mqar") -> str:
    """The learning-rate grid of ``family`` at budgets other than the current one (validation accuracy per kind and
    rate): the history that set the budget, from ``mixing_runs.jsonl``."""
    grid_setting = study.setting(study.LR_SETTING[family])
    # every entry, not the newest per row: a run of the current budget has the same row name as its earlier one
    newest = {(e["row"], e["steps"]): e for e in read_entries(study.RUNS_RECORD) if e.get("table") == "mixing_runs"}
    rows = [e for e in newest.values()
            if e["setting"] == grid_setting.name and e["seed"] == 0 and e["steps"] != grid_setting.steps]
    if not rows:
        return "(no grid of an earlier budget recorded)"
    budgets = sorted({e["steps"] for e in rows})
    cells = {(e["steps"], e["kind"], e["lr"]): e["valid"] for e in rows}
    head = [f"{steps:,} steps, lr {lr:g}" for steps in budgets for lr in study.LRS]
    lines = ["| kind | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for kind in study.KINDS:
        vals = [cells.get((steps, kind, lr)) for steps in budgets for lr in study.LRS]
        lines.append(f"| {kind} | " + " | ".join("—" if v is None else f"{v:.3f}" for v in vals) + " |")
    return "\n".join(lines) + "\n\n" + provenance(rows, _record_name(study.RUNS_RECORD))


def dropped_grid_table(setting_name: str) -> str:
    """The learning-rate grid of a dropped setting (:data:`study.DROPPED`): each kind's validation accuracy at each
    rate on seed 0, from ``mixing_runs.jsonl`` (the runs that showed V does not learn it)."""
    newest = {e["row"]: e for e in read_entries(study.RUNS_RECORD)
              if e.get("table") == "mixing_runs" and e["setting"] == setting_name and e["seed"] == 0}
    if not newest:
        return f"(no run of {setting_name} recorded)"
    cells = {(e["kind"], e["lr"]): e["valid"] for e in newest.values()}
    lines = [f"| kind | {' | '.join(f'lr {lr:g}' for lr in study.LRS)} |", "|---|" + "---:|" * len(study.LRS)]
    for kind in study.KINDS:
        vals = [cells.get((kind, lr)) for lr in study.LRS]
        lines.append(f"| {kind} | " + " | ".join("—" if v is None else f"{v:.3f}" for v in vals) + " |")
    return "\n".join(lines) + "\n\n" + provenance(list(newest.values()), _record_name(study.RUNS_RECORD))


def mixture_check_table() -> str:
    """The mixtures' parts at the start (logit spread over the keys) and after training (mixture weights per
    layer), from ``mixing_mixture.jsonl`` (``benchmarks/studies/mixing_mixture_check.py``)."""
    found = latest(MIXTURE, "mixing_mixture")
    if not found:
        return "(no check recorded: `python benchmarks/studies/mixing_mixture_check.py init`)"
    lines = ["| run | kind | logit spread over the keys, per part | mixture weights (parts in the kind's order) |",
             "|---|---|---|---|"]
    for e in found.values():
        if e["what"] == "init":
            spread = ", ".join(f"{part} {value:.3f}" for part, value in e["parts"].items())
            weights = " / ".join(f"{a:.2f}" for a in e["alpha"])
            lines.append(f"| at the start, width {e['width']} ({e['seeds']} seeds) | {e['kind']} | {spread} | "
                         f"{weights} |")
        else:
            weights = "; ".join(f"layer {n}: " + " / ".join(f"{a:.2f}" for a in alpha)
                                for n, alpha in enumerate(e["layers"].values()))
            lines.append(f"| {e['run']} ({e['checkpoint']}) | {e['kind']} | — | {weights} |")
    return "\n".join(lines) + "\n\n" + provenance(list(found.values()), _record_name(MIXTURE))


def speed_table() -> str:
    """Median training steps/s per kind over its recorded runs, and the ratio to V at the same settings."""
    found = _entries()
    if not found:
        return "(no recorded row yet: `python benchmarks/studies/mixing_study.py record`)"
    lines = ["| kind | " + " | ".join(f"{s.name} steps/s (× V)" for s in study.SETTINGS
                                    if any(e["setting"] == s.name for e in found.values())) + " |"]
    settings = [s for s in study.SETTINGS if any(e["setting"] == s.name for e in found.values())]
    lines.append("|---|" + "---:|" * len(settings))
    for kind in study.KINDS:
        cells = []
        for s in settings:
            e, v = found.get(f"{s.name}-{kind}"), found.get(f"{s.name}-V")
            if e is None:
                cells.append("—")
                continue
            rate = statistics.median(e["steps_per_second"])
            ratio = f" ({rate / statistics.median(v['steps_per_second']):.2f})" if v else ""
            cells.append(f"{rate:.1f}{ratio}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + provenance(list(found.values()), _record_name(study.RECORD))


def calibration_table() -> str:
    """The runs that chose the settings (V's, and the +V mixtures' that set MQAR's budget): their settings and
    validation accuracy along training."""
    found = latest(CALIBRATION, "mixing_calibration")
    if not found:
        return "(no calibration run recorded: `python benchmarks/studies/mixing_calibration.py RUN_DIR:LAYOUT ...`)"
    lines = ["| run | kind | task | tokens | vocabulary | pairs | queries | width | heads | lr | batch | steps | "
             "validation accuracy at steps 250 / 500 / 1,000 / 1,250 / 1,500 / 2,000 / 3,000 | best |",
             "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|"]
    for name, e in found.items():
        st = e["settings"]
        curve = dict((int(step), acc) for step, acc in e["curve"])
        points = " / ".join(f"{curve[k]:.2f}" if k in curve else "·"
                            for k in (250, 500, 1000, 1250, 1500, 2000, 3000))
        layout = {"once": " (each key once)", "drawn": " (drawn)"}.get(st["queries"], "")
        asked = f"{st['num_queries']}{layout}" if st.get("num_queries") else "MAD's"
        stopped = " (stopped)" if e["stopped_early"] else ""
        task = str(st.get("generator", "mixing:mqar")).removeprefix("mixing:")
        lines.append(f"| {name} | {st.get('kind', 'V')} | {task} | {st.get('seq_len') or '—'} | {st['vocab_size']:,} | "
                     f"{st.get('num_pairs') or '—'} | {asked} | {st['d_model']} | {st['n_heads']} | {st['lr']:g} | "
                     f"{st['batch_size']} | {st['steps']} | {points}{stopped} | "
                     f"{e['best_accuracy']:.3f} |")
    return "\n".join(lines) + "\n\n" + provenance(list(found.values()), _record_name(CALIBRATION))


def newest_speed_runs(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Setting -> the entries of its newest run in ``path`` (``speed/mixing_speed.py``'s record; runs are named by
    their start time, so the newest sorts last), a ``--smoke`` run only while the setting has no full one; the
    entries in the study's order of the kinds."""
    runs: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for e in read_entries(path):
        if e.get("table") == SPEED_TABLE and {"run", "setting", "kind"} <= e.keys():
            runs.setdefault(str(e["setting"]), {}).setdefault(str(e["run"]), {})[str(e["kind"])] = e
    newest = {}
    for setting, by_run in runs.items():
        full = [name for name, rows in by_run.items() if not any(e.get("smoke") for e in rows.values())]
        rows = by_run[max(full or by_run)]
        order = [k for k in study.KINDS if k in rows] + [k for k in rows if k not in study.KINDS]
        newest[setting] = [rows[k] for k in order]
    return newest


def quiet_speed_table() -> str:
    """Training steps/s per kind measured in one run of interleaved rounds (``speed/mixing_speed.py``) and the speed
    relative to V in the same run, with the smallest and largest per-round ratio; per setting its newest run."""
    path = RESULTS / f"{SPEED_TABLE}.jsonl"
    record = _record_name(path)
    found = newest_speed_runs(path)
    if not found:
        return f"(no recorded row yet: `{SPEED_COMMAND}`)"
    kinds = list(dict.fromkeys(e["kind"] for entries in found.values() for e in entries))
    cells = {(s, e["kind"]): e for s, entries in found.items() for e in entries}
    header = ["kind", *(h for s in found for h in (f"`{s}` steps/s", "× V (rounds' min-max)"))]
    body = []
    for kind in kinds:
        row = [kind]
        for s in found:
            e = cells.get((s, kind))
            row += (["—", "—"] if e is None else
                    [f"{e['steps_per_second']:.1f}",
                     f"{e['speed_vs_V']:.2f} ({e['speed_vs_V_min']:.2f}-{e['speed_vs_V_max']:.2f})"])
        body.append(row)
    notes = []
    for s, entries in found.items():
        first = entries[0]
        smoke = "a --smoke run, " if first.get("smoke") else ""
        notes.append(f"`{s}`: {smoke}{first['rounds']} rounds, every kind once a round in an order rotated each "
                     f"round, each sample the median of {first['steps']} training step(s) after {first['warmup']} "
                     f"untimed; batch {first['batch_size']} x {first['length']} tokens. " + note(first, record))
    return "\n\n".join([markdown(header, body), *notes])
