"""Task models of synthformer: one module per architecture (its config class, its model, its builder, registered
by name), Transformer blocks built on any token mixer, named presets.

Example::

    import dataclasses
    from synthformer.models import build_model, get_preset

    config = dataclasses.replace(get_preset("lm-small"), decoder_kind="R+V", vocab_size=100)
    model = build_model(config)                 # mixers from synthformer.attention.build_mixer
    out = model(input_ids=ids, labels=labels)  # {"loss": scalar, "logits": (B, L, 100)}
"""

# isort: off
# Importing the built-in variants registers them, before any config is checked against them.
from .variants import T5 as T5_VARIANT  # T5's parts: what a Hugging Face T5 conversion requires
from .variants import parts_of
# Importing the architecture modules registers them (the order of list_archs()).
from .lm import LMConfig, TransformerLM, build_lm
from .seq2seq import Seq2SeqConfig, Seq2SeqTransformer, build_seq2seq
from .classifier import POOLINGS, ClassifierConfig, TransformerClassifier, build_classifier, pool
from .dual_encoder import DualEncoderClassifier, DualEncoderConfig, build_dual_encoder

# isort: on
from .cache import DecoderCache, LayerCache, select_batch
from .config import FFN_TYPES, NORMS, POSITIONS, ModelConfig, choice, is_int
from .layers import (
    ConvReluFFN,
    CrossAttention,
    Embeddings,
    PositionWiseFFN,
    ReluFFN,
    TransformerBlock,
    sinusoidal_table,
)
from .losses import IGNORE_INDEX, classification_loss, token_cross_entropy
from .positions import plain_positions, positions_from_padding
from .presets import get_preset, list_presets
from .registry import (
    MixerFactory,
    build_model,
    config_class,
    list_archs,
    num_parameters,
    register_arch,
    unregister_arch,
)
from .stacks import Decoder, Encoder
from .t5 import T5_NORM_EPS
from .variant_parts import (
    DEFAULT_VARIANT,
    VariantParts,
    get_variant,
    list_variants,
    register_variant,
    unregister_variant,
)

__all__ = [
    "DEFAULT_VARIANT", "FFN_TYPES", "IGNORE_INDEX", "NORMS", "POOLINGS", "POSITIONS", "ClassifierConfig",
    "ConvReluFFN", "CrossAttention", "Decoder", "DecoderCache", "DualEncoderClassifier", "DualEncoderConfig",
    "Embeddings", "Encoder", "LMConfig", "LayerCache", "MixerFactory", "ModelConfig", "PositionWiseFFN", "ReluFFN",
    "Seq2SeqConfig", "Seq2SeqTransformer", "TransformerBlock", "TransformerClassifier", "TransformerLM",
    "VariantParts", "build_classifier", "build_dual_encoder", "build_lm", "build_model", "build_seq2seq",
    "classification_loss", "config_class", "get_preset", "get_variant", "list_archs", "list_presets",
    "list_variants", "num_parameters", "parts_of", "plain_positions", "pool", "positions_from_padding",
    "register_arch", "register_variant", "select_batch", "token_cross_entropy", "unregister_arch",
    "unregister_variant", "T5_NORM_EPS", "T5_VARIANT", "choice", "is_int", "sinusoidal_table",
]
