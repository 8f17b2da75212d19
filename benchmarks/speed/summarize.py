"""Turn the JSON of ``benchmarks/speed/attention.py --json`` into Markdown tables: time as a ratio to V per length.

Usage:
    python benchmarks/speed/summarize.py module.json [--mode fwd+bwd] [--value ratio_to_V|ms|peak_MiB]
"""

from __future__ import annotations

import argparse
import json


def pivot(rows: list[dict], mode: str, value: str) -> str:
    rows = [r for r in rows if r.get("mode", mode) == mode]
    lengths = sorted({r["L"] for r in rows})
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    cell = {(r["kind"], r["L"]): r[value] for r in rows}
    lines = ["| kind | " + " | ".join(f"L={n}" for n in lengths) + " |", "|---|" + "---:|" * len(lengths)]
    for kind in kinds:
        values = [cell.get((kind, n)) for n in lengths]
        lines.append(f"| {kind} | " + " | ".join("" if v is None else f"{v:.2f}" for v in values) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json")
    p.add_argument("--mode", default="fwd+bwd", choices=["fwd", "fwd+bwd"])
    p.add_argument("--value", default="ratio_to_V", choices=["ratio_to_V", "speedup_vs_V", "ms", "peak_MiB"])
    args = p.parse_args()
    with open(args.json) as f:
        print(pivot(json.load(f)["rows"], args.mode, args.value))


if __name__ == "__main__":
    main()
