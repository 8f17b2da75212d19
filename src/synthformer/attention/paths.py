"""The execution paths of the attention shell: a name -> path table, a dispatch rule, and a call counter.

Every path computes the same function, ``dropout(softmax(mask(S(X) + bias))) @ G(X)`` for one call of
:class:`~synthformer.attention.SynthesizerAttention`; they differ only in speed and memory. A path is a function
of one :class:`AttentionCall` returning (B, H, T, d_h), registered with a rule (``applies(call) -> bool``) and a
priority. For each call the shell asks :func:`dispatch`, which runs the first path, highest priority first, whose
rule applies; the ``"reference"`` path (the shell's :meth:`attend_reference`, the L x L probabilities
materialized) applies to every call and has the lowest priority, so there is always one. Calls the fast paths
cannot serve (``call.fast`` False: the layer's ``use_fast_paths`` off, per-row ``positions``, or a reason added by
:func:`reference_only_when`, such as the speed wing's "a decoding step of a few positions") take the reference
path without asking the rules.

A user adds a path from a file of their own, without editing the library::

    from synthformer.attention import register_path

    def unmasked_banded(call):
        return isinstance(call.synth, Banded) and call.key_padding_mask is None and call.position_bias is None

    @register_path("banded", applies=unmasked_banded, priority=80)
    def banded(call):
        ...  # (B, H, T, d_h)

docs/extending.md, "An execution path", walks through one.
This package registers two paths, ``reference`` (here) and ``sdpa`` (:mod:`.sdpa`, the feature kinds through
PyTorch's fused kernel); the optional speed wing :mod:`synthformer.attention.fast` registers the others and their
priorities when it is loaded. Every dispatch is counted under the
path's name (:func:`path_calls`, :func:`reset_path_calls`), so tests can check which path served a call, and
:func:`explain_call` says for a call why each other path does not serve it (a rule registered with ``why_not``
gives its reason; ``synthformer bench --explain CONFIG`` prints it per layer of a model).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor

from .base import SynthesizingFunction

_log = logging.getLogger(__name__)

__all__ = [
    "AttentionCall",
    "AttentionLayer",
    "ExecutionPath",
    "PathChoice",
    "describe_call",
    "dispatch",
    "explain_call",
    "get_path",
    "observe_paths",
    "path_calls",
    "reference_only_when",
    "register_path",
    "registered_paths",
    "reset_path_calls",
    "select_path",
    "unregister_path",
]


class AttentionLayer(Protocol):
    """What a path may read of the layer (:class:`~synthformer.attention.SynthesizerAttention` has it all)."""

    synth: SynthesizingFunction
    n_heads: int
    causal: bool
    dropout: float
    training: bool
    use_fast_paths: bool

    #: ``probabilities(x, start, state, key_padding_mask, position_bias=None, positions=None, synth=None)``:
    #: (B|1, H, T, S), the masked softmax without dropout
    probabilities: Callable[..., Tensor]
    #: ``attend_reference(x, v, start=0, state=None, key_padding_mask=None, position_bias=None, positions=None,
    #: synth=None)``: (B, H, T, d_h), the reference path
    attend_reference: Callable[..., Tensor]


@dataclass
class AttentionCall:
    """One call of the layer's attention, as every path and rule receives it.

    Attributes:
        layer: the attention layer (for ``n_heads``, ``causal``, ``dropout``, ``training``, its public methods).
        synth: the synthesizing function to compute with (the layer's, or a grown mixture's pretrained part).
        x: (B, T, d_model) the input at the T query positions.
        v: (B, H, S, d_h) the values of every key position (S = start + T).
        start: position of ``x[:, 0]`` (nonzero only in incremental decoding).
        state: the synthesizing function's decoding state, or None outside decoding.
        key_padding_mask: (B, S) bool, True at padding, or None.
        position_bias: (1|B, H, T, S) added to the logits, or None.
        positions: (B, S) the position of every key column (left padding), or None.
    """

    layer: AttentionLayer
    synth: SynthesizingFunction
    x: Tensor
    v: Tensor
    start: int = 0
    state: dict | None = None
    key_padding_mask: Tensor | None = None
    position_bias: Tensor | None = None
    positions: Tensor | None = None
    _features: tuple[Tensor, Tensor] | None = field(default=None, repr=False)

    @property
    def queries(self) -> int:
        """T, the positions this call computes."""
        return self.x.shape[1]

    @property
    def keys(self) -> int:
        """S = start + T, the key positions attended over."""
        return self.start + self.x.shape[1]

    @property
    def drop(self) -> float:
        """The attention dropout probability of this call (0 outside training)."""
        return self.layer.dropout if self.layer.training else 0.0

    @property
    def fast(self) -> bool:
        """Whether any path but the reference may serve this call."""
        return self.why_reference_only() is None

    def why_reference_only(self) -> str | None:
        """Why only the reference path may serve this call, or None when every path's rule is asked."""
        if not self.layer.use_fast_paths:
            return "the layer's use_fast_paths is off"
        if self.positions is not None:  # the fast paths assume column j is position j (one table, cropped axes)
            return "per-row key positions (left padding)"
        for rule in _REFERENCE_ONLY:
            if (reason := rule(self)) is not None:
                return reason
        return None

    def features(self) -> tuple[Tensor, Tensor]:
        """``synth.features(...)`` of this call, computed once (rules and the path that runs share it): the
        pair (q, k), (B|1, H, T, e) and (B|1, H, S, e). Computed once also because V's writes its keys into the
        decoding state."""
        if self._features is None:
            self._features = self.synth.features(self.x, self.start, self.state, self.key_padding_mask)
        return self._features


#: What a path computes: (B, H, T, d_h) for one call.
PathFunction = Callable[[AttentionCall], Tensor]
#: Whether a path serves a call.
PathRule = Callable[[AttentionCall], bool]
#: Why a path does not serve a call (one sentence), or None when it does: a rule that explains itself.
PathReason = Callable[[AttentionCall], "str | None"]
#: Told of every dispatched call and the path chosen for it (:func:`observe_paths`).
PathObserver = Callable[[AttentionCall, "ExecutionPath"], None]


@dataclass(frozen=True)
class ExecutionPath:
    """A registered path: ``run(call)`` where ``applies(call)``; higher ``priority`` is asked first. ``why_not``,
    when the path was registered with one, says why it does not serve a call (:meth:`reason`)."""

    name: str
    run: PathFunction
    applies: PathRule
    priority: int
    order: int  # registration order: breaks ties of priority (the earlier first)
    why_not: PathReason | None = None

    def reason(self, call: AttentionCall) -> str | None:
        """Why this path does not serve ``call`` by its own rule (None: it applies)."""
        if self.why_not is not None:
            return self.why_not(call)
        return None if self.applies(call) else "its rule does not apply (the path was registered without reasons)"


_PATHS: dict[str, ExecutionPath] = {}
_BY_PRIORITY: list[ExecutionPath] = []
_CALLS: Counter = Counter()  # written by dispatch() only
_OBSERVERS: list[PathObserver] = []
_REFERENCE_ONLY: list[PathReason] = []  # reference_only_when(), asked after the layer's own reasons
REFERENCE = "reference"


def _always(call: AttentionCall) -> bool:
    return True


def register_path(
    name: str, applies: PathRule | None = None, priority: int | None = None, *, why_not: PathReason | None = None
) -> Callable[[PathFunction], PathFunction]:
    """Decorator: register ``fn(call) -> (B, H, T, d_h)`` as the path ``name`` for the calls where ``applies``.

    ``why_not(call) -> str | None`` may stand for ``applies`` (the path serves a call where it returns None) or
    come beside it; it is what :func:`synthformer.attention.explain_call` and ``synthformer bench --explain``
    show for a call the path does not serve.

    Raises:
        ValueError: ``name`` already registered (unregister it first), or not a non-empty string; neither
            ``applies`` nor ``why_not`` given; ``priority`` not an integer.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a path name must be a non-empty string, got {name!r}")
    if name in _PATHS:
        raise ValueError(f"attention path {name!r} is already registered; registered: {registered_paths()}")
    if applies is None and why_not is None:
        raise ValueError(f"attention path {name!r}: give its rule, applies=... or why_not=...")
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ValueError(f"attention path {name!r}: priority must be an integer, got {priority!r}")
    rule = applies if applies is not None else (lambda call: why_not(call) is None)

    def wrap(fn: PathFunction) -> PathFunction:
        order = max((p.order for p in _PATHS.values()), default=-1) + 1
        _PATHS[name] = ExecutionPath(name, fn, rule, priority, order, why_not)
        _BY_PRIORITY[:] = sorted(_PATHS.values(), key=lambda p: (-p.priority, p.order))
        return fn

    return wrap


def reference_only_when(reason: PathReason) -> Callable[[], None]:
    """Send to the reference path, before any rule is asked, every call for which ``reason(call)`` gives a
    sentence (None: no objection); asked after the layer's own reasons (``use_fast_paths`` off, per-row
    positions), in the order added. Returns the function that removes it. The speed wing adds its "a decoding step
    of a few positions" this way."""
    _REFERENCE_ONLY.append(reason)
    return lambda: _REFERENCE_ONLY.remove(reason)


def unregister_path(name: str) -> None:
    """Remove the path ``name`` (for tests and experiments); the reference path cannot be removed."""
    if name == REFERENCE or name not in _PATHS:
        raise ValueError(f"cannot unregister attention path {name!r}; removable: "
                         f"{[n for n in registered_paths() if n != REFERENCE]}")
    del _PATHS[name]
    _BY_PRIORITY[:] = [p for p in _BY_PRIORITY if p.name != name]


def registered_paths() -> list[str]:
    """Names of the registered paths in the order :func:`select_path` asks them (highest priority first)."""
    return [p.name for p in _BY_PRIORITY]


def get_path(name: str) -> ExecutionPath:
    """The registered path ``name``; ``ValueError`` listing the registered ones when unknown."""
    if name not in _PATHS:
        raise ValueError(f"unknown attention path {name!r}; registered: {registered_paths()}")
    return _PATHS[name]


def select_path(call: AttentionCall) -> ExecutionPath:
    """The path that serves ``call``: the reference path when ``call.fast`` is False, else the first by priority
    whose rule applies (the reference path applies to every call)."""
    if not call.fast:
        return _PATHS[REFERENCE]
    return next(p for p in _BY_PRIORITY if p.applies(call))


def dispatch(call: AttentionCall) -> Tensor:
    """Run the path :func:`select_path` picks for ``call`` and count it: (B, H, T, d_h). Observers
    (:func:`observe_paths`) are told, and a debug log line says why, once per layer and call shape
    (:func:`explain_call`)."""
    path = select_path(call)
    _CALLS[path.name] += 1
    for observer in _OBSERVERS:
        observer(call, path)
    if _log.isEnabledFor(logging.DEBUG):
        _log_choice_once(call, path)
    return path.run(call)


def observe_paths(observer: PathObserver) -> Callable[[], None]:
    """Tell ``observer(call, path)`` of every dispatched call from now on; returns the function that stops it."""
    _OBSERVERS.append(observer)
    return lambda: _OBSERVERS.remove(observer)


@dataclass(frozen=True)
class PathChoice:
    """One registered path for one call: chosen or not, and why not (None for the chosen one)."""

    path: str
    priority: int
    chosen: bool
    reason: str | None


def explain_call(call: AttentionCall) -> list[PathChoice]:
    """For every registered path, in the order :func:`select_path` asks them, whether it serves ``call`` and, if
    not, why: its own rule's reason, the call being one only the reference serves, or a path asked before it
    that serves the call. Asking runs the rules only (no path), as :func:`dispatch` would."""
    chosen = select_path(call)
    first = call.why_reference_only()
    out = []
    for p in _BY_PRIORITY:
        if p is chosen:
            out.append(PathChoice(p.name, p.priority, True, None))
            continue
        reason = first if first is not None else p.reason(call)
        if reason is None:  # its rule applies: a path asked earlier serves the call
            reason = f"applies, but {chosen.name!r} is asked first (higher priority)"
        out.append(PathChoice(p.name, p.priority, False, reason))
    return out


def describe_call(call: AttentionCall) -> str:
    """``"<kind>, T=.., S=.., training|no grad[, decoding]"``: what a call's path choice depends on, in words."""
    grad = "training" if call.layer.training and torch.is_grad_enabled() else (
        "gradients on" if torch.is_grad_enabled() else "no grad")
    extra = ", decoding" if call.state is not None else ""
    extra += ", padding mask" if call.key_padding_mask is not None else ""
    extra += ", position bias" if call.position_bias is not None else ""
    return f"{call.synth.name}, {'causal' if call.layer.causal else 'bidirectional'}, T={call.queries}, " \
           f"S={call.keys}, {grad}{extra}, {call.v.device.type}"


_LOGGED: set[tuple] = set()


def _log_choice_once(call: AttentionCall, path: ExecutionPath) -> None:
    key = (id(call.layer), call.queries, call.keys, call.layer.training, torch.is_grad_enabled(),
           call.state is None, call.key_padding_mask is None, call.position_bias is None)
    if key in _LOGGED:
        return
    _LOGGED.add(key)
    others = "; ".join(f"{c.path}: {c.reason}" for c in explain_call(call) if not c.chosen)
    _log.debug("attention path %r for %s (others: %s)", path.name, describe_call(call), others)


def path_calls() -> Counter:
    """Calls served per path name since the last :func:`reset_path_calls` (a copy; absent names read 0)."""
    return Counter(_CALLS)


def reset_path_calls() -> None:
    """Set every path's call count to zero."""
    _CALLS.clear()


@register_path(REFERENCE, applies=_always, priority=-(2**31))  # below any other path's priority
def reference(call: AttentionCall) -> Tensor:
    """The plain path: the layer's :meth:`attend_reference` (probabilities materialized, the function's
    definition)."""
    return call.layer.attend_reference(
        call.x, call.v, call.start, call.state, call.key_padding_mask, call.position_bias, call.positions, call.synth
    )
