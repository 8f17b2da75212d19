"""T5's optimizer setting: Adafactor as T5 ran it, T5's rsqrt schedule, and frozen embeddings / output layer."""

from __future__ import annotations

import math

import pytest
import torch

from synthformer.common.config import ConfigError
from synthformer.models import ClassifierConfig, LMConfig, Seq2SeqConfig, build_model
from synthformer.train import TrainConfig, build_optimizer, build_scheduler, lr_multiplier
from synthformer.train.optim import freeze_parts


def t5_adafactor_reference(param: torch.Tensor, grads: list[torch.Tensor], lrs: list[float]) -> torch.Tensor:
    """The weight after Adafactor steps as Shazeer and Stern (2018) and T5's Mesh TensorFlow optimizer define them,
    written from the paper, in float64: factored second moment (row and column means of g^2) decayed with
    beta2_t = 1 - t^-0.8, update g / sqrt(v_hat), clipped to RMS <= 1, step lr_t * max(1e-3, RMS(weight)), no
    momentum. (T5 adds epsilon1 = 1e-30 to g^2; with these gradients its effect is below rounding.)"""
    w = param.double().clone()
    rows = torch.zeros(w.shape[0], dtype=torch.float64)
    cols = torch.zeros(w.shape[1], dtype=torch.float64)
    for t, (g, lr) in enumerate(zip(grads, lrs, strict=True), start=1):
        g = g.double()
        decay = 1.0 - t ** -0.8
        rows = decay * rows + (1 - decay) * (g * g + 1e-30).mean(dim=1)
        cols = decay * cols + (1 - decay) * (g * g + 1e-30).mean(dim=0)
        v_hat = torch.outer(rows, cols) / rows.mean()
        update = g / v_hat.sqrt()
        update = update / max(1.0, update.pow(2).mean().sqrt().item() / 1.0)
        scale = max(1e-3, w.pow(2).mean().sqrt().item())
        w = w - lr * scale * update
    return w


def test_adafactor_steps_equal_t5s_update_rule():
    torch.manual_seed(0)
    layer = torch.nn.Linear(6, 5, bias=False)
    start = layer.weight.detach().clone()
    config = TrainConfig(steps=10, optimizer="adafactor", lr=1e-2, schedule="rsqrt", warmup_steps=2)
    opt = build_optimizer(layer, config)
    sched = build_scheduler(opt, config)
    grads, lrs = [], []
    for _ in range(5):
        g = torch.randn(5, 6)
        grads.append(g)
        lrs.append(opt.param_groups[0]["lr"])
        layer.weight.grad = g.clone()
        opt.step()
        sched.step()
    assert lrs == pytest.approx([1e-2, 1e-2, 1e-2, 1e-2 * math.sqrt(2 / 3), 1e-2 * math.sqrt(2 / 4)])
    expected = t5_adafactor_reference(start, grads, lrs)
    assert torch.allclose(layer.weight.detach().double(), expected, rtol=1e-5, atol=1e-7)
    assert not torch.allclose(layer.weight.detach(), start)  # it moved


def test_adafactor_group_settings_are_t5s():
    opt = build_optimizer(torch.nn.Linear(3, 3), TrainConfig(optimizer="adafactor", lr=1e-3, schedule="constant"))
    assert isinstance(opt, torch.optim.Adafactor)
    for group in opt.param_groups:
        assert group["beta2_decay"] == -0.8  # 1 - t^-0.8
        assert group["d"] == 1.0  # update clipping threshold
        assert group["eps"][1] == 1e-3  # parameter-scale floor
        assert group["lr"] == 1e-3
        assert "betas" not in group  # no momentum


def test_rsqrt_is_t5s_schedule():
    # T5: 1 / sqrt(max(t, 10000)) with lr 1e-2 and 10k warm-up steps: flat, then rsqrt, no ramp
    for step in (0, 1, 5000, 10_000, 10_001, 40_000, 250_000):
        got = 1e-2 * lr_multiplier(step, warmup_steps=10_000, total_steps=524_288, schedule="rsqrt")
        assert got == pytest.approx(1.0 / math.sqrt(max(step, 10_000)))
    assert lr_multiplier(90, warmup_steps=10, total_steps=100, schedule="rsqrt", min_ratio=0.5) == 0.5


def test_unknown_schedule_names_rsqrt_among_the_valid():
    with pytest.raises(ConfigError, match="rsqrt"):
        TrainConfig(schedule="rsqrtt")


def _t5(tied: bool = True):
    return build_model(Seq2SeqConfig(vocab_size=40, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=16,
                                     variant="t5", position_bias="t5", positions="none", norm="pre",
                                     tie_embeddings=tied))


@pytest.mark.parametrize("tied", [True, False])
def test_freezing_keeps_embeddings_and_output_fixed_through_training(tied):
    torch.manual_seed(0)
    model = _t5(tied)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    config = TrainConfig(optimizer="adafactor", lr=1e-2, schedule="constant", freeze=["embeddings", "output"])
    opt = build_optimizer(model, config)
    frozen = {"src_embed.token.weight", "lm_head.weight"}
    assert {n for n, p in model.named_parameters() if not p.requires_grad} == (frozen if not tied else
                                                                              {"src_embed.token.weight"})
    src = torch.randint(3, 40, (2, 7))
    tgt = torch.randint(3, 40, (2, 5))
    for _ in range(3):
        out = model(src, tgt[:, :-1], labels=tgt[:, 1:])
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
    after = dict(model.named_parameters())
    for name, p in after.items():
        if name in frozen:
            assert torch.equal(p, before[name]), name
    moved = [n for n in after if n not in frozen and not torch.equal(after[n], before[n])]
    assert len(moved) > 5  # the rest trains


def test_freezing_output_of_a_tied_model_freezes_the_shared_table():
    model = _t5(tied=True)
    count = freeze_parts(model, ["output"])
    assert count == 40 * 16
    assert not model.src_embed.token.weight.requires_grad


def test_freeze_refusals_name_the_part():
    with pytest.raises(ConfigError, match="unknown part 'softmax'"):
        TrainConfig(freeze=["softmax"])
    assert TrainConfig(freeze="embeddings,output").freeze == ["embeddings", "output"]  # from the command line
    classifier = build_model(ClassifierConfig(vocab_size=30, d_model=8, n_heads=2, n_layers=1, d_ff=16, max_len=8,
                                              num_classes=2))
    with pytest.raises(ValueError, match="TransformerClassifier has no 'output' part"):
        build_optimizer(classifier, TrainConfig(freeze=["output"]))
    lm = build_model(LMConfig(vocab_size=30, d_model=8, n_heads=2, n_layers=1, d_ff=16, max_len=8))
    assert freeze_parts(lm, ["embeddings"]) > 0 and not lm.embed.token.weight.requires_grad
