"""Helpers shared by the verbs: exit codes, user errors, logging, common options, number formatting."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Any

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_USER_ERROR",
    "CliError",
    "HelpFormatter",
    "add_common_options",
    "add_decoding_options",
    "apply_threads",
    "check_at_least",
    "configure_logging",
    "format_metrics",
    "import_hf",
    "is_user_error",
    "oversubscription_warning",
    "split_overrides",
    "warn_if_busy",
]

logger = logging.getLogger("synthformer.cli")

EXIT_USER_ERROR = 2  # argparse uses 2 for usage errors too
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class CliError(Exception):
    """A user error found by the command line itself (its message is printed as is)."""


def is_user_error(err: BaseException) -> bool:
    """Errors that come from what the user gave (a config value, a path, data) rather than from a bug.

    Config, data and run-directory errors are ``ValueError`` subclasses with messages that name the problem;
    missing files and existing runs are ``OSError`` (``FileNotFoundError``, ``FileExistsError``); a missing
    optional package (``datasets``) is an ``ImportError`` with the install command.
    """
    from synthformer.common import ConfigError
    from synthformer.data import DataError
    from synthformer.train import RunError

    return isinstance(err, (ConfigError, DataError, RunError, ValueError, OSError, ImportError))


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-formatted examples of the epilogs; shows an option's default when it says something
    (not None / False / 0, and not already described in the help text)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if "default" in text or default in (None, False, 0, argparse.SUPPRESS) or not action.option_strings:
            return text
        shown = " ".join(default) if isinstance(default, list) else default
        return f"{text} (default: {shown})"


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``-v`` / ``-q`` (log level), ``--debug`` (tracebacks) and ``--threads`` (torch threads) on every verb."""
    group = parser.add_argument_group("output")
    group.add_argument("-v", "--verbose", action="count", default=0, help="more log messages (repeat for debug)")
    group.add_argument("-q", "--quiet", action="count", default=0, help="fewer log messages")
    group.add_argument("--debug", action="store_true", help="show the full traceback of errors")
    group.add_argument(
        "--threads", type=int, metavar="N", default=None,
        help="torch threads (default: one per core). On a machine shared with other jobs give the cores left free: "
             "threads that outnumber the cores wait for each other (docs/reliability.md, 'Threads')",
    )


def add_decoding_options(parser: argparse.ArgumentParser, *, max_length: bool, prefix: str = "") -> None:
    """The encoder-decoder decoding options of ``eval`` and ``generate`` (``--beam``, ``--length-penalty``,
    ``--min-length``, ``--no-repeat-ngram-size`` and, with ``max_length``, ``--max-length``); each defaults to
    the run's ``eval`` setting. ``prefix`` starts each help text (``"seq2seq: "`` where the verb serves LMs too)."""
    parser.add_argument("--beam", type=int, default=None, metavar="K",
                        help=f"{prefix}beam size, 1 = greedy (default: the run's eval.beam, 4)")
    parser.add_argument("--length-penalty", type=float, default=None, metavar="A",
                        help=f"{prefix}GNMT length-penalty exponent (default: the run's eval.length_penalty, 0.6)")
    parser.add_argument("--min-length", type=int, default=None, metavar="N",
                        help=f"{prefix}fewest tokens before <eos> (default: the run's eval.min_length, 0)")
    if max_length:
        parser.add_argument("--max-length", type=int, default=None, metavar="N",
                            help=f"{prefix}most tokens per output, <eos> included (default: the run's "
                                 "eval.max_decode_len)")
    parser.add_argument("--no-repeat-ngram-size", type=int, default=None, metavar="N",
                        help=f"{prefix}never repeat an n-gram of this size in an output (default: the run's "
                             "eval.no_repeat_ngram_size, 0 = off)")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (containers, taskset)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def oversubscription_warning(threads: int, load: float, cores: int) -> str | None:
    """The warning to give when ``threads`` more threads on a machine with 1-minute ``load`` would outnumber its
    ``cores`` (by more than half a core, so an idle machine's background load does not count), else None."""
    if threads <= 1 or load + threads <= cores + 0.5:
        return None  # one thread has no team to wait for: a busy machine only shares its cores then
    free = max(1, cores - round(load))
    return (f"this machine is busy (load {load:.1f} on {cores} cores) and this run uses {threads} threads: threads "
            f"that outnumber the cores wait for each other and throughput can collapse; pass --threads {free} "
            "(or set OMP_WAIT_POLICY=passive), see docs/reliability.md ('Threads')")


def apply_threads(threads: int | None) -> None:
    """Set torch's thread count (``--threads``; None keeps torch's default, one per core)."""
    if threads is None:
        return
    if threads < 1:
        raise CliError(f"--threads: expected an integer >= 1, got {threads}")
    import torch

    torch.set_num_threads(threads)


def warn_if_busy() -> None:
    """Before long work: warn when the machine's load leaves fewer free cores than this process's threads."""
    if not hasattr(os, "getloadavg"):  # not on Windows
        return
    import torch

    warning = oversubscription_warning(torch.get_num_threads(), os.getloadavg()[0], _cores())
    if warning:
        logger.warning(warning)


def import_hf(verb: str, module: str, name: str) -> Any:
    """``module.name`` of synthformer's Hugging Face integration, or an ImportError saying which extra ``verb``
    needs (``synthformer[hf]``) when transformers or another of its packages is missing."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as err:
        raise ImportError(f"synthformer {verb} needs the hf extra ({err}); install it with "
                          f"pip install 'synthformer[hf]'") from None


def split_overrides(values: list[str]) -> tuple[list[str], list[str]]:
    """An ``nargs='+'`` option's own values and the ``KEY=VALUE`` overrides it also took ("--kinds V R
    model.d_model=64": argparse gives the option everything up to the next option)."""
    return [v for v in values if "=" not in v], [v for v in values if "=" in v]


def check_at_least(args: argparse.Namespace, names: tuple[str, ...], minimum: int) -> None:
    """Refuse the first option of ``names`` that is given (not None) and below ``minimum``, naming it."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < minimum:
            raise CliError(f"--{name.replace('_', '-')} must be >= {minimum}, got {value}")


def configure_logging(delta: int, default: int = logging.WARNING) -> None:
    """Log to stderr at ``default`` raised by ``delta`` steps of 10 (``-v``: more, ``-q``: less)."""
    level = min(max(default - 10 * delta, logging.DEBUG), logging.CRITICAL)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_synthformer", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    handler._synthformer = True  # type: ignore[attr-defined]  # so a second main() call replaces, not adds
    root.addHandler(handler)
    root.setLevel(level)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1e6 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def format_metrics(metrics: dict[str, Any], prefix: str = "") -> list[str]:
    """``name  value`` lines, numbers first; sacrebleu signatures on their own lines after them."""
    width = max((len(k) for k in metrics), default=0)
    numbers = [f"{prefix}{k.ljust(width)}  {_fmt(v)}" for k, v in metrics.items() if not k.endswith("_signature")]
    signatures = [f"{prefix}{k.ljust(width)}  {v}" for k, v in metrics.items() if k.endswith("_signature")]
    return numbers + signatures
