"""Refusals that must leave no trace: filled in below."""

from __future__ import annotations

from .harness import Case

REFUSAL_CASES: list[Case] = []
