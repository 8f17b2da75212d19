"""Bad vocabularies and prepared shards: filled in below."""

from __future__ import annotations

from .harness import Case

VOCAB_SHARD_CASES: list[Case] = []
