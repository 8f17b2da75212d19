"""Device- and dtype-agnostic by test: every kind, every model and a training step on the ``meta`` device and under
bf16 autocast.

A tensor made inside a forward without the input's device (``torch.zeros(n)``, ``torch.arange(n)``) lands on the
CPU; on ``meta`` it then meets a meta tensor and fails here, in CI, rather than on a user's GPU. Autocast catches
a tensor made in a fixed dtype that a bf16 GEMM then refuses.
"""

from __future__ import annotations

import pytest
import torch

from synthformer.attention import SynthesizerAttention
from synthformer.attention.fast.settings import fast_path_settings
from synthformer.models import list_archs

from ..models.helpers import BATCHES, tiny_model
from .conftest import ALL_KINDS, D_MODEL, HEADS, MAX_LEN, padding

META = torch.device("meta")


def _layer(kind: str, causal: bool, device=None) -> SynthesizerAttention:
    torch.manual_seed(0)
    with torch.device(device or "cpu"):
        return SynthesizerAttention(D_MODEL, HEADS, MAX_LEN, kind=kind, causal=causal)


@pytest.mark.parametrize("mode", ["always", "never"], ids=["fused", "blocks"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_kind_trains_on_meta(kind, causal, mode):
    layer = _layer(kind, causal, META)
    x = torch.randn(3, MAX_LEN - 1, D_MODEL, device=META, requires_grad=True)
    with fast_path_settings(fused=mode):
        y = layer(x, padding(3, MAX_LEN - 1).to(META))
    assert y.device == META and y.shape == x.shape
    y.sum().backward()
    assert x.grad is not None and x.grad.device == META
    assert all(p.grad is not None and p.grad.device == META for p in layer.parameters() if p.requires_grad)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_kind_decodes_on_meta(kind):
    layer = _layer(kind, True, META).eval()
    cache = layer.init_cache(2)
    with torch.no_grad():
        y, cache = layer(torch.randn(2, 3, D_MODEL, device=META), cache=cache)
        y, cache = layer(torch.randn(2, 1, D_MODEL, device=META), cache=cache)
    assert y.device == META and cache.length == 4


@pytest.mark.parametrize("mode", ["always", "never"], ids=["fused", "blocks"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_kind_under_bf16_autocast(kind, mode):
    layer = _layer(kind, True)
    x = torch.randn(3, MAX_LEN - 1, D_MODEL, requires_grad=True)
    with fast_path_settings(fused=mode), torch.autocast("cpu", dtype=torch.bfloat16):
        y = layer(x, padding(3, MAX_LEN - 1))
    assert y.dtype == torch.bfloat16
    y.float().sum().backward()
    assert torch.isfinite(x.grad).all()


#: the config fields that set every attention stack's kind, per architecture
KIND_FIELDS = {"lm": ("decoder_kind",), "classifier": ("encoder_kind",), "seq2seq": ("encoder_kind", "decoder_kind"),
               "dual_encoder": ("encoder_kind",), "compressor": ("decoder_kind",)}


def _model(arch: str, kind: str):
    return tiny_model(arch, **{field: kind for field in KIND_FIELDS[arch]})


def _batch(arch: str, device) -> dict[str, torch.Tensor]:
    batch = BATCHES[arch](torch.Generator().manual_seed(0), batch=4)
    return {k: v.to(device) for k, v in batch.items()}


@pytest.mark.parametrize("kind", ["V", "R", "D+V", "FD"])
@pytest.mark.parametrize("arch", list_archs())
def test_every_model_takes_a_training_step_on_meta(arch, kind):
    with torch.device(META):
        model = _model(arch, kind)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(**_batch(arch, META))["loss"]
    assert loss.device == META
    loss.backward()
    opt.step()
    assert all(p.device == META for p in model.parameters())


@pytest.mark.parametrize("kind", ["V", "R", "D+V", "FD"])
@pytest.mark.parametrize("arch", list_archs())
def test_every_model_takes_a_training_step_under_bf16_autocast(arch, kind):
    model = _model(arch, kind)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(**_batch(arch, "cpu"))["loss"]
    loss.backward()
    opt.step()
    assert torch.isfinite(loss) and all(torch.isfinite(p).all() for p in model.parameters())
