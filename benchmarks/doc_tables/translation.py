"""The paper's Table 2, translation column, at CPU scale: Multi30k English to German for V, R, D and the +V
mixtures (``benchmarks/studies/seed_studies.py``'s ``t2-mt`` study), its table beside the paper's EnDe BLEU and its
verdicts by the noise rule."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import latest, provenance  # noqa: E402
from studies import seed_studies  # noqa: E402 - the study and its record

from doc_tables import baselines  # noqa: E402 - the copied source, English to German
from doc_tables.verdicts import MARGINS, _claim_text, _floor, _join, mean_sd, verdict_section  # noqa: E402

#: The paper's Table 2, WMT'14 EnDe BLEU (its own Transformer row, not Vaswani et al.'s).
PAPER_ENDE = {"V": 27.67, "R": 27.27, "D": 27.43, "R+V": 28.47, "D+V": 27.57}
#: R, D and D+V end within half a point of the paper's Transformer: read as matches within a BLEU point (the
#: margin of Table 8's claims); R+V is the one the paper reads as better ("+0.8 BLEU points").
T2_CLAIMS = {**{k: _claim_text(k, "matches", margin=MARGINS["bleu"]) for k in ("R", "D", "D+V")},
             "R+V": _claim_text("R+V", "better")}


def t2_table() -> str:
    """Per kind: seeds, valid and test BLEU (mean ± sample sd over seeds), the paper's EnDe BLEU; the copied
    source last."""
    valid, test = (seed_studies.runs_of("t2-mt", split) for split in ("valid", "test"))
    if not valid:
        return "(no recorded run yet: `python benchmarks/studies/seed_studies.py run --studies t2-mt`)"
    lines = ["| kind | seeds | valid BLEU | test BLEU | paper EnDe BLEU |", "|---|---:|---:|---:|---:|"]
    for kind in PAPER_ENDE:
        v = [x for k, _, x in valid if k == kind]
        t = [x for k, _, x in test if k == kind]
        lines.append(f"| {kind} | {len(v)} | {mean_sd(v)} | {mean_sd(t)} | {PAPER_ENDE[kind]:.2f} |")
    copy = baselines.entries("multi30k").get("copy-source-en-de")
    if copy:
        lines.append(f"| source copied (no model) | | {copy['valid']['bleu']:.2f} | {copy['test']['bleu']:.2f} | |")
    entries = [e for e in latest(seed_studies.RECORD, seed_studies.TABLE).values() if e["study"] == "t2-mt"]
    return "\n".join(lines) + (
        "\n\nMean ± sample standard deviation over seeds (higher is better). Valid BLEU: greedy, on the first 200 "
        "validation sentences at the last evaluation; test BLEU: greedy, on the whole test2016 set (sacrebleu). "
        + provenance(entries, "benchmarks/results/seed_studies.jsonl"))


def t2_verdicts() -> str:
    """The Table 2 claims on BLEU, valid and test, with the copied source as the trivial baseline."""
    copy = baselines.entries("multi30k").get("copy-source-en-de")
    sections = [verdict_section(seed_studies.runs_of("t2-mt", split), T2_CLAIMS, direction="max",
                                baseline=copy[split]["bleu"] if copy else None, unit="BLEU", precision=2,
                                noise_floor=_floor("t8", split), caption=f"{split} BLEU")
                for split in ("valid", "test")]
    return _join(sections, "Claims: the paper's Table 2 (EnDe): R, D and D+V within half a point of its Transformer, "
                 f"read as matches within {MARGINS['bleu']:g} BLEU; R+V above it. Noise floor: Table 8's (the same "
                 "model and budget, German to English). Record: `benchmarks/results/seed_studies.jsonl`, study "
                 "`t2-mt`, paired by seed.")
