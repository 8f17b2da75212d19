"""The shared base of the ``transformers`` models: one native synthformer model held as the submodule ``model``.

The wrappers add no layers and copy none: ``wrapper.model`` *is* the native
:class:`~synthformer.models.TransformerLM` / :class:`~synthformer.models.Seq2SeqTransformer` /
:class:`~synthformer.models.TransformerClassifier`, so its weights, its fast paths and its decoding cache are the
ones the native training loop and decoders use. Parameter names are the native ones under ``model.``.

Tied weights: whatever the native model shares (the tied output projection, the one embedding table of an
encoder-decoder with a shared vocabulary) is found by identity when the wrapper is built and declared to
``transformers`` as tied, so ``save_pretrained`` writes each shared tensor once (safetensors refuses aliases) and
``from_pretrained`` ties them again.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel

from synthformer.models import Embeddings, build_model

from .cache import CACHE_NAME, SynthesizerCache
from .config import SynthesizerConfig
from .remote_code import write_remote_code

__all__ = ["SynthesizerPreTrainedModel", "padding_mask_from_attention"]

logger = logging.getLogger(__name__)

#: the ``max_length`` ``generate()`` uses when neither it nor ``max_new_tokens`` is given
HF_DEFAULT_MAX_LENGTH = 20


def padding_mask_from_attention(attention_mask: Tensor | None) -> Tensor | None:
    """``transformers``' attention mask (B, L), 1 = real token, to the native padding mask (B, L) bool, True =
    padding; None when there is no mask or nothing is padded (the mixers then take their unmasked fast paths)."""
    if attention_mask is None:
        return None
    padding = attention_mask == 0  # (B, L)
    return padding if bool(padding.any()) else None


def parameter_aliases(module: nn.Module) -> dict[str, str]:
    """``{alias: first name}`` for every parameter reachable under several names (tied tensors)."""
    first: dict[int, str] = {}
    aliases: dict[str, str] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        if id(param) in first:
            aliases[name] = first[id(param)]
        else:
            first[id(param)] = name
    return aliases


class SynthesizerPreTrainedModel(PreTrainedModel):
    """Base of the three wrappers: builds (or adopts) the native model of ``config`` as ``self.model``.

    Args:
        config: a :class:`SynthesizerConfig` whose ``arch`` is the wrapper's.
        native: an existing native model to wrap (its config must equal ``config.to_native()``); None builds a
            freshly initialised one.
    """

    config_class = SynthesizerConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _no_split_modules: ClassVar[list[str]] = ["TransformerBlock"]
    #: the native architecture a wrapper class serves (``SynthesizerConfig.arch``)
    arch: ClassVar[str] = ""
    #: The Hub's ``pipeline_tag`` of the task the wrapper serves, and the ``transformers`` Auto class that loads it
    #: (the model card writes both).
    pipeline_tag: ClassVar[str] = ""
    auto_class: ClassVar[str] = ""
    #: the losses are means over the batch's counted targets, not sums: tells the HF Trainer (which would
    #: otherwise infer it from ``**kwargs`` in ``forward``) to average over gradient-accumulation steps itself
    accepts_loss_kwargs: ClassVar[bool] = False

    def __init__(self, config: SynthesizerConfig, native: nn.Module | None = None) -> None:
        if config.arch != self.arch:
            raise ValueError(f"{type(self).__name__} wraps arch {self.arch!r}, got a config with arch={config.arch!r}")
        super().__init__(config)
        if native is not None and native.config != config.to_native():
            raise ValueError(f"the native model's config {native.config!r} differs from config {config.to_native()!r}")
        self.model = native if native is not None else build_model(config.to_native())
        # instance attribute: which tensors are shared depends on the config (tie_embeddings, tgt_vocab_size)
        self._tied_weights_keys = parameter_aliases(self)
        self.post_init()
        if self.can_generate():
            # transformers reads the token ids under its own names, which the generation config does not alias
            gen = self.generation_config
            gen.bos_token_id, gen.eos_token_id, gen.pad_token_id = config.bos_id, config.eos_id, config.pad_id
            if config.is_encoder_decoder:
                gen.decoder_start_token_id = config.bos_id
            if config.max_len + 1 < HF_DEFAULT_MAX_LENGTH and gen.max_length is None:
                gen.max_length = config.max_len + 1  # transformers' default would run past the positions

    @classmethod
    def from_native(cls, native: nn.Module, **config_kwargs: Any) -> SynthesizerPreTrainedModel:
        """Wrap a native model (shared, not copied: training either trains both). ``config_kwargs`` are extra
        ``PretrainedConfig`` arguments (e.g. ``id2label``)."""
        return cls(SynthesizerConfig.from_native(native.config, **config_kwargs), native=native)

    @classmethod
    def register_for_auto_class(cls, auto_class: Any = "AutoModel") -> None:
        """Does nothing. ``transformers`` calls it on a class it loaded with ``trust_remote_code=True``, so that a
        later ``save_pretrained`` copies the class's source file into the folder; the class here is the installed
        package's, and a saved folder gets the small modules of :mod:`.remote_code` instead (see
        :meth:`save_pretrained`)."""

    def save_pretrained(self, save_directory: Any, *args: Any, **kwargs: Any) -> Any:
        """``transformers``' ``save_pretrained``; when the config has an ``auto_map`` (an exported folder, or a model
        loaded from one), the modules it names are written beside ``config.json`` too."""
        out = super().save_pretrained(save_directory, *args, **kwargs)
        if getattr(self.config, "auto_map", None):
            write_remote_code(save_directory)
        return out

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Leaves the parameters alone: the native modules initialise them themselves (the paper's schemes, e.g.
        the ``d^-1/2`` embeddings and the kinds' own initialisations), which ``transformers``' generic
        normal(0.02) would overwrite. Recomputes the sinusoidal position table, a buffer that is not saved:
        ``from_pretrained`` builds the model without data and fills only what the checkpoint holds."""
        if isinstance(module, Embeddings):
            module.reset_buffers()

    def get_expanded_tied_weights_keys(self, all_submodels: bool = False) -> dict[str, str]:
        """``{tied name: source name}``: the parameters the native model shares, found by identity (see the module
        docstring); independent of ``tie_word_embeddings``, which only says whether the output projection is one of
        them."""
        return dict(getattr(self, "_tied_weights_keys", None) or {})

    def get_input_embeddings(self) -> nn.Module:
        """The token embedding table (the source side's for an encoder-decoder)."""
        embed = self.model.src_embed if hasattr(self.model, "src_embed") else self.model.embed
        return embed.token

    def new_cache(self) -> SynthesizerCache:
        """An empty generation cache for this model (filled on the first forward)."""
        return SynthesizerCache(self.config.max_len)

    def _decoding_cache(self, past_key_values: Any, use_cache: bool | None, cache: Any = None
                        ) -> SynthesizerCache | None:
        """The cache a forward decodes with: the given one (``past_key_values``, or ``cache``, its name from
        ``transformers`` 5.24 on), a new one when ``use_cache`` asks for it, or None."""
        if past_key_values is not None and cache is not None and past_key_values is not cache:
            raise ValueError("pass the cache once, as cache= or as past_key_values=, not two different ones")
        past_key_values = cache if past_key_values is None else past_key_values
        if past_key_values is None:
            return self.new_cache() if use_cache and self.model.supports_cache else None
        if not isinstance(past_key_values, SynthesizerCache):
            raise TypeError(f"past_key_values must be a SynthesizerCache (the native V-only cache), got "
                            f"{type(past_key_values).__name__}")
        return past_key_values

    def _prepare_cache_for_generation(self, generation_config: Any, model_kwargs: dict, generation_mode: Any = None,
                                      batch_size: int | None = None, max_cache_length: int | None = None,
                                      *args: Any, **kwargs: Any) -> None:
        """``generate()`` hook: a :class:`SynthesizerCache` instead of ``transformers``' key/value caches; no cache
        (the prefix recomputed every step) when a mixer cannot decode incrementally or ``use_cache=False``.

        Refuses up front a generation that would run past ``max_len`` (``max_cache_length``: the positions the
        decoder will read, ``max_length - 1``), rather than failing in the middle. One exception: an encoder-decoder
        given ``max_length`` (not ``max_new_tokens``) past its positions decodes until they run out (``max_length``
        becomes ``max_len + 1``, with a warning once per model). Its ``max_length`` counts decoder tokens only, but
        clients that set it to context + new tokens, as for a decoder-only model (lm-evaluation-harness's seq2seq
        backend), ask for more than they mean to; ``max_new_tokens`` past the positions is still refused."""
        positions = self.config.max_len
        if (max_cache_length is not None and max_cache_length > positions and self.config.is_encoder_decoder
                and generation_config.max_new_tokens is None):
            if not getattr(self, "_warned_max_length", False):
                logger.warning(
                    "max_length %d counts more decoder tokens than the model's max_len (%d positions): generation "
                    "stops after %d tokens (said once per model)", generation_config.max_length, positions, positions)
                self._warned_max_length = True
            generation_config.max_length = positions + 1  # read by the stopping criteria, made after this hook
            max_cache_length = positions
        if max_cache_length is not None and max_cache_length > positions:
            raise ValueError(
                f"generation would read {max_cache_length} positions (prompt + max_new_tokens - 1, or max_length - "
                f"1) but the model's max_len is {self.config.max_len}; lower max_new_tokens or max_length")
        if any(model_kwargs.get(name) is not None for name in ("cache", "past_key_values")):
            return
        if not generation_config.use_cache or not self.model.supports_cache:
            model_kwargs["use_cache"] = False  # feed the whole prefix at every step
            return
        model_kwargs[CACHE_NAME] = self.new_cache()

    def _reorder_cache(self, past_key_values: SynthesizerCache, beam_idx: Tensor) -> SynthesizerCache:
        """Beam search: row i continues what row ``beam_idx[i]`` was."""
        past_key_values.reorder_cache(beam_idx)
        return past_key_values
