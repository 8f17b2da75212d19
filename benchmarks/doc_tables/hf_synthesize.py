"""docs/results/hf_synthesize.md's tables, from ``benchmarks/results/hf_synthesize.jsonl``
(``benchmarks/studies/hf_synthesize.py``): per family, each kind's validation loss when the pretrained model is
synthesized (before and after the attention transfer) and after finetuning, with V (the pretrained model finetuned as
long) and a unigram model beside it, the verdicts by the noise rule, and the finetuning's speed.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, provenance, read_entries  # noqa: E402

from doc_tables.mixing import interval  # noqa: E402 - the same 95% interval

RECORD = RESULTS / "hf_synthesize.jsonl"
KINDS = ("V", "R+V", "D+V", "R", "D")
#: The mixtures keep the pretrained attention: claimed to match V within this many nats after finetuning.
MATCH_MARGIN = 0.02


def rows() -> list[dict[str, Any]]:
    """Every recorded row, the newest per (family, kind, seed, settings)."""
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for entry in read_entries(RECORD):
        for row in entry.get("rows", []):
            key = (row["family"], row["kind"], row.get("seed", 0), tuple(sorted(row["settings"].items())))
            found[key] = {**row, "_entry": entry}
    return list(found.values())


def _mean(values: list[float | None]) -> str:
    kept = [float(v) for v in values if v is not None]
    if not kept:
        return "—"
    mean, half = interval(kept)
    return f"{mean:.3f}" + (f" ± {half:.3f}" if math.isfinite(half) else "")


def claim(kind: str) -> str:
    """The claim the verdict column tests for ``kind`` (against V finetuned as long)."""
    return f"{kind} matches V within {MATCH_MARGIN:g}" if "V" in kind.split("+") else f"{kind} is worse than V"


def loss_table(family: str) -> str:
    """Validation loss (nats per character) per kind of ``family``: mean ± 95% interval over the seeds."""
    from synthformer.stats import table_verdicts

    found = [r for r in rows() if r["family"] == family]
    if not found:
        return (f"(no recorded row yet: `python benchmarks/studies/hf_synthesize.py --families {family} --record "
                "benchmarks/results/hf_synthesize.jsonl`)")
    records = [(r["kind"], r.get("seed", 0), float(r["val_loss_finetuned"])) for r in found]
    kinds = [k for k in KINDS if any(r["kind"] == k for r in found)]
    claims = {k: claim(k) for k in kinds if k != "V"}
    unigram = found[0]["val_loss_unigram"]
    verdicts = (table_verdicts(records, claims, direction="min", baseline=unigram, unit="nats").verdict_column()
                if claims and "V" in kinds else {})
    v_rate = [r["finetune_steps_per_second"] for r in found if r["kind"] == "V"]
    lines = ["| kind | seeds | synthesized (step 0) | after the attention transfer | after finetuning | "
             "steps/s (× V) | verdict |", "|---|---:|---:|---:|---:|---:|---|"]
    for kind in kinds:
        mine = [r for r in found if r["kind"] == kind]
        rate = statistics.median(r["finetune_steps_per_second"] for r in mine)
        ratio = f" ({rate / statistics.median(v_rate):.2f})" if v_rate else ""
        start = _mean([r["val_loss_synthesized"] for r in mine]) if kind != "V" else "—"
        lines.append(f"| {kind} | {len(mine)} | {start} | {_mean([r['val_loss_step0'] for r in mine])} | "
                     f"{_mean([r['val_loss_finetuned'] for r in mine])} | {rate:.1f}{ratio} | "
                     f"{verdicts.get(kind, 'the reference') if kind != 'V' else 'the reference'} |")
    pre = found[0]["val_loss_pretrained"]
    lines.append(f"| *the pretrained model* | | {pre:.3f} | | | | |")
    lines.append(f"| *unigram model (no context)* | | | | {unigram:.3f} | | |")
    settings = found[0]["settings"]
    said = ", ".join(f"{k} {v}" for k, v in settings.items())
    return ("\n".join(lines) + f"\n\nSettings: {said}.\n\n"
            + provenance([r["_entry"] for r in found], str(RECORD.relative_to(ROOT))))
