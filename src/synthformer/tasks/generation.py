"""Generation from a trained run: LM continuations (sampling), seq2seq outputs (beam / greedy search) and
classifier predictions, from text in and text out."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from synthformer.data import ClassificationDataset

from .evaluation import decode_seq2seq, predict_classes
from .pipeline import LoadedRun

__all__ = ["Generated", "generate_texts"]

logger = logging.getLogger(__name__)


@dataclass
class Generated:
    """One output: the input text, the generated text, and a score (LM: the continuation's log-probability;
    classification: the predicted class's probability; seq2seq: None)."""

    input: str
    output: str
    score: float | None


def generate_texts(run: LoadedRun, inputs: list[str], *, max_new_tokens: int | None = None, temperature: float = 1.0,
                   top_k: int | None = None, top_p: float | None = None, beam: int | None = None,
                   seed: int = 0, batch_size: int = 32) -> list[Generated]:
    """Generate for each input text with a loaded run.

    * LM: sample a continuation of each prompt (``temperature`` 0 is greedy; ``top_k`` / ``top_p`` filter;
      ``seed`` makes the draws repeat). Prompts longer than the context keep their last tokens, and
      ``max_new_tokens`` is capped so prompt and continuation fit in the model's ``max_len``.
    * seq2seq: decode each source with beam search (``beam``, default ``eval.beam`` of the run; 1 is greedy)
      and the run's length penalty.
    * classification: the predicted label.

    Raises:
        ValueError: an empty LM prompt or bad sampling settings.
    """
    task = run.config.task.type
    if task == "lm":
        return _lm(run, inputs, max_new_tokens, temperature, top_k, top_p, seed)
    if task == "seq2seq":
        return _seq2seq(run, inputs, max_new_tokens, beam, batch_size)
    return _classify(run, inputs, batch_size)


class _SuppressTokens(nn.Module):
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

    def init_cache(self, batch_size: int, device=None, dtype=None):  # noqa: ANN001, ANN201 - as the model's
        return self.model.init_cache(batch_size, device=device, dtype=dtype)

    def decode_step(self, input_ids: Tensor, cache):  # noqa: ANN001, ANN201 - as the model's
        logits, cache = self.model.decode_step(input_ids, cache)
        return logits + self.bias, cache


def _lm(run: LoadedRun, prompts: list[str], max_new_tokens: int | None, temperature: float, top_k: int | None,
        top_p: float | None, seed: int) -> list[Generated]:
    from synthformer.generate import sample

    tok = run.tokenizer
    model = _SuppressTokens(run.model, [tok.pad_id, tok.bos_id, tok.eos_id])
    context = run.model_config.max_len
    want = max_new_tokens if max_new_tokens is not None else context // 2
    out = []
    gen = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
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
        result = sample(model, [ids], max_new_tokens=n, temperature=temperature, top_k=top_k, top_p=top_p,
                        generator=gen, eos_id=-1)
        new = result.to_lists()[0]
        out.append(Generated(prompt, tok.decode(new), float(result.scores[0])))
    return out


def _seq2seq(run: LoadedRun, sources: list[str], max_new_tokens: int | None, beam: int | None,
             batch_size: int) -> list[Generated]:
    tok, model, cfg = run.tokenizer, run.model, run.config
    beam = beam if beam is not None else cfg.eval.beam
    limit = min(max_new_tokens or cfg.eval.max_decode_len or cfg.task.target_len, run.model_config.max_len)
    src = []
    for text in sources:
        ids = tok.encode(text, add_eos=True)  # the framing Seq2SeqDataset uses: source + <eos>
        if len(ids) > cfg.task.max_len:
            logger.warning("source of %d tokens truncated to the maximum source length %d", len(ids), cfg.task.max_len)
            ids = ids[: cfg.task.max_len - 1] + [tok.eos_id]
        src.append(torch.tensor(ids, dtype=torch.long))
    ids = decode_seq2seq(model, src, beam=beam, length_penalty=cfg.eval.length_penalty, max_new_tokens=limit,
                         batch_size=batch_size, pad_id=tok.pad_id, eos_id=tok.eos_id)
    return [Generated(text, tok.decode(seq).strip(), None) for text, seq in zip(sources, ids, strict=True)]


def _classify(run: LoadedRun, texts: list[str], batch_size: int) -> list[Generated]:
    labels = run.label_set or []
    cfg = run.config.task
    dataset = ClassificationDataset([(t, labels[0]) for t in texts], run.tokenizer, labels, max_len=cfg.max_len,
                                    overflow="truncate", add_bos=run.model_config.pooling == "cls")
    if len(dataset) != len(texts):  # pragma: no cover - truncate never drops examples
        raise ValueError("some inputs could not be encoded")
    preds, probs = predict_classes(run.model, dataset, batch_size)
    return [Generated(t, labels[p], q) for t, p, q in zip(texts, preds, probs, strict=True)]
