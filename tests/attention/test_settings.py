"""The fast-path settings (``attention.settings``): scoped to a ``with`` block and to the thread that made them,
validated before they apply, and they change which path runs but not the result."""

from __future__ import annotations

import threading

import pytest
import torch

from synthformer.attention import paths
from synthformer.attention.fast.settings import DEFAULTS, FastPathSettings, current, fast_path_settings

from .conftest import D_MODEL, MAX_LEN, build, padding
from .reference import reference_forward


def test_outside_any_block_the_defaults_hold():
    assert current() is DEFAULTS
    assert DEFAULTS == FastPathSettings()
    assert (DEFAULTS.fused, DEFAULTS.backend, DEFAULTS.triton, DEFAULTS.features) == ("auto", "torch", "auto", "auto")


def test_blocks_nest_and_restore_even_on_an_exception():
    with fast_path_settings(fused="never", causal_chunk=4) as outer:
        assert current() is outer and outer.causal_chunk == 4
        with fast_path_settings(fused="always") as inner:
            assert (inner.fused, inner.causal_chunk) == ("always", 4)  # starts from the enclosing block
        assert current() is outer
        with pytest.raises(RuntimeError, match="boom"), fast_path_settings(backend="cpp"):
            raise RuntimeError("boom")
        assert current() is outer
    assert current() is DEFAULTS


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"fused": "sometimes"}, ValueError, "'auto', 'always' or 'never'"),
        ({"backend": "cuda"}, ValueError, "fused backend must be one of"),
        ({"triton": "maybe"}, ValueError, "triton must be one of"),
        ({"features": "dense"}, ValueError, "features must be one of"),
        ({"causal_chunk": 0}, ValueError, "causal_chunk must be at least 1"),
        ({"fuse_min_keys": -1}, ValueError, "fuse_min_keys must be at least 0"),
        ({"block_size": (1, 0)}, ValueError, "block_size must be"),
        ({"fused_mode": "always"}, TypeError, "fused_mode"),  # a misspelled field is not swallowed
    ],
)
def test_invalid_settings_raise_before_anything_changes(changes, error, match):
    with pytest.raises(error, match=match), fast_path_settings(**changes):
        pytest.fail("the block must not run")
    assert current() is DEFAULTS


def test_a_setting_is_seen_only_by_the_thread_that_made_it():
    """Two threads in blocks with different settings at the same time: each sees its own, never the other's."""
    barrier = threading.Barrier(2)
    seen: dict[str, tuple] = {}

    def worker(name: str, mode: str) -> None:
        before = current().fused
        with fast_path_settings(fused=mode):
            barrier.wait()  # both blocks are open now
            during = current().fused
            barrier.wait()  # neither has left its block before the other looked
        seen[name] = (before, during, current().fused)

    threads = [threading.Thread(target=worker, args=(n, m)) for n, m in (("a", "always"), ("b", "never"))]
    with fast_path_settings(fused="never", causal_chunk=5):  # the main thread's block is not inherited
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert current().causal_chunk == 5
    assert seen == {"a": ("auto", "always", "auto"), "b": ("auto", "never", "auto")}


@pytest.mark.parametrize("kind", ["D", "FD", "R+V"])
def test_the_fused_setting_picks_the_path_and_both_equal_the_reference(kind):
    """A short training call takes the stored-probability blocks by default (below ``fuse_min_keys``); forcing
    ``fused="always"`` or lowering the threshold takes the fused path. The counter says which ran, and every
    output equals the paper's equations (reference.py)."""
    attn = build(kind)
    x = torch.randn(2, MAX_LEN, D_MODEL, dtype=torch.float64, requires_grad=True)
    mask = padding(2, MAX_LEN)
    want = reference_forward(attn, x, mask)
    for changes, path in (({}, "blocks"), ({"fused": "always"}, "fused"), ({"fuse_min_keys": MAX_LEN}, "fused")):
        paths.reset_path_calls()
        with fast_path_settings(**changes):
            y = attn(x, mask)
        other = "fused" if path == "blocks" else "blocks"
        assert paths.path_calls()[path] == 1 and paths.path_calls()[other] == 0, (changes, paths.path_calls())
        torch.testing.assert_close(y, want, atol=1e-10, rtol=0)
