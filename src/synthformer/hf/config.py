"""``SynthesizerConfig``: a ``transformers`` config that carries a native :class:`~synthformer.models.ModelConfig`.

Every setting of the native typed config (the kinds of each stack and their options included) is an attribute
under its native name (``d_model``, ``decoder_kind``, ``kind_options``, ...), next to ``arch`` (``"lm"``,
``"seq2seq"`` or ``"classifier"``). The native class checks the values, so a config that ``from_pretrained`` reads
is validated exactly as a run directory's ``model_config.json`` is. The usual Hugging Face names are aliases of the
native ones (``hidden_size`` is ``d_model``, ``pad_token_id`` is ``pad_id``, ``tie_word_embeddings`` is
``tie_embeddings``, ...), so the two can never disagree.

Example::

    from synthformer.models import LMConfig
    config = SynthesizerConfig.from_native(LMConfig(vocab_size=100, d_model=16, n_heads=2, decoder_kind="R+V"))
    config.decoder_kind, config.hidden_size        # ('R+V', 16)
    config.to_native() == LMConfig(...)            # round trip
"""

from __future__ import annotations

from typing import Any

from transformers import PretrainedConfig

from synthformer.models import ModelConfig, config_class, list_archs

__all__ = ["SynthesizerConfig", "native_field_names"]

#: Hugging Face's names of settings the native configs hold under their own names.
HF_ALIASES: dict[str, str] = {
    "hidden_size": "d_model",
    "num_attention_heads": "n_heads",
    "num_hidden_layers": "n_layers",
    "intermediate_size": "d_ff",
    "max_position_embeddings": "max_len",
    "pad_token_id": "pad_id",
    "bos_token_id": "bos_id",
    "eos_token_id": "eos_id",
    "decoder_start_token_id": "bos_id",  # the encoder-decoder's first decoder input is <bos>
    "tie_word_embeddings": "tie_embeddings",
}


def native_field_names() -> set[str]:
    """Every setting of every registered architecture's config class."""
    return {name for arch in list_archs() for name in config_class(arch).field_names()}


class SynthesizerConfig(PretrainedConfig):
    """The settings of a synthformer model in ``transformers`` form (``model_type = "synthesizer"``).

    Args:
        arch: the native architecture: ``"lm"`` (decoder-only), ``"seq2seq"`` or ``"classifier"``.
        **kwargs: the native settings of that architecture (see :class:`~synthformer.models.LMConfig`,
            :class:`~synthformer.models.Seq2SeqConfig`, :class:`~synthformer.models.ClassifierConfig`; unset ones
            take the native defaults), their Hugging Face aliases, and the usual ``PretrainedConfig`` arguments.

    Raises:
        ValueError: a setting the architecture does not have, or a bad value (the native config's message).
    """

    model_type = "synthesizer"
    attribute_map = HF_ALIASES
    keys_to_ignore_at_inference = ["past_key_values", "cache"]

    def __init__(self, arch: str = "lm", **kwargs: Any) -> None:
        names = native_field_names()
        native: dict[str, Any] = {}
        for key in list(kwargs):
            target = HF_ALIASES.get(key, key)
            if target in names:
                value = kwargs.pop(key)
                # HF code may pass an alias with None for "unset" (e.g. pad_token_id): keep the native default
                if value is not None or key == target:
                    native[target] = value
        classifier = config_class(arch).classifier
        if classifier and "num_classes" not in native and kwargs.get("id2label"):
            native["num_classes"] = len(kwargs["id2label"])
        typed = config_class(arch).from_dict(native)  # validates; raises ValueError naming the bad setting
        self.arch = arch
        for key, value in typed.to_dict().items():
            if key != "arch":
                object.__setattr__(self, key, value)
        kwargs.setdefault("is_encoder_decoder", type(typed).encoder_decoder)
        if classifier and not kwargs.get("id2label"):
            kwargs.setdefault("num_labels", typed.num_classes)
        super().__init__(**kwargs)
        if classifier and self.num_labels != typed.num_classes:
            raise ValueError(f"id2label has {self.num_labels} labels but num_classes is {typed.num_classes}; "
                             f"expected one label per class")

    @classmethod
    def register_for_auto_class(cls, auto_class: Any = "AutoConfig") -> None:
        """Does nothing: see :meth:`SynthesizerPreTrainedModel.register_for_auto_class` (a config loaded with
        ``trust_remote_code=True`` would otherwise copy this module's source into every folder it is saved to)."""

    # ------------------------------------------------------------------ native round trip
    @classmethod
    def from_native(cls, config: ModelConfig, **kwargs: Any) -> SynthesizerConfig:
        """The ``transformers`` config of a native one (``kwargs``: extra ``PretrainedConfig`` arguments, e.g.
        ``id2label``)."""
        if not isinstance(config, ModelConfig):
            raise TypeError(f"from_native expects a synthformer ModelConfig, got {type(config).__name__}")
        return cls(**config.to_dict(), **kwargs)

    def native_dict(self) -> dict[str, Any]:
        """The native settings as ``ModelConfig.to_dict`` writes them (``arch`` first)."""
        fields = config_class(self.arch).field_names()
        return {"arch": self.arch, **{name: getattr(self, name) for name in fields}}

    def to_native(self) -> ModelConfig:
        """The native typed config (validated again: attributes may have been edited since)."""
        return ModelConfig.from_dict(self.native_dict())

    def to_diff_dict(self) -> dict[str, Any]:
        """What ``config.json`` holds: ``transformers``' difference from the defaults, plus every native setting
        (a reader of the file sees the kinds even where they are the defaults)."""
        return {**super().to_diff_dict(), **self.native_dict()}

    @property
    def is_decoder_only(self) -> bool:
        """True for the decoder-only language model."""
        return config_class(self.arch).decoder_only
