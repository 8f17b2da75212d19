"""Conversion between Hugging Face's ``T5ForConditionalGeneration`` and synthformer's encoder-decoder with
``variant="t5"``, both ways, weights unchanged (``tests/hf/test_t5_parity.py`` checks logits, generation and
cached decoding against the reference, and that a round trip gives the same state dict).

Names (``i`` a layer; the decoder's feed-forward sublayer is ``layer.2``, the encoder's ``layer.1``)::

    shared.weight                                          src_embed.token.weight (= tgt_embed; = lm_head if tied)
    lm_head.weight                                         lm_head.weight (untied models only)
    {stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight
                                                           {stack}.relative_bias.embedding.weight
    {stack}.block.i.layer.0.SelfAttention.q / k .weight    {stack}.layers.i.self_attn.synth.qk.weight (rows q, k)
    {stack}.block.i.layer.0.SelfAttention.v / o .weight    {stack}.layers.i.self_attn.value / out .weight
    {stack}.block.i.layer.0.layer_norm.weight              {stack}.layers.i.norm_self.weight
    decoder.block.i.layer.1.EncDecAttention.q / k .weight  decoder.layers.i.cross_attn.synth.query / key .weight
    decoder.block.i.layer.1.EncDecAttention.v / o .weight  decoder.layers.i.cross_attn.value / out .weight
    decoder.block.i.layer.1.layer_norm.weight              decoder.layers.i.norm_cross.weight
    {stack}.block.i.layer.F.DenseReluDense.{wi|wi_0|wi_1|wo}.weight
                                                           {stack}.layers.i.ffn.{same}.weight
    {stack}.block.i.layer.F.layer_norm.weight              {stack}.layers.i.norm_ffn.weight
    {stack}.final_layer_norm.weight                        {stack}.final_norm.weight

What T5 configs can be converted: ``model_type`` ``"t5"`` (or ``"mt5"``, the same architecture),
``feed_forward_proj`` ``"relu"`` or ``"gated-gelu"``, ``d_kv * num_heads == d_model`` (synthformer's heads split
``d_model``; the released t5-small/base/large and v1.1 base/large/xl satisfy it, v1.1 small and the 3B/11B models
do not), ``layer_norm_epsilon`` 1e-6. Anything else is a one-line :class:`~synthformer.common.config.ConfigError`
naming the field and its value.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import Tensor, nn

from synthformer.common import ConfigError
from synthformer.models import T5_NORM_EPS, T5_VARIANT, Seq2SeqConfig, Seq2SeqTransformer, build_model, get_variant

__all__ = ["check_t5_config", "config_from_t5", "from_t5", "hf_state_from_synthformer", "synthformer_state_from_hf",
           "to_t5", "t5_config_from"]

logger = logging.getLogger(__name__)

#: The T5 feed-forward networks synthformer has (``feed_forward_proj`` -> ``ffn``).
FFN_FROM_T5 = {"relu": "relu", "gated-gelu": "gated-gelu"}
#: The activation Hugging Face derives from each (``dense_act_fn``), which must not have been edited.
ACTIVATIONS = {"relu": "relu", "gated-gelu": "gelu_new"}


def _ffn_layer(stack: str) -> int:
    """Index of the feed-forward sublayer in a T5 block (after self- and, in the decoder, cross-attention)."""
    return 2 if stack == "decoder" else 1


def check_t5_config(hf_config: Any) -> None:
    """Raise :class:`ConfigError` naming the first setting of a ``transformers`` ``T5Config`` that synthformer's
    T5 variant cannot represent exactly."""
    model_type = getattr(hf_config, "model_type", None)
    if model_type not in ("t5", "mt5"):
        raise ConfigError(f"model_type={model_type!r}: only T5 ('t5', 'mt5') converts (UMT5's per-layer position "
                          "biases and Switch Transformers' experts are other architectures)")
    proj = getattr(hf_config, "feed_forward_proj", None)
    if proj not in FFN_FROM_T5:
        raise ConfigError(f"feed_forward_proj={proj!r}: expected 'relu' (T5 v1.0) or 'gated-gelu' (T5 v1.1)")
    gated = proj.startswith("gated-")
    if getattr(hf_config, "is_gated_act", gated) != gated:
        raise ConfigError(f"is_gated_act={hf_config.is_gated_act!r} does not match feed_forward_proj={proj!r}")
    act = getattr(hf_config, "dense_act_fn", ACTIVATIONS[proj])
    if act != ACTIVATIONS[proj]:
        raise ConfigError(f"dense_act_fn={act!r}: feed_forward_proj={proj!r} computes {ACTIVATIONS[proj]!r}")
    if hf_config.d_kv * hf_config.num_heads != hf_config.d_model:
        raise ConfigError(f"d_kv={hf_config.d_kv}: synthformer's heads split d_model, so d_kv * num_heads "
                          f"({hf_config.d_kv} * {hf_config.num_heads} = {hf_config.d_kv * hf_config.num_heads}) must "
                          f"equal d_model ({hf_config.d_model})")
    if hf_config.layer_norm_epsilon != T5_NORM_EPS:
        raise ConfigError(f"layer_norm_epsilon={hf_config.layer_norm_epsilon!r}: expected T5's {T5_NORM_EPS}")
    if getattr(hf_config, "is_decoder", False) or not getattr(hf_config, "is_encoder_decoder", True):
        raise ConfigError("is_encoder_decoder=False: only the encoder-decoder T5ForConditionalGeneration converts")


def config_from_t5(hf_config: Any, *, tied: bool = True, max_len: int = 512) -> Seq2SeqConfig:
    """The synthformer config of a ``T5Config``.

    Args:
        hf_config: a ``transformers.T5Config``.
        tied: whether the model's ``lm_head`` is its shared embedding (always so in ``transformers`` 5; a model
            whose ``lm_head`` was untied by hand keeps its own).
        max_len: the longest source and target the converted model accepts (T5's relative positions have no limit;
            synthformer sizes the decoding cache, and the synthesized kinds a grown model adds, for it).
    """
    check_t5_config(hf_config)
    pad = hf_config.pad_token_id if hf_config.pad_token_id is not None else 0
    eos = hf_config.eos_token_id[0] if isinstance(hf_config.eos_token_id, list) else hf_config.eos_token_id
    start = getattr(hf_config, "decoder_start_token_id", None)
    return Seq2SeqConfig(
        vocab_size=hf_config.vocab_size,
        d_model=hf_config.d_model,
        n_heads=hf_config.num_heads,
        n_layers=hf_config.num_layers,
        n_decoder_layers=hf_config.num_decoder_layers,
        d_ff=hf_config.d_ff,
        ffn=FFN_FROM_T5[hf_config.feed_forward_proj],
        dropout=float(hf_config.dropout_rate),
        attention_dropout=float(hf_config.dropout_rate),
        norm="pre",
        positions="none",
        max_len=max_len,
        pad_id=pad,
        bos_id=start if start is not None else pad,  # T5 starts decoding with the padding token
        eos_id=eos if eos is not None else 1,
        variant=T5_VARIANT.name,
        position_bias="t5",
        relative_attention_num_buckets=hf_config.relative_attention_num_buckets,
        relative_attention_max_distance=hf_config.relative_attention_max_distance,
        tie_embeddings=tied,
        scale_decoder_outputs=bool(getattr(hf_config, "scale_decoder_outputs", tied)),
    )


def t5_config_from(config: Seq2SeqConfig) -> Any:
    """The ``transformers.T5Config`` of a synthformer T5 config; :class:`ConfigError` for one T5 cannot hold."""
    from transformers import T5Config

    if get_variant(config.variant) is not T5_VARIANT:  # the variant's parts, not its name, decide
        raise ConfigError(f"variant={config.variant!r}: a Hugging Face T5 model needs variant={T5_VARIANT.name!r}")
    needs = {"position_bias": "t5", "encoder_kind": "V", "decoder_kind": "V", "cross_kind": "V",
             "tgt_vocab_size": None, "kind_options": {}, "encoder_kind_options": None, "decoder_kind_options": None}
    for name, value in needs.items():
        if getattr(config, name) not in (value, {} if value is None else value):
            raise ConfigError(f"{name}={getattr(config, name)!r}: a Hugging Face T5 model needs {name}={value!r}")
    if config.attention_dropout != config.dropout:
        raise ConfigError(f"attention_dropout={config.attention_dropout!r}: T5 has one dropout_rate, so it must "
                          f"equal dropout ({config.dropout!r})")
    d_kv = config.attention_head_dim or config.d_model // config.n_heads  # each head's width
    hf = T5Config(
        vocab_size=config.vocab_size, d_model=config.d_model, d_kv=d_kv, d_ff=config.d_ff,
        num_layers=config.n_layers, num_decoder_layers=config.decoder_layers,
        num_heads=config.n_heads, relative_attention_num_buckets=config.relative_attention_num_buckets,
        relative_attention_max_distance=config.relative_attention_max_distance, dropout_rate=config.dropout,
        layer_norm_epsilon=T5_NORM_EPS, feed_forward_proj=config.ffn, pad_token_id=config.pad_id,
        eos_token_id=config.eos_id, decoder_start_token_id=config.bos_id,
        tie_word_embeddings=config.scale_decoder_outputs,  # transformers 5 reads it as "scale the outputs"
    )
    hf.scale_decoder_outputs = config.scale_decoder_outputs
    return hf


def _stack_pairs(stack: str, layers: int, gated: bool) -> list[tuple[str, str]]:
    """(HF name, synthformer name) of the one-to-one tensors of a stack (the fused Q/K pair aside)."""
    pairs = [(f"{stack}.final_layer_norm.weight", f"{stack}.final_norm.weight"),
             (f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
              f"{stack}.relative_bias.embedding.weight")]
    ff = _ffn_layer(stack)
    for i in range(layers):
        hf, ours = f"{stack}.block.{i}.layer", f"{stack}.layers.{i}"
        pairs += [(f"{hf}.0.SelfAttention.v.weight", f"{ours}.self_attn.value.weight"),
                  (f"{hf}.0.SelfAttention.o.weight", f"{ours}.self_attn.out.weight"),
                  (f"{hf}.0.layer_norm.weight", f"{ours}.norm_self.weight"),
                  (f"{hf}.{ff}.layer_norm.weight", f"{ours}.norm_ffn.weight")]
        pairs += [(f"{hf}.{ff}.DenseReluDense.{w}.weight", f"{ours}.ffn.{w}.weight")
                  for w in (("wi_0", "wi_1", "wo") if gated else ("wi", "wo"))]
        if stack == "decoder":
            pairs += [(f"{hf}.1.EncDecAttention.{a}.weight", f"{ours}.cross_attn.{b}.weight")
                      for a, b in (("q", "synth.query"), ("k", "synth.key"), ("v", "value"), ("o", "out"))]
            pairs.append((f"{hf}.1.layer_norm.weight", f"{ours}.norm_cross.weight"))
    return pairs


def _layer_counts(config: Seq2SeqConfig) -> dict[str, int]:
    return {"encoder": config.n_layers, "decoder": config.decoder_layers}


def synthformer_state_from_hf(state: dict[str, Tensor], config: Seq2SeqConfig) -> dict[str, Tensor]:
    """A synthformer state dict (for ``config``) from a ``T5ForConditionalGeneration`` state dict."""
    gated = config.ffn == "gated-gelu"
    out = {"src_embed.token.weight": state["shared.weight"]}
    if not config.tie_embeddings:
        out["lm_head.weight"] = state["lm_head.weight"]
    for stack, layers in _layer_counts(config).items():
        out.update({ours: state[hf] for hf, ours in _stack_pairs(stack, layers, gated)})
        for i in range(layers):
            attn = f"{stack}.block.{i}.layer.0.SelfAttention"
            qk = torch.cat([state[f"{attn}.q.weight"], state[f"{attn}.k.weight"]])  # (2d, d): q rows, then k rows
            out[f"{stack}.layers.{i}.self_attn.synth.qk.weight"] = qk
    return out


def hf_state_from_synthformer(state: dict[str, Tensor], config: Seq2SeqConfig) -> dict[str, Tensor]:
    """A ``T5ForConditionalGeneration`` state dict from a synthformer T5 state dict (the inverse map)."""
    gated = config.ffn == "gated-gelu"
    shared = state["src_embed.token.weight"]
    out = {"shared.weight": shared, "encoder.embed_tokens.weight": shared, "decoder.embed_tokens.weight": shared,
           "lm_head.weight": shared if config.tie_embeddings else state["lm_head.weight"]}
    for stack, layers in _layer_counts(config).items():
        out.update({hf: state[ours] for hf, ours in _stack_pairs(stack, layers, gated)})
        for i in range(layers):
            q, k = state[f"{stack}.layers.{i}.self_attn.synth.qk.weight"].chunk(2)  # (H d_kv, d) each
            attn = f"{stack}.block.{i}.layer.0.SelfAttention"
            out[f"{attn}.q.weight"], out[f"{attn}.k.weight"] = q, k
    return out


def _is_tied(hf_model: nn.Module) -> bool:
    return hf_model.lm_head.weight.data_ptr() == hf_model.shared.weight.data_ptr()


@torch.no_grad()
def from_t5(hf_model: nn.Module, *, max_len: int = 512) -> tuple[Seq2SeqTransformer, Seq2SeqConfig]:
    """A synthformer model (and its config) computing what ``hf_model``, a ``T5ForConditionalGeneration``,
    computes; weights copied, fp32, in eval mode."""
    config = config_from_t5(hf_model.config, tied=_is_tied(hf_model), max_len=max_len)
    model = build_model(config)
    hf_state = {k: v.float() for k, v in hf_model.state_dict().items()}
    missing, unexpected = model.load_state_dict(synthformer_state_from_hf(hf_state, config), strict=False)
    # the tied tensors (tgt_embed, a tied lm_head) are one storage with src_embed: loaded through it
    tied_copies = {"tgt_embed.token.weight"} | ({"lm_head.weight"} if config.tie_embeddings else set())
    missing = [k for k in missing if k not in tied_copies]
    if missing or unexpected:
        raise ConfigError(f"T5 weights do not map onto the converted model: missing {missing}, unexpected "
                          f"{unexpected}")
    logger.info("converted a T5 model: %d layers + %d, d_model %d, %s, %s", config.n_layers, config.decoder_layers,
                config.d_model, config.ffn, "tied" if config.tie_embeddings else "untied")
    return model.eval(), config


@torch.no_grad()
def to_t5(model: Seq2SeqTransformer) -> nn.Module:
    """A ``T5ForConditionalGeneration`` computing what ``model`` (a synthformer ``variant="t5"`` model with V
    attention) computes; in eval mode. An untied model gets its own ``lm_head`` in memory (``transformers`` 5
    ties T5's on save and load, so such a model does not survive ``save_pretrained``)."""
    from transformers import T5ForConditionalGeneration

    config = model.config
    hf = T5ForConditionalGeneration(t5_config_from(config))
    if not config.tie_embeddings:
        hf.lm_head.weight = nn.Parameter(hf.lm_head.weight.detach().clone())
    hf.load_state_dict(hf_state_from_synthformer(model.state_dict(), config), strict=True)
    return hf.eval()
