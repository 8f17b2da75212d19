"""Fast-path thresholds measured on this machine (``synthformer bench --calibrate``), kept in a small JSON file.

Three thresholds of :class:`~synthformer.attention.fast.settings.FastPathSettings` choose, by length, between a
path that stores an L x L tensor and one that does not: ``fuse_min_keys`` (stored-probability blocks below it, the
fused path from it), ``features_materialize_max_len`` (the feature kinds' materialized blocks up to it, SDPA
beyond) and ``fr_sdpa_min_len`` (FR materialized below it, SDPA from it). Their defaults were measured on one
development machine, and another CPU can prefer other lengths. ``synthformer bench --calibrate`` times both paths
of each on this machine and stores what it found here; :mod:`.settings` reads it when it is imported.

Choice, tested: a calibration may only move a threshold towards the path that keeps no L x L tensor (a lower
``fuse_min_keys``, ``fr_sdpa_min_len`` or ``features_materialize_max_len``), and only where that path measured
faster and with no higher peak memory (``synthformer.bench.calibrate``); a longer length than a default is never
chosen.

The file is ``$XDG_CACHE_HOME/synthformer/fast_paths.json`` (``~/.cache`` when unset), or the path in
``$SYNTHFORMER_CALIBRATION``; ``SYNTHFORMER_CALIBRATION=off`` ignores any file (the test suite sets it). It holds one
entry per machine, keyed by :func:`machine_key` (CPU model, torch's CPU capability, torch version), so a home
folder shared by several machines keeps each one's values. A file that cannot be read or holds values that are not
thresholds is ignored with a warning: a calibration can speed a run up, never stop it.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

import torch

__all__ = ["CALIBRATED_FIELDS", "calibration_file", "load_calibration", "machine_key", "save_calibration"]

logger = logging.getLogger(__name__)

#: the thresholds a calibration may set
CALIBRATED_FIELDS = ("fuse_min_keys", "features_materialize_max_len", "fr_sdpa_min_len")
ENV = "SYNTHFORMER_CALIBRATION"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_key() -> str:
    """What a calibration is valid for: the CPU model, torch's CPU capability (AVX2, AVX512, ...) and torch."""
    return f"{_cpu_model()} | {torch.backends.cpu.get_cpu_capability()} | torch {torch.__version__}"


def calibration_file() -> Path | None:
    """The calibration file in use (None when ``SYNTHFORMER_CALIBRATION=off``)."""
    chosen = os.environ.get(ENV, "")
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "synthformer" / "fast_paths.json"


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    return data


def load_calibration(path: Path | None = None) -> dict[str, int]:
    """This machine's calibrated thresholds from ``path`` (default :func:`calibration_file`); ``{}`` when there
    is none, when calibration is off, or when the file cannot be used (logged as a warning)."""
    path = calibration_file() if path is None else path
    if path is None or not path.exists():
        return {}
    try:
        entry = _read(path).get(machine_key())
        if entry is None:
            return {}
        values = entry["thresholds"]
        unknown = set(values) - set(CALIBRATED_FIELDS)
        bad = [k for k, v in values.items() if not isinstance(v, int) or isinstance(v, bool) or v < 0]
        if unknown or bad:
            raise ValueError(f"unknown thresholds {sorted(unknown)} or values that are no count {sorted(bad)}")
        return dict(values)
    except (OSError, ValueError, KeyError, TypeError) as err:
        logger.warning("ignoring the fast-path calibration in %s (%s); delete it or run `synthformer bench "
                       "--calibrate` again", path, err)
        return {}


def save_calibration(thresholds: dict[str, int], measurements: list[dict[str, Any]],
                     path: Path | None = None) -> Path:
    """Store ``thresholds`` (and the measurements they came from) as this machine's entry, keeping the other
    machines' entries; the file is replaced atomically, so a kill leaves the old one or the new one."""
    path = calibration_file() if path is None else path
    if path is None:
        raise ValueError(f"{ENV}=off: there is no calibration file to write; unset it or name a file")
    unknown = set(thresholds) - set(CALIBRATED_FIELDS)
    if unknown:
        raise ValueError(f"not calibrated thresholds: {sorted(unknown)} (expected some of {CALIBRATED_FIELDS})")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = _read(path) if path.exists() else {}
    except (OSError, ValueError):
        data = {}  # an unreadable file is replaced, not merged
    data[machine_key()] = {"thresholds": thresholds, "measurements": measurements,
                           "threads": torch.get_num_threads()}
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".fast_paths.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path
