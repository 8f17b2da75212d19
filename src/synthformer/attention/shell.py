"""``SynthesizerAttention``: the one attention layer every kind goes through.

The layer computes ``Y = softmax(S(X)) G(X)`` followed by an output projection (paper eq. 3, 4, 6, 7, 8).
The synthesizing function ``S`` (one registered kind, or a mixture of several) produces only the logits; this
shell owns everything else, the same way for every kind: the value projection ``G``, causal and padding masks,
the softmax, attention dropout, the output projection, the decoding cache, and the choice of execution path for
each call (:mod:`.paths`: the reference and SDPA paths here, the optional fast paths in :mod:`.fast`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from synthformer.common import map_tensors, sum_tensors, tensor_nbytes

from . import sdpa  # noqa: F401 - registers the SDPA path (paths.py registers the reference)
from .base import SynthesizingFunction, inner_width, merge_heads, split_heads
from .contract import check_core_args, check_head_dim, reject_unknown_options
from .masking import check_padding_mask, check_positions, disallowed, masked_softmax
from .mixture import Mixture
from .paths import AttentionCall, dispatch
from .registry import canonical_kind, parse_kind


@dataclass
class AttentionCache:
    """Decoding state of one causal attention layer.

    Attributes:
        values: (B, H, max_len, d_h) the value vectors ``G(x)`` of every position so far (preallocated).
        length: number of positions already processed.
        state: what the synthesizing function needs besides values (keys for ``V``, the last inputs of a
            convolution); empty for R, Fix, FR, D and FD, whose caches therefore hold values only.
    """

    values: Tensor
    length: int = 0
    state: dict = field(default_factory=dict)

    def nbytes(self) -> int:
        """Bytes held by the cache's tensors."""
        return sum_tensors(self, tensor_nbytes)  # no ``method``: walks the fields, does not call nbytes again

    def reorder(self, index: Tensor) -> AttentionCache:
        """A new cache whose sample b is this cache's sample ``index[b]`` (beam search); this one is unchanged."""
        return map_tensors(self, lambda t: t.index_select(0, index))


class _ValueOf(torch.autograd.Function):
    """``value`` in the forward pass, ``graded``'s gradient in the backward pass: a grown mixture's exact start
    with the whole mixture's gradient (see ``SynthesizerAttention._attend_grown``). Both (B, H, T, d_h)."""

    @staticmethod
    def forward(ctx: Any, value: Tensor, graded: Tensor) -> Tensor:
        return value.clone()  # a new tensor: an input returned as is would be a view, refusing in-place changes

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[None, Tensor]:
        return None, grad


#: Options of the whole layer, not of one kind: ``bias`` (biases in the value and output projections, and in the
#: projections of every part that declares ``bias``, V's Q and K) and ``scaled`` (the ``1/sqrt(d_h)`` of V's dot
#: product, for the parts that declare it). T5 sets both to False (no biases; the scale folded into the
#: initialisation of Q).
LAYER_OPTIONS: dict[str, Any] = {"bias": True, "scaled": True}


def take_head_dim(owner: str, options: dict[str, Any]) -> tuple[int | None, dict[str, Any]]:
    """``(head_dim, the other options)`` of a layer's ``options``: ``head_dim`` (None when absent, i.e.
    ``d_model // n_heads``) is the layer's head width, for the shell and every part alike, not a kind option.
    ``ValueError`` naming a value that is neither None nor a positive int."""
    rest = dict(options)
    return check_head_dim(owner, rest.pop("head_dim", None)), rest


def own_head_dim(d_model: int, n_heads: int, head_dim: int | None) -> int | None:
    """``head_dim``, or None where it is ``d_model // n_heads`` anyway: the layer is then built exactly as without
    it (the same parameters, drawn in the same order), by every kind, a user's included."""
    return None if head_dim is not None and head_dim * n_heads == d_model else head_dim


def split_layer_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(layer options with their defaults, the remaining kind options)`` of a layer's ``options``."""
    layer = {name: options.get(name, default) for name, default in LAYER_OPTIONS.items()}
    for name, value in layer.items():
        if not isinstance(value, bool):
            raise ValueError(f"attention option {name}={value!r}: expected True or False")
    return layer, {k: v for k, v in options.items() if k not in LAYER_OPTIONS}


def _split_options(parts: list[type[SynthesizingFunction]], options: dict[str, Any], kind: str) -> list[dict]:
    """Give each part the options it declares; an option no part declares is an error. Layer options
    (:data:`LAYER_OPTIONS`) go to every part that declares them and are never an error."""
    layer, options = split_layer_options(options)
    reject_unknown_options(f"attention kind {kind!r}", options, {name for p in parts for name in p.option_defaults})
    return [{k: v for k, v in {**options, **layer}.items() if k in p.option_defaults} for p in parts]


def build_synth(
    kind: str,
    d_model: int,
    n_heads: int,
    max_len: int,
    causal: bool,
    options: dict[str, Any],
    cross: bool = False,
    head_dim: int | None = None,
) -> SynthesizingFunction:
    """The synthesizing function of ``kind``: one registered part, or a :class:`Mixture` of the ``+``-joined ones.

    Each part gets the options it declares (an option no part declares raises ``TypeError``); with ``cross`` the
    parts are built for cross-attention (see :class:`SynthesizingFunction`); ``head_dim`` (None: ``d_model //
    n_heads``) is every part's head width (a part that does not support one raises ``ValueError``).
    """
    parts = parse_kind(kind)
    part_options = _split_options(parts, options, kind)
    # given only when set: a kind of a user's whose constructor takes no head_dim builds as it always has
    mode = {"cross": True} if cross else {}
    if head_dim is not None:
        mode["head_dim"] = head_dim
    built = [
        cls(d_model, n_heads, max_len, causal, **opts, **mode) for cls, opts in zip(parts, part_options, strict=True)
    ]
    return built[0] if len(built) == 1 else Mixture(built, n_heads)


class SynthesizerAttention(nn.Module):
    """Multi-head synthetic attention of any registered ``kind`` (paper section 3).

    Args:
        d_model: model width d (divisible by ``n_heads``).
        n_heads: number of heads H.
        max_len: largest sequence length l; length-dependent parameters are sized for it and cropped to the
            batch's length. Longer inputs raise ``ValueError``.
        kind: the synthesizing function in the paper's notation: ``V`` (dot product), ``R`` (random, trained),
            ``Fix`` (random, frozen), ``FR`` (factorized random), ``D`` (dense), ``FD`` (factorized dense),
            ``Conv``, ``ConvReluConv``, ``Bottleneck``, ``GLU`` (appendix A.2), or a ``+``-joined mixture
            (``R+V``, ``D+V``, ``R+D``, ``FR+D``, ...). Long names (``random``, ``dense``, ...) are aliases.
        causal: mask future keys (decoders). Convolutional kinds then read only past tokens.
        dropout: dropout on the attention probabilities (training only).
        **options: kind options, e.g. ``k`` (FR rank, default 8), ``a``/``b`` (FD factors), ``init_std``
            (R, Fix), ``conv_width`` (Conv, ConvReluConv), ``r`` (Bottleneck). Unknown options raise. And the
            layer's ``head_dim`` (T5's ``d_kv``): the width d_h of each head, None (the default) for
            ``d_model // n_heads``. Given, the values (and V's queries and keys, the kinds' per-head hidden layers)
            are ``n_heads * head_dim`` wide, the output projection maps them back to ``d_model``, and ``d_model``
            need not be divisible by ``n_heads``.

    Shapes:
        ``forward(x, key_padding_mask)``: x (B, L, d_model), key_padding_mask (B, L) bool with True at padding;
        returns (B, L, d_model). ``attention_weights`` returns (B, H, L, L). Inside, values and the decoding cache
        are (B, H, L, d_h).

    Example:
        >>> attn = SynthesizerAttention(d_model=64, n_heads=4, max_len=32, kind="R+V")
        >>> attn(torch.randn(2, 10, 64)).shape
        torch.Size([2, 10, 64])
    """

    #: The token-mixer contract's declared options: ``kind``; each kind's own options (``k``, ``a``, ``b``, ...)
    #: are declared by its synthesizing function (``option_defaults`` of the registered parts); ``bias`` and
    #: ``scaled`` are the layer options (:data:`LAYER_OPTIONS`), ``head_dim`` the head width (None: d / H).
    option_defaults: ClassVar[dict[str, Any]] = {"kind": "V", **LAYER_OPTIONS, "head_dim": None}
    #: ``forward`` takes ``positions`` (left padding); the models pass them only to mixers that declare this
    takes_positions: ClassVar[bool] = True

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        max_len: int,
        kind: str = "V",
        causal: bool = False,
        dropout: float = 0.0,
        **options: Any,
    ):
        super().__init__()
        owner = type(self).__name__
        head_dim, options = take_head_dim(owner, options)
        check_core_args(owner, d_model, n_heads, max_len, dropout, head_dim)
        head_dim = own_head_dim(d_model, n_heads, head_dim)
        self.synth: SynthesizingFunction = build_synth(kind, d_model, n_heads, max_len, causal, options,
                                                       head_dim=head_dim)
        bias = split_layer_options(options)[0]["bias"]
        self.kind = canonical_kind(kind)
        self.d_model, self.n_heads, self.max_len = d_model, n_heads, max_len
        #: d_h, the width of one head's values; ``inner_dim`` = H d_h, of all heads (d_model by default)
        self.head_dim = self.synth.head_dim
        self.inner_dim = self.synth.inner_dim
        self.causal = causal
        self.dropout = dropout
        self.value = nn.Linear(d_model, self.inner_dim, bias=bias)  # G(X), paper eq. (3)
        self.out = nn.Linear(self.inner_dim, d_model, bias=bias)
        #: Use the fast paths (chosen per call by the path registry, ``paths.dispatch``); False forces the
        #: reference path :meth:`attend_reference`. Both compute the same function.
        self.use_fast_paths = True

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, kind: str = "V", **options: Any) -> int:
        """Trained parameters of the layer: the synthesizing function(s) (Table 1 plus biases), the mixture
        weights (H per part when mixed) and the value and output projections (``2 d^2 + 2 d``; ``2 d^2`` with
        ``bias=False``; ``2 d H d_h + H d_h + d`` with ``head_dim``).

        Raises ``ValueError`` where the layer could not be built with ``head_dim`` (a part that does not support
        one)."""
        head_dim, options = take_head_dim(cls.__name__, options)
        head_dim = own_head_dim(d_model, n_heads, head_dim)
        parts = parse_kind(kind)
        width = {}
        if head_dim is not None:
            if refused := [p.name for p in parts if not p.supports_head_dim]:
                raise ValueError(f"attention kind(s) {', '.join(refused)} of {kind!r} do not take "
                                 f"head_dim={head_dim!r} (their classes do not declare supports_head_dim = True)")
            width = {"head_dim": head_dim}
        total = sum(
            p.num_params(d_model, n_heads, max_len, **o, **width)
            for p, o in zip(parts, _split_options(parts, options, kind), strict=True)
        )
        if len(parts) > 1:
            total += n_heads * len(parts)
        bias = split_layer_options(options)[0]["bias"]
        inner = inner_width(d_model, n_heads, head_dim)
        return total + 2 * d_model * inner + ((inner + d_model) if bias else 0)

    def extra_repr(self) -> str:
        width = f", head_dim={self.head_dim}" if self.inner_dim != self.d_model else ""
        return f"kind={self.kind!r}{width}, causal={self.causal}, dropout={self.dropout}"

    # ------------------------------------------------------------------ checks
    def _check_input(self, x: Tensor, start: int) -> None:
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"expected input of shape (batch, length, {self.d_model}), got {tuple(x.shape)}")
        if x.shape[1] < 1:
            raise ValueError("expected at least one position, got length 0")
        end = start + x.shape[1]
        if end > self.max_len:
            what = f"length {end}" if start == 0 else f"length {end} ({start} cached + {x.shape[1]} new)"
            raise ValueError(f"sequence {what} exceeds max_len {self.max_len} of this attention layer; build the "
                             f"layer with max_len >= {end} or pass shorter sequences")
        weight = self.value.weight
        if x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
            # PyTorch would fail later with a bare "mat1 and mat2 must have the same dtype"
            raise TypeError(f"input dtype {x.dtype} differs from the layer's parameters ({weight.dtype}): convert "
                            f"the layer (layer.to({x.dtype})) or the input (x.to({weight.dtype})), or run the "
                            "forward pass under torch.autocast")

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        x: Tensor,
        key_padding_mask: Tensor | None = None,
        cache: AttentionCache | None = None,
        position_bias: Tensor | None = None,
        positions: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, AttentionCache]:
        """Attend. See the class docstring for shapes; with ``cache`` returns ``(y, cache)``.

        In decoding (``cache`` given, causal layers only) ``x`` holds the next T positions and
        ``key_padding_mask``, if given, covers every position so far: (B, cache.length + T).

        ``position_bias``: (1 or B, H, T, cache.length + T), added to the logits before the masks and the softmax
        (T5's relative position bias; see :meth:`probabilities`). Every kind takes it, since every kind's
        attention is a softmax over logits; in a mixture it is added once, to the mixed logits
        ``sum_n alpha_n S_n(X)``. The paths that cannot add it (the shared alignment of R, Fix, FR, whose
        probabilities are computed once for the batch) fall back to the plain path; the feature kinds (V, D,
        their mixtures) keep SDPA, with the bias in its additive mask.

        ``positions``: (B, cache.length + T) integer or None, the position of every key column (the queries are
        the last T): left-padded rows, whose positions count their real tokens (Hugging Face's ``position_ids``
        convention), so that a padded row gets the logits it gets alone (R's ``R[pos_i, pos_j]``, D's column
        ``pos_j``, ...; see :meth:`SynthesizingFunction.positioned_logits`). None: position = column (the plain
        case). Given positions take the plain materialized path: the fast paths assume the column order (the
        shared alignment is one table for the batch, the blocks and kernels crop the length axis).
        """
        start = 0
        if cache is not None:
            if not self.causal:
                raise ValueError("incremental decoding needs a causal attention layer (causal=True)")
            start = cache.length
        self._check_input(x, start)
        b, t, _ = x.shape
        s = start + t
        key_padding_mask = check_padding_mask(key_padding_mask, b, s)
        positions = check_positions(positions, key_padding_mask, b, s)
        if position_bias is not None and (position_bias.dim() != 4 or tuple(position_bias.shape[1:]) != (
                self.n_heads, t, s) or position_bias.shape[0] not in (1, b)):
            raise ValueError(f"position_bias must have shape (1 or {b}, {self.n_heads}, {t}, {s}) (batch, heads, "
                             f"queries, keys), got {tuple(position_bias.shape)}")
        v = split_heads(self.value(x), self.n_heads)  # (B, H, T, d_h)
        state = None
        if cache is not None:
            cache.values[:, :, start:s] = v
            v = cache.values[:, :, :s]  # (B, H, S, d_h)
            state = cache.state
        grown = self.synth.grown_view() if isinstance(self.synth, Mixture) else None
        if grown is None:
            y = self._attend(x, v, start, state, key_padding_mask, position_bias, positions)
        else:
            y = self._attend_grown(grown, x, v, start, state, key_padding_mask, position_bias, positions)
        y = self.out(merge_heads(y))  # (B, H, T, d_h) -> (B, T, d)
        if cache is not None:
            cache.length = s
            return y, cache
        return y

    def _attend(
        self,
        x: Tensor,
        v: Tensor,
        start: int,
        state: dict | None,
        key_padding_mask: Tensor | None,
        position_bias: Tensor | None,
        positions: Tensor | None,
        synth: SynthesizingFunction | None = None,
    ) -> Tensor:
        """``softmax(mask(S(X) + position_bias)) G(X)`` by the execution path the registry picks
        (:func:`~synthformer.attention.paths.select_path`), with ``synth`` as S (default the layer's):
        (B, H, T, d_h)."""
        synth = self.synth if synth is None else synth
        return dispatch(AttentionCall(self, synth, x, v, start, state, key_padding_mask, position_bias, positions))

    def _attend_grown(
        self,
        grown: SynthesizingFunction,
        x: Tensor,
        v: Tensor,
        start: int,
        state: dict | None,
        key_padding_mask: Tensor | None,
        position_bias: Tensor | None,
        positions: Tensor | None,
    ) -> Tensor:
        """:meth:`_attend` of a mixture in its grown state (its new parts' logits exactly zero, see
        :meth:`Mixture.grown_view`), whose function is then its pretrained part's alone: computed by that part's
        own paths (``grown``), so the output is the pretrained layer's bit for bit: (B, H, T, d_h).

        When the new parts need a gradient, the value still comes from ``grown`` and the gradient from the whole
        mixture's ordinary path, computed as well (the new parts' gradients exist only there: SDPA's backward
        does not give the logits' gradient); when the backward pass reaches it the mixture leaves the grown state
        (an update follows). With attention dropout in training the two passes would draw different masks, so
        the ordinary path alone serves (the start then matches to rounding).
        """
        args = (x, v, start, state, key_padding_mask, position_bias, positions)
        mixture = self.synth
        assert isinstance(mixture, Mixture)  # only mixtures have a grown state
        if not (torch.is_grad_enabled() and mixture.new_parts_learn()):
            return self._attend(*args, synth=grown)
        full = self._attend(*args)  # (B, H, T, d_h), with the graph of every part
        full.register_hook(lambda grad: mixture.end_growth())
        if self.training and self.dropout > 0:
            return full
        # With gradients on, as V's own pass: SDPA picks its CPU kernel by whether its inputs need a gradient
        # (T5's learned position bias does); the graph is dropped at once.
        exact = self._attend(*args, synth=grown).detach()
        return _ValueOf.apply(exact, full)

    def probabilities(
        self,
        x: Tensor,
        start: int,
        state: dict | None,
        key_padding_mask: Tensor | None,
        position_bias: Tensor | None = None,
        positions: Tensor | None = None,
        synth: SynthesizingFunction | None = None,
    ) -> Tensor:
        """The attention probabilities ``softmax(mask(S(X) + position_bias))`` without dropout: (B or 1, H, T, S).

        Args:
            x: (B, T, d_model) the input at the query positions ``start .. start+T-1``.
            start: position of ``x[:, 0]`` (nonzero only in incremental decoding).
            state: the synthesizing function's decoding state, or None.
            key_padding_mask: (B, start+T) bool, True at padding, or None.
            position_bias: (1|B, H, T, S) added to the logits, or None.
            positions: (B, S) the position of every key column (left padding), or None (column j is position j).
            synth: the synthesizing function, default the layer's.
        """
        t = x.shape[1]
        synth = self.synth if synth is None else synth
        if positions is None:
            logits = synth.logits(x, start, state, key_padding_mask)  # (B|1, H, T, S)
        else:
            logits = synth.positioned_logits(x, start, state, key_padding_mask, positions)  # (B, H, T, S)
        if position_bias is not None:
            logits = logits + position_bias.to(logits.dtype)  # (B|1, H, T, S)
        mask = disallowed(t, start + t, start, self.causal, key_padding_mask, x.device)
        return masked_softmax(logits, mask)

    def attend_reference(
        self,
        x: Tensor,
        v: Tensor,
        start: int = 0,
        state: dict | None = None,
        key_padding_mask: Tensor | None = None,
        position_bias: Tensor | None = None,
        positions: Tensor | None = None,
        synth: SynthesizingFunction | None = None,
    ) -> Tensor:
        """The reference path, the definition every other path is tested against:
        ``dropout(softmax(mask(S(X) + position_bias))) @ V`` with the L x L probabilities materialized (the
        logits at ``positions`` (B, S) when given; ``synth`` as S, default the layer's). ``v``: (B, H, S, d_h) the
        values; the other arguments as :meth:`probabilities`.

        Returns (B, H, T, d_h).
        """
        probs = self.probabilities(x, start, state, key_padding_mask, position_bias, positions, synth)
        probs = F.dropout(probs, self.dropout, self.training)
        return probs @ v  # (B|1, H, T, S) @ (B, H, S, d_h) -> (B, H, T, d_h)

    @torch.no_grad()
    def attention_weights(
        self, x: Tensor, key_padding_mask: Tensor | None = None, position_bias: Tensor | None = None
    ) -> Tensor:
        """The attention probabilities (no dropout): (B, H, L, L); rows sum to 1 (0 for fully masked rows)."""
        self._check_input(x, 0)
        key_padding_mask = check_padding_mask(key_padding_mask, x.shape[0], x.shape[1])
        probs = self.probabilities(x, 0, None, key_padding_mask, position_bias)
        return probs.expand(x.shape[0], -1, -1, -1)

    # ------------------------------------------------------------------ decoding
    def init_cache(self, batch_size: int, device=None, dtype=None) -> AttentionCache:
        """An empty decoding cache for ``batch_size`` sequences (causal layers only)."""
        if not self.causal:
            raise ValueError("incremental decoding needs a causal attention layer (causal=True)")
        device = device if device is not None else self.value.weight.device
        dtype = dtype if dtype is not None else self.value.weight.dtype
        values = torch.zeros(batch_size, self.n_heads, self.max_len, self.head_dim, device=device, dtype=dtype)
        return AttentionCache(values=values, length=0, state=self.synth.init_state(batch_size, device, dtype))
