"""The study's outputs: tables (Markdown, CSV, JSON), convergence figures (PNG) and one report (HTML + Markdown).

``report.html`` is self-contained (the figures are embedded as base64 PNG), so it opens in a browser from
anywhere, and can be mailed or attached alone; ``report.md`` is its Markdown twin, linking the PNG files next to
it.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synthformer.common import atomic_write_text

from .curves import collect_curves, plot_curves
from .runner import StudyResult
from .table import StudyTable, format_markdown, format_value, summarize, table_cells, table_note, write_tables

__all__ = ["FIGURES", "StudyOutputs", "write_outputs"]

#: The figures of a study: file name -> (x axis, caption).
FIGURES: dict[str, tuple[str, str]] = {
    "curves_steps.png": ("steps", "Validation metric against training steps (mean over seeds, band: min-max)."),
    "curves_wall.png": ("wall", "Validation metric against training wall-clock time (evaluations and checkpoints "
                                "left out), as the paper's Figure A.7 (mean over seeds, band: min-max)."),
}


@dataclass
class StudyOutputs:
    """The table and the paths of everything written."""

    table: StudyTable
    tables: dict[str, Path]
    figures: list[Path]
    html: Path
    markdown: Path


def _settings(result: StudyResult) -> list[tuple[str, str]]:
    """What the study ran, for the report's header."""
    cfg: dict[str, Any] = result.spec.config
    task = cfg.get("task", {})
    source = task.get("generator") or task.get("train") or "?"
    train = cfg.get("train", {})
    model = cfg.get("model", {})
    model_text = ", ".join(f"{k}={model[k]}" for k in ("preset", "d_model", "n_heads", "n_layers", "d_ff")
                           if model.get(k) is not None)
    return [
        ("task", f"{task.get('type', '?')} on {source}"),
        ("model", model_text or "(defaults)"),
        ("budget", f"{train.get('steps', '?')} steps, batch {train.get('batch_size', '?')}, lr {train.get('lr', '?')}"),
        ("variants", ", ".join(v.label for v in result.variants)),
        ("seeds", ", ".join(str(s) for s in result.spec.seeds)),
        ("overrides", " ".join(result.spec.overrides) or "none"),
        ("runs", f"{len(result.records)} in {result.out}"),
    ]


def _html_table(table: StudyTable) -> str:
    headers, body = table_cells(table)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>" for cells in body)
    return (f'<table class="results"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
            f'<p class="note">{html.escape(table_note(table))}</p>')


def _runs_rows(table: StudyTable) -> list[list[str]]:
    return [[r.variant, str(r.seed), format_value(table.metric, r.valid_metric),
             format_value(table.metric, r.test_metric), f"{r.steps_per_second:.2f}", f"{r.wall_seconds:.1f}",
             r.run_dir] for r in table.runs]


_RUN_HEADERS = ["variant", "seed", "valid", "test", "steps/s", "wall s", "run directory"]

_CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:90%}"
        "img{max-width:100%;border:1px solid #ddd}dt{font-weight:bold;float:left;width:7em}dd{margin-left:8em}")


def _html(result: StudyResult, table: StudyTable, figures: list[Path]) -> str:
    settings = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in _settings(result))
    images = []
    for path in figures:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        caption = html.escape(FIGURES[path.name][1])
        images.append(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(path.name)}">'
                      f"<figcaption>{caption}</figcaption></figure>")
    runs_head = "".join(f"<th>{h}</th>" for h in _RUN_HEADERS)
    runs_body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                        for row in _runs_rows(table))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>synthformer study</title>'
        f"<style>{_CSS}</style></head><body>\n"
        f"<h1>Synthesizer study: {html.escape(result.out.name)}</h1>\n<dl>{settings}</dl>\n"
        f"<h2>Results</h2>\n{_html_table(table)}\n<h2>Convergence</h2>\n{''.join(images)}\n"
        f'<h2>Runs</h2>\n<table class="runs"><thead><tr>{runs_head}</tr></thead><tbody>{runs_body}</tbody></table>\n'
        "</body></html>\n"
    )


def _markdown(result: StudyResult, table: StudyTable, figures: list[Path]) -> str:
    lines = [f"# Synthesizer study: {result.out.name}", ""]
    lines += [f"- **{k}**: {v}" for k, v in _settings(result)]
    lines += ["", "## Results", "", format_markdown(table), "", "## Convergence", ""]
    for path in figures:
        lines += [f"![{path.stem}]({path.name})", "", FIGURES[path.name][1], ""]
    lines += ["## Runs", "", "| " + " | ".join(_RUN_HEADERS) + " |", "|" + "|".join("---" for _ in _RUN_HEADERS) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in _runs_rows(table)]
    return "\n".join(lines) + "\n"


def write_outputs(result: StudyResult) -> StudyOutputs:
    """Summarize a finished study and write its tables, figures and reports into the study directory."""
    out = result.out
    table = summarize(result.records, result.variants, result.metric)
    tables = write_tables(table, out)
    curves = collect_curves(result.records, result.variants, result.metric)
    figures = [plot_curves(curves, result.metric, out / name, axis) for name, (axis, _) in FIGURES.items()]
    html_path, md_path = out / "report.html", out / "report.md"
    atomic_write_text(html_path, _html(result, table, figures))
    atomic_write_text(md_path, _markdown(result, table, figures))
    return StudyOutputs(table, tables, figures, html_path, md_path)
