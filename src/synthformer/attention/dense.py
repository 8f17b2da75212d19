"""Token-conditioned synthesizing functions: ``D`` (dense, eq. 1-2) and ``FD`` (factorized dense, eq. 5-6).

Each token predicts its own row of logits from itself alone ("condition on X_i" in Table 1): row i of a head
never reads another token. Both share the first layer ``relu(W1 x_i + b1)``; ``W1`` is a d x d projection whose
output is split into the H heads (each head gets a d_h-wide hidden vector computed from the whole token),
which is how Table 1's ``d^2`` term carries over to H heads. With ``head_dim`` the layer's heads are wider or
narrower than ``d / H``: ``W1`` is then d x ``H d_h`` and each head's hidden vector still d_h wide.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .base import SynthesizingFunction, dot_logits, inner_width, split_heads
from .registry import register


class HiddenToLength(SynthesizingFunction):
    """Shared tail of the kinds whose logits are a per-head linear map of a per-token hidden vector.

    ``logits[b, h, i, j] = W2[h, j] . hidden(x)[b, h, i] + b2[h, j]`` for keys ``j < S``; ``W2`` is
    (H, max_len, e) and ``b2`` (H, max_len), cropped to the first S rows. This is a dot product of the query
    feature ``[hidden_i, 1]`` with the learned key ``[W2_j, b2_j]``, so these kinds have a feature form and can
    run through fused scaled-dot-product attention without materializing the L x L logits.

    Cross-attention: each target token predicts its row over the source positions, ``W2`` and ``b2`` cropped to
    the first S rows.
    """

    has_features = True
    token_local = True
    supports_cross = True
    supports_head_dim = True

    def _init_tail(self, hidden_dim: int) -> None:
        bound = 1.0 / math.sqrt(hidden_dim)  # the nn.Linear default for a hidden_dim -> max_len layer
        self.W2 = nn.Parameter(torch.empty(self.n_heads, self.max_len, hidden_dim).uniform_(-bound, bound))
        self.b2 = nn.Parameter(torch.empty(self.n_heads, self.max_len).uniform_(-bound, bound))

    def hidden(self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None) -> Tensor:
        """(B, T, d_model) -> (B, H, T, e)."""
        raise NotImplementedError

    @torch.no_grad()
    def zero_logits_(self) -> None:
        """W2 = 0 and b2 = 0: the logits are 0 and W2's gradient (dS^T hidden) is not."""
        self.W2.zero_()
        self.b2.zero_()

    def features(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        h = self.hidden(x, start, state, key_padding_mask)  # (B, H, T, e)
        s = start + x.shape[1]
        q = torch.cat([h, h.new_ones(h.shape[:-1] + (1,))], dim=-1)  # (B, H, T, e+1)
        k = torch.cat([self.W2[:, :s], self.b2[:, :s, None]], dim=-1).unsqueeze(0)  # (1, H, S, e+1)
        return q, k

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        h = self.hidden(x, start, state, key_padding_mask)  # (B, H, T, e)
        s = start + x.shape[1]
        return dot_logits(h, self.W2[None, :, :s]) + self.b2[:, None, :s]  # (B, H, T, S)

    def cross_logits(self, x: Tensor, keys: int, start: int = 0, memory_k: Tensor | None = None) -> Tensor:
        h = self.hidden(x, start, None, None)  # (B, H, T, e): row i from target token i alone
        # A broadcast product, as the encoder-decoder's cross-attention has always computed it (so training is
        # bitwise the same as before it went through the registry); cross-attention rows are few in decoding.
        return h @ self.W2[:, :keys].transpose(-1, -2) + self.b2[:, None, :keys]  # (B, H, T, S)


@register("D", aliases=("dense",))
class Dense(HiddenToLength):
    """Dense Synthesizer, paper eq. (1)-(3): ``B_i = W2 relu(W1 x_i + b1) + b2``, ``Y = softmax(B) G(X)``.

    Choices the paper leaves open:

    * Per head: ``W1`` (d x d, as in eq. 2) is shared in the sense of multi-head projections: its d outputs are
      split into H slices of width d_h, and head h has its own ``W2_h`` (max_len x d_h) and ``b2_h``. The hidden
      width is therefore d in total, d_h per head (the ICML version writes F per head, ``F_{h,l}``).
    * The first L outputs of ``W2_h`` are used for a batch of length L (cropping, section 3.1).
    * Initialization: PyTorch's ``nn.Linear`` default for both layers.

    Parameters: ``d^2 + d l`` (Table 1) + ``d + H l`` biases.
    """

    paper_name = "Dense"
    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        self.W1 = nn.Linear(d_model, self.inner_dim)
        self._init_tail(self.head_dim)

    def hidden(self, x: Tensor, start: int, state: dict | None, key_padding_mask: Tensor | None) -> Tensor:
        return split_heads(torch.relu(self.W1(x)), self.n_heads)  # (B, T, H d_h) -> (B, H, T, d_h)

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """``W1`` (``d^2`` per token) and ``W2`` (``d_h`` per pair and head, ``d`` in all); ``d`` of the hidden layer
        is ``H d_h`` with ``head_dim``."""
        inner = inner_width(d_model, heads, options.get("head_dim"))
        return batch * (length * d_model * inner + pairs * inner)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``d^2 + d l`` (Table 1) + ``d + H l`` biases; the hidden layer's ``d`` is ``H d_h`` with ``head_dim``."""
        inner = inner_width(d_model, n_heads, options.get("head_dim"))
        return d_model * inner + inner * max_len + inner + n_heads * max_len


def factor_sizes(max_len: int, a: int | None, b: int | None) -> tuple[int, int]:
    """The ``(a, b)`` of FD, with ``a * b >= max_len``.

    Given values are used as they are (the missing one is ``ceil(l / other)``). By default the paper's
    ``a * b = l`` is taken when l has a factor pair within a ratio of 4 (the pair nearest ``sqrt(l)``, a <= b:
    256 -> 16 x 16, 512 -> 16 x 32); otherwise ``a = ceil(sqrt(l))``, ``b = ceil(l / a)`` and the extra columns
    are cropped. An exact pair also lets the flattened outer product be used without a copy.
    """
    if a is None and b is None:
        root = math.isqrt(max_len)
        exact = [d for d in range(root, 0, -1) if max_len % d == 0 and max_len // d <= 4 * d]
        if exact:
            return exact[0], max_len // exact[0]
        a = math.isqrt(max_len - 1) + 1 if max_len > 1 else 1
    if a is None:
        a = -(-max_len // b)
    if b is None:
        b = -(-max_len // a)
    if a < 1 or b < 1 or a * b < max_len:
        raise ValueError(f"FD needs a * b >= max_len with a, b >= 1; got a={a}, b={b}, max_len={max_len}")
    return a, b


@register("FD", aliases=("factorized_dense", "factorised_dense"))
class FactorizedDense(SynthesizingFunction):
    """Factorized Dense Synthesizer, paper eq. (5)-(6): ``C_i = H_A(A_i) * H_B(B_i)``, ``Y = softmax(C) G(X)``.

    Token i predicts ``A_i`` (a values) and ``B_i`` (b values) from the shared hidden vector
    ``relu(W1 x_i + b1)`` (as in ``D``), and its logit for key j is

        ``C_i[j] = A_i[j mod a] * B_i[j div a]``,   j < a*b,

    i.e. ``H_A`` tiles ``A_i`` b times and ``H_B`` repeats each entry of ``B_i`` a times: the flattened outer
    product, so all a*b columns are different products (tiling both sides would give only max(a, b) distinct
    columns, a bug of public implementations). Then cropped to the batch's keys.

    Choices the paper leaves open: ``a*b = l`` in the paper; here options ``a``, ``b`` with ``a*b >= max_len``
    (extra columns cropped), by default an exact factor pair of ``max_len`` near ``sqrt(l)`` when one exists
    (see :func:`factor_sizes`). ``A`` and ``B`` are linear maps of the per-head hidden vector (Table 1's
    ``d(k1 + k2)`` term).

    Cross-attention: target token i predicts its row over the source positions, cropped to the first S columns.

    Parameters: ``d^2 + d (a + b)`` (Table 1) + ``d + H (a + b)`` biases.
    """

    paper_name = "Factorized Dense"
    # No feature form: it would be a*b (about max_len) wide, no cheaper than the logits themselves.
    token_local = True
    supports_cross = True
    supports_head_dim = True
    option_defaults = {"a": None, "b": None}

    def __init__(self, d_model: int, n_heads: int, max_len: int, causal: bool = False, **options):
        super().__init__(d_model, n_heads, max_len, causal, **options)
        self.a, self.b = factor_sizes(max_len, self.options["a"], self.options["b"])
        self.W1 = nn.Linear(d_model, self.inner_dim)
        bound = 1.0 / math.sqrt(self.head_dim)
        self.WA = nn.Parameter(torch.empty(n_heads, self.a, self.head_dim).uniform_(-bound, bound))
        self.bA = nn.Parameter(torch.empty(n_heads, self.a).uniform_(-bound, bound))
        self.WB = nn.Parameter(torch.empty(n_heads, self.b, self.head_dim).uniform_(-bound, bound))
        self.bB = nn.Parameter(torch.empty(n_heads, self.b).uniform_(-bound, bound))

    @torch.no_grad()
    def zero_logits_(self) -> None:
        """WA = 0 and bA = 0: the tiled factor a is 0, so the logits a * b are, while a's gradient is not."""
        self.WA.zero_()
        self.bA.zero_()

    def logit_factors(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """``(A, B)``: (B, H, T, a) and (B, H, T, b); the (T, S) logits of a block are built from them alone."""
        h = split_heads(torch.relu(self.W1(x)), self.n_heads)  # (B, T, H d_h) -> (B, H, T, d_h)
        A = h @ self.WA.transpose(-1, -2) + self.bA[:, None, :]  # (B, H, T, a)
        B = h @ self.WB.transpose(-1, -2) + self.bB[:, None, :]  # (B, H, T, b)
        return A, B

    def logits_from_factors(self, factors: tuple, keys: int) -> Tensor:
        A, B = factors
        # outer[..., q, p] = B[..., q] * A[..., p]; flattening (q, p) gives index j = q*a + p, so
        # p = j mod a (A tiled) and q = j div a (B repeated element-wise).
        # A (b x 1) @ (1 x a) product rather than a broadcast multiply: the same values, but its backward
        # reads the (T, S) gradient once per factor instead of writing a full-size product and summing it
        # (measured on the 2-core CPU, one sample x 4 heads at L=1024: forward+backward 4.7 against 10.1 ms).
        # Only the first ceil(keys / a) entries of B reach a key below ``keys`` (a causal chunk's few keys).
        B = B[..., : -(-keys // A.shape[-1])]
        outer = B.unsqueeze(-1) @ A.unsqueeze(-2)  # (B, H, T, b', 1) @ (B, H, T, 1, a) -> (B, H, T, b', a)
        return outer.flatten(-2)[..., :keys]  # (B, H, T, b'*a) -> (B, H, T, S)

    def query_rows(self, factors: tuple, q0: int, q1: int) -> tuple:
        A, B = factors  # token i's own A_i, B_i: the keys are cropped by ``logits_from_factors``
        return A[..., q0:q1, :], B[..., q0:q1, :]

    def logits(
        self, x: Tensor, start: int = 0, state: dict | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        return self.logits_from_factors(self.logit_factors(x, start), start + x.shape[1])

    def cross_logits(self, x: Tensor, keys: int, start: int = 0, memory_k: Tensor | None = None) -> Tensor:
        return self.logits_from_factors(self.logit_factors(x, start), keys)  # (B, H, T, S)

    @classmethod
    def macs(cls, batch: int, length: int, d_model: int, heads: int, options: dict, pairs: int) -> int:
        """``W1`` (``d^2``) and the A and B heads (``d (a + b)``) per token, the outer product (1 per pair and
        head); the hidden layer's ``d`` is ``H d_h`` with ``head_dim``."""
        a, b = factor_sizes(length, options["a"], options["b"])
        inner = inner_width(d_model, heads, options.get("head_dim"))
        return batch * (length * (d_model * inner + inner * (a + b)) + heads * pairs)

    @classmethod
    def num_params(cls, d_model: int, n_heads: int, max_len: int, **options) -> int:
        """``d^2 + d (a + b)`` (Table 1) + ``d + H (a + b)`` biases; the hidden layer's ``d`` is ``H d_h`` with
        ``head_dim``."""
        opts = cls.resolved_options(**options)
        a, b = factor_sizes(max_len, opts["a"], opts["b"])
        inner = inner_width(d_model, n_heads, opts.get("head_dim"))
        return d_model * inner + inner * (a + b) + inner + n_heads * (a + b)
