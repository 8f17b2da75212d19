"""Tiny ``transformers`` models of every family ``synthformer.hf.synthesize`` covers, built from configs (nothing is
downloaded), with weights spread out so that decoding does not collapse onto one token."""

from __future__ import annotations

import torch

VOCAB, WIDTH, HEADS, POSITIONS = 40, 32, 4, 32
CAUSAL = ("llama", "llama_gqa", "mistral", "qwen2", "gpt2")
SEQ2SEQ = ("t5", "bart")
FAMILIES = (*CAUSAL, "bert", *SEQ2SEQ)


def build(family: str, seed: int = 0, layers: int = 2) -> torch.nn.Module:
    """A tiny model of ``family`` (``llama_gqa``: Llama with 2 key-value heads for 4 query heads), eval mode."""
    import transformers as tf

    torch.manual_seed(seed)
    common = dict(vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    rope = dict(hidden_size=WIDTH, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=HEADS,
                max_position_embeddings=POSITIONS, **common)
    if family in ("llama", "llama_gqa"):
        model = tf.LlamaForCausalLM(tf.LlamaConfig(**rope, num_key_value_heads=2 if family == "llama_gqa" else 4))
    elif family == "mistral":
        model = tf.MistralForCausalLM(tf.MistralConfig(**rope, num_key_value_heads=2, sliding_window=None))
    elif family == "qwen2":
        model = tf.Qwen2ForCausalLM(tf.Qwen2Config(**rope, num_key_value_heads=2))
    elif family == "gpt2":
        model = tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=WIDTH, n_layer=layers, n_head=HEADS, n_positions=POSITIONS,
                                                 attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0, **common))
    elif family == "bert":
        model = tf.BertModel(tf.BertConfig(hidden_size=WIDTH, num_hidden_layers=layers, num_attention_heads=HEADS,
                                           intermediate_size=64, max_position_embeddings=POSITIONS, **common))
    elif family == "t5":
        model = tf.T5ForConditionalGeneration(tf.T5Config(
            d_model=WIDTH, d_kv=WIDTH // HEADS, d_ff=64, num_layers=layers, num_heads=HEADS, dropout_rate=0.0,
            decoder_start_token_id=0, vocab_size=VOCAB, pad_token_id=0, eos_token_id=2))
    elif family == "bart":
        model = tf.BartForConditionalGeneration(tf.BartConfig(
            d_model=WIDTH, encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=HEADS,
            decoder_attention_heads=HEADS, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=POSITIONS,
            dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, decoder_start_token_id=2,
            forced_eos_token_id=None, **common))
    else:
        raise ValueError(family)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:  # norms and biases keep their initialisation
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    return model.eval()


def forward(model: torch.nn.Module, ids: torch.Tensor, **kwargs) -> torch.Tensor:
    """Logits (or an encoder's last hidden states) of ``ids``; an encoder-decoder decodes ``ids`` too."""
    if model.config.is_encoder_decoder:
        return model(input_ids=ids, decoder_input_ids=ids, **kwargs).logits
    out = model(input_ids=ids, **kwargs)
    return out.logits if hasattr(out, "logits") else out.last_hidden_state
