"""docs/results/mixing.md's figures, from ``benchmarks/results/mixing.jsonl``: MQAR's test answer accuracy per kind
against the number of pairs (at width 128) and against the width (at 8 pairs), mean and 95% interval over the seeds.

    python benchmarks/studies/mixing_figures.py  # writes docs/figures/mixing-pairs.png and mixing-width.png

Beside each figure, ``mixing-<axis>.json`` holds the points it draws, which a test keeps equal to the record.

A kind with no recorded point on an axis is left out of that figure; an axis with fewer than two recorded points
(settings) is not drawn: one point is not a trend. Each kind has its own colour (tab20: eleven kinds outnumber the
default cycle of ten), the kinds with a dot product solid lines, the others dashed; the dotted black line is the
guess ``1 / pairs`` that a mixer reading the values but not comparing the query with the keys reaches. The
interval bars are clipped to [0, 1] (an interval of 3 seeds can reach past what an accuracy can be).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from doc_tables.mixing import interval  # noqa: E402
from records import ROOT  # noqa: E402

from studies import mixing_study as study  # noqa: E402 - settings and kinds

FIGURES = ROOT / "docs" / "figures"
#: axis name -> (x label, [(x value, setting name)]); each setting's number of pairs is its own override's
AXES: dict[str, tuple[str, list[tuple[int, str]]]] = {
    "pairs": ("key-value pairs (64 tokens, width 128)", [(2, "mqar-64x2"), (4, "mqar-64x4"), (8, "mqar-64x8")]),
    "width": ("model width (64 tokens, 8 pairs)", [(64, "mqar-64x8-d64"), (128, "mqar-64x8")]),
}


def series(axis: str) -> dict[str, list[tuple[int, float, float, float]]]:
    """Per kind, its recorded points on ``axis``: (x, mean, low, high) of the test answer accuracy over the seeds,
    the interval clipped to [0, 1] (low = high = mean with one seed)."""
    found = study.current_entries()
    out: dict[str, list[tuple[int, float, float, float]]] = {}
    for kind in study.KINDS:
        for x, name in AXES[axis][1]:
            entry = found.get(f"{name}-{kind}")
            values = [float(v) for v in (entry or {}).get("test", []) if v is not None]
            if values:
                mean, half = interval(values)
                half = 0.0 if half != half else half  # nan (one seed): no bar
                out.setdefault(kind, []).append((x, mean, max(0.0, mean - half), min(1.0, mean + half)))
    return out


def draw(axis: str, out: Path) -> bool:
    """Draw one axis's figure into ``out``; False when fewer than two of its settings have a recorded point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    label, points = AXES[axis]
    found = series(axis)
    if not drawable(found):
        return False
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    colours = plt.get_cmap("tab20").colors
    for i, kind in enumerate(study.KINDS):
        if kind not in found:
            continue
        xs, means, lows, highs = (list(column) for column in zip(*found[kind], strict=True))
        ax.errorbar(xs, means, yerr=[[m - lo for m, lo in zip(means, lows, strict=True)],
                                     [hi - m for m, hi in zip(means, highs, strict=True)]],
                    marker="o", capsize=3, label=kind, color=colours[(2 * i) % 20 + (2 * i) // 20],
                    linestyle="-" if "V" in kind.split("+") else "--")
    guess = [1 / int(study.setting(name).option("task.generator_options.num_pairs")) for _, name in points]
    ax.plot([x for x, _ in points], guess, "k:", label="1 / pairs (a context value at random)")
    ax.set_xscale("log", base=2)
    ax.set_xticks([x for x, _ in points], [str(x) for x, _ in points])
    ax.set_xlabel(label)
    ax.set_ylabel("test answer accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"MQAR: accuracy against the {'number of pairs' if axis == 'pairs' else axis}")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: no point hidden
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    out.with_suffix(".json").write_text(json.dumps(plotted(axis, found)) + "\n", encoding="utf-8")
    return True


def drawable(found: dict[str, list[tuple[int, float, float, float]]]) -> bool:
    """Whether ``found`` (:func:`series` of an axis) has points at two settings or more: one point is not a trend."""
    return len({x for kind_points in found.values() for x, *_ in kind_points}) >= 2


def plotted(axis: str, found: dict[str, list[tuple[int, float, float, float]]] | None = None) -> dict[str, object]:
    """What the figure of ``axis`` draws, as its JSON sidecar (``mixing-<axis>.json``) holds it: the points per kind
    (x, mean, low, high, rounded to 6 digits) of ``found`` (default: :func:`series` read from the record now).
    tests/docs/test_mixing_figures_current.py compares the committed sidecar with the record, so a figure left
    behind by a newer record fails the suite."""
    found = series(axis) if found is None else found
    points = {kind: [[x, *(round(v, 6) for v in rest)] for x, *rest in kind_points]
              for kind, kind_points in found.items()}
    record = study.RECORD.relative_to(ROOT) if study.RECORD.is_relative_to(ROOT) else study.RECORD
    return {"axis": axis, "record": str(record), "points": points}


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    for axis in AXES:
        out = FIGURES / f"mixing-{axis}.png"
        drawn = draw(axis, out)
        print(f"# {out.relative_to(ROOT)}: " + ("written" if drawn else "fewer than two settings recorded: not drawn"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
