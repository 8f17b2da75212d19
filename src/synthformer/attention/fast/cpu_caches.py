"""The CPU's last-level cache, read once, and the materialized block size derived from it.

The materialized paths (``blocks``, ``fused``) process the logits in blocks so that a block's logits,
probabilities and their gradient stay in cache together instead of streaming a (B, H, L, L) tensor through memory
once per operation. How large a block can be is a property of the CPU, not a constant: the block size is a
quarter of the last-level cache (three block-sized tensors with room for the rest of the step), the size measured
fastest on the development machine (docs/benchmarks.md, "Why the fast paths look the way they do", "Blocks of
samples and heads"), and follows the cache on a CPU with a smaller or larger one.

Choices: the cache is read from Linux's sysfs (``/sys/devices/system/cpu/cpu0/cache/index*``: the highest level
holding data); where it cannot be read (another OS, a container hiding sysfs) the development machine's 32 MiB is
assumed. The result is rounded down to a power of two and kept within 2^18 to 2^23 fp32 logits (1 to 32 MiB): a
block must still hold one head of a sample at short lengths, and beyond 32 MiB the measurements give no guidance.
``fast_path_settings(chunk_elements=...)`` overrides it.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

__all__ = ["DEFAULT_LLC_BYTES", "chunk_elements_for", "last_level_cache_bytes"]

logger = logging.getLogger(__name__)

#: assumed when the cache cannot be read: the development machine's L3 (AMD EPYC, 32 MiB)
DEFAULT_LLC_BYTES = 32 << 20
#: a block's logits may take this fraction of the last-level cache (logits, probabilities, gradient, the rest)
CACHE_SHARE = 4
MIN_ELEMENTS, MAX_ELEMENTS = 1 << 18, 1 << 23
_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _parse_size(text: str) -> int:
    """sysfs's ``size`` file (``32768K``, ``1M``, or bytes) in bytes."""
    text = text.strip().upper()
    if text and text[-1] in _UNITS:
        return int(text[:-1]) * _UNITS[text[-1]]
    return int(text)


def last_level_cache_bytes(root: Path = _SYSFS) -> int | None:
    """Bytes of the highest cache level that holds data (``Unified`` or ``Data``) of the first CPU, or None when
    sysfs does not say (not Linux, or hidden)."""
    best: tuple[int, int] | None = None
    try:
        for index in sorted(root.glob("index*")):
            kind = (index / "type").read_text().strip()
            if kind not in ("Unified", "Data"):
                continue
            entry = (int((index / "level").read_text()), _parse_size((index / "size").read_text()))
            best = entry if best is None or entry > best else best
    except (OSError, ValueError) as err:
        logger.debug("could not read the CPU caches from %s: %s", root, err)
        return None
    return None if best is None else best[1]


def chunk_elements_for(cache_bytes: int | None, element_bytes: int = 4) -> int:
    """Logits per materialized block for a last-level cache of ``cache_bytes`` (None: :data:`DEFAULT_LLC_BYTES`):
    a :data:`CACHE_SHARE` of it in ``element_bytes``-sized entries, rounded down to a power of two, within
    [:data:`MIN_ELEMENTS`, :data:`MAX_ELEMENTS`]."""
    budget = max(1, (cache_bytes or DEFAULT_LLC_BYTES) // CACHE_SHARE // element_bytes)
    power = 1 << (budget.bit_length() - 1)  # the largest power of two not above the budget
    return min(MAX_ELEMENTS, max(MIN_ELEMENTS, power))


@functools.cache
def default_chunk_elements() -> int:
    """This machine's block size (read once per process)."""
    return chunk_elements_for(last_level_cache_bytes())
