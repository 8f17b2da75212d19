"""``synthformer.hf.synthesize``: transformers models whose self-attention goes through the registered kinds.

What is checked, per family (Llama, Llama with grouped-query heads, Mistral, Qwen2, GPT-2, BERT, T5, BART): a grown
``+V`` mixture gives the pretrained logits at step 0 (bit for bit against eager attention, within 1e-5 against
SDPA); the synthesized layer equals the native shell's reference path on the same weights; the causal mask is
never dropped (a future token changes no earlier output, the decoders of T5 and BART included); cached decoding
equals the full forward; a left-padded row equals the row alone; bad input is one line naming the bad value.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from transformers import DynamicCache, EncoderDecoderCache  # noqa: E402

from synthformer.attention import SynthesizerAttention  # noqa: E402
from synthformer.common.config import ConfigError  # noqa: E402
from synthformer.hf.synthesize import SynthesizedAttention, plan, synthesize, synthesized_layers  # noqa: E402
from synthformer.hf.synthesize.families import self_attention_modules  # noqa: E402

from .synth_models import CAUSAL, FAMILIES, POSITIONS, VOCAB, build, forward  # noqa: E402

GROWN = ["R+V", "D+V", "FR+V", "R+D+V"]


def ids(batch: int = 2, length: int = 9, seed: int = 0) -> torch.Tensor:
    return torch.randint(3, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("family", FAMILIES)
@torch.no_grad()
def test_a_grown_mixture_starts_at_the_pretrained_logits(family):
    x = ids()
    model = build(family)
    sdpa = forward(model, x)
    model.set_attn_implementation("eager")
    eager = forward(model, x)
    for kind in GROWN:
        synthesize(model, kind=kind)
        assert set(synthesized_layers(model).values()) == {kind}
        out = forward(model, x)
        torch.testing.assert_close(out, sdpa, atol=1e-5, rtol=0)
        if family not in ("t5", "bart"):  # their eager attention adds the bias and mask in another order
            assert torch.equal(out, eager), kind
        else:
            torch.testing.assert_close(out, eager, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", CAUSAL)
@torch.no_grad()
def test_an_ungrown_or_new_kind_changes_the_function_and_keeps_causality(family):
    x = ids()
    model = build(family)
    before = forward(model, x)
    synthesize(model, kind="R+V", grow=False)
    assert not torch.allclose(forward(model, x), before, atol=1e-3)
    for kind in ("R", "D", "FR", "FD", "Bottleneck", "GLU", "Fix"):
        synthesize(model, kind=kind)
        full = forward(model, x)
        changed = x.clone()
        changed[:, 5:] = (changed[:, 5:] + 7) % (VOCAB - 3) + 3  # change the future of position 4
        torch.testing.assert_close(forward(model, changed)[:, :5], full[:, :5], atol=1e-6, rtol=0)
        assert not torch.allclose(forward(model, changed)[:, 5:], full[:, 5:], atol=1e-3), kind


@pytest.mark.parametrize("family", [*CAUSAL, "t5", "bart"])
@pytest.mark.parametrize("kind", ["R", "D", "FR", "FD", "R+V", "D+V", "R+D"])
@torch.no_grad()
def test_a_future_token_changes_no_earlier_output(family, kind):
    """Every causal self-attention (the decoder-only models', T5's and BART's decoders): changing tokens 5.. leaves
    the outputs at 0..4 as they were, for ungrown mixtures too (every part counts)."""
    model = build(family)
    synthesize(model, kind=kind, grow=False)
    x = ids(2, 9, seed=2)
    changed = x.clone()
    changed[:, 5:] = (changed[:, 5:] + 7) % (VOCAB - 3) + 3
    source = ids(2, 6, seed=3)  # an encoder-decoder's encoder input, the same for both

    def run(decoder_ids: torch.Tensor) -> torch.Tensor:
        if model.config.is_encoder_decoder:
            return model(input_ids=source, decoder_input_ids=decoder_ids).logits  # (B, T, V)
        return model(input_ids=decoder_ids).logits  # (B, T, V)

    full, other = run(x), run(changed)
    torch.testing.assert_close(other[:, :5], full[:, :5], atol=1e-6, rtol=0)
    assert not torch.allclose(other[:, 5:], full[:, 5:], atol=1e-3)


def _capture(module: torch.nn.Module) -> dict:
    seen: dict = {}

    def hook(mod, args, kwargs, output):
        seen["x"] = kwargs.get("hidden_states", args[0] if args else None)
        seen["y"] = output[0]

    module.register_forward_hook(hook, with_kwargs=True)
    return seen


@pytest.mark.parametrize("kind", ["R", "D", "FR", "FD", "R+D", "FR+D"])
@torch.no_grad()
def test_the_layer_equals_the_native_reference_on_the_same_weights(kind):
    """Llama's first attention layer, synthesized, against ``SynthesizerAttention.attend_reference`` holding the
    same kind's tensors and Llama's value and output projections (V is the one kind whose logits differ: Llama's
    queries and keys are rotated)."""
    model = build("llama")
    synthesize(model, kind=kind)
    target = self_attention_modules(model)[0].module
    seen = _capture(target)
    forward(model, ids())
    native = SynthesizerAttention(32, 4, POSITIONS, kind=kind, causal=True, bias=False)
    native.synth.load_state_dict(target.synthformer.synth.state_dict())
    native.value.weight.copy_(target.v_proj.weight)
    native.out.weight.copy_(target.o_proj.weight)
    x = seen["x"]
    v = native.value(x).view(2, 9, 4, 8).transpose(1, 2)  # (B, T, d) -> (B, H, T, d_h)
    reference = native.out(native.attend_reference(x, v).transpose(1, 2).reshape(2, 9, 32))  # (B, T, d)
    torch.testing.assert_close(seen["y"], reference, atol=1e-6, rtol=1e-6)


@torch.no_grad()
def test_grouped_query_heads_against_a_slow_reference():
    """Llama with 2 key-value heads for 4 query heads, kind R: each query head reads its group's values."""
    model = build("llama_gqa")
    synthesize(model, kind="R")
    target = self_attention_modules(model)[0].module
    seen = _capture(target)
    forward(model, ids())
    x = seen["x"]
    R = target.synthformer.synth.R[:, :9, :9]  # (H, T, T)
    causal = torch.ones(9, 9, dtype=torch.bool).tril()
    probs = torch.softmax(R.masked_fill(~causal, float("-inf")), dim=-1)  # (H, T, T)
    values = target.v_proj(x).view(2, 9, 2, 8)  # (B, T, d_kv) -> (B, T, H_kv, d_h)
    values = values[:, :, [0, 0, 1, 1]]  # query head h reads key-value head h // 2: (B, T, H, d_h)
    y = torch.einsum("hts,bshe->bthe", probs, values).reshape(2, 9, 32)  # (B, T, H, d_h) -> (B, T, d)
    torch.testing.assert_close(seen["y"], target.o_proj(y), atol=1e-6, rtol=1e-6)


def _decoder_forward(model, x, cache=None, **kwargs):
    if model.config.is_encoder_decoder:
        return model(input_ids=ids(2, 7, seed=3), decoder_input_ids=x, cache=cache, use_cache=cache is not None,
                     **kwargs)
    return model(input_ids=x, cache=cache, use_cache=cache is not None, **kwargs)


@pytest.mark.parametrize("family", [*CAUSAL, "t5", "bart"])
@pytest.mark.parametrize("kind", ["R", "D", "R+V", "D+V", "FD"])
@torch.no_grad()
def test_cached_decoding_equals_the_full_forward(family, kind):
    model = build(family)
    synthesize(model, kind=kind, grow=False)  # an ungrown mixture: every part counts
    x = ids(2, 10, seed=1)
    full = _decoder_forward(model, x).logits
    cache = DynamicCache(config=model.config)
    if model.config.is_encoder_decoder:  # self-attention and cross-attention keys apart
        cache = EncoderDecoderCache(cache, DynamicCache(config=model.config))
    out = _decoder_forward(model, x[:, :4], cache=cache)
    steps, cache = [out.logits], out.cache
    for t in range(4, 10):
        out = _decoder_forward(model, x[:, t : t + 1], cache=cache)
        steps.append(out.logits)
        cache = out.cache
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", CAUSAL)
@pytest.mark.parametrize("kind", ["R", "D", "R+V", "FR+D"])
@torch.no_grad()
def test_a_left_padded_row_equals_the_row_alone(family, kind):
    """Positions from the attention mask (the convention of generate()): R reads R[pos_i, pos_j], D column pos_j."""
    model = build(family)
    synthesize(model, kind=kind, grow=False)
    long, short = ids(1, 8, seed=4), ids(1, 5, seed=5)
    batch = torch.cat([long, torch.cat([torch.zeros(1, 3, dtype=torch.long), short], dim=1)])
    mask = torch.ones_like(batch)
    mask[1, :3] = 0
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    out = model(input_ids=batch, attention_mask=mask, position_ids=positions).logits
    torch.testing.assert_close(out[0], model(input_ids=long).logits[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[1, 3:], model(input_ids=short).logits[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", ["bert", "t5", "bart"])
@torch.no_grad()
def test_encoder_padding_is_masked(family):
    """A bidirectional layer with right padding: the real tokens' outputs are those of the row alone."""
    model = build(family)
    synthesize(model, kind="R+D", grow=False)
    short = ids(1, 5, seed=6)
    padded = torch.cat([short, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0]])
    if model.config.is_encoder_decoder:
        enc = model.get_encoder()
        torch.testing.assert_close(enc(input_ids=padded, attention_mask=mask).last_hidden_state[:, :5],
                                   enc(input_ids=short).last_hidden_state, atol=1e-5, rtol=1e-5)
    else:
        torch.testing.assert_close(model(input_ids=padded, attention_mask=mask).last_hidden_state[:, :5],
                                   model(input_ids=short).last_hidden_state, atol=1e-5, rtol=1e-5)


def test_layers_and_per_layer_kinds():
    model = build("llama", layers=3)
    synthesize(model, kinds={0: "R", 2: "D+V"})
    assert synthesized_layers(model) == {"model.layers.0.self_attn.synthformer": "R",
                                         "model.layers.2.self_attn.synthformer": "D+V"}
    synthesize(model, kind="FR", layers=[1])
    assert model.config.synthformer["kinds"] == {"0": "R", "1": "FR", "2": "D+V"}
    assert isinstance(model.model.layers[1].self_attn.synthformer, SynthesizedAttention)


@pytest.mark.parametrize(("call", "message"), [
    (lambda m: synthesize(m, kind="Q"), "kind='Q': unknown attention kind 'Q'"),
    (lambda m: synthesize(m, kind="LightConv"), "kind='LightConv' is a whole token mixer"),
    (lambda m: synthesize(m, kind="Conv"), "kind 'Conv' reads neighbouring tokens"),
    (lambda m: synthesize(m, kind="R", layers=[2]), "layer index 2 is out of range: the model has 2 self-attention"),
    (lambda m: synthesize(m, kinds=["R"]), "kinds= names 1 kinds for 2 layers"),
    (lambda m: synthesize(m, kind="R", kinds=["R", "R"]), "give either kind="),
    (lambda m: synthesize(m, kind="R", max_len=64), "max_len=64 exceeds the model's own 32 positions"),
    (lambda m: synthesize(m, kind="Fix+V"), "cannot start at zero logits"),
    (lambda m: synthesize(m, kind="FR", options={"rank": 3}), "rank"),
])
def test_bad_input_is_one_line_and_leaves_the_model_as_it_was(call, message):
    model = build("llama")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises((ConfigError, TypeError)) as err:
        call(model)
    assert message in str(err.value) and "\n" not in str(err.value)
    if "Fix+V" not in message and "Conv" not in message:  # refused before anything was built
        assert not synthesized_layers(model) and model.config._attn_implementation == "sdpa"
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items() if k in state)


def test_unsupported_models_and_sizes_are_refused_in_one_line():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM, LlamaConfig, LlamaForCausalLM

    other = GPTNeoXForCausalLM(GPTNeoXConfig(vocab_size=40, hidden_size=32, num_hidden_layers=1,
                                             num_attention_heads=4, intermediate_size=64))
    with pytest.raises(ConfigError, match=r"model_type='gpt_neox' cannot be synthesized: expected one of llama"):
        plan(other, kind="R")
    big = LlamaForCausalLM(LlamaConfig(vocab_size=40, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                       intermediate_size=64, max_position_embeddings=8192))
    with pytest.raises(ConfigError, match=r"max_len=8192: kind R would hold 268,435,456 parameters .*--max-len"):
        plan(big, kind="R")
    assert plan(big, kind="R", max_len=512)[1] == 512


@torch.no_grad()
def test_a_sequence_past_max_len_is_refused():
    model = build("llama")
    synthesize(model, kind="R", max_len=8)
    with pytest.raises(ValueError, match="attention over 9 positions exceeds max_len 8 of the synthesized R"):
        forward(model, ids(1, 9))
