"""Where a training step of LRA Text's classifier spends its time, per attention kind: the profiler's self time of
every operator summed into a few categories, so that a kind that misses its FLOP-ratio limit in LRA's Table 2
(:mod:`synthformer.bench.lra`) shows which work the multiply-add count leaves out.

Categories (:data:`CATEGORIES`), by the operator that spent the time (self time: an operator's time minus its
children's, so nothing is counted twice):

* ``matmul``: matrix products (``mm``, ``bmm``, ``addmm``, ``baddbmm``, ...) and their dispatch (``matmul``,
  ``linear``): the work :func:`synthformer.bench.flops.classifier_macs` counts, apart from SDPA's;
* ``sdpa``: PyTorch's ``scaled_dot_product_attention`` kernels and their math path's own ops, forward and backward;
* ``softmax``: ``softmax`` / ``_softmax`` and their backward, where a kind calls them (the fused paths' forward
  and recomputed softmax; their backward, ``dS = P * (dP - rowsum)``, is elementwise and lands in ``other``);
* ``optimizer``: everything under ``Optimizer.step`` and ``Optimizer.zero_grad`` (AdamW's update: about a dozen
  elementwise passes over every parameter, R's L x L weights per head included);
* ``other``: the rest: elementwise work (the fused paths' dS, dropout and its masks, GELU, layer norm, masks), copies,
  reductions, autograd's and Python's overhead inside operator ranges.

The step is the one :class:`~synthformer.bench.measure.TrainStep` of ``synthformer bench`` and the LRA Table 2
harness (forward, backward, AdamW, random bytes), after ``warmup`` untimed steps; ``steps`` steps run under the
profiler (no memory or stack recording) and every time is per step. The profiler adds a few microseconds per
operator: small against steps of a second and more, but the total is the profiled step, not the timed one.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from torch.profiler import ProfilerActivity, profile

from .lra import _build, _group, resolve_kinds
from .lra_report import _markdown
from .measure import TrainStep
from .table import _positive

__all__ = ["CATEGORIES", "categorize", "profile_kinds", "profile_markdown", "profile_step"]

logger = logging.getLogger(__name__)

#: the categories, in report order
CATEGORIES: tuple[str, ...] = ("matmul", "sdpa", "softmax", "optimizer", "other")
_MATMUL = frozenset({"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm", "aten::matmul",
                     "aten::linear", "aten::_addmm_activation", "aten::einsum"})
_SOFTMAX = frozenset({"aten::softmax", "aten::_softmax", "aten::_softmax_backward_data", "aten::_safe_softmax"})
_OPTIMIZER_RANGES = ("Optimizer.step", "Optimizer.zero_grad")


def categorize(name: str, ancestors: Sequence[str]) -> str:
    """The category (:data:`CATEGORIES`) of an operator named ``name`` called under the ranges ``ancestors``
    (outermost first). An operator inside an optimizer step is ``optimizer`` whatever it is; one inside SDPA's
    range (its math path: softmax, dropout and products written as separate ops) is ``sdpa``."""
    chain = [*ancestors, name]
    if any(a.startswith(_OPTIMIZER_RANGES) for a in chain):
        return "optimizer"
    if any("scaled_dot_product" in a or "flash_attention" in a for a in chain):
        return "sdpa"
    if name in _MATMUL:
        return "matmul"
    if name in _SOFTMAX:
        return "softmax"
    return "other"


def profile_step(step: TrainStep, steps: int = 2, top: int = 5) -> dict[str, Any]:
    """Run ``step`` ``steps`` times under the profiler; milliseconds per step in each category, ``total_ms``
    (their sum), ``wall_ms`` (the profiled steps' wall time / steps) and ``other_top``: the ``top`` operators of
    the ``other`` category that took the most time, as ``[name, ms per step]`` pairs."""
    _positive("steps", steps)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        wall = time.perf_counter() - start
    spent = dict.fromkeys(CATEGORIES, 0.0)
    others: Counter[str] = Counter()
    for event in prof.events():
        ancestors: list[str] = []
        parent = event.cpu_parent
        while parent is not None:
            ancestors.append(parent.name)
            parent = parent.cpu_parent
        category = categorize(event.name, ancestors[::-1])
        ms = event.self_cpu_time_total / 1e3  # us -> ms
        spent[category] += ms
        if category == "other":
            others[event.name] += ms
    out: dict[str, Any] = {f"{c}_ms": spent[c] / steps for c in CATEGORIES}
    out["total_ms"] = sum(spent.values()) / steps
    out["wall_ms"] = wall * 1e3 / steps
    out["other_top"] = [[name, ms / steps] for name, ms in others.most_common(top)]
    return out


def profile_kinds(
    kinds: Sequence[str] | None = None,
    length: int = 2048,
    causal: bool = False,
    warmup: int = 1,
    steps: int = 2,
    overrides: dict[str, Any] | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Profile a training step of LRA Text's classifier at ``length`` tokens (batch 1) for each kind, one model at
    a time (built, warmed up, profiled, freed).

    Args:
        kinds: kinds of :data:`synthformer.bench.lra.LRA_KINDS` (V always first); None: all eight.
        length: tokens per sequence.
        causal: build every mixer causal (Linformer, which cannot be, is left out with a log message).
        warmup: untimed steps first (the first also creates AdamW's moments).
        steps: profiled steps; times are per step.
        overrides: :class:`~synthformer.models.ClassifierConfig` fields changed (tiny runs in tests).
        seed: seed of the models and the batch.

    Returns:
        one dict per kind: ``kind``, ``L``, ``causal``, ``params``, the ``CATEGORY_ms`` of :func:`profile_step`,
        ``total_ms``, ``wall_ms``, ``other_top``, and each category's share of the total (``CATEGORY_share``).

    Raises:
        ValueError: an unknown kind, a length < 1, warmup < 0 or steps < 1, a bad override (each named).
    """
    names = resolve_kinds(kinds)
    _positive("length", length)
    _positive("warmup", warmup, 0)
    _positive("steps", steps)
    rows = []
    # the Table 2 harness's models: its configs, its causal-skip rule and its build with the first step
    for m in _group(names, length, causal, overrides):
        if m.status != "measured":
            logger.info("%s left out: %s", m.kind, m.reason)
            continue
        _build(m, 1, seed, memory=False)  # the first step creates AdamW's moments
        for _ in range(warmup - 1):
            m.step()
        times = profile_step(m.step, steps)
        m.step = None  # free the model before the next kind is built
        row = {"kind": m.kind, "L": length, "causal": causal, "params": m.params, **times}
        row.update({f"{c}_share": times[f"{c}_ms"] / times["total_ms"] for c in CATEGORIES})
        rows.append(row)
        logger.info("%s: %.0f ms per profiled step", m.kind, times["wall_ms"])
    return rows


#: column headers of :func:`profile_markdown`, per category
_HEADERS = {"matmul": "matrix products", "sdpa": "SDPA", "softmax": "softmax", "optimizer": "AdamW",
            "other": "everything else"}


def profile_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """A markdown table of :func:`profile_kinds`'s rows: per kind, its profiled step time and each category's
    milliseconds and share of the step, e.g. ``412 ms (33%)``; under it, per kind, the operators that led its
    "everything else" (the three largest, where the rows have them)."""
    header = ["kind", "profiled step", *(_HEADERS[c] for c in CATEGORIES)]
    body = [[str(r["kind"]), f"{r['total_ms']:,.0f} ms",
             *(f"{r[f'{c}_ms']:,.0f} ms ({100 * r[f'{c}_share']:.0f}%)" for c in CATEGORIES)] for r in rows]
    led = [f"- {r['kind']}: " + ", ".join(f"`{name}` {ms:,.0f} ms" for name, ms in r["other_top"][:3])
           for r in rows if r.get("other_top")]
    lines = ["", "Everything else, its largest operators per step:", *led] if led else []
    return "\n".join([_markdown(header, body), *lines])
