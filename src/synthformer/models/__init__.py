"""Task models of synthformer: typed configs, Transformer blocks built on any token mixer, the language model,
the encoder-decoder and the classifier, named presets.

Example::

    import dataclasses
    from synthformer.models import build_model, get_preset

    config = dataclasses.replace(get_preset("lm-small"), decoder_kind="R+V", vocab_size=100)
    model = build_model(config)
    out = model(input_ids=ids, labels=labels)  # {"loss": scalar, "logits": (B, L, 100)}
"""

from .build import MODEL_CLASSES, build_model, num_parameters
from .cache import DecoderCache, LayerCache, select_batch
from .classifier import TransformerClassifier, pool
from .config import ARCHS, CROSS_KINDS, FFN_TYPES, NORMS, POOLINGS, POSITIONS, ModelConfig
from .layers import ConvReluFFN, CrossAttention, Embeddings, ReluFFN, TransformerBlock
from .lm import TransformerLM
from .losses import IGNORE_INDEX, classification_loss, token_cross_entropy
from .presets import get_preset, list_presets
from .seq2seq import Seq2SeqTransformer
from .stacks import Decoder, Encoder

__all__ = [
    "ARCHS",
    "CROSS_KINDS",
    "FFN_TYPES",
    "IGNORE_INDEX",
    "MODEL_CLASSES",
    "NORMS",
    "POOLINGS",
    "POSITIONS",
    "ConvReluFFN",
    "CrossAttention",
    "Decoder",
    "DecoderCache",
    "Embeddings",
    "Encoder",
    "LayerCache",
    "ModelConfig",
    "ReluFFN",
    "Seq2SeqTransformer",
    "TransformerBlock",
    "TransformerClassifier",
    "TransformerLM",
    "build_model",
    "classification_loss",
    "get_preset",
    "list_presets",
    "num_parameters",
    "pool",
    "select_batch",
    "token_cross_entropy",
]
