"""Task metrics of a model on one split: LM loss, perplexity and bits per character (or byte); seq2seq loss and
BLEU / chrF (sacrebleu, with their signatures) and ROUGE on decoded output; classification accuracy.

Losses here are plain cross-entropy in nats per target token computed from the logits, so a model trained with
label smoothing is still scored by its true likelihood (the training loss would include the smoothing term).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader, Subset

from synthformer.models import ModelConfig
from synthformer.train.metrics import bits_per_byte, bits_per_character, bleu, chrf, perplexity, rouge

from .config import RunConfig

if TYPE_CHECKING:
    from .pipeline import TaskData

__all__ = [
    "EvalFn",
    "decode_seq2seq",
    "evaluate_split",
    "majority_baseline",
    "make_eval_fn",
    "token_counter_for",
    "unigram_bits_per_token",
]

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100
# seq2seq metrics that need decoded output (the others are computed with teacher forcing)
_DECODED_METRICS = ("bleu", "chrf", "rouge", "exact_match")


class EvalFn:
    """``eval_fn(model) -> metrics`` for the trainer; remembers how long it ran (not training time)."""

    def __init__(self, fn: Callable[[nn.Module], dict[str, Any]]) -> None:
        self.fn = fn
        self.seconds = 0.0

    def __call__(self, model: nn.Module) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            return self.fn(model)
        finally:
            self.seconds += time.perf_counter() - start


def token_counter_for(task_type: str) -> Callable[[Mapping[str, Any]], Any]:
    """Counts the tokens of a batch for tokens/s: predicted targets (LM, seq2seq) or input tokens (classifier)."""
    if task_type == "classification":
        return lambda batch: (~batch["padding_mask"]).sum()
    return lambda batch: (batch["labels"] != IGNORE_INDEX).sum()


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _batches(dataset: Any, batch_size: int, max_batches: int = 0) -> Any:
    """Batches of ``dataset`` in order; with ``max_batches``, of an evenly spaced sample of that many batches.

    Evenly spaced rather than the first ones: data files are often sorted (IMDb by label), and the beginning of
    a text is not typical of all of it.
    """
    data = dataset
    n = len(dataset)
    if max_batches and n > max_batches * batch_size:
        keep = max_batches * batch_size
        data = Subset(dataset, [i * n // keep for i in range(keep)])
    return iter(DataLoader(data, batch_size=batch_size, shuffle=False, collate_fn=dataset.collate))


def _to(batch: Mapping[str, Tensor], device: torch.device) -> dict[str, Tensor]:
    return {k: v.to(device) for k, v in batch.items()}


@torch.no_grad()
def _token_nll(model: nn.Module, dataset: Any, batch_size: int, max_batches: int) -> tuple[float, int]:
    """Summed cross-entropy (nats) over the target tokens, and their number."""
    total, count = 0.0, 0
    device = _device(model)
    for batch in _batches(dataset, batch_size, max_batches):
        batch = _to(batch, device)
        logits = model(**batch)["logits"].float()  # (B, L, V)
        labels = batch["labels"]
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                       ignore_index=IGNORE_INDEX, reduction="sum"))
        count += int((labels != IGNORE_INDEX).sum())
    return total, count


# -- language modelling --------------------------------------------------------------------------------------
def lm_metrics(model: nn.Module, dataset: Any, names: list[str], batch_size: int, max_batches: int = 0,
               chars_per_token: float | None = None, tokenizer_kind: str = "char") -> dict[str, Any]:
    """Loss (nats/token), perplexity, bits per character / byte of an LM on ``dataset`` (LM blocks).

    Bits per character: the loss in bits for a character tokenizer; for subword tokenizers the total information
    is spread over the characters, using the split's characters per token (``chars_per_token``).
    """
    total, count = _token_nll(model, dataset, batch_size, max_batches)
    mean = total / max(count, 1)
    out: dict[str, Any] = {}
    if "loss" in names:
        out["loss"] = mean
    if "perplexity" in names:
        out["perplexity"] = perplexity(mean)
    units = None if tokenizer_kind in ("char", "byte") or not chars_per_token else round(count * chars_per_token)
    if "bits_per_character" in names:
        out["bits_per_character"] = bits_per_character(mean, count if units else None, units)
    if "bits_per_byte" in names:
        out["bits_per_byte"] = bits_per_byte(mean, count if units else None, units)
    out["tokens"] = count
    return out


def unigram_bits_per_token(train_ids: Tensor, eval_ids: Tensor, vocab_size: int) -> float:
    """Cross-entropy (bits per token) of ``eval_ids`` under the training split's unigram frequencies, add-one
    smoothed: the baseline a model that ignores context would reach (for a character LM, bits per character)."""
    counts = torch.bincount(train_ids.flatten(), minlength=vocab_size).double() + 1.0
    logp = counts.log() - counts.sum().log()  # (V,) natural log-probabilities
    return float(-logp[eval_ids.flatten()].mean() / math.log(2))


def majority_baseline(train_labels: list[str], eval_labels: list[str]) -> float:
    """Accuracy of always predicting the training split's most frequent class."""
    if not eval_labels:
        return math.nan
    majority = Counter(train_labels).most_common(1)[0][0]
    return sum(label == majority for label in eval_labels) / len(eval_labels)


# -- classification -----------------------------------------------------------------------------------------
@torch.no_grad()
def classification_metrics(model: nn.Module, dataset: Any, names: list[str], batch_size: int,
                           max_batches: int = 0) -> dict[str, Any]:
    """Loss (nats/example) and accuracy of a classifier on ``dataset``."""
    device = _device(model)
    total, correct, count = 0.0, 0, 0
    for batch in _batches(dataset, batch_size, max_batches):
        batch = _to(batch, device)
        logits = model(**batch)["logits"].float()  # (B, C)
        labels = batch["labels"]
        total += float(F.cross_entropy(logits, labels, reduction="sum"))
        correct += int((logits.argmax(dim=-1) == labels).sum())
        count += labels.numel()
    out: dict[str, Any] = {}
    if "loss" in names:
        out["loss"] = total / max(count, 1)
    if "accuracy" in names:
        out["accuracy"] = correct / count if count else math.nan
    out["examples"] = count
    return out


@torch.no_grad()
def predict_classes(model: nn.Module, dataset: Any, batch_size: int) -> tuple[list[int], list[float]]:
    """Predicted class ids and their probabilities, in dataset order."""
    device = _device(model)
    preds: list[int] = []
    probs: list[float] = []
    for batch in _batches(dataset, batch_size):
        p = model(**_to(batch, device))["logits"].float().softmax(dim=-1)  # (B, C)
        best, idx = p.max(dim=-1)
        preds += idx.tolist()
        probs += best.tolist()
    return preds, probs


# -- sequence to sequence -----------------------------------------------------------------------------------
@torch.no_grad()
def decode_seq2seq(model: nn.Module, src: list[Tensor], *, beam: int, length_penalty: float, max_new_tokens: int,
                   batch_size: int, pad_id: int, eos_id: int) -> list[list[int]]:
    """Greedy (``beam`` 1) or beam-search token ids for each source (tokenized, with framing), in input order.

    Sources are decoded in batches of similar length (less padding); ``<eos>`` is stripped from the output.
    """
    from synthformer.generate import beam_search, greedy_search

    device = _device(model)
    order = sorted(range(len(src)), key=lambda i: src[i].numel())
    out: list[list[int]] = [[] for _ in src]
    # beam search runs batch * beam rows: keep the work per call about the same as greedy's
    step = max(1, batch_size // beam) if beam > 1 else batch_size
    for start in range(0, len(order), step):
        idx = order[start : start + step]
        seqs = [src[i] for i in idx]
        width = max(s.numel() for s in seqs)
        src_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
        for row, s in enumerate(seqs):
            src_ids[row, : s.numel()] = s
        src_ids = src_ids.to(device)
        mask = src_ids == pad_id  # (B, S) True at padding
        if beam == 1:
            result = greedy_search(model, src_ids, mask, max_new_tokens=max_new_tokens)
        else:
            result = beam_search(model, src_ids, mask, beam_size=beam, alpha=length_penalty,
                                 max_new_tokens=max_new_tokens)
        for i, ids in zip(idx, result.to_lists(strip_eos=eos_id), strict=True):
            out[i] = ids
    return out


def seq2seq_metrics(model: nn.Module, dataset: Any, references: list[str], tokenizer: Any, names: list[str], *,
                    batch_size: int, max_batches: int = 0, beam: int = 1, length_penalty: float = 0.6,
                    max_new_tokens: int, max_examples: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """Loss / perplexity (teacher forcing) and BLEU, chrF, ROUGE of decoded output against ``references`` (the raw
    target text of every dataset item). Returns the metrics and the hypotheses."""
    out: dict[str, Any] = {}
    if "loss" in names or "perplexity" in names:
        total, count = _token_nll(model, dataset, batch_size, max_batches)
        mean = total / max(count, 1)
        if "loss" in names:
            out["loss"] = mean
        if "perplexity" in names:
            out["perplexity"] = perplexity(mean)
    hypotheses: list[str] = []
    if any(n in names for n in _DECODED_METRICS):
        n = len(dataset) if max_examples is None else min(max_examples, len(dataset))
        if n == 0:
            return out, hypotheses
        src = [dataset[i]["src_ids"] for i in range(n)]
        config: ModelConfig = model.config
        ids = decode_seq2seq(model, src, beam=beam, length_penalty=length_penalty, max_new_tokens=max_new_tokens,
                             batch_size=batch_size, pad_id=config.pad_id, eos_id=config.eos_id)
        hypotheses = [tokenizer.decode(seq).strip() for seq in ids]
        refs = references[:n]
        if "bleu" in names:
            score = bleu(hypotheses, refs)
            out["bleu"], out["bleu_signature"] = score.score, score.signature
        if "chrf" in names:
            score = chrf(hypotheses, refs)
            out["chrf"], out["chrf_signature"] = score.score, score.signature
        if "rouge" in names:
            out.update(rouge(hypotheses, refs))
        if "exact_match" in names:
            out["exact_match"] = sum(h == r.strip() for h, r in zip(hypotheses, refs, strict=True)) / n
        out["decoded"] = n
        out["beam"] = beam
    return out, hypotheses


def seq2seq_references(data: TaskData, split: str) -> list[str]:
    """The raw target text of every item of the tokenized ``split`` (skipped-for-length pairs excluded)."""
    dataset = data.datasets[split]
    pairs = data.raw.splits[split]
    return [pairs[i][1] for i in dataset.indices]


# -- dispatch -----------------------------------------------------------------------------------------------
def evaluate_split(run: RunConfig, data: TaskData, model: nn.Module, split: str, *, beam: int | None = None,
                   max_batches: int = 0, max_examples: int | None = None,
                   metrics: list[str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The task's metrics of ``model`` on ``split`` (model put in eval mode). Returns (metrics, hypotheses), the
    hypotheses being the decoded output for seq2seq (empty otherwise)."""
    names = metrics if metrics is not None else run.metrics
    dataset = data.datasets[split]
    batch_size = run.eval.batch_size or run.train.batch_size
    was_training = model.training
    model.eval()
    try:
        if run.task.type == "lm":
            return lm_metrics(model, dataset, names, batch_size, max_batches, data.chars_per_token.get(split),
                              run.task.tokenizer_kind), []
        if run.task.type == "classification":
            return classification_metrics(model, dataset, names, batch_size, max_batches), []
        config: ModelConfig = model.config
        max_new = min(run.eval.max_decode_len or run.task.target_len, config.max_len)
        return seq2seq_metrics(
            model, dataset, seq2seq_references(data, split), data.tokenizer, names, batch_size=batch_size,
            max_batches=max_batches, beam=beam if beam is not None else run.eval.beam,
            length_penalty=run.eval.length_penalty, max_new_tokens=max_new, max_examples=max_examples,
        )
    finally:
        model.train(was_training)


def make_eval_fn(run: RunConfig, data: TaskData, model_config: ModelConfig, split: str = "valid",
                 during_training: bool = True) -> EvalFn:
    """The trainer's ``eval_fn``: the task's metrics on ``split``.

    During training it stays cheap: at most ``train.eval_steps`` batches for the losses (0: all) and greedy
    decoding of ``eval.train_decode_examples`` examples for BLEU / chrF (none if 0).
    """
    names = run.metrics
    max_batches = run.train.eval_steps if during_training else 0
    if during_training and run.task.type == "seq2seq":
        beam, max_examples = 1, run.eval.train_decode_examples
        if max_examples == 0:
            names = [n for n in names if n not in _DECODED_METRICS]
    else:
        beam, max_examples = None, run.eval.max_examples

    def fn(model: nn.Module) -> dict[str, Any]:
        metrics, _ = evaluate_split(run, data, model, split, beam=beam, max_batches=max_batches,
                                    max_examples=max_examples, metrics=names)
        return metrics

    return EvalFn(fn)
