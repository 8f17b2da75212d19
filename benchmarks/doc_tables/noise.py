"""The noise floor: what two runs of one seed and one library source differ by under different CPU kernels or on
different hosts (``benchmarks/studies/seed_studies.py``'s repro and noise studies), the amount no seed explains."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from studies import seed_studies  # noqa: E402 - the record and its pairing


def noise_floor_table() -> str:
    """One row per same-seed pair (valid and, where recorded, test), the metric's difference last."""
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


NOISE_BUILDERS = {"noise-floor": noise_floor_table}
