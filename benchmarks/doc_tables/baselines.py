"""The trivial-baseline rows of the tables under docs/results/, read from ``benchmarks/results/baselines.jsonl``.

``python benchmarks/studies/baselines.py`` computes each baseline from the data (majority class, unigram and "predict
the sentinels" losses, the source copied as its translation, lead-3, the most frequent reply) and records it like the
models' rows; the builders of the tables (``doc_tables.results``, ``doc_tables.t5``, ``doc_tables.superglue``,
``doc_tables.lra_results``) call the functions here to add the row and a line saying where it comes from. Nothing
is computed at doc-build time: a table whose baseline is not recorded says how to record it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, latest, provenance  # noqa: E402 - benchmarks/records.py

RECORD_NAME = "baselines.jsonl"


def entries(table: str) -> dict[str, dict[str, Any]]:
    """row -> the newest baseline entry of the record table ``table``."""
    return latest(RESULTS / RECORD_NAME, table)


def note(found: list[dict[str, Any]], table: str) -> str:
    """The line under a table about its baseline rows: their record and how they were computed, or the command
    that records them."""
    if not found:
        return f"Baseline not recorded yet: `python benchmarks/studies/baselines.py --tables {table}`."
    record = str((RESULTS / RECORD_NAME).relative_to(ROOT))
    return provenance(found, record).replace("Record:", "Baseline record:", 1)


def insert_row(markdown: str, cells: dict[str, str], first: str) -> str:
    """``markdown`` (a table, then anything after a blank line) with one more row at the table's end: ``first`` in
    its first column, ``cells`` (header -> text) under their headers, the other cells empty."""
    lines = markdown.split("\n")
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    end = next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))
    row = [first, *(cells.get(h, "") for h in header[1:])]
    return "\n".join([*lines[:end], "| " + " | ".join(row) + " |", *lines[end:]])


def _percent(value: float) -> str:
    return f"{100 * value:.2f}%"


# --------------------------------------------------------------------------- the tables


def imdb_row() -> tuple[str | None, str]:
    """IMDb's majority-class row (or None) and its note."""
    found = entries("imdb").get("majority")
    if found is None:
        return None, note([], "imdb")
    row = (f"| majority class (no model) | - | {_percent(found['test']['accuracy'])} | "
           f"{_percent(found['valid']['accuracy'])} | - | - | - |")
    return row, note([found], "imdb")


#: The T5 pretraining table's baseline rows: record row -> label.
T5_PRETRAIN = {"unigram": "unigram of the targets (no model)",
               "sentinels": "sentinels given, unigram otherwise (no model)",
               "transformer-V-unigram": "unigram of the targets, the earlier setting's BPE",
               "transformer-V-sentinels": "sentinels given, unigram otherwise, the earlier setting's BPE"}


def _tokens_note(config: str, tokens: int, models: list[dict[str, Any]]) -> str:
    """Whether the model rows trained by ``config`` scored the same valid target tokens as its baseline: the same
    count says the same tokenizer and data; another says the rows were taken with another tokenizer."""
    scored = sorted({int(m["valid"]["tokens"]) for m in models if f" {config} " in f" {m.get('command', '')} "
                     and "tokens" in m.get("valid", {})})
    if not scored:
        return f"{tokens:,} valid target tokens"
    if scored == [tokens]:
        return f"{tokens:,} valid target tokens, as its rows"
    return (f"{tokens:,} valid target tokens; its rows scored {' / '.join(f'{n:,}' for n in scored)}: "
            "another tokenizer than the current code's")


def t5_pretrain_rows(models: list[dict[str, Any]]) -> tuple[list[str], str]:
    """The unigram and "predict the sentinels" rows of the pretraining table, and their note (what each is, the
    config, overrides and tokens they were computed with, checked against the ``models``' entries)."""
    found = entries("t5arch_pretrain")
    chosen = [found[r] for r in T5_PRETRAIN if r in found]
    rows = [f"| {T5_PRETRAIN[e['row']]} | - | {e['valid']['log_perplexity']:.3f} | - | - | - | - | - |"
            for e in chosen]
    if not chosen:
        return [], note([], "t5arch_pretrain")
    how = {(e["config"], " ".join(e["overrides"])): e["valid"]["tokens"] for e in chosen}
    setup = "; ".join(f"`{' '.join(filter(None, key))}` ({_tokens_note(key[0], n, models)})"
                      for key, n in how.items())
    text = ("Baselines, in nats per valid target token like the models (every target token counted): the add-one "
            "unigram of the training targets' tokens; and a model told where the spans start and end, which a "
            "model has to infer from the input: probability 1 on every sentinel and `</s>` "
            f"({100 * chosen[0]['sentinel_share']:.0f}% of the target tokens), the add-one unigram of the training "
            "spans' tokens elsewhere. Data and tokenizer from " + setup + ". ")
    return rows, text + note(chosen, "t5arch_pretrain")


def glue_majority(table: str) -> tuple[dict[str, Any] | None, str]:
    """The recorded majority-label entry of ``t5arch_glue`` or ``t5arch_superglue`` (or None), and its note."""
    found = entries(table).get("majority")
    return found, note([found] if found else [], table)


def lra_rows(task: str, name: str) -> tuple[str | None, dict[str, Any] | None]:
    """The majority-class row of one LRA task (columns of the LRA table), or None; and its entry."""
    found = entries("lra").get(f"{task}-majority")
    if found is None:
        return None, None
    tied = [t for t in found["tied"] if t != found["label"]]
    label = f"majority class (no model): label {found['label']}" + (
        f", tied with {', '.join(tied)} in training" if tied else "")
    test, valid = found["test"], found["valid"]
    row = (f"| {name} | {label} | {_percent(test['accuracy'])} ({test['examples']:,}) | - | "
           f"{100 * found['chance']:.0f}% | {_percent(valid['accuracy'])} | - | - | - | - |")
    return row, found


def lra_note(found: list[dict[str, Any]]) -> str:
    """The LRA table's baseline note: what the majority rows scored, and their record."""
    if not found:
        return note([], "lra")
    return ("The majority rows answer every example with the most frequent label of the task's training split (a "
            "tie goes to the label seen first), on the same test subset and validation batches as the models. "
            + note(found, "lra"))


def study_row(name: str, markdown: str) -> str:
    """A study's table (``study-shk``, ``study-t8``, ``study-t9``) with its baseline row and note."""
    if name == "shk":
        found = entries("study_shk").get("unigram")
        if found is None:
            return markdown + "\n\n" + note([], "study_shk")
        cells = {"valid bits/char": f"{found['valid']['bits_per_character']:.4f}"}
        return (insert_row(markdown, cells, "unigram (no model)") + "\n\nBaseline: the training text's add-one "
                "unigram, on the whole validation split. " + note([found], "study_shk"))
    found = entries("multi30k").get("copy-source")
    if found is None:
        return markdown + "\n\n" + note([], "multi30k")
    cells = {"valid BLEU": f"{found['valid']['bleu']:.2f}", "test BLEU": f"{found['test']['bleu']:.2f}"}
    return (insert_row(markdown, cells, "source copied (no model)") + "\n\nBaseline: each German source sentence "
            f"given as its own translation (the first {found['valid']['examples']:,} validation sentences, as the "
            "runs validate, and the whole test set). " + note([found], "multi30k"))


def probe_rows(task: str, lengths: list[int], markdown: str) -> str:
    """A probe study's table with a majority-class row per length, and their note."""
    table = entries("probe")
    found = [table[f"{task}-{n}-majority"] for n in lengths if f"{task}-{n}-majority" in table]
    for e in found:
        length = e["row"].split("-")[1]
        markdown = insert_row(markdown, {"valid accuracy": _percent(e["valid"]["accuracy"]),
                                         "test accuracy": _percent(e["test"]["accuracy"])},
                              f"majority class (no model), max_len={length}")
    chance = (f"Baseline: the most frequent training label (chance {100 * found[0]['chance']:.2f}%). "
              if found else "")
    return markdown + "\n\n" + chance + note(found, "probe")


#: Table 3's baseline rows: family -> (record row suffix, label).
TABLE3 = {"summarization": ("lead3", "Lead-3 (no model)"),
          "dialogue": ("frequent-reply", "Most frequent training reply (no model)")}


def table3_baselines(datasets: list[str], families: dict[str, str]) -> tuple[dict[str, tuple[str, dict]], str]:
    """dataset -> (row label, test metrics) of Table 3's baselines, and their note."""
    table = entries("table3")
    out, found = {}, []
    for d in datasets:
        suffix, label = TABLE3[families[d]]
        entry = table.get(f"{d}-{suffix}")
        if entry is not None:
            out[d] = (label, entry["test"])
            found.append(entry)
    replies = "; ".join(f"{e['row'].rsplit('-frequent-reply', 1)[0]}: \"{e['reply']}\" ({e['reply_count']:,} of "
                        f"{e['train_replies']:,} training replies)" for e in found if "reply" in e)
    what = ("Baselines: the first three sentences of the dialogue (its first three turns) as the summary; the most "
            f"frequent reply of the training split given to every test context ({replies}). ") if found else ""
    return out, what + note(found, "table3")
