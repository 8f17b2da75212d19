"""The token-mixer contract in code: the :class:`TokenMixer` protocol and the checks every mixer shares.

A *token mixer* is any module that mixes information across the positions of a sequence: the synthetic
attention layer (:class:`synthformer.attention.SynthesizerAttention`, one per ``kind``) and the baselines of
:mod:`synthformer.mixers` (LightConv, DynamicConv, Linformer). They are interchangeable in every model because
they satisfy :class:`TokenMixer` and report the same faults with the same exception types:

- ``TypeError``: an unknown constructor option (the message lists the valid ones); ``key_padding_mask`` not a
  bool tensor.
- ``ValueError``: a bad constructor value (``d_model``, ``n_heads``, ``max_len``, ``dropout``, an option's value,
  ``causal=True`` where unsupported); ``x`` of the wrong rank or width, with no positions or longer than
  ``max_len`` (the message names both numbers); ``key_padding_mask`` of the wrong shape; decoding
  (``init_cache``, ``cache=``) on a non-causal mixer.

A wrong *dtype* of the mask is a ``TypeError`` because it is a fault of the argument's type (a float mask is
not a padding mask, whatever its values), while shapes and lengths are faults of values of the right type.

This module imports nothing from synthformer but :mod:`.masking`, so both the attention shell and the baselines
(one layer above) can use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch
from torch import Tensor

from .masking import check_padding_mask

__all__ = [
    "TOKEN_MIXER_MEMBERS",
    "DecodingCache",
    "TokenMixer",
    "check_core_args",
    "check_head_dim",
    "check_input",
    "check_probability",
    "missing_members",
    "reject_unknown_options",
    "resolve_options",
    "supports_causal",
]


@runtime_checkable
class DecodingCache(Protocol):
    """The state a causal token mixer carries between incremental-decoding calls.

    ``length`` is the number of positions consumed so far; the next call's ``key_padding_mask`` covers
    ``length + T`` positions. Always use the cache a call returns.
    """

    length: int

    def nbytes(self) -> int:
        """Bytes held by the cache's tensors."""
        ...

    def reorder(self, index: Tensor) -> DecodingCache:
        """A new cache whose sample ``b`` is this cache's sample ``index[b]`` (beam search)."""
        ...


@runtime_checkable
class TokenMixer(Protocol):
    """What every token mixer provides (checked with ``isinstance(module, TokenMixer)``).

    Construction, by every caller with ``causal`` and ``dropout`` as keywords::

        Cls(d_model: int, n_heads: int, max_len: int, causal=False, dropout=0.0, **options)

    ``options`` are the names declared in ``option_defaults`` (for the attention shell: ``kind`` and the options
    its kind's parts declare); anything else is a ``TypeError`` that lists the valid names.
    """

    #: option name -> default value; the only keyword options the constructor and ``num_params`` accept.
    option_defaults: ClassVar[dict[str, Any]]

    def forward(
        self, x: Tensor, key_padding_mask: Tensor | None = None, cache: Any = None
    ) -> Tensor | tuple[Tensor, Any]:
        """Mix ``x`` (B, L, d_model), 1 <= L <= max_len -> (B, L, d_model).

        ``key_padding_mask`` is (B, L) bool with True at padding (``torch.nn.MultiheadAttention``'s convention).
        With ``cache`` (causal mixers only) ``x`` holds the next T positions, the mask covers every position so
        far, (B, cache.length + T), and the call returns ``(y (B, T, d_model), cache)``.
        """
        ...

    def init_cache(
        self, batch_size: int, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> Any:
        """An empty :class:`DecodingCache` for ``batch_size`` sequences; ``ValueError`` on a non-causal mixer."""
        ...

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options: Any) -> int:
        """Trainable parameters of the module the same arguments build (biases included), without building it."""
        ...


#: The members of :class:`TokenMixer`, for checking a class before it is registered (a test keeps this in
#: step with the protocol).
TOKEN_MIXER_MEMBERS: tuple[str, ...] = ("option_defaults", "forward", "init_cache", "num_params")


def missing_members(cls: type) -> list[str]:
    """The members of :class:`TokenMixer` that the class ``cls`` lacks (empty when it has them all)."""
    missing = [name for name in TOKEN_MIXER_MEMBERS if not hasattr(cls, name)]
    if "option_defaults" not in missing and not isinstance(cls.option_defaults, dict):
        missing.append("option_defaults (a dict)")
    return missing


def supports_causal(cls: type) -> bool:
    """Whether mixers of class ``cls`` can be causal (decoders, incremental decoding).

    A class that cannot (Linformer) declares ``supports_causal = False`` and refuses ``causal=True`` with a
    ``ValueError``; every other mixer, every attention kind included, can.
    """
    return bool(getattr(cls, "supports_causal", True))


# ------------------------------------------------------------------------------------------ options


def reject_unknown_options(owner: str, given: Iterable[str], valid: Iterable[str]) -> None:
    """Raise ``TypeError`` naming every option in ``given`` that is not in ``valid``, listing the valid ones.

    Token mixers take ``**options`` (the contract's constructor signature) instead of plain keyword arguments
    so that a misspelled option is reported with the list of valid ones; nothing is swallowed silently.

    Args:
        owner: what the options are for, as the message should name it (``"LightConv"``,
            ``"attention kind 'FR'"``).
    """
    valid = sorted(valid)
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} for {owner}; valid options: {', '.join(valid) or 'none'}")


def resolve_options(owner: str, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with ``given``, after :func:`reject_unknown_options`."""
    reject_unknown_options(owner, given, defaults)
    return {**defaults, **given}


# ------------------------------------------------------------------------------------------ values


def _is_int(value: Any) -> bool:
    # bool is an int subclass; True as a head count is always a mistake.
    return isinstance(value, int) and not isinstance(value, bool)


def check_probability(owner: str, name: str, value: Any) -> float:
    """Return ``value`` as a float after checking ``0 <= value < 1`` (a dropout rate); else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{owner}: {name} must be a number in [0, 1), got {value!r}")
    return float(value)


def check_head_dim(owner: str, head_dim: Any) -> int | None:
    """Return ``head_dim`` after checking it is None or a positive int; else ``ValueError`` naming the value.

    ``head_dim`` is a layer's attention head width: None keeps ``d_model // n_heads``; an int ``e`` makes the
    layer's inner width ``n_heads * e`` (queries, keys, values and the per-head widths of the kinds), the output
    projection mapping it back to ``d_model`` (T5's ``d_kv``)."""
    if head_dim is not None and (not _is_int(head_dim) or head_dim < 1):
        raise ValueError(f"{owner}: head_dim must be None (d_model // n_heads) or a positive int, got {head_dim!r}")
    return head_dim


def check_core_args(
    owner: str, d_model: Any, n_heads: Any, max_len: Any, dropout: Any, head_dim: Any = None
) -> None:
    """Check the four constructor arguments every token mixer shares, and ``head_dim`` where the mixer takes one;
    ``ValueError`` naming the bad one. ``d_model`` must be divisible by ``n_heads`` unless ``head_dim`` is given
    (the heads then have a width of their own)."""
    for name, value in (("d_model", d_model), ("n_heads", n_heads), ("max_len", max_len)):
        if not _is_int(value) or value < 1:
            raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")
    if check_head_dim(owner, head_dim) is None and d_model % n_heads != 0:
        raise ValueError(
            f"{owner}: d_model={d_model} must be divisible by n_heads={n_heads} "
            "(each head owns d_model // n_heads channels)"
        )
    check_probability(owner, "dropout", dropout)


def check_input(
    owner: str,
    x: Any,
    d_model: int,
    max_len: int,
    key_padding_mask: Any,
    past_len: int = 0,
) -> Tensor | None:
    """Check the input of a mixer's ``forward``; return the validated mask (or None).

    Args:
        owner: name used in the messages.
        x: (B, L, d_model) the new positions.
        d_model: the mixer's width.
        max_len: longest sequence the mixer accepts (``past_len + L`` must not exceed it).
        key_padding_mask: None or (B, past_len + L) bool, True marks padding.
        past_len: number of positions already consumed by an incremental-decoding cache.

    Raises:
        TypeError: ``x`` is not a tensor, or the mask is not a bool tensor.
        ValueError: wrong rank or width, no positions, longer than ``max_len``, or a mask of the wrong shape.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{owner}: expected x to be a tensor of shape (B, L, d_model={d_model}), got {type(x)}")
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{owner}: expected x of shape (B, L, d_model={d_model}), got {tuple(x.shape)}")
    batch, length = x.shape[0], x.shape[1]
    if length < 1:
        raise ValueError(f"{owner}: expected at least one position, got x of shape {tuple(x.shape)}")
    total = past_len + length
    if total > max_len:
        detail = f" ({past_len} cached + {length} new)" if past_len else ""
        raise ValueError(f"{owner}: sequence length {total}{detail} exceeds max_len={max_len}")
    return check_padding_mask(key_padding_mask, batch, total, owner)
