"""The run's refusal of a tokenizer that cannot spell what its task must produce (:mod:`synthformer.data.spelling`),
shared by in-memory and prepared data."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synthformer.common import ConfigError
from synthformer.data import first_misspelling

if TYPE_CHECKING:
    from synthformer.data import Tokenizer

    from ..contract import RawData
    from .config import RunConfig

__all__ = ["check_spelling"]


def check_spelling(run: RunConfig, tokenizer: Tokenizer, raw: RawData | None) -> None:
    """Refuse, in one line, a tokenizer that cannot spell a string the task must produce (a label with a character
    the vocabulary lacks scores every correct answer wrong): before any example is tokenized or any step taken.

    Raises:
        ConfigError: naming the first such string, what it decodes as, and the fix.
    """
    strings = run.task.task_type.spelled_strings(run.task, raw)
    if strings and (wrong := first_misspelling(tokenizer, strings)) is not None:
        raise ConfigError(f"task.tokenizer: {wrong.message(tokenizer)}")
