"""Synthetic attention: every synthesizing function of the paper behind one attention shell."""

# isort: off
# Importing the families registers their kinds, in the paper's order (Table 1, then appendix A.2).
from . import vanilla, random_synthesizer, dense, appendix  # noqa: F401

# isort: on
from .base import SynthesizingFunction
from .factory import available_mixers, build_mixer
from .masking import masked_softmax
from .mixture import Mixture
from .registry import canonical_kind, get_kind, parse_kind, register, registered_kinds, unregister
from .shell import AttentionCache, SynthesizerAttention

__all__ = [
    "AttentionCache",
    "Mixture",
    "available_mixers",
    "build_mixer",
    "SynthesizerAttention",
    "SynthesizingFunction",
    "canonical_kind",
    "get_kind",
    "masked_softmax",
    "parse_kind",
    "register",
    "registered_kinds",
    "unregister",
]
