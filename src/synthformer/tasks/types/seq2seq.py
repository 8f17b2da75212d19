"""Task type ``seq2seq``: an encoder-decoder from source text to target text (translation, summarization, ...).

Files, by ``task.format`` (inferred from the training file's suffix, else ``parallel``): ``parallel``:
``train`` etc. are path prefixes read as ``PREFIX.source_lang`` and ``PREFIX.target_lang`` (line-aligned, e.g.
Multi30k's ``train.de`` / ``train.en``); ``tsv``: two tab-separated columns; ``jsonl`` / ``csv``:
``source_field`` and ``target_field`` of each record (CNN/DailyMail's ``article`` / ``highlights``). Also a
Hugging Face data set, or the ``algorithmic:<name>`` generator. Metrics: loss and perplexity with teacher
forcing; BLEU, chrF (sacrebleu, with signatures), ROUGE and exact match on decoded output (beam search with the
GNMT length penalty, ``eval.min_length`` and ``eval.no_repeat_ngram_size``). Source and target share one tokenizer.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import Tensor, nn

from synthformer.common import ConfigError
from synthformer.data import (
    Seq2SeqDataset,
    TranslationPair,
    expand_glob,
    load_hf_pairs,
    read_classification,
    read_parallel,
    read_parallel_tsv,
)

from ..contract import Generated, GenerateOptions, RawData, TaskType, random_ids
from ..prepared.preparation import Preparation, Sources, pairs_dataset
from ..registry import register_task_type
from ..sources import finish_example_splits, read_file_splits
from .seq2seq_decoding import DECODED_METRICS, decode_seq2seq, decoding_for, seq2seq_metrics

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from ..contract import LoadedRun, TaskData
    from ..run.config import RunConfig
    from ..run.task_config import TaskConfig

__all__ = ["SequenceToSequence"]

logger = logging.getLogger(__name__)


def _read_pairs(task: TaskConfig, path: str) -> list[TranslationPair]:
    fmt = task.file_format
    if fmt == "parallel":
        return read_parallel(f"{path}.{task.source_lang}", f"{path}.{task.target_lang}",
                             empty_lines=task.empty_lines)
    if fmt == "tsv":
        return read_parallel_tsv(path, empty_lines=task.empty_lines)
    # jsonl / csv records: the classification reader checks fields and lines; its "label" is our target text.
    records = read_classification(path, format=fmt, text_field=task.source_field, label_field=task.target_field,
                                  empty_lines=task.empty_lines)
    return [TranslationPair(r.text.strip(), r.label, r.line) for r in records]


def _parallel_sources(task: TaskConfig) -> Sources | None:
    """The prepared sources of ``parallel`` files: each a path prefix read as ``PREFIX.source_lang`` and
    ``PREFIX.target_lang`` (None for any other format: a glob per split)."""
    if task.hf_name is not None or task.file_format != "parallel":
        return None
    out = {}
    for split, pattern in (("train", task.train), ("valid", task.valid), ("test", task.test)):
        if pattern is not None:
            src, tgt = f".{task.source_lang}", f".{task.target_lang}"
            prefixes = [str(p)[: -len(src)] for p in expand_glob(pattern + src)]
            out[split] = [(p, [p + src, p + tgt]) for p in prefixes]
    return out


@register_task_type
class SequenceToSequence(TaskType):
    """``task.type: seq2seq`` (see the module docstring)."""

    name = "seq2seq"
    arch = "seq2seq"
    metrics = ("loss", "perplexity", "bleu", "chrf", "rouge", "exact_match")
    formats = ("parallel", "tsv", "jsonl", "csv")
    suffix_formats = {".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv"}
    default_tokenizer = "bpe"
    reads = frozenset({"max_target_len"})
    derived_model_fields = {"tgt_vocab_size": "source and target share one tokenizer"}
    #: The metrics computed on decoded output (left out during training when ``eval.train_decode_examples`` is 0).
    decoded_metrics: ClassVar[tuple[str, ...]] = DECODED_METRICS

    def check_config(self, task: TaskConfig) -> None:
        if task.train is not None and task.file_format == "parallel" and not (task.source_lang and task.target_lang):
            raise ConfigError("source_lang: 'parallel' seq2seq files need source_lang and target_lang "
                              f"(files {task.train}.SOURCE_LANG and {task.train}.TARGET_LANG)")

    def default_metrics(self, task: TaskConfig) -> list[str]:
        return ["loss", "bleu", "chrf"]

    def max_positions(self, task: TaskConfig) -> int:
        return max(task.max_len, task.target_len)

    def model_fields(self, num_classes: int | None) -> dict[str, Any]:
        return {"tgt_vocab_size": None}

    # -- data -------------------------------------------------------------------------------------------
    def read(self, task: TaskConfig) -> RawData:
        if task.hf_name is not None:
            splits = {ours: load_hf_pairs(task.hf_name, theirs, task.source_field, task.target_field,
                                          config=task.hf_config, empty=task.empty_lines, **task.hf_options)
                      for ours, theirs in task.hf_splits.items()}
        else:
            splits = read_file_splits(task, _read_pairs)
        return RawData(self.name, splits)

    def finish(self, task: TaskConfig, raw: RawData) -> RawData:
        finish_example_splits(task, raw.splits)
        return raw

    # -- prepared corpora -------------------------------------------------------------------------------
    def preparation(self) -> Preparation:
        # the pairs of the type's own reader (files) or of its fields (data sets), framed when read
        return Preparation("pairs", self._stream_pairs, fields=lambda task: (task.source_field, task.target_field),
                           sources=_parallel_sources, examples=self._file_pairs)

    def _file_pairs(self, task: TaskConfig, source: str) -> Iterator[tuple[int, tuple[str, str]]]:
        # the type's own reader on this one file: exactly the pairs the in-memory path reads (memory: one file)
        one = dataclasses.replace(task, train=source, valid=None, test=None)
        for i, pair in enumerate(self.read(one).splits["train"], start=1):
            yield (pair.line or i), (pair.source, pair.target)

    def _stream_pairs(self, run: RunConfig, corpus: Any, split: str, tokenizer: Tokenizer) -> Any:
        from synthformer.data import DecodedPairs

        dataset = pairs_dataset(run, [corpus.split(split)], tokenizer)
        # the references of BLEU / ROUGE: the stored texts decoded when scored (raw_examples becomes the raw split)
        dataset.raw_examples = DecodedPairs(dataset, tokenizer)
        return dataset

    def training_texts(self, raw: RawData) -> list[str]:
        train = raw.splits["train"]
        return [p[0] for p in train] + [p[1] for p in train]

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        task = run.task
        return Seq2SeqDataset(raw.splits[split], tokenizer, max_src_len=task.max_len, max_tgt_len=task.target_len,
                              overflow=task.overflow), None

    # -- evaluation -------------------------------------------------------------------------------------
    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        dataset = data.datasets[split]
        pairs = data.raw.splits[split]
        references = [pairs[i][1] for i in dataset.indices]  # skipped-for-length pairs excluded
        return seq2seq_metrics(model, dataset, references, data.tokenizer, names, batch_size=batch_size,
                               max_batches=max_batches, decoding=decoding_for(run, model.config.max_len, beam),
                               max_examples=max_examples, shard=shard)

    def training_evaluation(self, run: RunConfig) -> tuple[list[str], int | None, int | None]:
        names = run.metrics
        if run.eval.train_decode_examples == 0:
            names = [n for n in names if n not in self.decoded_metrics]
        return names, 1, run.eval.train_decode_examples

    def report_extras(self, run: RunConfig, beam: int) -> dict[str, Any]:
        decoding = decoding_for(run, run.model.max_len, beam)  # the active overrides included
        return {"beam": beam, "length_penalty": decoding.length_penalty, "min_length": decoding.min_length,
                "no_repeat_ngram_size": decoding.no_repeat_ngram_size}

    def comparison_metric(self, task: TaskConfig) -> str:
        return "bleu"

    # -- generation -------------------------------------------------------------------------------------
    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """Decode each source with beam search (``options.beam``, default the run's ``eval.beam``; 1 is greedy)
        and the run's length penalty, minimum length and n-gram blocking unless ``options`` set them."""
        tok, cfg = loaded.tokenizer, loaded.config
        src = []
        for text in inputs:
            ids = tok.encode(text, add_eos=True)  # the framing Seq2SeqDataset uses: source + <eos>
            if len(ids) > cfg.task.max_len:
                logger.warning("source of %d tokens truncated to the maximum source length %d", len(ids),
                               cfg.task.max_len)
                ids = ids[: cfg.task.max_len - 1] + [tok.eos_id]
            src.append(torch.tensor(ids, dtype=torch.long))
        ids = self.decode_ids(loaded, src, options)
        return [Generated(text, tok.decode(seq).strip(), None) for text, seq in zip(inputs, ids, strict=True)]

    @staticmethod
    def decode_ids(loaded: LoadedRun, src: list[Tensor], options: GenerateOptions) -> list[list[int]]:
        """Token ids decoded for each source (framed ids) with the run's decoding under ``options``."""
        d = decoding_for(loaded.config, loaded.model_config.max_len, options.beam, options.max_new_tokens,
                         length_penalty=options.length_penalty, min_length=options.min_length,
                         no_repeat_ngram_size=options.no_repeat_ngram_size)
        tok = loaded.tokenizer
        return decode_seq2seq(loaded.model, src, beam=d.beam, length_penalty=d.length_penalty,
                              max_new_tokens=d.max_new_tokens, batch_size=options.batch_size, pad_id=tok.pad_id,
                              eos_id=tok.eos_id, min_length=d.min_length, no_repeat_ngram_size=d.no_repeat_ngram_size)

    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        shape = (batch_size, seq_len)
        tgt_vocab = config.target_vocab_size
        return {"src_ids": random_ids(generator, shape, config.vocab_size, config.pad_id),
                "tgt_ids": torch.randint(0, tgt_vocab, shape, generator=generator),
                "labels": torch.randint(0, tgt_vocab, shape, generator=generator)}
