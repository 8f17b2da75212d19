"""Sampling continuations from a trained language model (``synthformer generate`` on an ``lm`` run)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from ..contract import Generated, GenerateOptions

if TYPE_CHECKING:
    from ..contract import LoadedRun

__all__ = ["SuppressTokens", "sample_continuations"]

logger = logging.getLogger(__name__)


class SuppressTokens(nn.Module):
    """A language model whose logits for some ids are -inf, so that sampling never draws them.

    An LM trained on running text never sees ``<pad>``, ``<bos>`` or ``<eos>`` as targets; an undertrained one
    still gives them some probability, and drawing one would produce an invisible token. The wrapper offers
    what :func:`synthformer.generate.sample` uses (``config``, ``supports_cache``, ``forward``, ``init_cache``,
    ``decode_step``).
    """

    def __init__(self, model: nn.Module, ids: list[int]) -> None:
        super().__init__()
        self.model = model
        self.config = model.config
        bias = torch.zeros(model.config.vocab_size)
        bias[ids] = float("-inf")
        self.register_buffer("bias", bias.to(next(model.parameters()).device), persistent=False)

    @property
    def supports_cache(self) -> bool:
        return bool(getattr(self.model, "supports_cache", False))

    def forward(self, **batch: Tensor) -> dict[str, Tensor]:
        out = dict(self.model(**batch))
        out["logits"] = out["logits"] + self.bias  # (B, L, V) + (V,)
        return out

    def init_cache(self, batch_size: int, device: Any = None, dtype: Any = None) -> Any:
        return self.model.init_cache(batch_size, device=device, dtype=dtype)

    def decode_step(self, input_ids: Tensor, cache: Any) -> tuple[Tensor, Any]:
        logits, cache = self.model.decode_step(input_ids, cache)
        return logits + self.bias, cache


def sample_continuations(run: LoadedRun, prompts: list[str], options: GenerateOptions) -> list[Generated]:
    """Sample a continuation of each prompt (``temperature`` 0 is greedy; ``top_k`` / ``top_p`` filter; ``seed``
    makes the draws repeat). Prompts longer than the context keep their last tokens, and ``max_new_tokens``
    (default: half the context) is capped so prompt and continuation fit in the model's ``max_len``.

    Raises:
        ValueError: an empty prompt or bad sampling settings.
    """
    from synthformer.generate import sample

    tok = run.tokenizer
    model = SuppressTokens(run.model, [tok.pad_id, tok.bos_id, tok.eos_id])
    context = run.model_config.max_len
    want = options.max_new_tokens if options.max_new_tokens is not None else context // 2
    out = []
    gen = torch.Generator(device=next(model.parameters()).device).manual_seed(options.seed)
    for prompt in prompts:
        ids = tok.encode(prompt)
        if not ids:
            raise ValueError("a language model needs a non-empty prompt (--prompt TEXT or a non-empty --input line)")
        if len(ids) > context:
            logger.warning("prompt of %d tokens is longer than the context (%d): keeping its last %d tokens",
                           len(ids), context, context // 2)
            ids = ids[-(context // 2):]
        room = context - len(ids) + 1  # sample() needs prompt + new - 1 <= max_len
        n = min(want, room)
        if n < want:
            logger.warning("max_new_tokens %d capped at %d: the prompt (%d tokens) and the continuation must fit in "
                           "the model's context of %d tokens", want, n, len(ids), context)
        # eos_id=-1: <eos> is suppressed anyway; stop only at the token budget
        result = sample(model, [ids], max_new_tokens=n, temperature=options.temperature, top_k=options.top_k,
                        top_p=options.top_p, generator=gen, eos_id=-1)
        new = result.to_lists()[0]
        out.append(Generated(prompt, tok.decode(new), float(result.scores[0])))
    return out
