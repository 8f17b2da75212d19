"""Task type ``lm``: a causal language model on running text (character, byte or subword tokens).

Data: one UTF-8 text per split (``text`` files, read as raw bytes for ``tokenizer: byte``), a Hugging Face text
column, or the ``pystdlib`` generator. Without a ``valid`` file the training text is cut contiguously: its last
``valid_fraction`` (+ ``test_fraction``) become the valid (and test) split. Training blocks of ``max_len`` tokens
may overlap (``stride``); evaluation blocks never do. Metrics: loss, perplexity, bits per character (or byte).
Baseline: the training split's unigram distribution. Generation samples continuations of a prompt.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from synthformer.common import ConfigError
from synthformer.data import (
    DataError,
    LMBlockDataset,
    StreamBlockDataset,
    check_data_path,
    load_hf_text,
    read_text_file,
    split_text,
)
from synthformer.tasks.metrics.units import bits_per_byte, bits_per_character, perplexity

from ..contract import Generated, GenerateOptions, RawData, TaskType, random_ids
from ..metrics.likelihood import token_nll
from ..prepared.preparation import Preparation
from ..registry import register_task_type

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from ..contract import LoadedRun, TaskData
    from ..run.config import RunConfig
    from ..run.task_config import TaskConfig

__all__ = ["LanguageModeling", "lm_metrics", "unigram_bits_per_token"]

logger = logging.getLogger(__name__)


def lm_metrics(model: nn.Module, dataset: Any, names: list[str], batch_size: int, max_batches: int = 0,
               chars_per_token: float | None = None, tokenizer_kind: str = "char",
               shard: EvalShard | None = None) -> dict[str, Any]:
    """Loss (nats/token), perplexity, bits per character / byte of an LM on ``dataset`` (LM blocks); with a
    ``shard``, each process scores its part of the sample and the sums are gathered.

    Bits per character: the loss in bits for a character tokenizer; for subword tokenizers the total information
    is spread over the characters, using the split's characters per token (``chars_per_token``).
    """
    total, count = token_nll(model, dataset, batch_size, max_batches, shard)
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


def _read_lm_file(path: str, as_bytes: bool) -> str | bytes:
    if not as_bytes:
        return read_text_file(path)
    check_data_path(path)  # before opening: a FIFO would block the open
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise DataError(path, None, "file not found") from exc
    except IsADirectoryError as exc:
        raise DataError(path, None, "is a directory, expected a file") from exc
    if not data:
        raise DataError(path, 1, "file is empty")
    return data


def _check_block_fits(max_len: int, split: str, tokens: int) -> None:
    """Refuse a ``task.max_len`` whose block (``max_len`` inputs and the next token) is longer than the split: the
    datasets' own error would speak of their ``block_size``, a name the config does not have."""
    if tokens >= max_len + 1:
        return
    if tokens < 2:
        raise ConfigError(f"task.max_len: the {split} split has {tokens} token(s), too few for any block (a block "
                          "is task.max_len tokens and the next one); give more data")
    raise ConfigError(f"task.max_len: {max_len} is too long for the {split} split, which has {tokens:,} tokens: a "
                      f"block is task.max_len tokens and the next one, so task.max_len must be between 1 and "
                      f"{tokens - 1:,}")


@register_task_type
class LanguageModeling(TaskType):
    """``task.type: lm`` (see the module docstring)."""

    name = "lm"
    arch = "lm"
    metrics = ("loss", "perplexity", "bits_per_character", "bits_per_byte")
    formats = ("text",)
    default_tokenizer = "char"
    reads = frozenset({"stride", "test_fraction"})

    def default_metrics(self, task: TaskConfig) -> list[str]:
        return ["loss", "perplexity", "bits_per_byte" if task.tokenizer_kind == "byte" else "bits_per_character"]

    def has_test_split(self, task: TaskConfig) -> bool:
        return super().has_test_split(task) or (task.train is not None and task.test_fraction > 0)

    # -- data -------------------------------------------------------------------------------------------
    def read(self, task: TaskConfig) -> RawData:
        splits: dict[str, Any] = {}
        if task.hf_name is not None:
            for ours, theirs in task.hf_splits.items():
                texts = load_hf_text(task.hf_name, theirs, str(task.text_field), config=task.hf_config,
                                     **task.hf_options)
                splits[ours] = "\n".join(texts)
            return RawData(self.name, splits)
        assert task.train is not None
        as_bytes = task.tokenizer_kind == "byte"
        train = _read_lm_file(task.train, as_bytes)
        valid = _read_lm_file(task.valid, as_bytes) if task.valid is not None else None
        test = _read_lm_file(task.test, as_bytes) if task.test is not None else None
        if valid is None and task.valid_fraction == 0:
            raise ConfigError("task.valid: an LM needs a validation split: give task.valid (a file) or "
                              "task.valid_fraction (the end of the training file)")
        cut_valid = task.valid_fraction if valid is None else 0.0
        cut_test = task.test_fraction if test is None else 0.0
        train, held_valid, held_test = split_text(train, cut_valid, cut_test)
        splits = {"train": train, "valid": valid if valid is not None else held_valid}
        if test is not None or cut_test:
            splits["test"] = test if test is not None else held_test
        return RawData(self.name, splits)

    def finish(self, task: TaskConfig, raw: RawData) -> RawData:
        splits = raw.splits
        if task.train_limit is not None:
            splits["train"] = splits["train"][: task.train_limit]
        if task.eval_limit is not None:
            for name in ("valid", "test"):
                if name in splits:
                    splits[name] = splits[name][: task.eval_limit]
        for name, text in splits.items():
            if len(text) < 2:
                raise ConfigError(f"task: the LM {name} split is empty or a single character; check the data "
                                  f"source and the split fractions")
        return raw

    def training_texts(self, raw: RawData) -> list[str]:
        train = raw.splits["train"]
        return [train] if isinstance(train, str) else []

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        text = raw.splits[split]
        ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)  # (N,) the whole split
        # training blocks may overlap (stride); evaluation blocks never do, so each token counts once
        stride = run.task.stride if split == "train" else None
        _check_block_fits(run.task.max_len, split, ids.numel())
        return LMBlockDataset(ids, run.task.max_len, stride=stride), len(text) / max(ids.numel(), 1)

    def preparation(self) -> Preparation:
        return Preparation("documents", self._stream_blocks)  # one document a record, its text read by prepare

    def _stream_blocks(self, run: RunConfig, corpus: Any, split: str, tokenizer: Tokenizer) -> StreamBlockDataset:
        # the blocks of build_dataset, read from the memory-mapped tokens
        stride = run.task.stride if split == "train" else None
        stream = corpus.split(split).stream("text")
        _check_block_fits(run.task.max_len, split, len(stream))
        return StreamBlockDataset(stream, run.task.max_len, stride=stride)

    # -- evaluation and generation ----------------------------------------------------------------------
    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        return lm_metrics(model, data.datasets[split], names, batch_size, max_batches,
                          data.chars_per_token.get(split), run.task.tokenizer_kind, shard), []

    def comparison_metric(self, task: TaskConfig) -> str:
        return "bits_per_byte" if task.tokenizer_kind == "byte" else "bits_per_character"

    def baseline(self, run: RunConfig, data: TaskData) -> tuple[str, float]:
        if not isinstance(data.datasets["train"], LMBlockDataset):  # a prepared corpus: no whole-split counts
            return "none", float("nan")
        train_ids = data.datasets["train"].tokens
        valid_ids = data.datasets["valid"].tokens[1:]  # the tokens the model predicts
        bits = unigram_bits_per_token(train_ids, valid_ids, data.tokenizer.vocab_size)
        if run.task.tokenizer_kind not in ("char", "byte"):
            bits /= data.chars_per_token.get("valid", 1.0)
        return "unigram bits/char", bits

    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        from .lm_sampling import sample_continuations

        return sample_continuations(loaded, inputs, options)

    def format_generated(self, output: Generated, index: int) -> str:
        # the prompt and its continuation, as one text; several samples are separated by a rule
        return ("\n" + "-" * 40 + "\n" if index else "") + output.input + output.output

    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        shape = (batch_size, seq_len)
        return {"input_ids": random_ids(generator, shape, config.vocab_size, config.pad_id),
                "labels": torch.randint(0, config.vocab_size, shape, generator=generator)}
