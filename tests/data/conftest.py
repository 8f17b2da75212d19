"""Fixtures for the data tests: the optional shared real-data folder and a small real text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# A few lines of real text (Shakespeare, public domain; German and English sentences of the kind
# found in Multi30k; symbols and emoji) so the round trips run without the shared data folder.
SAMPLE_TEXT = """First Citizen:
Before we proceed any further, hear me speak.

All:
Speak, speak.

MENENIUS:
Why, masters, my good friends, mine honest neighbours,
Will you undo yourselves?
Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.
Two young, White males are outside near many bushes.
Tabs\there, trailing spaces   , ünïcödé ✓ — “quotes” 😀 ½ 東京
"""


def _shared_data_dir() -> Path | None:
    env = os.environ.get("SYNTHFORMER_SHARED_DATA")
    candidate = Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared real-data folder (``$SYNTHFORMER_SHARED_DATA`` or ``<root>/../shared/data``);
    tests using it are skipped when it is absent."""
    path = _shared_data_dir()
    if path is None:
        pytest.skip("shared data folder not available")
    return path


@pytest.fixture(scope="session")
def sample_text() -> str:
    return SAMPLE_TEXT


def spm_corpus() -> list[str]:
    """About 300 lines of seeded English-like sentences: enough text for a SentencePiece model of ~100 pieces."""
    import random

    words = ("the a cat dog sat on mat and ran to park in house big small red green tree walks quickly slowly "
             "under over with from this that there here blue bird sings song river flows water stone").split()
    rng = random.Random(0)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))).capitalize() + "." for _ in range(300)]


@pytest.fixture(scope="session")
def spm_tokenizer():
    """The ``sentencepiece`` kind trained on :func:`spm_corpus`: 200 ids = 100 pieces + T5's 100 sentinels."""
    pytest.importorskip("sentencepiece", reason="the sentencepiece kind needs the 'hf' extra")
    from synthformer.data import build_tokenizer

    return build_tokenizer("sentencepiece", spm_corpus(), 200)
