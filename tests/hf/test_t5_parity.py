"""Parity of synthformer's ``variant="t5"`` encoder-decoder with Hugging Face's ``T5ForConditionalGeneration``:
logits, cached decoding, greedy and beam search token for token, the conversion round trip, and the T5 configs
that cannot be converted."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from transformers import T5Config, T5ForConditionalGeneration  # noqa: E402

from synthformer.common.config import ConfigError  # noqa: E402
from synthformer.generate import greedy_search  # noqa: E402
from synthformer.hf import SynthesizerForConditionalGeneration  # noqa: E402
from synthformer.hf.t5_convert import check_t5_config, from_t5, to_t5  # noqa: E402

VOCAB, PAD, EOS = 100, 0, 1
#: (feed_forward_proj, tied lm_head, scaled decoder output): T5 v1.0; v1.1 as transformers 5 builds it (tied,
#: unscaled); v1.1 with its own lm_head.
SHAPES = [("relu", True, True), ("gated-gelu", True, False), ("gated-gelu", False, False)]


def hf_t5(proj: str = "relu", tied: bool = True, scaled: bool = True, seed: int = 0,
          spread: float | None = None) -> T5ForConditionalGeneration:
    """A tiny random T5 built offline (d_model 32, d_kv 8, 4 heads, 2 layers, vocabulary 100); ``spread``
    redraws every weight but the norms from N(0, spread^2) (T5's own initialisation makes a tiny random model
    repeat one token: generation would compare nothing)."""
    torch.manual_seed(seed)
    config = T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, dropout_rate=0.1,
                      feed_forward_proj=proj, tie_word_embeddings=scaled, decoder_start_token_id=PAD,
                      pad_token_id=PAD, eos_token_id=EOS)
    model = T5ForConditionalGeneration(config)
    if not tied:  # transformers 5 always ties T5's lm_head; a v1.1 checkpoint's own one is untied by hand
        model.lm_head.weight = torch.nn.Parameter(torch.randn(VOCAB, 32))
    if spread is not None:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "layer_norm" not in name:
                    p.normal_(0.0, spread)
    return model.eval()


def batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sources (3, 9) with padding on rows 0 and 2, their attention mask, decoder inputs (3, 7) starting at PAD."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(2, VOCAB, (3, 9), generator=g)
    src[0, 6:] = PAD
    src[2, 3:] = PAD
    tgt = torch.randint(2, VOCAB, (3, 7), generator=g)
    tgt[:, 0] = PAD
    return src, (src != PAD).long(), tgt


@pytest.mark.parametrize("proj,tied,scaled", SHAPES)
def test_encoder_and_decoder_logits_equal_the_reference_with_padding(proj, tied, scaled):
    hf = hf_t5(proj, tied, scaled)
    model, config = from_t5(hf, max_len=32)
    assert (config.ffn, config.tie_embeddings, config.scale_decoder_outputs) == (proj, tied, scaled)
    src, mask, tgt = batch()
    with torch.no_grad():
        ref = hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt)
        memory, src_mask = model.encode(src)
        logits = model.decode(tgt, memory, src_mask)
    real = mask.bool()[..., None]  # padded encoder positions are never read: compare the real ones
    torch.testing.assert_close(memory * real, ref.encoder_last_hidden_state * real, atol=1e-5, rtol=0)
    torch.testing.assert_close(logits, ref.logits, atol=1e-5, rtol=0)
    assert logits.std() > 0.5  # not a degenerate model whose logits agree trivially


@pytest.mark.parametrize("proj,tied,scaled", SHAPES[:2])
def test_cached_decoding_steps_equal_the_full_forward(proj, tied, scaled):
    model, _ = from_t5(hf_t5(proj, tied, scaled), max_len=32)
    src, _, tgt = batch()
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)
        cache = model.init_cache(memory, src_mask)
        first, cache = model.decode_step(tgt[:, :2], cache)  # two positions at once, then one at a time
        steps = [first] + [model.decode_step(tgt[:, t : t + 1], cache)[0] for t in range(2, tgt.shape[1])]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("num_beams", [1, 3])
@pytest.mark.parametrize("proj,tied,scaled", SHAPES[:2])
def test_greedy_and_beam_search_match_the_reference_token_for_token(proj, tied, scaled, num_beams):
    hf = hf_t5(proj, tied, scaled, seed=2, spread=1.0)
    model, _ = from_t5(hf, max_len=32)
    src, mask, _ = batch(seed=3)
    options = dict(max_new_tokens=10, num_beams=num_beams, do_sample=False, decoder_start_token_id=PAD,
                   eos_token_id=EOS, pad_token_id=PAD)
    ref = hf.generate(input_ids=src, attention_mask=mask, **options)
    ours = SynthesizerForConditionalGeneration.from_native(model).eval().generate(
        input_ids=src, attention_mask=mask, **options)  # transformers' search on synthformer's decoding cache
    assert torch.equal(ours, ref)
    assert len(set(ref[:, 1:].flatten().tolist())) > 3  # the outputs are not one repeated token
    if num_beams == 1:  # synthformer's own greedy search too
        own = greedy_search(model, src, max_new_tokens=10).tokens
        assert [row[row != PAD].tolist() for row in own] == [row[1:][row[1:] != PAD].tolist() for row in ref]


@pytest.mark.parametrize("proj,tied,scaled", SHAPES)
def test_a_round_trip_through_transformers_gives_the_same_state_dict(proj, tied, scaled):
    model, config = from_t5(hf_t5(proj, tied, scaled), max_len=32)
    hf = to_t5(model)
    assert (hf.lm_head.weight.data_ptr() == hf.shared.weight.data_ptr()) == tied
    again, config_again = from_t5(hf, max_len=32)
    assert config_again == config
    first, second = model.state_dict(), again.state_dict()
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)


@pytest.mark.parametrize("field,value,match", [
    ("feed_forward_proj", "gated-silu", "feed_forward_proj='gated-silu'"),
    ("d_kv", 16, r"^d_kv=16: .* d_kv \* num_heads \(16 \* 4 = 64\) must equal d_model \(32\)$"),
    ("layer_norm_epsilon", 1e-5, "layer_norm_epsilon=1e-05"),
    ("model_type", "umt5", "model_type='umt5'"),
    ("is_gated_act", False, "is_gated_act=False"),
])
def test_unsupported_t5_settings_are_one_line_errors(field, value, match):
    config = hf_t5("gated-gelu").config
    object.__setattr__(config, field, value)
    with pytest.raises(ConfigError, match=match) as err:
        check_t5_config(config)
    assert "\n" not in str(err.value)


def test_a_synthformer_model_transformers_cannot_hold_is_refused():
    model, config = from_t5(hf_t5(), max_len=32)
    model.config = type(config).from_dict({**config.to_dict(), "decoder_kind": "R+V"})
    with pytest.raises(ConfigError, match="decoder_kind='R\\+V'"):
        to_t5(model)


def test_a_model_of_another_variant_is_refused_by_its_parts():
    model, config = from_t5(hf_t5(), max_len=32)
    model.config = type(config).from_dict({**config.to_dict(), "variant": "transformer"})
    with pytest.raises(ConfigError, match="^variant='transformer': a Hugging Face T5 model needs variant='t5'$"):
        to_t5(model)


def test_a_model_with_a_head_dim_exports_it_as_d_kv():
    """``head_dim`` is T5's ``d_kv``: a synthformer T5 of 4 heads of 16 over d_model 32 becomes a T5 with d_kv 16
    that computes the same logits (synthformer's ``n_heads * head_dim != d_model`` reaches transformers)."""
    from synthformer.models import Seq2SeqConfig, build_model

    torch.manual_seed(0)
    config = Seq2SeqConfig(vocab_size=VOCAB, d_model=32, n_heads=4, head_dim=16, n_layers=2, d_ff=64, max_len=32,
                           dropout=0.0, norm="pre", positions="none", variant="t5", position_bias="t5", pad_id=PAD,
                           bos_id=PAD, eos_id=EOS, scale_decoder_outputs=True)
    model = build_model(config).eval()
    assert model.encoder.layers[0].self_attn.synth.qk.weight.shape == (2 * 64, 32)
    hf = to_t5(model)
    assert (hf.config.d_kv, hf.config.num_heads, hf.config.d_model) == (16, 4, 32)
    src, mask, tgt = batch()
    with torch.no_grad():
        ref = hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt)
        memory, src_mask = model.encode(src)
        logits = model.decode(tgt, memory, src_mask)
    torch.testing.assert_close(logits, ref.logits, atol=1e-5, rtol=0)
