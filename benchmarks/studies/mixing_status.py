"""Where the token-mixing study stands (docs/results/mixing.md), from its committed records only: per learning-rate
grid the runs harvested (11 kinds x 3 rates) and whether each kind's rate is chosen, per setting the seeds harvested
at the chosen rates, and what is left, with an estimate of the CPU time it needs.

    python benchmarks/studies/mixing_status.py

The estimate is the number of runs left times the median wall time per step of the setting's harvested runs (of
its family's where the setting has none yet) times the setting's budget in steps, one run per core: the runs were
timed beside other work (and a family's other settings may differ in length or heads), so it is a planning figure,
not a measurement.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from studies import mixing_study as study  # noqa: E402 - settings, kinds, records


@dataclass(frozen=True)
class Progress:
    """One line of the status: ``done`` of ``planned`` runs of a setting (or a family's grid), ``left`` runs left,
    ``seconds`` the estimated wall time of those (nan without any timed run), ``note`` what is missing."""

    name: str
    done: int
    planned: int
    seconds: float
    note: str = ""

    @property
    def left(self) -> int:
        return self.planned - self.done


def _median_wall(entries: list[dict], steps: int) -> float:
    """The median wall time per step of the timed ``entries``, times ``steps`` (nan without a timed entry): a
    setting whose budget changed is estimated at its new budget from the runs of its earlier one's family."""
    per_step = [float(e["wall_seconds"]) / int(e["steps"]) for e in entries if e.get("wall_seconds") and e.get("steps")]
    return statistics.median(per_step) * steps if per_step else float("nan")


def progress() -> list[Progress]:
    """The grid of every family with a grid, then every setting's seeds, in :data:`study.SETTINGS` order."""
    by_key = study.harvested()
    done = list(by_key.values())
    chosen = study.chosen_rates()
    lines = []
    for name, grid_setting in study.LR_SETTING.items():
        grid = [e for e in done if e["setting"] == grid_setting and int(e["seed"]) == 0]
        keys = {(e["kind"], float(e["lr"])) for e in grid}
        have = sum((kind, lr) in keys for kind in study.KINDS for lr in study.LRS)
        unchosen = [k for k in study.KINDS if (name, k) not in chosen]
        timed = grid or [e for e in done if e["family"] == study.setting(grid_setting).family]
        lines.append(Progress(f"lr-{name}", have, len(study.KINDS) * len(study.LRS),
                              (len(study.KINDS) * len(study.LRS) - have)
                              * _median_wall(timed, study.setting(grid_setting).steps),
                              f"no rate chosen for {', '.join(unchosen)}" if unchosen else "every rate chosen"))
    for s in study.SETTINGS:
        runs = [e for e in done if e["setting"] == s.name]
        have = sum(len(study.seeds_at_rate(s, kind, chosen[(s.grid, kind)], by_key))
                   for kind in study.KINDS if (s.grid, kind) in chosen)
        wall = _median_wall(runs or [e for e in done if e["family"] == s.family], s.steps)
        planned = len(study.KINDS) * study.SEEDS
        lines.append(Progress(s.name, have, planned, (planned - have) * wall))
    return lines


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    lines = progress()
    print(f"{'':16s} {'runs':>9s} {'left':>5s} {'CPU-hours left':>15s}")
    for p in lines:
        hours = "?" if p.seconds != p.seconds else f"{p.seconds / 3600:.1f}"
        print(f"{p.name:16s} {p.done:4d}/{p.planned:<4d} {p.left:5d} {hours:>15s}  {p.note}".rstrip())
    total = sum(p.seconds for p in lines if p.seconds == p.seconds)
    print(f"# {sum(p.left for p in lines)} runs left, about {total / 3600:.1f} CPU-hours at the recorded runs' "
          f"median wall times (one run per core; timed beside other work)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
