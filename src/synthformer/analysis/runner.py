"""Analysing a run: its trained model and its re-initialisation on a few batches of real data, the example's
heatmaps, the mixture weights, and the files (figures, ``analysis.json``, ``analysis.md``).

The weights at initialisation need no file of their own: :func:`initial_model` rebuilds the model exactly as
``synthformer train`` built it before the first step (:func:`synthformer.tasks.run.data.seeded_model` of the
saved ``model_config.json`` and ``train.seed``, the function the pipeline builds with), which gives the same
tensors bit for bit (tested). A run started from a pretrained one (``init_from``) started from that run's
weights, which are loaded the same way when they can still be read (the report says which).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from synthformer.attention import Mixture
from synthformer.common import ConfigError
from synthformer.tasks import LoadedRun, batches, load_pretrained_weights, load_run, prepare_data, seeded_model
from synthformer.train import RunDir, RunError, open_extras, preserved_rng

from . import figures
from .capture import AttentionSite, attention_sites, capture_inputs, part_weights, valid_positions
from .example import Example, dataset_example, text_example
from .report import run_name, write_index, write_json, write_markdown
from .stats import DistanceProfile, WeightHistogram, allowed_pairs

__all__ = ["RunAnalysis", "analyze", "analyze_run", "find_runs", "initial_model"]

logger = logging.getLogger(__name__)

#: The run's extra folder an analysis goes to by default.
ANALYSIS_DIR = "analysis"
#: The two states of the weights compared by the histograms and distance profiles.
STATES = ("init", "trained")
_STACK_SHORT = {"encoder": "Enc", "decoder": "Dec"}
#: Examples per batch of the statistics: the (B, H, L, L) weights of every part are held at once, so a small batch
#: keeps a long-context run's analysis within memory (4 batches of 8 at L=1024, 8 heads: ~270 MB per part).
DEFAULT_BATCH_SIZE = 8


@dataclass
class RunAnalysis:
    """What :func:`analyze_run` measured and wrote.

    Attributes:
        run_dir: the run analysed.
        out: the folder of its figures, ``analysis.json`` and ``analysis.md``.
        data: the contents of ``analysis.json``.
        figures: the PNG files written, in the order the report shows them.
    """

    run_dir: Path
    out: Path
    data: dict[str, Any]
    figures: list[Path] = field(default_factory=list)


def initial_model(loaded: LoadedRun) -> tuple[nn.Module, str]:
    """The run's model as it was before its first training step (eval mode), and a sentence saying where its
    weights come from.

    Rebuilt from ``train.seed`` in the pipeline's order; a run started from a pretrained one (``init_from``) then
    gets that run's latest weights, as training did (the sentence says when that run has trained on since, or
    can no longer be read: then the weights are the random ones the pretrained weights replaced). The global RNGs
    are left as they were.
    """
    with preserved_rng():
        model = seeded_model(loaded.model_config, loaded.config.train.seed)
    note = "re-initialised from train.seed in the pipeline's order: exactly the weights the run started from"
    if loaded.config.init_from is not None:
        note = _pretrained_start(loaded, model)
    return model.eval(), note


def _pretrained_start(loaded: LoadedRun, model: nn.Module) -> str:
    """Load the pretrained weights a finetuning run started from into ``model``; say what was loaded."""
    source = loaded.config.init_from
    if RunDir(source).latest_checkpoint() is None:
        return (f"re-initialised from train.seed; the run started from the pretrained weights of {source}, which "
                "are no longer there: these are the random weights they replaced")
    try:
        report = load_pretrained_weights(loaded.config, model)
    except (ConfigError, RunError, OSError) as err:
        return (f"re-initialised from train.seed; the run started from the pretrained weights of {source}, which "
                f"cannot be read now ({err}): these are the random weights they replaced")
    note = f"the pretrained weights of {report.source} (step {report.step}), as the run started"
    started = _started_step(RunDir(loaded.run_dir).init_from_path)
    if started is not None and started != report.step:
        note += (f"; but the run started from its step {started}, and {source} has trained on since: these are "
                 "its newer weights")
    return note


def _started_step(path: Path) -> int | None:
    """The pretrained step recorded in a run's ``init_from.json`` (None when unreadable)."""
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _layer_title(site: AttentionSite, part: str) -> str:
    return f"{_STACK_SHORT[site.stack]} L{site.layer}: {figures.panel_label(part)}"


def _accumulate(loaded: LoadedRun, init: nn.Module, dataset: Any, batch_size: int, max_batches: int,
                ) -> tuple[dict, dict, int]:
    """Histograms and distance profiles ``[state][site key][part]`` over ``max_batches`` batches of ``dataset``."""
    hists: dict = {s: defaultdict(lambda: defaultdict(WeightHistogram)) for s in STATES}
    profiles: dict = {s: defaultdict(dict) for s in STATES}
    examples = 0
    models = {"init": init, "trained": loaded.model}
    sites = {state: attention_sites(model) for state, model in models.items()}
    for batch in batches(dataset, batch_size, max_batches):
        examples += next(iter(batch.values())).shape[0]
        for state, model in models.items():
            captured = capture_inputs(model, sites[state], batch)
            for site in sites[state]:
                got = captured[site.key]
                allowed = allowed_pairs(valid_positions(batch, site, got), site.module.causal)  # (B, 1, L, L)
                for part, weights in part_weights(site.module, got.x, got.key_padding_mask, got.position_bias).items():
                    hists[state][site.key][part].add(weights, allowed)
                    profile = profiles[state][site.key].setdefault(
                        part, DistanceProfile(site.module.max_len, site.module.n_heads))
                    profile.add(weights, allowed)
    return hists, profiles, examples


def _alpha(site: AttentionSite) -> dict[str, Any] | None:
    synth = site.module.synth
    if not isinstance(synth, Mixture):
        return None
    alpha = synth.alpha().detach()  # (H, N)
    return {"parts": site.parts,
            "per_head": [{"head": h + 1, **{p: float(alpha[h, n]) for n, p in enumerate(site.parts)}}
                         for h in range(alpha.shape[0])]}


def _layers_json(sites: list[AttentionSite], hists: dict, profiles: dict) -> dict[str, Any]:
    layers = {}
    for site in sites:
        layers[site.key] = {
            "stack": site.stack, "layer": site.layer, "kind": site.kind, "label": figures.kind_label(site.kind),
            "parts": site.parts, "heads": site.module.n_heads, "alpha": _alpha(site),
            "histogram": {s: {p: h.summary() for p, h in hists[s][site.key].items()} for s in STATES},
            "distance": {s: {p: d.summary() for p, d in profiles[s][site.key].items()} for s in STATES},
        }
    return layers


def _draw(out: Path, sites: list[AttentionSite], layers: dict, example: Example, loaded: LoadedRun,
          positions: int) -> list[Path]:
    """Every figure of the analysis; returns the files in report order."""
    paths: list[Path] = []
    name = run_name(loaded.run_dir)
    stacks = [s for s in ("encoder", "decoder") if any(site.stack == s for site in sites)]
    for stack in stacks:
        mine = [site for site in sites if site.stack == stack]
        panels = [(_layer_title(site, part), layers[site.key]["histogram"]["init"][part]["counts"],
                   layers[site.key]["histogram"]["trained"][part]["counts"])
                  for site in mine for part in layers[site.key]["histogram"]["trained"]]
        widths = {len(layers[site.key]["histogram"]["trained"]) for site in mine}
        per_row = widths.pop() if len(widths) == 1 else None  # one layer per row when the layers are alike
        paths.append(figures.histogram_figure(out / f"histogram_{stack}.png",
                                              f"{name}: {stack} attention weights", panels, per_row))
        lines = []
        for site in mine:
            dist = layers[site.key]["distance"]
            series = [(figures.kind_label(part), dist[state][part]["distances"],
                       dist[state][part]["mean_weight_by_distance"], state == "trained")
                      for part in dist["trained"] for state in STATES]
            chance = next(iter(dist["trained"].values()))
            series.append(("uniform", chance["distances"], chance["uniform_weight_by_distance"], True))
            lines.append((f"{_STACK_SHORT[stack]} L{site.layer}", series))
        window = next(iter(layers[mine[0].key]["distance"]["trained"].values()))["window"]
        paths.append(figures.distance_figure(out / f"distance_{stack}.png",
                                             f"{name}: {stack} attention by relative distance", lines, window))
        bars = [(f"L{site.layer} H{row['head']}", [row[p] for p in site.parts])
                for site in mine if (alpha := layers[site.key]["alpha"]) for row in alpha["per_head"]]
        mixed = [site for site in mine if layers[site.key]["alpha"]]
        if bars and all(site.parts == mixed[0].parts for site in mixed):
            paths.append(figures.alpha_figure(out / f"alpha_{stack}.png",
                                              f"{name}: {stack} mixture weights alpha", bars, mixed[0].parts))
    captured = capture_inputs(loaded.model, sites, example.batch)
    for site in sites:
        got = captured[site.key]
        n = positions
        rows = [(figures.panel_label(part), w[0, :, :n, :n].numpy())  # (H, n, n): the first n positions of the sample
                for part, w in part_weights(site.module, got.x, got.key_padding_mask, got.position_bias).items()]
        tokens = example.tokens.get(site.stack, [])[:n]
        paths.append(figures.heatmap_figure(
            out / f"heatmap_{site.key}.png",
            f"{name}: {_STACK_SHORT[site.stack]} L{site.layer} on {example.source}", rows, tokens, tokens))
    return paths


def analyze_run(run_dir: str | Path, out: str | Path | None = None, *, split: str = "valid", max_batches: int = 4,
                batch_size: int | None = None, example: str | None = None, example_index: int | None = None,
                positions: int = 64) -> RunAnalysis:
    """Analyse one trained run and write its figures, ``analysis.json`` and ``analysis.md`` to ``out``.

    Args:
        run_dir: a run directory written by ``synthformer train``.
        out: where to write (default ``RUN_DIR/analysis``, the run's extra folder: ``open_extras(run_dir)``).
        split: the split whose examples the statistics (and, by index, the heatmaps) use.
        max_batches: batches of ``split`` for the histograms and distance profiles (evenly spaced).
        batch_size: their size (default :data:`DEFAULT_BATCH_SIZE`, 8).
        example: a text to show in the heatmaps (framed as the run's model reads it).
        example_index: else the example of ``split`` at this index (default 0).
        positions: the heatmaps show the example's first ``positions`` queries and keys (readable cells).

    Raises:
        RunError: not a run directory, or a split the task does not have.
        ValueError: bad options (each named).
    """
    if example is not None and example_index is not None:
        raise ValueError("give --example TEXT or --example-index N, not both")
    if max_batches < 1:
        raise ValueError(f"--batches must be >= 1, got {max_batches}")
    if positions < 1:
        raise ValueError(f"--positions must be >= 1, got {positions}")
    loaded = load_run(run_dir)
    run = loaded.config
    data = prepare_data(run, loaded.tokenizer, loaded.label_set, splits=(split,))
    if split not in data.datasets:
        raise RunError(f"the task of {loaded.run_dir} has no {split!r} split (it has: {', '.join(data.raw.splits)})")
    dataset = data.datasets[split]
    size = batch_size or DEFAULT_BATCH_SIZE
    init, init_note = initial_model(loaded)
    sites = attention_sites(loaded.model)
    if not sites:
        raise ValueError(f"{loaded.run_dir}: the model has no attention layer to analyse (its token mixers are "
                         f"{run.model.to_dict().get('decoder_kind') or run.model.to_dict().get('encoder_kind')})")
    hists, profiles, count = _accumulate(loaded, init, dataset, size, max_batches)
    ex = text_example(loaded, example) if example is not None else dataset_example(
        loaded, dataset, example_index or 0, split)
    layers = _layers_json(sites, hists, profiles)
    # the folder is made only now: an analysis refused above leaves the run as it was
    out = Path(out) if out is not None else open_extras(loaded.run_dir).extra_dir(ANALYSIS_DIR)
    result = {
        "run_dir": str(loaded.run_dir), "step": loaded.step, "checkpoint": str(loaded.checkpoint),
        "seed": run.train.seed, "arch": loaded.model_config.arch,
        "kinds": {site.stack: site.kind for site in sites},
        "initialisation": init_note,
        "split": split, "batches": max_batches, "batch_size": size, "examples": count,
        "example": {"source": ex.source, "tokens": ex.tokens, "positions_shown": positions}, "layers": layers,
    }
    paths = _draw(out, sites, layers, ex, loaded, positions)
    result["figures"] = [p.name for p in paths]
    write_json(out / "analysis.json", result)
    write_markdown(out / "analysis.md", result)
    logger.info("analysis of %s written to %s", loaded.run_dir, out)
    return RunAnalysis(loaded.run_dir, out, result, paths)


def find_runs(path: str | Path) -> list[Path]:
    """The run directories under ``path`` (itself, when it is one), sorted; a folder is a run when it holds the
    run's ``config.yaml`` and ``model_config.json``. The analysis folders written by this module are skipped."""
    path = Path(path)
    if not path.is_dir():
        raise RunError(f"run or study directory not found: {path}")

    def is_run(p: Path) -> bool:
        return (p / RunDir.CONFIG).is_file() and (p / RunDir.MODEL_CONFIG).is_file()

    if is_run(path):
        return [path]
    return sorted(p.parent for p in path.rglob(RunDir.MODEL_CONFIG) if is_run(p.parent))


def analyze(path: str | Path, out: str | Path | None = None, **options: Any) -> list[RunAnalysis]:
    """Analyse a run directory, or every run of a study directory (a folder whose subfolders are runs).

    A study's analyses go to ``OUT/<the run's path in the study>`` (default ``STUDY/analysis/...``), with an
    ``analysis.md`` there linking each run's report. ``options`` are :func:`analyze_run`'s.

    Raises:
        RunError: ``path`` is missing or holds no run.
    """
    runs = find_runs(path)
    if not runs:
        raise RunError(f"{path} is neither a run directory nor a study directory (no subfolder holds a run's "
                       f"{RunDir.CONFIG} and {RunDir.MODEL_CONFIG}); pass a directory written by 'synthformer "
                       "train' or 'synthformer study'")
    root = Path(path)
    if runs == [root]:
        return [analyze_run(root, out, **options)]
    base = Path(out) if out is not None else root / "analysis"
    results = [analyze_run(run, base / run.relative_to(root), **options) for run in runs]
    write_index(base / "analysis.md", [(str(r.run_dir.relative_to(root)), r.out, r.data) for r in results])
    return results

