"""Incremental decoding equals the full causal forward; fast paths equal the materialized path."""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import SynthesizerAttention, paths, sdpa
from synthformer.attention.fast import blocks, feature_form
from synthformer.attention.fast.settings import fast_path_settings

from .conftest import ALL_KINDS, D_MODEL, FEATURE_KINDS, HEADS, MAX_LEN, build, padding


def _fp32(kind: str, max_len: int, d_model: int = 16, heads: int = 2, seed: int = 0) -> SynthesizerAttention:
    torch.manual_seed(seed)
    attn = SynthesizerAttention(d_model, heads, max_len, kind=kind, causal=True).eval()
    with torch.no_grad():
        for name, p in attn.named_parameters():
            if name.endswith("alpha_logits"):
                p.copy_(torch.randn_like(p))
    return attn


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_256_cached_steps_equal_the_full_forward(kind):
    attn = _fp32(kind, max_len=256)
    x = torch.randn(2, 256, 16)
    with torch.no_grad():
        full = attn(x)
        cache = attn.init_cache(2)
        y, cache = attn(x[:, :40], cache=cache)  # a prompt of 40 positions in one chunk, then single steps
        steps = [y]
        for t in range(40, 256):
            y, cache = attn(x[:, t : t + 1], cache=cache)
            steps.append(y)
    assert cache.length == 256
    assert (torch.cat(steps, 1) - full).abs().max().item() <= 1e-5


@pytest.mark.parametrize("plain_max", [16, 0], ids=["plain-steps", "fast-steps"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_chunked_decoding_with_left_padding(kind, plain_max):
    """Chunks of several positions, a padding mask covering every position so far (left-padded prompts);
    decoding steps go through the plain path or (forced) through the fast paths."""
    attn = build(kind, causal=True)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64)
    mask = padding(3, MAX_LEN)
    full = attn(x, mask)
    cache = attn.init_cache(3)
    outs, start = [], 0
    with fast_path_settings(decode_plain_max_new=plain_max):
        for size in (3, 1, 4):
            y, cache = attn(x[:, start : start + size], key_padding_mask=mask[:, : start + size], cache=cache)
            outs.append(y)
            start += size
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_materialized_decoding_also_matches(kind):
    attn = build(kind, causal=True)
    attn.use_fast_paths = False
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    full = attn(x)
    cache = attn.init_cache(2)
    steps = [attn(x[:, t : t + 1], cache=cache)[0] for t in range(MAX_LEN)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_reordered_cache_continues_the_selected_samples(kind):
    """Beam search reorders caches along the batch: continuing a reordered cache equals decoding the picks."""
    attn = build(kind, causal=True)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64)
    cache = attn.init_cache(3)
    attn(x[:, :4], cache=cache)
    index = torch.tensor([2, 2, 0])
    picked = cache.reorder(index)
    assert cache.values.shape[0] == 3 and picked.length == 4
    y, _ = attn(x[index, 4:6], cache=picked)
    torch.testing.assert_close(y, attn(x[index, :6])[:, 4:6], atol=1e-10, rtol=0)


def test_cache_holds_values_only_for_kinds_without_keys():
    b, max_len = 4, 128
    sizes = {k: _fp32(k, max_len, d_model=64, heads=4).init_cache(b).nbytes() for k in ("V", "R", "D", "FR", "FD")}
    for kind in ("R", "D", "FR", "FD"):
        assert sizes[kind] * 2 == sizes["V"], sizes
    assert sizes["V"] == 2 * b * 4 * max_len * 16 * 4  # keys and values, fp32


def test_decoding_errors():
    bidir = build("R")
    with pytest.raises(ValueError, match="causal"):
        bidir.init_cache(1)
    attn = build("R", causal=True)
    cache = attn.init_cache(1)
    attn(torch.randn(1, MAX_LEN - 1, D_MODEL, dtype=torch.float64), cache=cache)
    with pytest.raises(ValueError, match=rf"sequence length {MAX_LEN + 1} \({MAX_LEN - 1} cached \+ 2 new\) exceeds"):
        attn(torch.randn(1, 2, D_MODEL, dtype=torch.float64), cache=cache)
    with pytest.raises(ValueError, match=r"\(1, 8\)"):  # the mask must cover every position so far
        attn(
            torch.randn(1, 1, D_MODEL, dtype=torch.float64),
            key_padding_mask=torch.zeros(1, 1, dtype=torch.bool),
            cache=cache,
        )


# ---------------------------------------------------------------- fast paths


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("padded", [False, True], ids=["nopad", "pad"])
@pytest.mark.parametrize("kind", ["FR", "FR+V", "FR+D", "Fix+FR"])
def test_fr_sdpa_path_equals_materialized(kind, causal, padded):
    """FR through SDPA with the batch folded into the values (no L x L matrix), forced at a small length."""
    attn = build(kind, causal=causal)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, MAX_LEN) if padded else None
    with fast_path_settings(fr_sdpa_min_len=1):
        fast = attn(x, mask)
    attn.use_fast_paths = False
    slow = attn(x, mask)
    torch.testing.assert_close(fast, slow, atol=1e-10, rtol=0)
    w = torch.randn_like(fast)
    g_fast = torch.autograd.grad((fast * w).sum(), [x, *attn.parameters()], allow_unused=True)
    g_slow = torch.autograd.grad((slow * w).sum(), [x, *attn.parameters()], allow_unused=True)
    for a, b in zip(g_fast, g_slow, strict=True):
        if a is not None or b is not None:
            torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_fast_equals_materialized_in_fp32_at_a_real_size(kind):
    torch.manual_seed(0)
    attn = SynthesizerAttention(64, 4, 64, kind=kind, causal=False)
    x = torch.randn(4, 64, 64)
    mask = torch.zeros(4, 64, dtype=torch.bool)
    mask[1, 40:] = True
    fast = attn(x, mask)
    attn.use_fast_paths = False
    assert (fast - attn(x, mask)).abs().max().item() < 1e-5


def test_eval_alignment_cache_follows_parameter_changes():
    attn = build("R").eval()
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)
    with torch.no_grad():
        first = attn(x)
        assert attn.alignment_cache.value is not None  # cached in inference
        again = attn(x)
        attn.synth.R.add_(torch.randn_like(attn.synth.R))  # an optimizer step modifies R in place
        changed = attn(x)
        attn.use_fast_paths = False
        want = attn(x)
    torch.testing.assert_close(first, again, atol=0, rtol=0)
    assert not torch.allclose(first, changed)
    torch.testing.assert_close(changed, want, atol=1e-12, rtol=0)


def test_no_alignment_cache_when_gradients_are_needed():
    attn = build("R").eval()
    attn(torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64)).sum().backward()
    assert attn.alignment_cache.value is None
    assert attn.synth.R.grad is not None


def test_underflowing_padded_rows_fall_back_to_the_exact_path():
    """If padding holds nearly all of a shared row's mass, the ratio trick would lose precision: fall back."""
    attn = build("R").float()
    with torch.no_grad():
        attn.synth.R.fill_(-60.0)
        attn.synth.R[:, :, 4:] = 60.0  # keys 4.. (padding in sample 1) dominate every row
    x = torch.randn(2, MAX_LEN, D_MODEL)
    mask = torch.zeros(2, MAX_LEN, dtype=torch.bool)
    mask[1, 4:] = True
    fast = attn(x, mask)
    attn.use_fast_paths = False
    torch.testing.assert_close(fast, attn(x, mask), atol=1e-6, rtol=0)
    assert torch.isfinite(fast).all()


def test_shared_alignment_dropout_is_one_mask_for_the_batch():
    """Documented choice: on the shared-alignment path, the dropout mask is shared by the batch's samples."""
    torch.manual_seed(0)
    attn = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind="R", dropout=0.5).double().train()
    attn.value.weight.data.copy_(torch.eye(D_MODEL))
    attn.value.bias.data.zero_()
    attn.out.weight.data.copy_(torch.eye(D_MODEL))
    attn.out.bias.data.zero_()
    x = torch.randn(1, MAX_LEN, D_MODEL, dtype=torch.float64).expand(3, -1, -1)
    y = attn(x)
    torch.testing.assert_close(y[0], y[1], atol=1e-12, rtol=0)
    torch.testing.assert_close(y[0], y[2], atol=1e-12, rtol=0)


def _assert_equals_plain_path(attn: SynthesizerAttention, x: torch.Tensor, mask, fast: torch.Tensor) -> None:
    """``fast`` (attn's output on its fast path) and its gradients (input and parameters) equal the plain path's."""
    attn.use_fast_paths = False
    slow = attn(x, mask)
    torch.testing.assert_close(fast, slow, atol=1e-10, rtol=0)
    w = torch.randn_like(fast)
    params = [p for p in attn.parameters() if p.requires_grad]
    for a, b in zip(
        torch.autograd.grad((fast * w).sum(), [x, *params]),
        torch.autograd.grad((slow * w).sum(), [x, *params]),
        strict=True,
    ):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


@pytest.mark.parametrize("branch", ["fused", "materialized"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("padded", [False, True], ids=["nopad", "pad"])
@pytest.mark.parametrize("kind", FEATURE_KINDS)
def test_both_feature_branches_equal_materialized(kind, causal, padded, branch):
    """The feature-form path has two branches (fused SDPA; one GEMM over the features, materialized): force each
    (the blocks' call counter says which ran)."""
    attn = build(kind, causal=causal)
    assert attn.synth.has_features
    forced = {"features": "sdpa", "width_multiple": 1} if branch == "fused" else {"features": "blocks"}
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, MAX_LEN) if padded else None
    paths.reset_path_calls()
    with fast_path_settings(fused="never", **forced):
        fast = attn(x, mask)
    # kinds without an input-dependent part (FR) take the shared alignment, neither branch
    assert paths.path_calls()["blocks"] == (branch != "fused" and attn.synth.input_dependent), paths.path_calls()
    _assert_equals_plain_path(attn, x, mask, fast)


@pytest.mark.parametrize("size", [(1, 4), (2, 4), (1, 1), (2, 3)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("padded", [False, True], ids=["nopad", "pad"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_blocks_equal_materialized(kind, causal, padded, size):
    """Materialized logits computed a block of (samples, heads) at a time change nothing: 3 samples, 4 heads, in
    blocks of whole samples (1 or 2 + 1), of single heads, and of uneven 2 x 3 blocks."""
    attn = build(kind, causal=causal, heads=4)
    x = torch.randn(3, MAX_LEN, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(3, MAX_LEN) if padded else None
    paths.reset_path_calls()
    # feature kinds take the blocks too; the stored-probability blocks, not the fused path
    with fast_path_settings(block_size=size, features="blocks", fused="never"):
        fast = attn(x, mask)
        assert blocks.block_size(attn.n_heads, 3, MAX_LEN, MAX_LEN, None) == size
    want = 1 if attn.synth.input_dependent else 0  # R, Fix, FR: the shared alignment, no blocks
    assert paths.path_calls()["blocks"] == want, "the blocked path was not taken"
    _assert_equals_plain_path(attn, x, mask, fast)


@pytest.mark.parametrize(
    ("batch", "length", "state", "expected"),
    [
        (16, 256, None, (4, 8)),  # 4 samples of 8 x 256 x 256 logits = 2^21
        (16, 512, None, (1, 8)),
        (16, 1024, None, (1, 2)),  # one sample exceeds a block: 2 of its 8 heads
        (16, 3000, None, (1, 1)),  # one head exceeds it: still one head
        (3, 1024, {}, (3, 8)),  # decoding: one block
    ],
)
def test_block_size(batch, length, state, expected):
    # the block budget pinned to 2^21 logits (a 32 MiB last-level cache): the default follows this CPU's cache
    with fast_path_settings(chunk_elements=1 << 21):
        assert blocks.block_size(8, batch, length, length, state) == expected


def test_block_size_divides_the_heads():
    """With room for 3 of 8 heads, blocks of 2 heads (equal blocks), not 3 + 3 + 2."""
    with fast_path_settings(chunk_elements=3 * 100 * 100):
        assert blocks.block_size(8, 4, 100, 100, None) == (1, 2)


@pytest.mark.parametrize(
    ("e", "dh", "s", "grad", "expected"),
    [
        (65, 64, 1024, True, True),  # D training at L=1024: blocks
        (65, 64, 1024, False, False),  # D inference at L=1024: fused
        (65, 64, 512, False, True),
        (64, 64, 256, True, False),  # one width (V): fused, no padding needed
        (129, 64, 2048, True, False),  # beyond the limit: fused, O(L) memory
    ],
)
def test_feature_branch_choice(e, dh, s, grad, expected):
    with torch.set_grad_enabled(grad):
        assert feature_form.materialize_features(e, dh, s) is expected


CPU, CUDA = torch.device("cpu"), torch.device("cuda")  # a device object needs no GPU


@pytest.mark.parametrize(
    ("e", "drop", "device", "expected"),
    [
        (65, 0.1, CPU, True),  # D with attention dropout on the CPU: SDPA would run its math path
        (65, 0.0, CPU, False),  # without dropout: SDPA's fused kernel, O(L) memory
        (65, 0.1, CUDA, False),  # CUDA's fused kernels take dropout
        (64, 0.1, CPU, False),  # V stays PyTorch's SDPA, the baseline
    ],
)
def test_dropout_on_the_cpu_sends_feature_kinds_to_the_materialized_path(e, drop, device, expected):
    assert feature_form.materialize_features(e, 64, 4096, drop, device) is expected


def test_the_cpu_flash_kernel_takes_no_dropout():
    """The premise of ``feature_form.sdpa_runs_fused``: with dropout, PyTorch's CPU SDPA has no fused kernel (if a
    later PyTorch adds one, this fails and the choice is to be measured again)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, 2, 16, 8)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        torch.nn.functional.scaled_dot_product_attention(q, q, q)  # without dropout it runs
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="No available kernel"):
            torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    assert not feature_form.sdpa_runs_fused(0.1, CPU) and feature_form.sdpa_runs_fused(0.0, CPU)


@pytest.mark.parametrize("kind", ["D", "D+V", "FR"])
def test_training_with_dropout_on_the_cpu_never_calls_sdpa(kind, monkeypatch):
    """Past every length limit (features and FR's SDPA), dropout keeps D, D+V and FR off SDPA's math path."""
    options = {"k": 2} if kind == "FR" else {}
    attn = SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind=kind, dropout=0.1, **options).train()

    def refuse(*args, **kwargs):
        raise AssertionError("SDPA was called")

    monkeypatch.setattr(sdpa.F, "scaled_dot_product_attention", refuse)
    x = torch.randn(2, MAX_LEN, D_MODEL)
    with fast_path_settings(features_materialize_max_len=0, fr_sdpa_min_len=0):
        attn(x).sum().backward()
        with pytest.raises(AssertionError, match="SDPA was called"):  # the same layer without dropout takes it
            attn.dropout = 0.0
            attn(x)
