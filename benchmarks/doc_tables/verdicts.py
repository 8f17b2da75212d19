"""The verdict blocks of the result pages: each claim of the paper read from the records by the project's noise rule.

Every builder here takes the same records as the table it sits under and hands them to
:func:`synthformer.stats.table_verdicts` (paired differences over the seeds two kinds share, Holm's correction
across the claims of one table, the smallest difference the seeds could detect), so a verdict is computed, never
typed. The claims are the paper's, written as the direction of the paper's own number against its Transformer
("R is worse than V" where the paper's R scores below its Transformer), or, where the paper says two models are
level, as an equivalence within a margin (:data:`MARGINS`). A table whose rows have one seed reads "one seed: not
read" for every claim: the honest outcome of one run per kind.

The trivial baseline (majority class, unigram, copied source) is handed to the rule where the rows have seeds. With
one seed per row and no recorded noise floor the rule has no estimate of a row's noise, so it could not tell any
row from the baseline and would call every such table uninformative, however far its models are from the baseline
(compare's V at 2.57 bits/char against a unigram's 4.68); those tables are read without it, and say so.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import RESULTS, ROOT, latest, provenance, read_entries  # noqa: E402
from studies import seed_studies, table3  # noqa: E402 - the studies' later seeds, repro runs, noise floor; Table 3

from doc_tables import baselines  # noqa: E402 - the recorded trivial baselines
from doc_tables.lra_results import LRA_TABLE1, TASKS  # noqa: E402 - LRA's own numbers, the claims of its table

FIGURES = ROOT / "docs" / "figures"

#: Equivalence margins, in the metric's unit: the largest gap a "matches" claim allows. BLEU: the paper's Table 8
#: puts every variant within half a point of its Transformer and calls them level, so a point is the margin;
#: accuracy (a fraction): two points, less than the seed spread of the shortest probe runs and far below the
#: 40-point gaps the probes are built to show.
MARGINS = {"bleu": 1.0, "accuracy": 0.02}

#: Probe accuracy is counted on 500 examples, so two runs can differ by one example for no reason a seed explains;
#: one example is the noise floor the rule is given for those tables (the rule asks for one quantum at least).
PROBE_FLOOR = 1 / 500

Rows = list[tuple[str, Hashable, float]]


def _one_seed(records: Rows) -> bool:
    seeds: dict[str, set[Hashable]] = {}
    for kind, seed, _ in records:
        seeds.setdefault(kind, set()).add(seed)
    return all(len(s) < 2 for s in seeds.values())


def verdict_section(records: Rows, claims: dict[str, Any], *, reference: str = "V", direction: str,
                    baseline: float | None = None, unit: str = "", precision: int = 3,
                    noise_floor: float | None = None, caption: str = "") -> str:
    """One table of verdicts (``TableVerdicts.to_markdown``) under an optional bold caption; the baseline is left
    out when every row has one seed (see the module's docstring), with a sentence saying so."""
    from synthformer.stats import table_verdicts

    claims = {k: c for k, c in claims.items() if any(r[0] == k for r in records)}
    if not claims or not any(r[0] == reference for r in records):
        return (f"**{caption}**\n\n" if caption else "") + "(no claimed kind and its reference recorded yet)"
    single = _one_seed(records)
    table = table_verdicts(records, claims, reference=reference, direction=direction,
                           baseline=None if single else baseline, unit=unit, precision=precision,
                           noise_floor=noise_floor)
    text = table.to_markdown()
    if single and baseline is not None:
        text += (f" The trivial baseline ({baseline:.{precision}f}) is not given to the rule: with one seed per "
                 "row and no recorded noise floor it has no noise to tell a row from the baseline by.")
    return (f"**{caption}**\n\n" if caption else "") + text


def _join(sections: Iterable[str], note: str) -> str:
    return "\n\n".join([*sections, note])


def _claim_text(kind: str, relation: str, reference: str = "V", margin: float | None = None) -> str:
    return f"{kind} matches {reference} within {margin:g}" if relation == "matches" else \
        f"{kind} is {relation} than {reference}"


# --------------------------------------------------------------------------- synthformer compare


def _compare_entries() -> list[dict[str, Any]]:
    return [e for e in read_entries(RESULTS / "compare.jsonl") if e.get("table") == "compare"]


#: The paper's Table 2, LM column (LM1B perplexity): V 38.21, R+V 40.05, R 40.60, D 40.88: each kind is worse.
COMPARE_CLAIMS = {"R": "R is worse than V", "D": "D is worse than V", "R+V": "R+V is worse than V"}


def compare_verdicts() -> str:
    """The compare table's claims on bits/char, from the newest entry of each kind (the table's rows)."""
    found = latest(RESULTS / "compare.jsonl", "compare")
    baseline = next((e["baseline"]["value"] for e in found.values() if "baseline" in e), None)
    claims = "Claims: the direction of the paper's Table 2 (LM column) against its Transformer. "
    seeded = seed_studies.runs_of("compare", "valid")
    if len({seed for _, seed, _ in seeded}) > 1:  # the seed study, once it has two seeds: read those
        return _join([verdict_section(seeded, COMPARE_CLAIMS, direction="min", baseline=baseline,
                                      unit="bits/char", precision=4, noise_floor=_floor("compare"))],
                     claims + "Record: `benchmarks/results/seed_studies.jsonl`, study `compare` (the job's config, "
                     "budget and kinds, one run per seed), paired by seed.")
    # the command trains every kind from its one default seed: the same seed for all, so the rows pair
    records = [(e["row"], "default", float(e["metric_value"])) for e in found.values()]
    return _join([verdict_section(records, COMPARE_CLAIMS, direction="min", baseline=baseline, unit="bits/char",
                                  precision=4)],
                 claims + "Record: `benchmarks/results/compare.jsonl`, the rows of the table above.")


def compare_steps() -> str:
    """Every recorded step count of the compare job: bits/char per kind and the kinds' order at each."""
    by_steps: dict[int, dict[str, dict[str, Any]]] = {}
    for e in _compare_entries():
        by_steps.setdefault(int(e["steps"]), {})[e["row"]] = e  # a later entry of a (steps, kind) wins
    if not by_steps:
        return "(no recorded row yet: `python benchmarks/studies/results_runs.py --table compare`)"
    kinds = list(COMPARE_CLAIMS)
    lines = ["| steps | V | " + " | ".join(kinds) + " | order (best first) | recorded |",
             "|---:|---:|" + "---:|" * len(kinds) + "---|---|"]
    for steps in sorted(by_steps, reverse=True):
        rows = by_steps[steps]
        cells = [f"{rows[k]['metric_value']:.4f}" if k in rows else "—" for k in ["V", *kinds]]
        order = " < ".join(sorted(rows, key=lambda k: rows[k]["metric_value"]))
        dates = sorted(str(r["date"]) for r in rows.values())
        lines.append(f"| {steps} | " + " | ".join(cells) + f" | {order} | {dates[0][:10]} |")
    return "\n".join(lines) + ("\n\nValidation bits/char (lower is better), one run per kind and step count. "
                               "Record: `benchmarks/results/compare.jsonl`, every entry (the table above shows "
                               "the newest, at the current default).")


# --------------------------------------------------------------------------- the studies (results.json)


def _study(name: str) -> dict[str, Any]:
    return json.loads((FIGURES / f"study-{name}" / "results.json").read_text(encoding="utf-8"))


def _study_records(data: dict[str, Any], split: str, rename: dict[str, str] | None = None) -> Rows:
    key = "valid_metric" if split == "valid" else "test_metric"
    return [((rename or {}).get(r["variant"], r["variant"]), r["seed"], float(r[key])) for r in data["runs"]
            if r.get(key) is not None]


#: The paper's Table 2, LM column: D+V 37.27 < V 38.21 < R+V 40.05 < R 40.60 < D 40.88 < FD 41.20 < FR 42.40 <
#: Fix 50.52; each kind's claim is its direction against V there.
SHK_CLAIMS = {k: _claim_text(k, "worse") for k in ("R", "Fix", "FR", "D", "FD", "R+V")} | {"D+V": "D+V is better "
                                                                                           "than V"}


def _floor(study: str, split: str = "valid") -> float | None:
    """The study's recorded noise floor: the largest difference of its same-seed, same-source pairs run under
    different CPU kernels (:func:`seed_studies.noise_pairs`); None before one is recorded."""
    found = [p["difference"] for p in seed_studies.noise_pairs(split) if p["study"] == study]
    return max(found) if found else None


def seed_sources(study: str, split: str = "valid") -> tuple[list[int], list[int]]:
    """(the seeds of ``study`` that come from its earlier record, those ``seed_studies.jsonl`` holds), each sorted."""
    new = sorted({e["seed"] for e in latest(seed_studies.RECORD, seed_studies.TABLE).values() if e["study"] == study})
    return [s for s in sorted({seed for _, seed, _ in seed_studies.runs_of(study, split)}) if s not in new], new


def seeds_note(study: str, earlier: str, unit: str, precision: int, split: str = "valid") -> str:
    """Where a study's seeds come from, how far its repro run lands from the earlier record, and its noise floor."""
    old, new = seed_sources(study, split)
    text = (f"Records: `{earlier}` (the study's seeds {', '.join(map(str, old)) or 'none'})"
            + (f" and `benchmarks/results/seed_studies.jsonl` (seeds {', '.join(map(str, new))}, study `{study}` of "
               "`benchmarks/studies/seed_studies.py`), paired by seed" if new else ", paired by seed") + ".")
    repro = seed_studies.reproduction(f"{study}-repro", split)
    if repro and repro["difference"] is not None:
        now, before = repro["now"], float(repro["earlier"])
        text += (f" Retrained at a later commit, {repro['variant']}'s seed {repro['seed']} "
                 + (f"lands {abs(now - before):.{precision}f} {unit} from its earlier value ({now:.{precision}f} "
                    f"against {before:.{precision}f}): the earlier seeds are not reproduced to the digit, so a "
                    "difference is only ever taken between two runs of one seed and one sitting."
                    if f"{now:.{precision}f}" != f"{before:.{precision}f}" else "reproduces its earlier value."))
    floor = _floor(study, split)
    if floor is not None:
        text += (f" Noise floor given to the rule: {floor:.{precision}f} {unit}, the largest difference of a same-seed "
                 "rerun of the same code under other CPU kernels (`seed_studies.noise_pairs`).")
    return text


def shk_verdicts() -> str:
    """Tiny Shakespeare's eight kinds (3 seeds, more where recorded) on validation bits/char, with the unigram
    baseline and the recorded noise floor."""
    unigram = baselines.entries("study_shk").get("unigram")
    base = unigram["valid"]["bits_per_character"] if unigram else None
    return _join([verdict_section(seed_studies.runs_of("shk", "valid"), SHK_CLAIMS, direction="min", baseline=base,
                                  unit="bits/char", precision=4, noise_floor=_floor("shk"))],
                 "Claims: the direction of each kind against V in the paper's Table 2 (LM column). "
                 + seeds_note("shk", "docs/figures/study-shk/results.json", "bits/char", 4))


T8_VS_V = {k: _claim_text(k, "matches", margin=MARGINS["bleu"]) for k in
           ("R", "D", "Conv", "ConvReluConv", "Bottleneck", "GLU")}
T8_VS_D = {k: _claim_text(k, "matches", "D", MARGINS["bleu"]) for k in ("Conv", "ConvReluConv", "Bottleneck", "GLU")}


def t8_verdicts() -> str:
    """Table 8's variants on BLEU (2 seeds, more where recorded) against V and against D, valid and test, with the
    copied source."""
    copy = baselines.entries("multi30k").get("copy-source")
    sections = []
    for split in ("valid", "test"):
        base = copy[split]["bleu"] if copy else None
        records = seed_studies.runs_of("t8", split)
        floor = _floor("t8", split)
        sections.append(verdict_section(records, T8_VS_V, direction="max", baseline=base, unit="BLEU", precision=2,
                                        noise_floor=floor, caption=f"{split} BLEU, against V"))
        sections.append(verdict_section(records, T8_VS_D, reference="D", direction="max", baseline=base,
                                        unit="BLEU", precision=2, noise_floor=floor,
                                        caption=f"{split} BLEU, against D"))
    return _join(sections, "Claims: the paper's Table 8 has every variant within half a BLEU point of its "
                 "Transformer, and its appendix calls the additional variants \"marginal or no improvement over "
                 f"the simple dense/random variations\": each is read as a match within {MARGINS['bleu']:g} BLEU. "
                 + seeds_note("t8", "docs/figures/study-t8/results.json", "BLEU", 2))


def _t9_name(variant: str) -> str:
    return f"R/{variant.rsplit('=', 1)[-1]}-heads"


def mean_sd(values: list[float]) -> str:
    """A table cell: the mean with its sample standard deviation over seeds (two decimals; the mean alone for one
    value, "—" for none)."""
    if not values:
        return "—"
    spread = f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else ""
    return f"{statistics.fmean(values):.2f}{spread}"


def _heads_sections(study: str) -> list[str]:
    """A heads study of R on BLEU, valid and test: each head count against the first (two heads), by the noise rule,
    with the copied source as the trivial baseline; [] without a recorded run."""
    from synthformer.stats import Claim

    copy = baselines.entries("multi30k").get("copy-source")
    sections = []
    for split in ("valid", "test"):
        records = [(_t9_name(v), seed, x) for v, seed, x in seed_studies.runs_of(study, split)]
        if not records:
            return []
        order = list(dict.fromkeys(name for name, _, _ in records))
        reference, others = order[0], order[1:]
        # the paper's Table 9: R's BLEU rises with the heads (EnDe 19.43 with 2, 21.72 with 32)
        claims = {k: Claim(k, "better", reference) for k in others}
        sections.append(verdict_section(records, claims, reference=reference, direction="max",
                                        baseline=copy[split]["bleu"] if copy else None, unit="BLEU", precision=2,
                                        caption=f"{split} BLEU, against 2 heads"))
    return sections


def t9_verdicts() -> str:
    """Table 9 (R with 2 to 32 heads, 2 seeds, more where recorded) on BLEU: each head count against two heads."""
    return _join(_heads_sections("t9"), "Claims: the paper's Table 9, where R's BLEU rises with the number of heads. "
                 + seeds_note("t9", "docs/figures/study-t9/results.json", "BLEU", 2))


def heads_table(study: str) -> str:
    """A heads study of R (``t9``: d_model fixed, the heads narrowing; ``t9-fixed``: every head 16 wide): per head
    count, seeds and valid and test BLEU (mean ± sample sd over every recorded seed, the earlier record's too)."""
    valid, test = (seed_studies.runs_of(study, split) for split in ("valid", "test"))
    if not valid:
        return f"(no recorded run yet: `python benchmarks/studies/seed_studies.py run --studies {study}`)"

    lines = ["| kind | seeds | valid BLEU | test BLEU |", "|---|---:|---:|---:|"]
    for variant in dict.fromkeys(v for v, _, _ in valid):
        v = [x for k, _, x in valid if k == variant]
        t = [x for k, _, x in test if k == variant]
        lines.append(f"| {_t9_name(variant)} | {len(v)} | {mean_sd(v)} | {mean_sd(t)} |")
    entries = [e for e in latest(seed_studies.RECORD, seed_studies.TABLE).values() if e["study"] == study]
    plan = seed_studies.study(study)
    head_dim = next((o.partition("=")[2] for o in plan.overrides if o.startswith("model.head_dim=")), None)
    width = f"each head {head_dim} wide" if head_dim else "d_model fixed, each head d_model / heads wide"
    earlier = seed_sources(study)[0]
    return "\n".join(lines) + (f"\n\nMean ± sample standard deviation over seeds (higher is better), {width}. "
                               + (f"Seeds {', '.join(map(str, earlier))} from `{plan.earlier}`, the others from the "
                                  "record below. " if plan.earlier and earlier else "")
                               + provenance(entries, "benchmarks/results/seed_studies.jsonl"))


def t9_fixed_verdicts() -> str:
    """The fixed-width Table 9 study on BLEU: each head count against two heads, by the noise rule."""
    sections = _heads_sections("t9-fixed")
    if not sections:
        return "(no recorded run yet: `python benchmarks/studies/seed_studies.py run --studies t9-fixed`)"
    return _join(sections, "Claims: the paper's Table 9 (R's BLEU rises with the number of heads), every head 16 "
                 "wide. Record: `benchmarks/results/seed_studies.jsonl`, study `t9-fixed`, paired by seed.")


# --------------------------------------------------------------------------- the matching probes


#: The paper's explanation of Tables 5-6: synthesized weights alone cannot match across segments, the kinds with
#: query-key interaction can; every kind solves the control.
PROBE_CLAIMS = {"pair": {**{k: _claim_text(k, "worse") for k in ("R", "Fix", "FR", "D", "FD", "LightConv",
                                                                 "DynamicConv")},
                         **{k: _claim_text(k, "matches", margin=MARGINS["accuracy"]) for k in ("R+V", "D+V",
                                                                                             "Linformer")}},
                "control": {k: _claim_text(k, "matches", margin=MARGINS["accuracy"]) for k in
                            ("R", "Fix", "FR", "D", "FD", "R+V", "D+V", "Linformer", "LightConv", "DynamicConv")}}


def probe_verdicts(task: str) -> str:
    """One probe's claims per length and split (3 seeds; the study lists each kind's values in seed order)."""
    found = latest(RESULTS / "probe.jsonl", "probe")
    entries = sorted((e for e in found.values() if e.get("task") == task), key=lambda e: e["length"])
    if not entries:
        return f"(no recorded row yet: `python benchmarks/studies/probe_study.py record --tasks {task}`)"
    majority = baselines.entries("probe")
    sections = []
    for e in entries:
        for split in ("valid", "test"):
            records = [(r["variant"], seed, float(v)) for r in e["rows"] for seed, v in enumerate(r[split] or [])]
            base = majority.get(f"{task}-{e['length']}-majority", {}).get(split, {}).get("accuracy")
            sections.append(verdict_section(records, PROBE_CLAIMS[task], direction="max", baseline=base,
                                            noise_floor=PROBE_FLOOR, caption=f"max_len={e['length']}, {split} "
                                            "accuracy"))
    return _join(sections, f"Accuracy as a fraction; a match is within {MARGINS['accuracy']:g}; the noise floor is "
                 "one example of the 500 scored. Record: `benchmarks/results/probe.jsonl` (each kind's values in "
                 "seed order, seeds 0, 1, 2).")


# --------------------------------------------------------------------------- one-seed tables


#: The paper's Table 7 (IMDb, test accuracy): Transformer 81.34, Linformer 82.86, Syn (FR) 83.39, Syn (FR+V) 84.61.
IMDB_CLAIMS = {k: _claim_text(k, "better") for k in ("FR", "FR+V", "Linformer")}


def imdb_seeded(split: str = "test") -> Rows:
    """IMDb's seed studies (``imdb``: V and R; ``imdb-k32``: the low-rank kinds), accuracy in percent: one config,
    budget and seed stream, so their runs pair by seed."""
    return [(kind, seed, 100 * x) for name in ("imdb", "imdb-k32")
            for kind, seed, x in seed_studies.runs_of(name, split)]


def imdb_verdicts() -> str:
    """IMDb (Table 7) on test accuracy: the seed studies once V has two seeds there, else the table's one seed."""
    majority = baselines.entries("imdb").get("majority")
    base = 100 * majority["test"]["accuracy"] if majority else None
    claims = "Claims: the paper's Table 7, where each low-rank model beats its Transformer. "
    seeded = imdb_seeded()
    if len({seed for kind, seed, _ in seeded if kind == "V"}) > 1:
        return _join([verdict_section(seeded, IMDB_CLAIMS, direction="max", baseline=base, unit="%", precision=2)],
                     claims + "Record: `benchmarks/results/seed_studies.jsonl`, studies `imdb` and `imdb-k32` "
                     "(`configs/cls_imdb.yaml`, its budget, one run per kind and seed; test accuracy in percent), "
                     "paired by seed.")
    found = latest(RESULTS / "imdb.jsonl", "imdb")
    records = [(e["row"], "default", 100 * float(e["test"]["accuracy"])) for e in found.values()]
    return _join([verdict_section(records, IMDB_CLAIMS, direction="max", baseline=base, unit="%", precision=2)],
                 claims + "Record: `benchmarks/results/imdb.jsonl`, the rows of the table above (test accuracy in "
                 "percent).")


#: T5 setting: the paper's Table 4 (pretraining log perplexity: R and D above T5, both +V mixtures below it),
#: Table 5 (GLUE: Syn (R+V) above T5, Syn (D+V) below it), Table 6 (SuperGLUE: Syn (R+V) above T5; Syn (D+V),
#: Syn (R) and Syn (D) below it).
T5_CLAIMS = {"pretrain": {"R": "R is worse than V", "D": "D is worse than V", "R+V": "R+V is better than V",
                          "D+V": "D+V is better than V"},
             "glue": {"R+V": "R+V is better than V", "D+V": "D+V is worse than V"},
             "superglue": {"R+V": "R+V is better than V", "D+V": "D+V is worse than V", "R": "R is worse than V",
                           "D": "D is worse than V"}}


def t5_verdicts(table: str) -> str:
    """One T5-setting table's claims (pretraining log PPL, GLUE or SuperGLUE average), one seed per model."""
    found = latest(RESULTS / f"t5arch_{table}.jsonl", f"t5arch_{table}")
    key, direction, unit = {"pretrain": ("log_perplexity", "min", "nats"), "glue": ("glue_average", "max", ""),
                            "superglue": ("super_glue_average", "max", "")}[table]
    records = [(e["row"], "default", float(e["valid"][key])) for e in found.values()
               if e["row"] in ("V", "R", "D", "R+V", "D+V") and key in e.get("valid", {})]
    base = None
    if table != "pretrain":
        majority, _ = baselines.glue_majority(f"t5arch_{table}")
        base = majority["valid"].get(key) if majority and "valid" in majority else None
    else:
        unigram = baselines.entries("t5arch_pretrain").get("unigram")
        base = unigram["valid"]["log_perplexity"] if unigram else None
    what = {"pretrain": "valid log perplexity (Table 4)", "glue": "the GLUE average (Table 5)",
            "superglue": "the SuperGLUE average (Table 6)"}[table]
    return _join([verdict_section(records, T5_CLAIMS[table], direction=direction, baseline=base, unit=unit,
                                  precision=3 if table == "pretrain" else 1)],
                 f"Claims on {what}: the direction of each kind against T5 in the paper. Record: "
                 f"`benchmarks/results/t5arch_{table}.jsonl`, the T5-architecture rows of the table above.")


#: The paper's Table 3 on ROUGE-L: CNN/DailyMail (summarization) V 35.77, R 33.10, D 33.70, D+V 36.02, R+V 35.95;
#: PersonaChat (dialogue) V 13.38, R 15.00, D 15.22, D+V 14.22, R+V 14.79. Each family's claims apply to both of
#: its datasets here (DailyDialog is not in the paper; it is read with the dialogue claims).
TABLE3_CLAIMS = {"summarization": {"R": "R is worse than V", "D": "D is worse than V", "D+V": "D+V is better than V",
                                   "R+V": "R+V is better than V"},
                 "dialogue": {k: _claim_text(k, "better") for k in ("R", "D", "D+V", "R+V")}}


def table3_verdicts() -> str:
    """Table 3's claims on test ROUGE-L per dataset (seed 0 for every kind; V on PersonaChat has three)."""
    recorded = table3.read_record(table3.DEFAULT_RECORD)
    found = baselines.table3_baselines(list(table3.CONFIGS), {d: table3._family(d) for d in table3.CONFIGS})[0]
    sections = []
    for dataset in table3.CONFIGS:
        key = "rougeL" if table3._family(dataset) == "summarization" else "rouge_l"  # the two evals' names
        records = [(k, s, float(e["metrics"][key])) for (d, k, s), e in recorded.items() if d == dataset]
        base = found.get(dataset, (None, {}))[1].get(key)
        sections.append(verdict_section(records, TABLE3_CLAIMS[table3._family(dataset)], direction="max",
                                        baseline=base, precision=2, caption=f"{dataset}, test ROUGE-L"))
    return _join(sections, "Claims: the direction of each kind against the Transformer in the paper's Table 3 "
                 "(CNN/DailyMail for the summarization sets, PersonaChat for the dialogue sets). Record: "
                 f"`{table3.DEFAULT_RECORD.relative_to(ROOT)}`.")


def lra_verdicts() -> str:
    """LRA's Table 1 claims per task: its Synthesizer (R+V here) and Linformer against its Transformer."""
    found = latest(RESULTS / "lra.jsonl", "lra")
    sections = []
    for task, (name, _, _, _) in TASKS.items():
        records = [(e["row"].split("-", 1)[1], "default", 100 * float(e["test"]["accuracy"]))
                   for e in found.values() if e["row"].startswith(f"{task}-")]
        claims = {k: _claim_text(k, "better" if LRA_TABLE1[k][task] > LRA_TABLE1["V"][task] else "worse")
                  for k in ("R+V", "Linformer")}
        majority = baselines.entries("lra").get(f"{task}-majority")
        sections.append(verdict_section(records, claims, direction="max", unit="%", precision=2,
                                        baseline=100 * majority["test"]["accuracy"] if majority else None,
                                        caption=f"{name}, test accuracy"))
    return _join(sections, "Claims: the direction of LRA's Synthesizer (random plus dot-product logits, R+V here) "
                 "and Linformer against its Transformer in LRA's Table 1. Record: `benchmarks/results/lra.jsonl`.")
