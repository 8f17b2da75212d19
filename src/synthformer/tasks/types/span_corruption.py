"""Task type ``span_corruption``: T5's pretraining objective for an encoder-decoder (the paper's Table 4).

Data: any text a language model reads (text files, a Hugging Face text column, ``hf_name: json`` on local JSONL
files, or the ``pystdlib`` generator: the built-in offline corpus, and the default when no source is given), split
the way ``task.type: lm`` splits it; or a prepared corpus (``task.prepared``: its memory-mapped token stream, for
corpora such as C4 that do not fit in memory). Each epoch draws fresh noise (:mod:`synthformer.data.span_corruption`).
The tokenizer (``bpe`` by default) is trained on the training text and gets ``num_sentinels`` sentinel tokens after its
vocabulary (:class:`~synthformer.data.SentinelTokenizer`); the ``sentencepiece`` kind brings T5's own sentinels
(``task.tokenizer_options.num_sentinels``, at least ``num_sentinels``). Each split's text becomes one token stream,
cut into pieces that corrupt to exactly ``task.max_len`` encoder tokens (T5: 512), with the decoder length computed
the way T5 computes it (:mod:`synthformer.data.span_corruption`; ``task.max_target_len`` is derived and must stay
unset).

Options (``task.options``): ``noise_density`` (0.15), ``mean_noise_span_length`` (3.0), ``num_sentinels`` (100).

Metrics: ``loss`` = ``log_perplexity`` (nats per target token, sentinels and ``<eos>`` included: Table 4's "log
perplexity"), ``perplexity``, and the corruption actually produced on the split, ``noise_density`` and
``mean_span_length`` (reported beside the nominal values). ``synthformer generate`` fills the ``<extra_id_N>``
placeholders of a prompt, e.g. ``"Thank you <extra_id_0> me to your party <extra_id_1> week."``.
"""

from __future__ import annotations

import logging
import zlib
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from synthformer.common import ConfigError
from synthformer.data import SentinelTokenizer, SpanCorruptionDataset, t5_lengths, with_sentinels

from ..contract import Generated, GenerateOptions
from ..metrics.likelihood import likelihood_metrics
from ..prepared.preparation import Preparation
from ..registry import get_task_type, register_task_type
from .lm import LanguageModeling
from .seq2seq_decoding import decode_seq2seq

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from ..contract import LoadedRun, RawData, TaskData
    from ..run.config import RunConfig
    from ..run.task_config import TaskConfig

__all__ = ["SpanCorruption"]

logger = logging.getLogger(__name__)


def _options(task: TaskConfig) -> tuple[float, float, int]:
    opts = task.task_options
    return float(opts["noise_density"]), float(opts["mean_noise_span_length"]), int(opts["num_sentinels"])


@register_task_type
class SpanCorruption(LanguageModeling):
    """``task.type: span_corruption`` (see the module docstring). Reads its data like ``lm``."""

    name = "span_corruption"
    arch = "seq2seq"
    raw_type = "lm"
    default_generator = "pystdlib"  # the built-in offline corpus when no data source is given
    metrics = ("loss", "log_perplexity", "perplexity", "noise_density", "mean_span_length")
    default_tokenizer = "bpe"
    reads = frozenset({"test_fraction", "max_target_len"})  # max_target_len: only to say it is derived
    derived_model_fields = {"tgt_vocab_size": "source and target share one tokenizer"}
    option_defaults = {"noise_density": 0.15, "mean_noise_span_length": 3.0, "num_sentinels": 100}

    def check_config(self, task: TaskConfig) -> None:
        density, mean_span, sentinels = _options(task)
        if task.max_len < 3:
            raise ConfigError(f"task.max_len: span corruption needs inputs of at least 3 tokens, got {task.max_len}")
        if not 0.0 < density < 1.0:
            raise ConfigError(f"task.options.noise_density: must be in (0, 1), got {density}")
        if mean_span < 1.0:
            raise ConfigError(f"task.options.mean_noise_span_length: must be at least 1, got {mean_span}")
        if task.max_target_len is not None:
            raise ConfigError("task.max_target_len: span corruption derives the target length from task.max_len "
                              f"(T5's rule: {task.max_len} input tokens -> "
                              f"{t5_lengths(task.max_len, density, mean_span)[1] + 1} target tokens); leave it unset")
        tokens_length, _ = t5_lengths(task.max_len, density, mean_span)
        spans = max(round(round(tokens_length * density) / mean_span), 1)
        if sentinels < spans + 1:
            raise ConfigError(f"task.options.num_sentinels: a piece of {tokens_length} tokens has up to {spans} "
                              f"spans and needs {spans + 1} sentinels, got {sentinels}")

    def default_metrics(self, task: TaskConfig) -> list[str]:
        return list(self.metrics)

    def max_positions(self, task: TaskConfig) -> int:
        density, mean_span, _ = _options(task)
        return max(task.max_len, t5_lengths(task.max_len, density, mean_span)[1] + 1)

    def model_fields(self, num_classes: int | None) -> dict[str, Any]:
        return {"tgt_vocab_size": None}

    # -- data -------------------------------------------------------------------------------------------
    def finish_tokenizer(self, task: TaskConfig, tokenizer: Tokenizer) -> Tokenizer:
        try:
            return with_sentinels(tokenizer, _options(task)[2])
        except ValueError as err:
            raise ConfigError(f"task.options.num_sentinels: {_options(task)[2]}, but {err}") from None

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        # the whole split as one stream: T5 packs documents into its inputs
        return self._pieces(run, tokenizer.encode(raw.splits[split]), split, tokenizer), None

    def preparation(self) -> Preparation:
        return Preparation("documents", self._stream_pieces)

    def _stream_pieces(self, run: RunConfig, corpus: Any, split: str, tokenizer: Tokenizer) -> SpanCorruptionDataset:
        # the documents back to back (each ends with <eos>, T5's packing), read from the memory-mapped shards
        return self._pieces(run, corpus.split(split).stream("text"), split, tokenizer)

    def _pieces(self, run: RunConfig, ids: Any, split: str, tokenizer: Tokenizer) -> SpanCorruptionDataset:
        if not isinstance(tokenizer, SentinelTokenizer):
            raise ConfigError(f"span corruption needs a tokenizer with sentinel tokens, got {tokenizer!r}")
        density, mean_span, _ = _options(run.task)
        dataset = SpanCorruptionDataset(
            ids, run.task.max_len, tokenizer.sentinel_ids, bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id,
            pad_id=tokenizer.pad_id, noise_density=density, mean_noise_span_length=mean_span,
            seed=run.train.seed, salt=zlib.crc32(split.encode()),
        )
        stats = dataset.stats
        logger.info("span corruption (%s): %d examples of %d raw tokens -> %d input / %d target tokens; noise "
                    "density %.4f (nominal %g), mean span length %.3f (nominal %g)", split, len(dataset),
                    dataset.tokens_length, dataset.inputs_length, dataset.targets_length, stats.noise_density,
                    density, stats.mean_span_length, mean_span)
        return dataset

    # -- evaluation -------------------------------------------------------------------------------------
    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        dataset = data.datasets[split]
        out = likelihood_metrics(model, dataset, names, batch_size, max_batches, shard)
        if "noise_density" in names:
            out["noise_density"] = dataset.stats.noise_density
        if "mean_span_length" in names:
            out["mean_span_length"] = dataset.stats.mean_span_length
        return out, []

    def training_evaluation(self, run: RunConfig) -> tuple[list[str], int | None, int | None]:
        return run.metrics, None, None

    def report_extras(self, run: RunConfig, beam: int) -> dict[str, Any]:
        density, mean_span, sentinels = _options(run.task)
        tokens_length, targets = t5_lengths(run.task.max_len, density, mean_span)
        return {"nominal_noise_density": density, "nominal_mean_span_length": mean_span,
                "num_sentinels": sentinels, "inputs_length": run.task.max_len, "raw_tokens_per_input": tokens_length,
                "targets_length": targets + 1}

    def comparison_metric(self, task: TaskConfig) -> str:
        return "log_perplexity"

    def baseline(self, run: RunConfig, data: TaskData) -> tuple[str, float]:
        return "none", float("nan")

    # -- generation -------------------------------------------------------------------------------------
    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """Fill the ``<extra_id_N>`` placeholders of each input: the decoded target (sentinels shown), by beam
        search (``options.beam``, default greedy)."""
        tok = loaded.tokenizer
        if not isinstance(tok, SentinelTokenizer):
            raise ConfigError(f"{loaded.run_dir}: the run's tokenizer has no sentinels ({tok!r})")
        limit = min(options.max_new_tokens or loaded.model_config.max_len, loaded.model_config.max_len)
        src = []
        for text in inputs:
            ids = tok.encode_with_sentinels(text, add_eos=True)
            if len(ids) > loaded.config.task.max_len:
                raise ConfigError(f"input of {len(ids)} tokens is longer than the run's max_len "
                                  f"{loaded.config.task.max_len}: {text[:60]!r}...")
            src.append(torch.tensor(ids, dtype=torch.long))
        ids = decode_seq2seq(loaded.model, src, beam=options.beam or 1,
                             length_penalty=loaded.config.eval.length_penalty, max_new_tokens=limit,
                             batch_size=options.batch_size, pad_id=tok.pad_id, eos_id=tok.eos_id)
        return [Generated(text, tok.decode(seq).strip(), None) for text, seq in zip(inputs, ids, strict=True)]

    def format_generated(self, output: Generated, index: int) -> str:
        return output.output

    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        return get_task_type("seq2seq").random_batch(config, batch_size, seq_len, generator)
