"""``synthformer analyze``: the paper's analysis of a trained run (attention histograms, heatmaps, mixture weights).

Modules, one job each: :mod:`.capture` (the attention layers of a model, their inputs on a batch, the weights of
each part of a mixture), :mod:`.stats` (histograms and the pattern by relative distance), :mod:`.example` (the
example shown in the heatmaps), :mod:`.figures` (the PNGs, matplotlib on an Agg canvas), :mod:`.report`
(``analysis.json``, ``analysis.md``) and :mod:`.runner` (a run or a study directory end to end).

The weights at initialisation are rebuilt from the run's ``train.seed`` (:func:`initial_model`), so a run needs no
extra file. Example::

    from synthformer.analysis import analyze_run

    result = analyze_run("runs/lm_tiny_shakespeare")          # writes runs/lm_tiny_shakespeare/analysis/
    print(result.data["layers"]["decoder_layer1"]["distance"]["trained"]["R"]["local_mass"])
"""

from .capture import AttentionSite, Captured, attention_sites, capture_inputs, part_weights, valid_positions
from .runner import RunAnalysis, analyze, analyze_run, find_runs, initial_model
from .stats import LOCAL_WINDOW, DistanceProfile, WeightHistogram, allowed_pairs, relative_distances

__all__ = [
    "LOCAL_WINDOW",
    "AttentionSite",
    "Captured",
    "DistanceProfile",
    "RunAnalysis",
    "WeightHistogram",
    "allowed_pairs",
    "analyze",
    "analyze_run",
    "attention_sites",
    "capture_inputs",
    "find_runs",
    "initial_model",
    "part_weights",
    "relative_distances",
    "valid_positions",
]
