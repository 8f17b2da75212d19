"""Synthetic attention: every synthesizing function of the paper behind one attention shell, and the registry
and contract (:mod:`.contract`) that every token mixer, the baselines of :mod:`synthformer.mixers` included,
follows.

The shell runs every kind on two execution paths of its own (:mod:`.paths`: the reference; :mod:`.sdpa`: the
feature kinds through PyTorch's fused kernel). The faster optional paths live in the speed wing
:mod:`synthformer.attention.fast`, loaded once at the end of this file; ``SYNTHFORMER_FAST_PATHS=0`` (or the
wing's absence) leaves them out.
"""

# isort: off
# Importing the families registers their kinds, in the paper's order (Table 1, then appendix A.2).
from . import vanilla, random_synthesizer, dense, appendix  # noqa: F401

# isort: on
from .base import SynthesizingFunction, inner_width
from .contract import (
    DecodingCache,
    TokenMixer,
    check_core_args,
    check_input,
    check_probability,
    reject_unknown_options,
    resolve_options,
    supports_causal,
)
from .cross import SynthesizerCrossAttention, check_cross_kind, cross_kinds
from .factory import available_mixers, build_mixer, resolve_mixer, takes_head_dim
from .masking import any_true, disallowed, masked_softmax
from .mixture import Mixture
from .paths import (
    AttentionCall,
    PathChoice,
    describe_call,
    explain_call,
    get_path,
    observe_paths,
    path_calls,
    reference_only_when,
    register_path,
    registered_paths,
    reset_path_calls,
    select_path,
    unregister_path,
)
from .random_synthesizer import Random
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
from .vanilla import DotProduct

__all__ = [
    "AttentionCache", "AttentionCall", "DecodingCache", "Mixture", "PathChoice", "SynthesizerAttention",
    "SynthesizingFunction", "TokenMixer", "available_mixers", "build_mixer", "canonical_kind", "check_cross_kind",
    "cross_kinds", "describe_call", "explain_call", "get_kind", "get_mixer", "get_path", "is_whole_mixer",
    "masked_softmax", "observe_paths", "paper_names", "parse_kind", "path_calls", "reference_only_when",
    "register", "register_path", "registered_kinds", "registered_mixers", "registered_paths", "reset_path_calls",
    "resolve_mixer", "select_path", "takes_head_dim", "unregister", "unregister_path", "inner_width",
    "check_core_args", "check_input", "check_probability", "resolve_options", "DotProduct", "Random",
    "SynthesizerCrossAttention", "any_true", "disallowed", "reject_unknown_options", "supports_causal",
]

# The speed wing registers its execution paths when loaded (this is the one place attention/ imports it); without
# it, every call takes the reference or the SDPA path. Only the wing's own absence is tolerated: an error inside it
# is raised.
try:
    from . import fast  # noqa: F401
except ModuleNotFoundError as err:
    if err.name != f"{__name__}.fast":
        raise
