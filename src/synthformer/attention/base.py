"""The interface every synthesizing function implements.

A synthesizing function ``S`` maps the layer input to attention logits; the layer is then
``Y = softmax(S(X)) G(X)`` (paper eq. 3, 4, 6, 7, 8). Subclasses compute only the logits (and, when they can,
a low-rank *feature* form of them), never values, masks or the softmax.

Conventions shared by all kinds:

* ``d`` below is ``d_model``, ``H`` the number of heads, ``d_h`` the head width, ``l`` = ``max_len``. ``d_h`` is
  ``d / H`` unless the layer is given ``head_dim`` (T5's ``d_kv``): the layer's inner width ``H d_h`` (values,
  V's queries and keys, the per-head hidden layers of D, FD, ConvReluConv and GLU) then differs from ``d``, and
  the output projection maps it back to ``d``. A kind sizes its per-head widths with ``self.head_dim`` and
  ``self.inner_dim`` and declares ``supports_head_dim``; every kind of the library does.
* Parameters that depend on length are sized for ``max_len`` and cropped to the batch's positions
  (paper section 3.1, "On parameters depending on sequence length").
* Cross-attention (the decoder's attention over an encoder memory; ``SynthesizerCrossAttention`` in
  :mod:`~synthformer.attention.cross`) reuses the same kinds, built with ``cross=True``. Its queries are the
  target tokens at positions ``start .. start+T-1`` and its keys the S source positions. A kind that can form
  those logits sets ``supports_cross`` and implements :meth:`~SynthesizingFunction.cross_logits`: R, Fix and FR
  crop their tables to (target rows, source columns), the token-local kinds (D, FD, Bottleneck, GLU) let each
  target token predict its row, cropped to S, and V projects the memory into keys once per source batch
  (:meth:`~SynthesizingFunction.memory_keys`, cached in decoding). Kinds that read a window of neighbouring
  query tokens (the convolutions) would need target-side decoding state in the cross layer: unsupported.
* Parameter counts follow Table 1 of the paper, which is written for a single head of width ``d``. For
  ``H`` heads the projections that read the token (Q and K of ``V``, ``W1`` of ``D``) are split along their
  output, as in multi-head attention, so the count *for the layer* equals Table 1's with ``d = d_model``
  (``V``: ``2d^2``, ``D``: ``d^2 + d l``), while ``R`` and ``FR`` add their ``l^2`` and ``2 l k`` per head.
  Biases are listed separately in each ``num_params`` docstring. With ``head_dim`` given, ``d`` in the counts of
  the projections' outputs reads ``H d_h`` (``V``: ``2 d H d_h``); ``num_params`` takes it as ``head_dim=``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from .contract import check_head_dim, reject_unknown_options


class SynthesizingFunction(nn.Module):
    """Base class of a synthesizing function (one part of a ``kind``).

    Args:
        d_model: model width ``d``.
        n_heads: number of heads ``H`` (``d_model`` must be divisible by it unless ``head_dim`` is given).
        max_len: largest sequence length ``l``; length-dependent parameters are sized for it.
        causal: whether the layer is causal (decoders). Logits are masked by the shell either way; kinds that
            read neighbouring tokens (the convolutions) use it to read only the past.
        cross: build for cross-attention (only kinds with ``supports_cross``; never causal): the layer then calls
            :meth:`memory_keys` and :meth:`cross_logits` instead of :meth:`logits`.
        head_dim: the head width ``d_h``; None is ``d_model // n_heads``. Only kinds with ``supports_head_dim``
            take another value (``ValueError`` otherwise).
        **options: kind-specific options, declared in ``option_defaults``.
    """

    name: ClassVar[str] = ""
    #: The paper's name of the kind ("Random" for R, Table 1), for figures and tables; "" where the paper has
    #: none but the registered name (the appendix kinds).
    paper_name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    #: False for kinds whose logits do not depend on the input (R, Fix, FR): one alignment for the batch.
    input_dependent: ClassVar[bool] = True
    #: True for kinds whose logit row i is computed from token i alone (D, FD, Bottleneck, GLU).
    token_local: ClassVar[bool] = False
    #: True for kinds whose row i reads neighbouring tokens through the synthesizing function itself
    #: (the convolutions). They zero padded positions of their own inputs, so padding cannot leak in.
    reads_context: ClassVar[bool] = False
    #: True when ``features`` is implemented: logits == q_feat @ k_feat^T (lets the shell use fused SDPA).
    has_features: ClassVar[bool] = False
    #: True when the kind computes query-key dot products (it is then charged for Q and K).
    uses_qk: ClassVar[bool] = False
    #: True when the kind can serve as cross-attention (implements :meth:`cross_logits`; see the module docstring).
    supports_cross: ClassVar[bool] = False
    #: Width e of the per-head memory keys :meth:`memory_keys` returns in cross mode; 0 for kinds whose cross
    #: logits read no source token (all but V). Set per instance.
    memory_key_width: int = 0
    #: True when the kind sizes its per-head widths with ``self.head_dim`` / ``self.inner_dim`` (and its
    #: ``num_params`` and ``macs`` with the ``head_dim`` they are given), so that a layer may set ``head_dim``.
    #: False (the default, for kinds registered outside the library) refuses a ``head_dim`` other than
    #: ``d_model // n_heads`` with a ``ValueError`` rather than failing on a shape.
    supports_head_dim: ClassVar[bool] = False
    #: option name -> default value.
    option_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        max_len: int,
        causal: bool = False,
        cross: bool = False,
        head_dim: int | None = None,
        **options: Any,
    ):
        super().__init__()
        if cross and not self.supports_cross:
            raise ValueError(
                f"attention kind {self.name!r} cannot be used for cross-attention (its supports_cross is False)"
            )
        if cross and causal:
            raise ValueError("cross-attention attends over a whole memory: it cannot be causal")
        reject_unknown_options(f"attention kind {self.name!r}", options, self.option_defaults)
        check_head_dim(f"attention kind {self.name!r}", head_dim)
        if head_dim is not None and head_dim * n_heads != d_model and not self.supports_head_dim:
            raise ValueError(
                f"attention kind {self.name!r} does not take head_dim={head_dim!r} (heads of a width other than "
                f"d_model // n_heads = {d_model // n_heads}): its class does not declare supports_head_dim = True"
            )
        self.d_model = d_model
        self.n_heads = n_heads
        #: d_h, the width of one head's values (and of V's queries and keys)
        self.head_dim = d_model // n_heads if head_dim is None else head_dim
        #: H * d_h, the width of the values of all heads together (d_model unless head_dim is given)
        self.inner_dim = n_heads * self.head_dim
        self.max_len = max_len
        self.causal = causal
        #: built for cross-attention (target queries over memory positions) rather than self-attention
        self.cross = cross
        self.options = {**self.option_defaults, **options}

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        """Attention logits for the queries at positions ``start .. start+T-1`` over keys ``0 .. start+T-1``.

        Args:
            x: (B, T, d_model) the input at the query positions (the whole sequence when ``start == 0``
                and no ``state`` is given).
            start: position of ``x[:, 0]``; nonzero only in incremental decoding.
            state: this function's decoding state (from :meth:`init_state`), updated in place, or None.
            key_padding_mask: (B, start+T) bool, True at padding, or None. Only kinds that read neighbouring
                tokens need it (masking the logits is the shell's job).

        Returns:
            (B, H, T, start+T) logits, or (1, H, T, start+T) for input-independent kinds.
        """
        raise NotImplementedError

    def positioned_logits(
        self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None, positions: Tensor
    ) -> Tensor:
        """:meth:`logits` with each key column at its row's own position instead of its column index.

        Left padding puts a row's tokens further right than their positions (Hugging Face's ``position_ids``
        convention: a token's position counts the real tokens before it); a kind whose logits read positions
        must then index its length axis at ``positions``: key j of row b is position ``positions[b, j]``.

        Args:
            x, start, state, key_padding_mask: as for :meth:`logits`.
            positions: (B, start+T) long, the position of every key column; the queries are the last T columns.
                ``0 <= positions[b, j] <= j`` (checked by the shell).

        Returns:
            (B, H, T, start+T) logits.

        Default, for the kinds whose row i is computed from tokens and whose key axis is the length axis (D, FD,
        Bottleneck, GLU, the convolutions): the logits over the columns (column j stands for position j)
        gathered at each key's position; every needed column exists since ``positions[b, j] <= j``.
        Input-independent kinds index their query axis by position too and override this (R, Fix, FR); V's keys
        are tokens, not positions (it overrides it with its plain logits).
        """
        if not self.input_dependent:
            raise NotImplementedError(f"attention kind {self.name!r} must index its queries by position")
        logits = self.logits(x, start, state, key_padding_mask)  # (B, H, T, S): column j is position j
        b, h, t, s = positions.shape[0], logits.shape[1], logits.shape[2], positions.shape[1]
        index = positions[:, None, None, :].expand(b, h, t, s)  # (B, S) -> (B, H, T, S)
        return logits.expand(b, -1, -1, -1).gather(-1, index)  # (B, H, T, S)

    def features(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Low-rank form of :meth:`logits`: ``(q, k)`` with ``logits == q @ k.transpose(-1, -2)``.

        Shapes: q (B or 1, H, T, e), k (B or 1, H, start+T, e). Only when ``has_features`` is True.
        """
        raise NotImplementedError(f"attention kind {self.name!r} has no feature form")

    def logit_factors(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple:
        """The tensors the logits are built from, for computing them a block of samples and heads at a time.

        Returns a tuple (nested tuples and None allowed) of tensors shaped (B or 1, H or 1, ...): batch on axis
        0 and heads on axis 1, each of size 1 when shared. Contract (tested for every kind): cutting every
        factor to samples ``I`` and heads ``J`` on those axes and calling :meth:`logits_from_factors` gives
        ``logits(...)[I, J]``. This lets the shell process (few samples, few heads) blocks whose L x L logits
        fit the CPU's caches. Default: the feature pair ``(q, k)`` when the kind has one, else the logits
        themselves (correct for any kind, only without savings in computing them).
        """
        if self.has_features:
            return self.features(x, start, state, key_padding_mask)
        return (self.logits(x, start, state, key_padding_mask),)

    def logits_from_factors(self, factors: tuple, keys: int) -> Tensor:
        """Logits (b, h, T, keys) from (a block of) :meth:`logit_factors`' output."""
        if self.has_features:
            q, k = factors
            return dot_logits(q, k)
        return factors[0]

    def query_rows(self, factors: tuple, q0: int, q1: int) -> tuple:
        """The factors of queries ``q0 .. q1-1`` over keys ``0 .. q1-1`` (views of ``factors``, same tree).

        Contract (tested for every kind): ``logits_from_factors(query_rows(f, q0, q1), q1)`` equals
        ``logits_from_factors(f, S)[..., q0:q1, :q1]`` for the factors of a call with ``start == 0``. Causal
        layers use it to skip the logits above the diagonal. Default: the feature pair's query rows and leading
        keys, or the logits' (q0:q1, :q1) corner.
        """
        if self.has_features:
            q, k = factors
            return q[..., q0:q1, :], k[..., :q1, :]
        return (factors[0][..., q0:q1, :q1],)

    def memory_keys(self, memory: Tensor) -> Tensor | None:
        """Cross-attention: what the logits read from the encoder memory, computed once per source batch.

        Args:
            memory: (B, S, d_model) the encoder output.

        Returns:
            (B, H, S, memory_key_width), kept in the decoding cache; None (the default) for kinds whose cross
            logits read no source token.
        """
        return None

    def cross_logits(self, x: Tensor, keys: int, start: int = 0, memory_k: Tensor | None = None) -> Tensor:
        """Cross-attention logits of target queries over the source positions ``0 .. keys-1``.

        Only for kinds with ``supports_cross``, built with ``cross=True``. Masking (source padding) is the
        shell's job, as in self-attention.

        Args:
            x: (B, T, d_model) the target tokens at positions ``start .. start+T-1``.
            keys: S, the number of source positions (``<= max_len``).
            start: position of ``x[:, 0]`` in the target; nonzero in incremental decoding.
            memory_k: what :meth:`memory_keys` returned for the memory, or None.

        Returns:
            (B, H, T, S) logits, or (1, H, T, S) for input-independent kinds.
        """
        raise NotImplementedError(f"attention kind {self.name!r} has no cross-attention logits")

    def init_state(self, batch_size: int, device, dtype) -> dict:
        """Decoding state this function needs besides the values (empty for most kinds)."""
        return {}

    # Growing a mixture from a pretrained part (``init_from`` a V run into R+V): the pretrained part's logits are
    # multiplied by 1 / alpha, the new parts' logits start at exactly zero, so the mixture computes the pretrained
    # logits at step 0 while every new parameter still receives a gradient.
    @torch.no_grad()
    def zero_logits_(self) -> None:
        """Make this part's logits exactly 0 for every input, in place, keeping a nonzero gradient for its
        parameters (the last factor of the logits is zeroed, not every one). Kinds that cannot raise
        ``NotImplementedError``."""
        raise NotImplementedError(f"attention kind {self.name!r} cannot start at zero logits (growing a mixture "
                                  "from a pretrained model supports new R, FR, D, FD, Bottleneck and GLU parts)")

    @torch.no_grad()
    def scale_logits_(self, factor: Tensor) -> None:
        """Multiply this part's logits of head h by ``factor[h]`` ((H,) tensor), in place, through its
        parameters. Kinds that cannot raise ``NotImplementedError``."""
        raise NotImplementedError(f"attention kind {self.name!r} cannot rescale its logits (growing a mixture "
                                  "from a pretrained model keeps a pretrained V part)")

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options: Any) -> int:
        """Trained parameters of this synthesizing function (Table 1 of the paper plus biases); ``options`` may hold
        ``head_dim`` (:func:`inner_width`)."""
        raise NotImplementedError

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict[str, Any], pairs: int) -> int:
        """Multiply-adds of this kind's logits in one forward pass over ``batch`` sequences of ``length`` tokens.

        Counted for ``synthformer.bench.flops.layer_macs`` (the shell's own work, values and output projection and
        ``P @ V``, is counted there). ``options``: the kind's resolved options, with ``head_dim`` added when the layer
        sets one (:func:`inner_width`); ``pairs``: query-key pairs per sequence (``L^2``, or ``L (L + 1) / 2``
        causal), so products over pairs count only what a causal layer needs. Every kind declares it; this default
        names what to add.
        """
        raise NotImplementedError(
            f"attention kind {cls.name!r} declares no multiply-add count: add a classmethod "
            f"macs(batch, length, d_model, heads, options, pairs) -> int to {cls.__name__}"
        )

    @classmethod
    def resolved_options(cls, **options: Any) -> dict[str, Any]:
        return {**cls.option_defaults, **options}

    def extra_repr(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in self.options.items())
        width = f", head_dim={self.head_dim}" if self.inner_dim != self.d_model else ""
        return f"heads={self.n_heads}{width}, max_len={self.max_len}, causal={self.causal}" + (
            f", {opts}" if opts else "")


def inner_width(d_model: int, n_heads: int, head_dim: int | None) -> int:
    """``H d_h``, the width of a layer's values (and V's queries and keys): ``n_heads * head_dim``, or ``d_model``
    when ``head_dim`` is None (``d_model // n_heads`` per head). For the ``num_params`` and ``macs`` classmethods,
    which are given ``head_dim`` in their options."""
    return d_model if head_dim is None else n_heads * head_dim


def dot_logits(q: Tensor, k: Tensor) -> Tensor:
    """``q @ k^T`` for q (B or 1, H, T, e) and k (B or 1, H, S, e) -> (B or 1, H, T, S).

    A key shared by the batch (batch 1, e.g. D's learned keys ``W2``) is not copied per sample, as a broadcast
    ``matmul`` would do: the batch is folded into the rows of one GEMM per head.
    """
    if k.shape[0] == 1 and q.shape[0] > 1:
        b, h, t, e = q.shape
        rows = q.transpose(0, 1).reshape(h, b * t, e)  # (B, H, T, e) -> (H, B*T, e)
        out = torch.bmm(rows, k[0].transpose(1, 2))  # (H, B*T, S)
        return out.view(h, b, t, -1).transpose(0, 1)  # (H, B, T, S) -> (B, H, T, S)
    return q @ k.transpose(-1, -2)


def split_heads(t: Tensor, n_heads: int) -> Tensor:
    """(B, T, H*e) -> (B, H, T, e)."""
    b, t_len, width = t.shape
    return t.view(b, t_len, n_heads, width // n_heads).transpose(1, 2)  # (B, H, T, e)


def merge_heads(y: Tensor) -> Tensor:
    """(B, H, T, e) -> (B, T, H*e), the inverse of :func:`split_heads`."""
    b, h, t_len, e = y.shape
    return y.transpose(1, 2).reshape(b, t_len, h * e)  # (B, H, T, e) -> (B, T, H, e) -> (B, T, H*e)
