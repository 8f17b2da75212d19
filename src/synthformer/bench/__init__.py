"""Benchmarks of whole models: the Synthesizer paper's Table 4 (parameters, FLOPs, training speed) regenerated
on any machine.

Example::

    from synthformer.bench import run_table, to_markdown

    results = run_table("lm-small", batch_size=4, repeats=3)
    print(to_markdown(results))

Command line: ``python -m synthformer.bench --preset lm-base`` (see :mod:`synthformer.bench.cli`); Long Range
Arena's Table 2 (speed and memory at 1K-4K): ``python -m synthformer.bench --lra-table2`` (:mod:`.lra`).
"""

from .cli import build_parser, main, parse_overrides
from .lra import LRA_KINDS, run_lra_table2
from .measure import DTYPES, TrainStep, batch_tokens, count_flops, peak_bytes, random_batch, tensor_bytes
from .memory import fit_report, machine_memory, over_memory
from .plan import format_plan, micro_batch_tokens, plan_run
from .rows import (
    ALL_ROWS,
    DECODER_ROWS,
    ENCODER_ROWS,
    FAIRSEQ_KERNEL_SIZES,
    Row,
    conv_kernel_sizes,
    default_rows,
    has_decoder,
    resolve_rows,
    row_config,
    valid_row_names,
)
from .table import COLUMNS, bench_config, describe_run, machine_info, run_table, to_csv, to_markdown, write_outputs

__all__ = [
    "ALL_ROWS", "COLUMNS", "DECODER_ROWS", "DTYPES", "ENCODER_ROWS", "LRA_KINDS", "FAIRSEQ_KERNEL_SIZES", "Row",
    "TrainStep", "batch_tokens", "bench_config", "build_parser", "conv_kernel_sizes", "count_flops",
    "default_rows", "describe_run", "has_decoder", "machine_info", "main", "parse_overrides", "peak_bytes",
    "random_batch", "resolve_rows", "row_config", "run_lra_table2", "run_table", "tensor_bytes", "to_csv",
    "to_markdown", "valid_row_names", "write_outputs", "fit_report", "format_plan", "machine_memory",
    "micro_batch_tokens", "over_memory", "plan_run",
]
