"""The analysis's text outputs: ``analysis.json`` (every number) and ``analysis.md`` (the figures with tables of
the numbers a reader compares: histogram moments, local mass, alpha), and a study's index of its runs' reports."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .figures import kind_label

__all__ = ["local_verdict", "run_name", "write_index", "write_json", "write_markdown"]

_STACKS = ("encoder", "decoder")


def run_name(run_dir: str | Path) -> str:
    """The name figures and reports give a run: its folder's name, with the variant's for a study's run
    (``R+V/seed0``; a study names every variant's runs ``seed<k>``)."""
    path = Path(run_dir)
    return f"{path.parent.name}/{path.name}" if re.fullmatch(r"seed\d+", path.name) else path.name


def write_json(path: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def local_verdict(mass: float, uniform: float) -> str:
    """``"local window"`` when the attention within the window closes at least half the gap between uniform
    attention (``uniform``) and attention entirely within the window (1), else ``"not local"``."""
    return "local window" if mass >= uniform + 0.5 * (1.0 - uniform) else "not local"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _layer_name(layer: dict[str, Any]) -> str:
    return f"{layer['stack'][:3].capitalize()} L{layer['layer']}"


def _histogram_table(layers: list[dict[str, Any]]) -> list[str]:
    lines = ["| layer | attention | init mean | init std | init max | init >= 0.1 | trained std | trained max | "
             "trained >= 0.1 |", "|---|---|---|---|---|---|---|---|---|"]
    for layer in layers:
        for part, trained in layer["histogram"]["trained"].items():
            init = layer["histogram"]["init"].get(part, {})
            lines.append(f"| {_layer_name(layer)} | {kind_label(part)} | {_fmt(init.get('mean'))} | "
                         f"{_fmt(init.get('std'))} | {_fmt(init.get('max'))} | {_fmt(init.get('share_at_least_0.1'))}"
                         f" | {_fmt(trained.get('std'))} | {_fmt(trained.get('max'))} | "
                         f"{_fmt(trained.get('share_at_least_0.1'))} |")
    return lines


def _distance_table(layers: list[dict[str, Any]]) -> list[str]:
    window = next(iter(layers[0]["distance"]["trained"].values()))["window"]
    lines = [f"| layer | attention | mass within distance {window}, init | trained | uniform (chance) | reading |",
             "|---|---|---|---|---|---|"]
    for layer in layers:
        for part, trained in layer["distance"]["trained"].items():
            init = layer["distance"]["init"].get(part, {})
            mass, uniform = trained["local_mass"], trained["uniform_local_mass"]
            lines.append(f"| {_layer_name(layer)} | {kind_label(part)} | {_fmt(init.get('local_mass'))} | "
                         f"{_fmt(mass)} | {_fmt(uniform)} | {local_verdict(mass, uniform)} |")
    return lines


def _alpha_table(layers: list[dict[str, Any]]) -> list[str]:
    mixed = [layer for layer in layers if layer["alpha"]]
    if not mixed:
        return []
    lines = ["| layer | kind | head | alpha per part |", "|---|---|---|---|"]
    for layer in mixed:
        for row in layer["alpha"]["per_head"]:
            parts = ", ".join(f"{p} {row[p]:.3f}" for p in layer["alpha"]["parts"])
            lines.append(f"| {_layer_name(layer)} | {layer['kind']} | {row['head']} | {parts} |")
    return lines


def _images(names: list[str], prefix: str) -> list[str]:
    return [f"![{name}]({name})" for name in names if name.startswith(prefix)]


def write_markdown(path: Path, data: dict[str, Any]) -> Path:
    """Write the report of one run: its figures (relative links, so the folder can move) and tables."""
    layers = list(data["layers"].values())
    names = data["figures"]
    kinds = ", ".join(f"{stack} {kind_label(kind)}" for stack, kind in data["kinds"].items())
    window = next(iter(layers[0]["distance"]["trained"].values()))["window"]
    lines = [
        f"# Attention analysis of `{run_name(data['run_dir'])}`", "",
        f"Run `{data['run_dir']}` at step {data['step']} (arch {data['arch']}, seed {data['seed']}): {kinds}.",
        f"Statistics over {data['examples']} examples of the {data['split']} split ({data['batches']} batches of "
        f"{data['batch_size']}), over the (query, key) pairs each layer may attend; heatmaps on "
        f"{data['example']['source']}.", "",
        f"Initial weights: {data['initialisation']}.", "",
        "## Attention weights at initialisation and after training (paper Figures 2-3)", "",
        "Each panel is one layer's weights (mixtures: each part's own softmax, then the mixture); dashed grey: at "
        "initialisation, blue: trained. The y axis is logarithmic. Queries with a single allowed key (a causal "
        "layer's first) are left out: their weight is 1 whatever the model.", "",
        *_images(names, "histogram_"), "", *_histogram_table(layers), "",
        "## Attention by relative distance (query - key)", "",
        f"Mean attention weight at each distance, per layer; the shaded band is |query - key| <= {window}. The "
        f"table gives the attention mass within that window per query (mean over queries and heads) and what "
        f"uniform attention over the same keys would put there; 'local window' means the mass closes at least half "
        f"the gap between uniform and all-local attention (the paper reports that a Random Synthesizer LM learns a "
        f"local window).", "",
        *_images(names, "distance_"), "", *_distance_table(layers), "",
    ]
    alpha = _alpha_table(layers)
    if alpha:
        lines += ["## Mixture weights alpha", "",
                  "Per head, the learned weight of each part's logits (eq. 8-9; each row sums to 1, 1/N at "
                  "initialisation, dotted line).", "", *_images(names, "alpha_"), "", *alpha, ""]
    lines += [f"## Attention of each layer and head on {data['example']['source']} (paper Figures 4-6)", "",
              "Rows: for a mixture each part's own softmax, then the mixture; columns: heads. Query on the vertical "
              f"axis, key on the horizontal one; the first {data['example']['positions_shown']} positions. Each "
              "panel's colour scale ends at its 99th percentile of positive weights (larger ones saturate).", "",
              *_images(names, "heatmap_"), ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def write_index(path: Path, runs: list[tuple[str, Path, dict[str, Any]]]) -> Path:
    """Write a study's index: one line per run (``(name, its analysis folder, its analysis.json data)``) with the
    local mass of each layer and part and a link to the run's report."""
    lines = ["# Attention analysis of the study's runs", "",
             "| run | kinds | step | local mass per layer (trained; chance) | report |", "|---|---|---|---|---|"]
    for name, out, data in runs:
        masses = "; ".join(
            f"{layer['stack'][:3]} L{layer['layer']} {part} {d['local_mass']:.2f} ({d['uniform_local_mass']:.2f})"
            for layer in data["layers"].values() for part, d in layer["distance"]["trained"].items())
        kinds = ", ".join(f"{s} {k}" for s, k in data["kinds"].items())
        link = Path(os.path.relpath(out / "analysis.md", path.parent)).as_posix()
        lines.append(f"| {name} | {kinds} | {data['step']} | {masses} | [analysis.md]({link}) |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
