"""The speed wing's execution paths of :class:`SynthesizerAttention`, their rules and their order, in one table.

Each path computes the same function as the reference path ``dropout(softmax(mask(S(X) + bias))) @ G(X)``
(tests compare them for every kind); :mod:`synthformer.attention.paths` asks the rules highest priority first and
runs the first path that applies. :func:`register` registers them (the wing's ``__init__`` calls it once, unless
the wing is disabled); ``reference`` and ``sdpa`` are the shell's own, and :func:`register` gives ``sdpa`` the
rule below in place of the shell's "every feature kind". The rules below are mutually exclusive except where a
path refines another (``triton`` and ``fused`` serve some of the calls ``blocks`` would; ``causal_shared`` some
of ``shared_alignment``'s), which is what the priorities order. Calls with ``call.fast`` False take the
reference path before any rule is asked; the wing adds one reason for that, a decoding step of at most
``decode_plain_max_new`` positions.

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
thresholds are fields of :class:`~synthformer.attention.fast.settings.FastPathSettings`, read per call; why each
is what it is: docs/benchmarks.md, "Why the fast paths look the way they do".
"""

from __future__ import annotations

import torch

from ..paths import AttentionCall, reference_only_when, register_path, unregister_path
from . import fused, triton_kernels
from .blocks import attend_blocks, attend_fused, attend_triton
from .feature_form import attend_sdpa, materializes, sdpa_runs_fused
from .settings import current
from .shared_alignment import attend_causal_shared, attend_shared_alignment

__all__ = ["is_materialized", "is_shared", "register"]


def _not_shared(call: AttentionCall) -> str | None:
    """Why ``call`` takes no shared-alignment path, or None when it does (its probabilities the same for every
    sample)."""
    synth = call.synth
    if call.position_bias is not None:
        return "a position bias (per call, no table computed once per batch)"
    if call.state is not None:
        return "a decoding step (no table computed once per batch)"
    if synth.input_dependent:
        return f"{synth.name} is input-dependent (each sample has its own probabilities)"
    if synth is not call.layer.synth:
        return "a grown mixture's part (the alignment cache holds the layer's own probabilities)"
    if synth.has_features and call.keys >= (limit := current().fr_sdpa_min_len) and sdpa_runs_fused(
            call.drop, call.v.device):
        return f"long feature-form call ({call.keys} keys >= fr_sdpa_min_len={limit}): SDPA, no L x L matrix"
    return None


def is_shared(call: AttentionCall) -> bool:
    """Whether ``call`` takes one of the shared-alignment paths (its probabilities the same for every sample)."""
    return _not_shared(call) is None


def _not_materialized(call: AttentionCall) -> str | None:
    """Why ``call`` does not compute its L x L logits in blocks, or None when it does."""
    if call.position_bias is not None:
        return "a position bias (the blocks and kernels take the logits' factors only, no additive bias)"
    if is_shared(call):
        return "a shared call (one table for the batch)"
    if call.synth.has_features and not materializes(call):
        return f"{call.synth.name}'s feature form runs through SDPA at {call.keys} keys (feature_form settings)"
    return None


def is_materialized(call: AttentionCall) -> bool:
    """Whether ``call`` computes its L x L logits in blocks (``blocks``, ``fused`` or ``triton``)."""
    return _not_materialized(call) is None


def _not_triton(call: AttentionCall) -> str | None:
    if not triton_kernels.available(call.v.device):
        return f"the Triton kernels do not serve {call.v.device.type} tensors (settings.triton={current().triton!r})"
    if (reason := _not_materialized(call)) is not None:
        return reason
    if call.state is not None:  # the kernels hold no decoding state and draw no dropout masks
        return "a decoding step (the kernels hold no decoding state)"
    return f"attention dropout {call.drop:g} (the kernels draw no masks)" if call.drop != 0.0 else None


def _not_fused(call: AttentionCall) -> str | None:
    if (reason := _not_materialized(call)) is not None:
        return reason
    if call.state is not None:
        return "a decoding step (nothing to recompute in a backward pass)"
    causal = call.layer.causal and call.start == 0
    if fused.should_fuse(torch.is_grad_enabled(), call.keys, causal):
        return None
    settings = current()
    if settings.fused == "never":
        return "settings.fused is 'never'"
    if not torch.is_grad_enabled():
        return "no gradients (nothing to save: the plain blocks run in one pass)"
    name = "fuse_min_keys_causal" if causal else "fuse_min_keys"
    return f"{call.keys} keys < {name}={getattr(settings, name)}"


def _not_causal_shared(call: AttentionCall) -> str | None:
    if not call.layer.causal:
        return "a bidirectional layer"
    if call.key_padding_mask is not None:  # per-sample padding would end the chunks' sharing
        return "a padding mask (per-sample padding ends the chunks' sharing)"
    if not torch.is_grad_enabled():  # without gradients the cached whole matrix is cheaper
        return "no gradients (the cached whole matrix is cheaper)"
    if call.keys < (limit := current().causal_shared_min_len):
        return f"{call.keys} keys < causal_shared_min_len={limit}"
    return _not_shared(call)


def _not_sdpa(call: AttentionCall) -> str | None:
    if not call.synth.has_features:
        return f"{call.synth.name} has no feature form (q k^T)"
    if is_shared(call):
        return "a shared call (one table for the batch)"
    if call.position_bias is None and materializes(call):  # SDPA takes a bias in its additive mask
        return f"{call.synth.name}'s features take the materialized blocks at {call.keys} keys (feature_form settings)"
    return None


def _decoding_step(call: AttentionCall) -> str | None:
    """Why a decoding step takes the reference path, or None: its (T, S) logits are small, and the other paths
    would copy the whole cache at every step."""
    if call.state is not None and call.queries <= (most := current().decode_plain_max_new):
        return f"a decoding step of {call.queries} position(s), at most decode_plain_max_new={most}"
    return None


def register() -> None:
    """Register the wing's paths, its rule for ``sdpa`` and its reference-only reason (once: a second call
    raises, as :func:`~synthformer.attention.register_path` does for a name taken)."""
    reference_only_when(_decoding_step)
    # The order the rules are asked in (see the table above); a user path slots in by its own priority.
    # Each rule is the reason it gives: a path serves a call where its reason is None (``paths.explain_call``).
    register_path("triton", why_not=_not_triton, priority=70)(attend_triton)
    register_path("fused", why_not=_not_fused, priority=60)(attend_fused)
    register_path("blocks", why_not=_not_materialized, priority=50)(attend_blocks)
    register_path("causal_shared", why_not=_not_causal_shared, priority=40)(attend_causal_shared)
    register_path("shared_alignment", why_not=_not_shared, priority=30)(attend_shared_alignment)
    unregister_path("sdpa")  # the shell's rule (every feature kind) gives way to the one that knows the others
    register_path("sdpa", why_not=_not_sdpa, priority=20)(attend_sdpa)
