"""The T5-setting tables of docs/results/t5.md (the paper's Tables 4 and 5) from their records.

``benchmarks/results/t5arch_pretrain.jsonl`` and ``t5arch_glue.jsonl`` are written by
``python benchmarks/studies/results_runs.py --table t5arch_pretrain`` (then ``--table t5arch_glue``): one entry per
finished row, with the validation metrics of ``synthformer eval`` under ``valid``. Each table ends with its
baselines from ``benchmarks/results/baselines.jsonl`` (``python benchmarks/studies/baselines.py``): the unigram and
"predict the sentinels" losses of the pretraining targets, and the GLUE majority-label reference.
``doc_tables/registry.py`` hands each table its record's rows, in the order of :data:`PRETRAIN_ROWS` or
:data:`GLUE_ROWS`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, latest, provenance  # noqa: E402 - benchmarks/records.py

from doc_tables import baselines  # noqa: E402 - the baseline rows

PRETRAIN_ROWS = {"V": "T5 (V)", "R": "Syn (R)", "D": "Syn (D)", "R+V": "Syn (R+V)", "D+V": "Syn (D+V)",
                 "V-adamw": "T5 (V), AdamW + cosine (the earlier recipe)",
                 "transformer-V": "Transformer (V), the earlier setting"}
GLUE_ROWS = {"V": "T5 (V)", "R+V": "Syn (R+V)", "D+V": "Syn (D+V)",
             "R+V-grown": "Syn (R+V) grown from T5 (V)", "transformer-V": "Transformer (V), the earlier setting"}


def _minutes(entry: dict[str, Any]) -> str:
    return f"{entry['train_s'] / 60:.1f} min"


def unknown_pieces(table: str, entry: dict[str, Any]) -> str:
    """The answers of ``entry``'s run that hold a piece its vocabulary could not spell, counted by
    ``benchmarks/studies/t5_unknown_pieces.py`` for this very run (the row's date), or "-" where not counted."""
    path = RESULTS / "t5arch_unknown_pieces.jsonl"
    counted = latest(path, table).get(entry["row"]) if path.exists() else None
    return str(counted["unknown_pieces"]) if counted and counted["row_date"] == entry.get("date") else "-"


def t5_pretrain_table(entries: list[dict[str, Any]], record: str) -> str:
    """Span-corruption pretraining: validation log perplexity (nats per target token), the measured corruption,
    steps/s over the training time without periodic validation."""
    lines = ["| encoder | params | valid log PPL | noise density | mean span | steps | steps/s | training time |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for e in entries:
        v = e["valid"]
        lines.append(f"| {PRETRAIN_ROWS[e['row']]} | {e['parameters']:,} | {v['log_perplexity']:.3f} | "
                     f"{v['noise_density']:.4f} | {v['mean_span_length']:.3f} | {e['steps']} | "
                     f"{e['steps'] / e['train_s']:.2f} | {_minutes(e)} |")
    rows, note = baselines.t5_pretrain_rows(entries)
    return "\n".join([*lines, *rows, "", provenance(entries, record), "", note])


def t5_glue_table(entries: list[dict[str, Any]], record: str) -> str:
    """GLUE dev scores of every finetuning row (greedy decoding of every dev example), the GLUE average, the
    invalid predictions, and the majority-label reference (recorded by ``benchmarks/studies/baselines.py``)."""
    from studies.t5_tables import _COLUMNS  # Table 5's columns, shared with that script

    present = [c for c in _COLUMNS if any(f"{c[0]}_{c[1][0]}" in e["valid"] for e in entries)]
    lines = ["| model | GLUE avg | " + " | ".join(c[2] for c in present) + " | invalid | of them unspellable | "
             "training time |", "|---|---:|" + "---:|" * len(present) + "---:|---:|---:|"]
    majority, note = baselines.glue_majority("t5arch_glue")
    for e in [*entries, *([{**majority, "row": "majority"}] if majority else [])]:
        m = e["valid"]
        cells = ["/".join(f"{m[f'{task}_{metric}']:.1f}" if f"{task}_{metric}" in m else "-" for metric in metrics)
                 for task, metrics, _ in present]
        invalid = sum(int(m.get(f"{task}_invalid", 0)) for task, _, _ in present)
        time = _minutes(e) if "train_s" in e else "-"
        unspellable = unknown_pieces("t5arch_glue", e) if "train_s" in e else "0"  # the majority: label strings
        lines.append(f"| {GLUE_ROWS.get(e['row'], 'majority label')} | {m['glue_average']:.1f} | " + " | ".join(cells)
                     + f" | {invalid} | {unspellable} | {time} |")
    return "\n".join([*lines, "", provenance(entries, record) + " " + note, "", UNSPELLABLE_NOTE])


#: What the "of them unspellable" column counts, under both T5 finetuning tables
UNSPELLABLE_NOTE = ("\"of them unspellable\": answers holding a piece the vocabulary could not spell (`⁇`, a "
                    "replacement character or `<unk>`), counted in the run's answers by "
                    "`python benchmarks/studies/t5_unknown_pieces.py` (record "
                    "`benchmarks/results/t5arch_unknown_pieces.jsonl`; "
                    "\"-\": not counted, the run directory was not at hand).")
