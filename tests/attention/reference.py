"""The slow reference: every kind written straight from the paper's equations, loops over tokens and heads.

This is the test oracle. It shares no code with the library: it reads the module's parameters by name and
recomputes, for each sample b, head h, query i and key j, the logit the paper defines, then the masked
softmax and ``Y = softmax(S) G(X)`` followed by the output projection. It is deliberately naive.

Cross-attention (:func:`reference_cross_forward`) uses the same logits with the target token at position
``start + i`` as the query and the source position j as the key (V's key computed from the source token).

Head widths are read from the parameters' shapes (the value projection's rows, V's query rows, the hidden layer's
rows of D, FD, ConvReluConv and GLU), never from the module's bookkeeping, so a layer built with ``head_dim``
(heads wider or narrower than d / H) is checked against the same equations.

Equation numbers refer to the ICLR version of the paper (../shared/paper/synthesizer-iclr-version.md).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _relu(t: Tensor) -> Tensor:
    return t.clamp(min=0)


def _sigmoid(t: Tensor) -> Tensor:
    return 1.0 / (1.0 + torch.exp(-t))


def _plus_bias_rows(linear, h: Tensor, rows: slice) -> Tensor:
    return h if linear.bias is None else h + linear.bias[rows]


def _head_rows(h: int, width: int) -> slice:
    return slice(h * width, (h + 1) * width)


def _inner_rows(part) -> int:
    """The rows of the per-head projection a kind splits into its heads (H d_h), from its parameters' shapes."""
    name = type(part).__name__
    if name == "DotProduct":
        return part.query.weight.shape[0] if hasattr(part, "query") else part.qk.weight.shape[0] // 2  # Q rows
    if name in ("Dense", "FactorizedDense"):
        return part.W1.weight.shape[0]
    if name == "GatedDense":
        return part.W1.weight.shape[0] // 2  # the unit's output: value rows, then gate rows
    if name == "ConvReluConv":
        return part.conv1.weight.shape[0]
    return 0  # the kinds without one (R, Fix, FR, Conv, Bottleneck): head_dim is their values' alone


def _window_positions(i: int, width: int, causal: bool) -> list[int]:
    """Positions read by a width-f convolution at position i: the past in causal layers, else centered."""
    first = i - (width - 1) if causal else i - (width - 1) // 2
    return [first + t for t in range(width)]


def _token(x: Tensor, p: int, pad: list[bool]) -> Tensor:
    """x_p, or zeros outside the sequence or at padding."""
    if 0 <= p < x.shape[0] and not pad[p]:
        return x[p]
    return torch.zeros_like(x[0])


def logit(
    part, x: Tensor, pad: list[bool], h: int, i: int, j: int, causal: bool, start: int = 0, memory: Tensor | None = None
) -> Tensor:
    """The logit S(X)[h, i, j] of one synthesizing function for one sample x (L, d).

    Cross-attention (``memory`` (S, d) given): token ``x[i]`` is the target token at position ``start + i`` and j
    a source position; V's key is computed from ``memory[j]``, the other kinds read no source token.
    """
    name = type(part).__name__
    pos = start + i  # the query's position (R's row, R1's row)
    inner = _inner_rows(part)  # H d_h where the kind splits a projection into heads
    dh = inner // part.n_heads
    rows = _head_rows(h, dh)
    if name == "Mixture":
        # eq. (8): sum_n alpha_n S_n(X), alpha = softmax of the learned per-head logits
        w = part.alpha_logits[h]
        alpha = torch.exp(w) / torch.exp(w).sum()
        return sum(alpha[n] * logit(p, x, pad, h, i, j, causal, start, memory) for n, p in enumerate(part.parts))
    # T5's V (options bias=False, scaled=False): no biases, no 1/sqrt(d_h)
    scale = 1 / math.sqrt(dh) if name == "DotProduct" and part.options.get("scaled", True) else 1.0
    if name == "DotProduct" and memory is not None:
        # cross-attention: Q from the target token, K from the source token, separate projections
        q = _plus_bias_rows(part.query, part.query.weight[rows] @ x[i], rows)
        k = _plus_bias_rows(part.key, part.key.weight[rows] @ memory[j], rows)
        return (q * k).sum() * scale
    if name == "DotProduct":
        # S = Q K^T / sqrt(d_h), Q = X W_Q + b_Q, K = X W_K + b_K (fused weights: Q rows first, then K)
        Wq, Wk = part.qk.weight[:inner][rows], part.qk.weight[inner:][rows]
        q, k = Wq @ x[i], Wk @ x[j]
        if part.qk.bias is not None:
            q, k = q + part.qk.bias[:inner][rows], k + part.qk.bias[inner:][rows]
        return (q * k).sum() * scale
    if name in ("Random", "FixedRandom"):
        return part.R[h, pos, j]  # eq. (4)
    if name == "FactorizedRandom":
        return (part.R1[h, pos] * part.R2[h, j]).sum()  # eq. (7): (R1 R2^T)_ij
    if name == "Dense":
        # eq. (1)-(2): B_i = W2 relu(W1 x_i + b1) + b2, head h's slice of the hidden layer and its own W2
        hidden = _relu(part.W1.weight[rows] @ x[i] + part.W1.bias[rows])
        return (part.W2[h, j] * hidden).sum() + part.b2[h, j]
    if name == "FactorizedDense":
        # eq. (5)-(6): A_i, B_i from token i; C_i[j] = A_i[j mod a] * B_i[j div a]
        hidden = _relu(part.W1.weight[rows] @ x[i] + part.W1.bias[rows])
        A = part.WA[h] @ hidden + part.bA[h]
        B = part.WB[h] @ hidden + part.bB[h]
        return A[j % part.a] * B[j // part.a]
    if name == "Bottleneck":
        r = part.r
        hidden = _relu(part.W1.weight[_head_rows(h, r)] @ x[i] + part.W1.bias[_head_rows(h, r)])
        return (part.W2[h, j] * hidden).sum() + part.b2[h, j]
    if name == "GatedDense":
        u = part.W1.weight[:inner] @ x[i] + part.W1.bias[:inner]
        g = part.W1.weight[inner:] @ x[i] + part.W1.bias[inner:]
        hidden = (u * _sigmoid(g))[rows]
        return (part.W2[h, j] * hidden).sum() + part.b2[h, j]
    if memory is not None:
        raise NotImplementedError(f"no cross-attention reference for {name}")
    if name == "Conv":
        f = part.width
        total = part.bias[h, j]
        for t, p in enumerate(_window_positions(i, f, causal)):
            total = total + (part.weight[h, j, :, t] * _token(x, p, pad)).sum()
        return total
    if name == "ConvReluConv":
        f = part.width
        length = x.shape[0]

        def hidden_at(p: int) -> Tensor:
            if not (0 <= p < length) or pad[p]:
                return torch.zeros(inner, dtype=x.dtype)
            acc = part.conv1.bias.clone()
            for t, p2 in enumerate(_window_positions(p, f, causal)):
                acc = acc + part.conv1.weight[:, :, t] @ _token(x, p2, pad)
            return _relu(acc)

        total = part.bias2[h, j]
        for t, p in enumerate(_window_positions(i, f, causal)):
            total = total + (part.weight2[h, j, :, t] * hidden_at(p)[rows]).sum()
        return total
    raise NotImplementedError(f"no reference for {name}")


def _attend(logits: list[Tensor], values: list[Tensor], width: int, dtype: torch.dtype) -> Tensor:
    """sum_j softmax(logits)_j values_j over the allowed keys (one logit and value each); zeros when none is."""
    y = torch.zeros(width, dtype=dtype)
    if not logits:  # a query with no allowed key gets zeros
        return y
    m = max(float(t.detach()) for t in logits)
    e = [torch.exp(t - m) for t in logits]
    z = sum(e)
    for ej, vj in zip(e, values, strict=True):
        y = y + (ej / z) * vj
    return y


def _plus_bias(linear, h: Tensor) -> Tensor:
    return h if linear.bias is None else h + linear.bias


def reference_forward(
    attn, x: Tensor, key_padding_mask: Tensor | None = None, position_bias: Tensor | None = None
) -> Tensor:
    """Y = softmax(mask(S(X) + position_bias)) G(X), then the output projection; x (B, L, d) -> (B, L, d);
    position_bias (1|B, H, L, L) or None."""
    B, L, d = x.shape
    H = attn.n_heads
    dh = attn.value.weight.shape[0] // H  # the values' head width: d / H, or the layer's head_dim
    synth = attn.synth
    outputs = []
    for b in range(B):
        pad = [bool(key_padding_mask[b, j]) if key_padding_mask is not None else False for j in range(L)]
        v = [_plus_bias(attn.value, attn.value.weight @ x[b, j]) for j in range(L)]  # G(X), eq. (3)
        rows_out = []
        for i in range(L):
            heads = []
            for h in range(H):
                allowed = [j for j in range(L) if not pad[j] and (not attn.causal or j <= i)]
                logits = [logit(synth, x[b], pad, h, i, j, attn.causal) for j in allowed]
                if position_bias is not None:
                    bias = position_bias[min(b, position_bias.shape[0] - 1), h, i]  # (L,)
                    logits = [t + bias[j] for t, j in zip(logits, allowed, strict=True)]
                heads.append(_attend(logits, [v[j][_head_rows(h, dh)] for j in allowed], dh, x.dtype))
            rows_out.append(_plus_bias(attn.out, attn.out.weight @ torch.cat(heads)))
        outputs.append(torch.stack(rows_out))
    return torch.stack(outputs)


def reference_weights(attn, x: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
    """The attention probabilities (B, H, L, L) from the same equations."""
    B, L, _ = x.shape
    out = torch.zeros(B, attn.n_heads, L, L, dtype=x.dtype)
    for b in range(B):
        pad = [bool(key_padding_mask[b, j]) if key_padding_mask is not None else False for j in range(L)]
        for h in range(attn.n_heads):
            for i in range(L):
                allowed = [j for j in range(L) if not pad[j] and (not attn.causal or j <= i)]
                if not allowed:
                    continue
                logits = torch.stack([logit(attn.synth, x[b], pad, h, i, j, attn.causal) for j in allowed])
                probs = torch.softmax(logits, 0)
                for n, j in enumerate(allowed):
                    out[b, h, i, j] = probs[n]
    return out


def reference_cross_forward(
    attn, x: Tensor, memory: Tensor, memory_padding_mask: Tensor | None = None, start: int = 0
) -> Tensor:
    """Cross-attention: Y = softmax(mask(S(X, M))) G(M), then the output projection.

    x (B, T, d) the target tokens at positions ``start ..``, memory (B, S, d); returns (B, T, d). A target
    token whose source is all padding gets zero attention output (so its row is the output bias).
    """
    B, T, d = x.shape
    S = memory.shape[1]
    H = attn.n_heads
    dh = attn.value.weight.shape[0] // H  # the values' head width
    outputs = []
    for b in range(B):
        pad = [bool(memory_padding_mask[b, j]) if memory_padding_mask is not None else False for j in range(S)]
        v = [_plus_bias(attn.value, attn.value.weight @ memory[b, j]) for j in range(S)]  # G(M), values of the source
        allowed = [j for j in range(S) if not pad[j]]
        rows_out = []
        for i in range(T):
            heads = []
            for h in range(H):
                logits = [logit(attn.synth, x[b], [], h, i, j, False, start, memory[b]) for j in allowed]
                heads.append(_attend(logits, [v[j][_head_rows(h, dh)] for j in allowed], dh, x.dtype))
            rows_out.append(_plus_bias(attn.out, attn.out.weight @ torch.cat(heads)))
        outputs.append(torch.stack(rows_out))
    return torch.stack(outputs)
