"""Incremental decoding through the models: cached logits equal the full forward."""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import cross_kinds
from synthformer.models import CrossAttention, DecoderCache, LayerCache

from .helpers import BATCHES, TINY, tiny_model

CAUSAL_KINDS = ["V", "R", "D", "FR", "R+V", "D+V", "Fix", "FD", "Conv", "LightConv", "DynamicConv"]


def _decode_in_pieces(model, ids: torch.Tensor, pieces: list[int], cache) -> torch.Tensor:
    out, start = [], 0
    for n in pieces:
        logits, cache = model.decode_step(ids[:, start : start + n], cache)
        out.append(logits)
        start += n
    assert cache.length == ids.shape[1]
    return torch.cat(out, dim=1)


@pytest.mark.parametrize("kind", CAUSAL_KINDS)
@pytest.mark.parametrize("ffn", ["relu", "conv_relu"])
def test_lm_cached_logits_equal_full_forward(kind, ffn):
    model = tiny_model("lm", decoder_kind=kind, ffn=ffn, norm="pre" if ffn == "relu" else "post").eval()
    assert model.supports_cache
    ids = torch.randint(4, 16, (3, 14), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = model(input_ids=ids)["logits"]
        one_by_one = _decode_in_pieces(model, ids, [1] * 14, model.init_cache(3))
        chunked = _decode_in_pieces(model, ids, [5, 1, 1, 4, 3], model.init_cache(3))  # prompt, steps, chunks
    assert (one_by_one - full).abs().max().item() <= 1e-5
    assert (chunked - full).abs().max().item() <= 1e-5


def _assert_seq2seq_decoding_equals_full_forward(model) -> None:
    """Step-by-step decoding (memory keys and values computed once, in ``init_cache``) equals the full forward."""
    batch = BATCHES["seq2seq"](torch.Generator().manual_seed(1), batch=4)
    assert batch["src_padding_mask"].any()
    with torch.no_grad():
        full = model(**batch)["logits"]
        memory, mask = model.encode(batch["src_ids"], batch["src_padding_mask"])
        cache = model.init_cache(memory, mask)
        for layer, layer_cache in zip(model.decoder.layers, cache.layers, strict=True):
            # keys only for kinds that read memory tokens (V and its mixtures); values always, once, here
            assert (layer_cache.cross_k is None) == (layer.cross_attn.synth.memory_key_width == 0)
            assert layer_cache.cross_v.shape[2] == memory.shape[1]
        steps = _decode_in_pieces(model, batch["tgt_ids"], [1] * batch["tgt_ids"].shape[1], cache)
    assert (steps - full).abs().max().item() <= 1e-5


@pytest.mark.parametrize(("kind", "cross"), [("V", "V"), ("R", "V"), ("D+V", "V"), ("R+V", "R"), ("V", "D")])
def test_seq2seq_cached_decoding_equals_full_forward(kind, cross):
    model = tiny_model(
        "seq2seq", encoder_kind=kind, decoder_kind=kind, cross_kind=cross, ffn="conv_relu", n_decoder_layers=3
    ).eval()
    _assert_seq2seq_decoding_equals_full_forward(model)


def _with_cross_kind(model, kind: str):
    """``model`` with every decoder layer's cross-attention rebuilt as ``kind`` (whatever kinds the config
    accepts: this tests the layer and the cache)."""
    torch.manual_seed(1)
    for layer in model.decoder.layers:
        layer.cross_attn = CrossAttention(TINY["d_model"], TINY["n_heads"], TINY["max_len"], kind)
    return model


@pytest.mark.parametrize("cross", [*cross_kinds(), "R+V", "FR+D", "R+D+V"])
def test_seq2seq_decoding_with_any_cross_kind_equals_full_forward(cross):
    model = _with_cross_kind(tiny_model("seq2seq", encoder_kind="V", decoder_kind="R+V"), cross).eval()
    _assert_seq2seq_decoding_equals_full_forward(model)


@pytest.mark.parametrize("cross", ["V", "R+V", "D"])
def test_seq2seq_cache_select_reorders_the_memory(cross):
    """Beam search: a reordered cache (memory keys, values and padding mask included) continues the picks."""
    model = _with_cross_kind(tiny_model("seq2seq"), cross).eval()
    batch = BATCHES["seq2seq"](torch.Generator().manual_seed(3), batch=3)
    index = torch.tensor([2, 0, 0, 1])
    with torch.no_grad():
        memory, mask = model.encode(batch["src_ids"], batch["src_padding_mask"])
        _, cache = model.decode_step(batch["tgt_ids"][:, :4], model.init_cache(memory, mask))
        cache = cache.select(index)
        logits, _ = model.decode_step(batch["tgt_ids"][index, 4:6], cache)
        picked = {name: t[index] for name, t in batch.items()}
        full = model(**picked)["logits"][:, 4:6]
    assert (logits - full).abs().max().item() <= 1e-5


@pytest.mark.parametrize("kind", ["R+V", "Conv", "LightConv"])  # LightConv's cache brings its own reorder()
def test_cache_select_reorders_and_expands_the_batch(kind):
    model = tiny_model("lm", decoder_kind=kind, ffn="conv_relu").eval()
    ids = torch.randint(4, 16, (3, 8), generator=torch.Generator().manual_seed(2))
    index = torch.tensor([2, 0, 0, 1])
    with torch.no_grad():
        _, cache = model.decode_step(ids[:, :6], model.init_cache(3))
        cache = cache.select(index)
        assert cache.batch_size == 4 and cache.length == 6
        logits, _ = model.decode_step(ids[index, 6:8], cache)
        full = model(input_ids=ids[index])["logits"][:, 6:8]
    assert (logits - full).abs().max().item() <= 1e-5


def test_cache_structure_and_size():
    model = tiny_model("lm", decoder_kind="R", ffn="conv_relu")
    cache = model.init_cache(2)
    assert isinstance(cache, DecoderCache) and len(cache.layers) == 2
    assert all(isinstance(layer, LayerCache) for layer in cache.layers)
    assert cache.layers[0].ffn.shape == (2, 2, 32)  # the conv FFN's last kernel_size - 1 inputs
    # R keeps values only: (B, H, max_len, d_h) per layer, plus the FFN windows
    expected = 2 * (2 * 4 * 24 * 8 + 2 * 2 * 32) * 4
    assert cache.nbytes() == expected


def test_decoding_past_max_len_raises():
    model = tiny_model("lm").eval()
    with torch.no_grad():
        _, cache = model.decode_step(torch.randint(4, 16, (1, 24)), model.init_cache(1))
        with pytest.raises(ValueError, match="exceeds max_len 24"):
            model.decode_step(torch.randint(4, 16, (1, 1)), cache)
