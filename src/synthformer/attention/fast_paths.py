"""The built-in execution paths of :class:`SynthesizerAttention`, their rules and their order, in one table.

Each path computes the same function as the reference path ``dropout(softmax(mask(S(X) + bias))) @ G(X)``
(tests compare them for every kind); :mod:`.paths` asks the rules highest priority first and runs the first path
that applies. The rules below are mutually exclusive except where a path refines another (``triton`` and
``fused`` serve some of the calls ``blocks`` would; ``causal_shared`` some of ``shared_alignment``'s), which is
what the priorities order. Calls with ``call.fast`` False take the reference path before any rule is asked.

===================  ========  ==============================================================================
path                 priority  serves
===================  ========  ==============================================================================
``triton``           70        a materialized call without decoding state or dropout, on CUDA with Triton
``fused``            60        a materialized call without decoding state, in training from ``fuse_min_keys``
``blocks``           50        every other materialized call (the stored-probability blocks)
``causal_shared``    40        a shared call of a causal layer in training, no padding, from
                               ``causal_shared_min_len``
``shared_alignment`` 30        a shared call: an input-independent kind (R, Fix, FR, their mixtures), no bias,
                               no decoding state (long FR excepted: see below)
``sdpa``             20        a feature kind (V, D, FR, GLU, Bottleneck, their mixtures) not materialized, or
                               any feature kind's call with a position bias
``reference``        lowest    every call (a non-feature kind with a position bias ends here)
===================  ========  ==============================================================================

A call is *materialized* when it has no position bias, is not shared, and its kind either has no feature form or
its features take the blocks (``feature_form.materialize_features``). FR from ``fr_sdpa_min_len`` on (when SDPA
runs fused) is not shared: it is exactly SDPA with ``q = R1``, ``k = R2``, ``scale = 1``, O(L) memory. The
thresholds are fields of :class:`~synthformer.attention.settings.FastPathSettings`, read per call; why each is
what it is: docs/benchmarks.md, "Why the fast paths look the way they do".
"""

from __future__ import annotations

import torch

from . import fused, triton_kernels
from .blocks import attend_blocks, attend_fused, attend_triton
from .feature_form import attend_sdpa, materializes, sdpa_runs_fused
from .paths import AttentionCall, register_path
from .settings import current
from .shared_alignment import attend_causal_shared, attend_shared_alignment

__all__ = ["is_materialized", "is_shared"]


def is_shared(call: AttentionCall) -> bool:
    """Whether ``call`` takes one of the shared-alignment paths (its probabilities the same for every sample)."""
    synth = call.synth
    if call.position_bias is not None or call.state is not None or synth.input_dependent:
        return False  # a per-call bias or a decoding step: no table computed once per batch
    if synth is not call.layer.synth:
        return False  # the alignment cache holds the layer's own probabilities, not a grown part's
    long_features = synth.has_features and call.keys >= current().fr_sdpa_min_len
    return not (long_features and sdpa_runs_fused(call.drop, call.v.device))  # long FR: SDPA, no L x L matrix


def is_materialized(call: AttentionCall) -> bool:
    """Whether ``call`` computes its L x L logits in blocks (``blocks``, ``fused`` or ``triton``)."""
    if call.position_bias is not None or is_shared(call):
        return False  # the blocks and kernels take the logits' factors only, no additive bias
    return not call.synth.has_features or materializes(call)


def _triton(call: AttentionCall) -> bool:
    # the kernels hold no decoding state and draw no dropout masks
    return is_materialized(call) and call.state is None and call.drop == 0.0 and triton_kernels.available(call.v.device)


def _fused(call: AttentionCall) -> bool:
    if not is_materialized(call) or call.state is not None:
        return False  # a decoding step has nothing to recompute in a backward pass
    return fused.should_fuse(torch.is_grad_enabled(), call.keys, call.layer.causal and call.start == 0)


def _causal_shared(call: AttentionCall) -> bool:
    training = call.layer.causal and call.key_padding_mask is None and torch.is_grad_enabled()
    # per-sample padding would end the chunks' sharing; without gradients the cached whole matrix is cheaper
    return training and call.keys >= current().causal_shared_min_len and is_shared(call)


def _sdpa(call: AttentionCall) -> bool:
    if not call.synth.has_features or is_shared(call):
        return False
    return call.position_bias is not None or not materializes(call)  # SDPA takes the bias in its additive mask


# The order the rules are asked in (see the table above); a user path slots in by its own priority.
register_path("triton", applies=_triton, priority=70)(attend_triton)
register_path("fused", applies=_fused, priority=60)(attend_fused)
register_path("blocks", applies=is_materialized, priority=50)(attend_blocks)
register_path("causal_shared", applies=_causal_shared, priority=40)(attend_causal_shared)
register_path("shared_alignment", applies=is_shared, priority=30)(attend_shared_alignment)
register_path("sdpa", applies=_sdpa, priority=20)(attend_sdpa)
