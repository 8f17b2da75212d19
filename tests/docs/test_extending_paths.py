"""The claims of docs/extending.md, "A synthesizing function (a new kind)" and "An execution path": a kind is one class
(its block, registered here, gets its FLOP count, a fast path equal to the reference, mixtures, decoding and the
Hugging Face export without another edit), a kind without ``macs`` gets an error naming what to add, the built-in
paths are asked in the documented order, and a path registered from a user's file serves exactly the calls its rule
names, with the reference path's output."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from synthformer.attention import (
    SynthesizerAttention,
    SynthesizingFunction,
    path_calls,
    register,
    registered_paths,
    reset_path_calls,
    unregister,
    unregister_path,
)
from synthformer.bench.flops import layer_macs

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
B, L, D, H = 2, 12, 16, 4


def _block(title: str) -> str:
    """The one python block of the section ``title``."""
    section = DOC.read_text(encoding="utf-8").split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def _run(block: str, namespace: dict) -> dict:
    exec(compile(block, str(DOC), "exec"), namespace)
    return namespace


@pytest.fixture
def tied() -> Iterator[dict]:
    """The documented kind, registered for one test, and the names its block defines."""
    namespace = _run(_block("A synthesizing function (a new kind)"), {})
    try:
        yield namespace
    finally:
        unregister("Tied")


@pytest.fixture
def tied_path(tied, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """The documented kind and path, registered for one test; the path's block imports the kind from ``tied.py``
    (the kind's block, the page's file of that name), here a module of the names that block defined."""
    module = types.ModuleType("tied")
    module.__dict__.update({k: v for k, v in tied.items() if not k.startswith("__")})
    monkeypatch.setitem(sys.modules, "tied", module)
    namespace = _run(_block("An execution path"), dict(tied))
    try:
        yield namespace
    finally:
        unregister_path("tied_sdpa")


def _layer(kind: str, causal: bool = False) -> SynthesizerAttention:
    torch.manual_seed(0)
    return SynthesizerAttention(D, H, 32, kind=kind, causal=causal).double().eval()


def _reference(attn: SynthesizerAttention, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    attn.use_fast_paths = False
    try:
        return attn(x, mask)
    finally:
        attn.use_fast_paths = True


def _served(attn: SynthesizerAttention, x: torch.Tensor, mask: torch.Tensor | None = None):
    """(output, the one path that served the call)."""
    reset_path_calls()
    y = attn(x, mask)
    (name,) = path_calls()
    return y, name


def test_a_kind_in_one_class_gets_its_flops(tied):
    d = 64
    pairs = L * L
    want = B * (L * 2 * d * d + pairs * d) + B * (L * d * d + pairs * d)  # the shell's work, then macs
    assert layer_macs("Tied", B, L, d, H) == want
    assert layer_macs("Tied+R", B, L, d, H) == want  # R adds no multiply-adds
    assert layer_macs("tied_dot", B, L, d, H, causal=True) < want  # an alias; causal counts fewer pairs


def test_a_kind_without_macs_is_told_what_to_add():
    @register("NoCount7")
    class NoCount(SynthesizingFunction):
        input_dependent = False

    try:
        with pytest.raises(KeyError, match=r"NoCount7.*add a classmethod macs\(batch, length, d_model"):
            layer_macs("NoCount7", B, L, D, H)
    finally:
        unregister("NoCount7")


@pytest.mark.parametrize("kind", ["Tied", "Tied+R", "Tied+V"])
@pytest.mark.parametrize("padded", [False, True], ids=["nopad", "pad"])
def test_a_kind_in_one_class_gets_a_fast_path_equal_to_the_reference(tied, kind, padded):
    attn = _layer(kind)
    x = torch.randn(B, L, D, dtype=torch.float64)
    mask = torch.zeros(B, L, dtype=torch.bool)
    mask[1, -3:] = True
    mask = mask if padded else None
    y, name = _served(attn, x, mask)
    assert name != "reference"
    torch.testing.assert_close(y, _reference(attn, x, mask), atol=1e-12, rtol=0)


def test_a_kind_in_one_class_decodes_like_its_full_forward(tied):
    attn = _layer("Tied", causal=True)
    x = torch.randn(B, L, D, dtype=torch.float64)
    cache = attn.init_cache(B)
    steps = []
    for i in range(L):
        y, cache = attn(x[:, i : i + 1], cache=cache)
        steps.append(y)
    torch.testing.assert_close(torch.cat(steps, 1), attn(x), atol=1e-12, rtol=0)


def test_a_kind_in_one_class_exports_to_hugging_face(tied, tmp_path):
    pytest.importorskip("transformers")
    from synthformer.hf import SynthesizerForSequenceClassification
    from synthformer.models import ClassifierConfig, build_model

    torch.manual_seed(0)
    native = build_model(ClassifierConfig(vocab_size=30, d_model=D, n_heads=H, n_layers=1, d_ff=32, max_len=16,
                                          num_classes=2, encoder_kind="Tied")).eval()
    model = SynthesizerForSequenceClassification.from_native(native)
    model.save_pretrained(tmp_path)
    loaded = SynthesizerForSequenceClassification.from_pretrained(tmp_path).eval()
    assert loaded.config.encoder_kind == "Tied"
    ids = torch.randint(3, 30, (2, 10))
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids).logits, model(input_ids=ids).logits)


def test_the_built_in_paths_are_asked_in_the_documented_order():
    section = DOC.read_text(encoding="utf-8").split("## An execution path\n", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", section, flags=re.M)
    assert documented == registered_paths()


def test_a_registered_path_serves_the_calls_its_rule_names(tied_path):
    assert registered_paths()[0] == "tied_sdpa"  # priority 100: asked first
    attn = _layer("Tied")
    x = torch.randn(B, L, D, dtype=torch.float64)
    y, name = _served(attn, x)
    assert name == "tied_sdpa"
    torch.testing.assert_close(y, _reference(attn, x), atol=1e-12, rtol=0)

    mask = torch.zeros(B, L, dtype=torch.bool)
    mask[0, -2:] = True
    y, name = _served(attn, x, mask)  # padding: the rule does not apply, a built-in path serves
    assert name == "sdpa"
    torch.testing.assert_close(y, _reference(attn, x, mask), atol=1e-12, rtol=0)
    _, name = _served(_layer("Tied", causal=True), x)
    assert name != "tied_sdpa"
    _, name = _served(_layer("V"), x)
    assert name == "sdpa"  # another kind: untouched


def test_an_unregistered_path_is_no_longer_asked(tied_path):
    unregister_path("tied_sdpa")
    try:
        _, name = _served(_layer("Tied"), torch.randn(B, L, D, dtype=torch.float64))
        assert name == "sdpa" and "tied_sdpa" not in registered_paths()
    finally:
        _run(_block("An execution path"), dict(tied_path))  # the fixture unregisters it again
    with pytest.raises(ValueError, match="cannot unregister attention path 'reference'"):
        unregister_path("reference")
