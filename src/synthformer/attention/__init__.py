"""Synthetic attention: every synthesizing function of the paper behind one attention shell, and the registry
and contract (:mod:`.contract`) that every token mixer, the baselines of :mod:`synthformer.mixers` included,
follows."""

# isort: off
# Importing the families registers their kinds, in the paper's order (Table 1, then appendix A.2).
from . import vanilla, random_synthesizer, dense, appendix  # noqa: F401

# isort: on
from .base import SynthesizingFunction
from .contract import DecodingCache, TokenMixer
from .cross import check_cross_kind, cross_kinds
from .factory import available_mixers, build_mixer, resolve_mixer
from .masking import masked_softmax
from .mixture import Mixture
from .paths import (
    AttentionCall,
    PathChoice,
    describe_call,
    explain_call,
    get_path,
    observe_paths,
    path_calls,
    register_path,
    registered_paths,
    reset_path_calls,
    select_path,
    unregister_path,
)
from .registry import (
    canonical_kind,
    get_kind,
    get_mixer,
    is_whole_mixer,
    paper_names,
    parse_kind,
    register,
    registered_kinds,
    registered_mixers,
    unregister,
)
from .shell import AttentionCache, SynthesizerAttention

__all__ = [
    "AttentionCache",
    "AttentionCall",
    "DecodingCache",
    "Mixture",
    "PathChoice",
    "SynthesizerAttention",
    "SynthesizingFunction",
    "TokenMixer",
    "available_mixers",
    "build_mixer",
    "canonical_kind",
    "check_cross_kind",
    "cross_kinds",
    "describe_call",
    "explain_call",
    "get_kind",
    "get_mixer",
    "get_path",
    "is_whole_mixer",
    "masked_softmax",
    "observe_paths",
    "paper_names",
    "parse_kind",
    "path_calls",
    "register",
    "register_path",
    "registered_kinds",
    "registered_mixers",
    "registered_paths",
    "reset_path_calls",
    "resolve_mixer",
    "select_path",
    "unregister",
    "unregister_path",
]
