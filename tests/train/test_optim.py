"""LR schedules and optimizer builders."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from synthformer.train import TrainConfig, build_optimizer, build_scheduler, lr_multiplier, param_groups


def lrs(cfg: TrainConfig, n: int) -> list[float]:
    """The lr each of the first ``n`` optimizer steps actually uses."""
    opt = build_optimizer(nn.Linear(2, 2), cfg)
    sched = build_scheduler(opt, cfg)
    out = []
    for _ in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_warmup_peaks_at_warmup_steps_then_inverse_sqrt():
    cfg = TrainConfig(steps=100, lr=0.1, warmup_steps=4, schedule="inverse_sqrt")
    got = lrs(cfg, 17)
    assert got[:5] == pytest.approx([0.0, 0.025, 0.05, 0.075, 0.1])  # linear, peak exactly at step 4
    assert max(got) == got[4]
    assert got[16] == pytest.approx(0.1 * math.sqrt(4 / 16))  # = 0.05
    assert got[9] == pytest.approx(0.1 * math.sqrt(4 / 9))
    assert all(a > b for a, b in zip(got[4:], got[5:], strict=False))


def test_inverse_sqrt_without_warmup_and_min_lr_floor():
    assert lr_multiplier(0, warmup_steps=0, total_steps=10, schedule="inverse_sqrt") == 1.0
    assert lr_multiplier(25, warmup_steps=0, total_steps=10, schedule="inverse_sqrt") == pytest.approx(0.2)
    assert lr_multiplier(10_000, warmup_steps=4, total_steps=1, schedule="inverse_sqrt", min_ratio=0.1) == 0.1


def test_cosine_ends_at_min_lr_and_constant_stays():
    cfg = TrainConfig(steps=12, lr=1.0, warmup_steps=2, schedule="cosine", min_lr=0.1)
    got = lrs(cfg, 13)
    assert got[2] == pytest.approx(1.0)
    assert got[7] == pytest.approx(0.55)  # half-way through the decay: the mean of 1 and 0.1
    assert got[12] == pytest.approx(0.1)
    const = lrs(TrainConfig(steps=10, lr=0.5, warmup_steps=2, schedule="constant"), 6)
    assert const == pytest.approx([0.0, 0.25, 0.5, 0.5, 0.5, 0.5])


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight  # tied: must appear once
        self.alpha = nn.Parameter(torch.zeros(3))
        self.frozen = nn.Parameter(torch.zeros(4, 4), requires_grad=False)


def test_no_decay_for_biases_norms_and_vectors():
    net = Net()
    decay, no_decay = param_groups(net, 0.1)
    ids = lambda group: {id(p) for p in group["params"]}  # noqa: E731
    assert ids(decay) == {id(net.emb.weight), id(net.lin.weight)}
    assert ids(no_decay) == {id(net.lin.bias), id(net.norm.weight), id(net.norm.bias), id(net.alpha)}
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    net.no_weight_decay = lambda: {"emb.weight"}  # a model can opt parameters out by name
    decay, _ = param_groups(net, 0.1)
    assert ids(decay) == {id(net.lin.weight)}


def test_weight_decay_really_skips_no_decay_params():
    net = Net()
    opt = build_optimizer(net, TrainConfig(lr=0.1, weight_decay=0.5))
    with torch.no_grad():
        net.norm.weight.fill_(2.0)
        net.lin.weight.fill_(2.0)
    for p in net.parameters():
        p.grad = torch.zeros_like(p) if p.requires_grad else None
    opt.step()  # zero gradients: only decoupled weight decay can move a parameter
    assert torch.equal(net.norm.weight, torch.full((4,), 2.0))
    assert torch.allclose(net.lin.weight, torch.full((4, 4), 2.0 * (1 - 0.1 * 0.5)))


def test_adafactor_trains():
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = build_optimizer(model, TrainConfig(optimizer="adafactor", lr=0.05))
    assert isinstance(opt, torch.optim.Adafactor)
    x = torch.randn(64, 8)
    y = x @ torch.randn(8, 1)
    first = None
    for _ in range(60):
        loss = ((model(x) - y) ** 2).mean()
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first


# --------------------------------------------------------------------------- fused AdamW where it applies
def test_adamw_takes_the_fused_kernel_for_plain_cpu_parameters_and_matches_the_default_update():
    from synthformer.train.optim import adamw

    torch.manual_seed(0)
    a, b = nn.Linear(8, 8), nn.Linear(8, 8)
    b.load_state_dict(a.state_dict())
    fused, plain = adamw(a.parameters(), lr=1e-2, weight_decay=0.1), torch.optim.AdamW(b.parameters(), lr=1e-2,
                                                                                        weight_decay=0.1)
    assert fused.defaults["fused"] is True and not plain.defaults.get("fused")
    x = torch.randn(16, 8)
    for _ in range(5):
        for model, opt in ((a, fused), (b, plain)):
            model(x).pow(2).sum().backward()
            opt.step()
            opt.zero_grad()
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    # the state is the default implementation's (a checkpoint moves between the two)
    assert set(fused.state_dict()["state"][0]) == set(plain.state_dict()["state"][0])


def test_adamw_keeps_the_default_where_the_fused_kernel_does_not_apply_or_the_caller_chose():
    from synthformer.train.optim import adamw

    class Wrapped(torch.Tensor):  # a tensor subclass, as FSDP2's DTensor parameters are
        pass

    sub = torch.zeros(3).as_subclass(Wrapped).requires_grad_()
    assert not adamw([sub], lr=1e-3).defaults.get("fused")
    meta = nn.Parameter(torch.zeros(3, device="meta"))
    assert not adamw([meta], lr=1e-3).defaults.get("fused")
    assert adamw(nn.Linear(2, 2).parameters(), lr=1e-3, foreach=True).defaults["foreach"] is True
    assert not adamw(nn.Linear(2, 2).parameters(), lr=1e-3, fused=False).defaults["fused"]
    groups = [{"params": [nn.Parameter(torch.zeros(2, 2))], "weight_decay": 0.1}]
    assert adamw(groups, lr=1e-3).defaults["fused"] is True  # parameter groups too (build_optimizer's)
