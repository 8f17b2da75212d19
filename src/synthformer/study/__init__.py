"""``synthformer study``: one run per (variant, seed) with equal budgets, tables, curves and a report.

A study trains every variant (an attention kind, a grid point of config values, or both) with several seeds and
identical budgets into one directory, and can be stopped and continued at any point::

    from synthformer.study import StudySpec, run_study, write_outputs
    from synthformer.tasks import load_run_config

    base = load_run_config("configs/lm_tiny_shakespeare.yaml", ["train.steps=500"])
    spec = StudySpec.from_run(base, kinds=["V", "R", "D", "R+V"], grid=[], seeds=3)
    outputs = write_outputs(run_study(base, spec, "runs/study-shk"))
    print(outputs.html)

Modules, one job each: :mod:`.manifest` (what a study is, ``study.json``), :mod:`.runs` (per-run clock and result
record), :mod:`.runner` (training and resuming), :mod:`.table` (mean, standard deviation, Welch's t-test),
:mod:`.curves` (convergence figures, matplotlib imported only when drawing), :mod:`.report` (HTML and Markdown).
"""

from .manifest import DEFAULT_KINDS, PAPER_NAMES, StudySpec, Variant, kind_label, parse_grid
from .report import StudyOutputs, write_outputs
from .runner import StudyResult, run_dir_of, run_study
from .runs import RunRecord
from .table import StudyTable, VariantRow, format_markdown, mean_std, summarize, welch_p

__all__ = [
    "DEFAULT_KINDS", "PAPER_NAMES", "RunRecord", "StudyOutputs", "StudyResult", "StudySpec", "StudyTable",
    "Variant", "VariantRow", "kind_label", "mean_std", "parse_grid", "run_dir_of", "run_study", "summarize",
    "welch_p", "write_outputs", "format_markdown",
]
