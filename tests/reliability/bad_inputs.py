"""The bad-input suite's table: every case, by category. ``docs/reliability.md`` publishes
``len(CASES)``; ``test_bad_inputs_meta.py`` keeps the two equal."""

from __future__ import annotations

from collections import Counter

from .cases_cli import CLI_CASES
from .cases_config import CONFIG_CASES
from .cases_data import DATA_CASES
from .cases_prepared import PREPARED_CASES
from .cases_prepared_train import PREPARED_TRAIN_CASES
from .cases_refusals import REFUSAL_CASES
from .cases_rundir import RUNDIR_CASES
from .cases_vocab_shards import VOCAB_SHARD_CASES
from .harness import Case

CASES: list[Case] = [*CLI_CASES, *CONFIG_CASES, *DATA_CASES, *PREPARED_CASES, *PREPARED_TRAIN_CASES, *RUNDIR_CASES,
                     *VOCAB_SHARD_CASES, *REFUSAL_CASES]


def counts_by_category() -> dict[str, int]:
    """How many cases each category holds, in table order."""
    return dict(Counter(c.category for c in CASES))


def by_prefix(prefix: str) -> list[Case]:
    """The cases whose category starts with ``prefix`` (``cli:``, ``config:``, ``data:``, ``run directory:``)."""
    return [c for c in CASES if c.category.startswith(prefix)]
