"""synthformer: Transformers with synthesized attention (Tay et al., "Synthesizer: Rethinking Self-Attention
for Transformer Models")."""

from .attention import AttentionCache, SynthesizerAttention, register, registered_kinds

__version__ = "0.1.0"

__all__ = ["AttentionCache", "SynthesizerAttention", "__version__", "register", "registered_kinds"]
