"""docs/results/mixing.md's figures, from ``benchmarks/results/mixing.jsonl``: MQAR's test answer accuracy per kind
against the number of pairs (at width 128) and against the width (at 8 pairs), mean and 95% interval over the seeds.

    python benchmarks/studies/mixing_figures.py  # writes docs/figures/mixing-pairs.png and mixing-width.png

A kind with no recorded point on an axis is left out of that figure; an axis with no point at all is not drawn.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from doc_tables.mixing import interval  # noqa: E402
from records import ROOT, latest  # noqa: E402

from studies import mixing_study as study  # noqa: E402 - settings and kinds

FIGURES = ROOT / "docs" / "figures"
#: axis name -> (x label, [(x value, setting name)])
AXES: dict[str, tuple[str, list[tuple[int, str]]]] = {
    "pairs": ("key-value pairs (64 tokens, width 128)", [(2, "mqar-64x2"), (4, "mqar-64x4"), (8, "mqar-64x8")]),
    "width": ("model width (64 tokens, 8 pairs)", [(32, "mqar-64x8-d32"), (64, "mqar-64x8-d64"),
                                                   (128, "mqar-64x8")]),
}


def draw(axis: str, out: Path) -> bool:
    """Draw one axis's figure into ``out``; False when no point is recorded on it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = latest(study.RECORD, study.TABLE)
    label, points = AXES[axis]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn = False
    for kind in study.KINDS:
        xs, means, halves = [], [], []
        for x, name in points:
            entry = found.get(f"{name}-{kind}")
            values = [float(v) for v in (entry or {}).get("test", []) if v is not None]
            if values:
                mean, half = interval(values)
                xs.append(x)
                means.append(mean)
                halves.append(0.0 if half != half else half)  # nan (one seed): no bar
        if xs:
            ax.errorbar(xs, means, yerr=halves, marker="o", capsize=3, label=kind,
                        linestyle="-" if "V" in kind.split("+") else "--")
            drawn = True
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xscale("log", base=2)
    ax.set_xticks([x for x, _ in points], [str(x) for x, _ in points])
    ax.set_xlabel(label)
    ax.set_ylabel("test answer accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"MQAR: accuracy against the {'number of pairs' if axis == 'pairs' else axis}")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def main() -> int:
    for axis in AXES:
        out = FIGURES / f"mixing-{axis}.png"
        print(f"# {out.relative_to(ROOT)}: " + ("written" if draw(axis, out) else "no recorded point yet"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
