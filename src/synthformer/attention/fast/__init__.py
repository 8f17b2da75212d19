"""The speed wing of the attention shell: optional execution paths, registered through
:func:`~synthformer.attention.register_path` when this package is loaded.

:mod:`synthformer.attention` reads as the paper: the kinds, the shell, masking, and two execution paths (the
reference, the probabilities materialized, and SDPA for the feature kinds). Everything here only makes the same
function faster or smaller: the materialized blocks (:mod:`.blocks`), the fused recomputing path (:mod:`.fused`,
its C++ and compiled backends in :mod:`.fused_backends`), the Triton kernels (:mod:`.triton_kernels`), the shared
alignment of the input-independent kinds (:mod:`.shared_alignment`, :mod:`.causal_shared`), the choice of the
feature form's branch (:mod:`.feature_form`), the rules that order them (:mod:`.rules`) and their settings
(:mod:`.settings`, :mod:`.calibration`, :mod:`.cpu_caches`, :mod:`.dropout_masks`). Nothing in the shell imports
this package; ``synthformer.attention`` loads it once, at the end of its ``__init__``, and runs without it when it
is missing.

Disabling it: set the environment variable ``SYNTHFORMER_FAST_PATHS=0`` (or ``false``, ``no``, ``off``) before
``synthformer`` is imported. It is read once, when this package is loaded: its modules still load (the settings
stay importable) but none of its paths is registered, so every call takes the reference path or, for a feature
kind, the SDPA path, computing the same function (the tests compare the two). Deleting this folder has the same
effect. :data:`ENABLED` says which it is in this process.
"""

from __future__ import annotations

import os

from .calibration import CALIBRATED_FIELDS, calibration_file, load_calibration, save_calibration
from .rules import is_materialized, is_shared, register
from .settings import DEFAULTS, FUSED_BACKENDS, FastPathSettings, current, fast_path_settings

__all__ = [
    "CALIBRATED_FIELDS",
    "DEFAULTS",
    "ENABLED",
    "FUSED_BACKENDS",
    "FastPathSettings",
    "calibration_file",
    "current",
    "fast_path_settings",
    "is_materialized",
    "is_shared",
    "load_calibration",
    "save_calibration",
]

#: Whether the wing's paths are registered in this process (``SYNTHFORMER_FAST_PATHS``, read once here).
ENABLED: bool = os.environ.get("SYNTHFORMER_FAST_PATHS", "1").strip().lower() not in {"0", "false", "no", "off"}

if ENABLED:
    register()
