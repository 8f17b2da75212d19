"""synthformer: Transformers with synthesized attention (Tay et al., "Synthesizer: Rethinking Self-Attention
for Transformer Models")."""

from .attention import AttentionCache, SynthesizerAttention, build_mixer, register, registered_kinds

# isort: off
# Registers the baseline token mixers (LightConv, DynamicConv, Linformer) with the attention registry, so that
# build_mixer finds them whatever module a user imports first. It comes after attention, which it builds on.
from . import mixers  # noqa: F401

# isort: on

__version__ = "0.1.0"

__all__ = ["AttentionCache", "SynthesizerAttention", "__version__", "build_mixer", "register", "registered_kinds"]
