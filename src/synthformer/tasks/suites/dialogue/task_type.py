"""Task type ``dialogue``: response generation from a persona and the dialogue history with an encoder-decoder,
scored as the dialogue literature does (the paper's Table 3, PersonaChat).

Data (``task.format``, see :mod:`.reader`): ``parlai`` (PersonaChat's ParlAI text, e.g.
``valid_self_original_no_cands.txt``), ``jsonl`` (``{"persona": [...], "turns": [...]}`` per line) or
``dailydialog`` (DailyDialog's ``dialogues_*.txt``, no personas). Inferred: ``.jsonl`` / ``.json`` -> jsonl, a
file named ``dialogues_*`` -> dailydialog, anything else -> parlai.

Splits are made of DIALOGUES: ``valid`` / ``test`` files, or, without them, a seeded held-out
``task.test_fraction`` of the training file's dialogues (the test split) and then ``task.valid_fraction`` of the
rest (the valid split), so no dialogue has exchanges in two splits. PersonaChat's shared copy is its official valid
split only; its configs train on such a split of it (not comparable with results on the official train/valid).
``train_limit`` / ``eval_limit`` count dialogues too.

Each response is one example (:class:`.reader.Exchange`): the source is the responder's persona
and the ``task.options.history`` turns before the response (default 4; null: all), with speaker separators as
special tokens (:mod:`.dataset`); the target is the response.

``synthformer prepare`` stores each exchange with its unfitted source (separators inline), fitted to ``max_len``
when read: the in-memory path's examples from memory-mapped shards (:mod:`.prepared`).

Metrics: ``loss`` / ``perplexity`` (teacher forcing) and, on decoded responses, ``bleu`` (``bleu_1`` ..
``bleu_4``), ``meteor``, ``rouge_l``, ``cider`` (CIDEr-D) and ``distinct`` (``distinct_1``, ``distinct_2``),
computed as nlg-eval computes them (:mod:`.metrics`; METEOR needs Java and is skipped
with one warning without it). During training ``eval.train_decode_examples`` validation exchanges are decoded
greedily (CIDEr's document frequencies then come from that sample only).

``synthformer generate`` reads each input line as a JSON object ``{"persona": [...], "turns": [...]}`` or as
turns separated by ``__eou__``; the output is the response to the last turn.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from synthformer.common import ConfigError
from synthformer.data import SentinelTokenizer, with_sentinels

from ...contract import Generated, GenerateOptions, RawData
from ...prepared.preparation import Preparation
from ...registry import register_task_type
from ...sources import finish_example_splits, hold_out, read_file_splits
from ...types.seq2seq import SequenceToSequence
from ...types.seq2seq_decoding import evaluate_decoded
from .dataset import SPEAKER_TOKENS, DialogueDataset, encode_source
from .metrics import DIALOGUE_METRICS, dialogue_scores
from .prepared import encode_exchanges, prepared_dialogue_dataset, prepared_exchanges
from .reader import DIALOGUE_FORMATS, Dialogue, Exchange, dialogue_exchanges, read_dialogues

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig
    from synthformer.train import EvalShard

    from ...contract import LoadedRun, TaskData
    from ...run.config import RunConfig
    from ...run.task_config import TaskConfig

__all__ = ["DialogueGeneration", "parse_dialogue_input"]


def _history(task: TaskConfig) -> int | None:
    value = task.task_options["history"]
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"task.options.history: expected the number of turns (an integer >= 1) or null for all, "
                          f"got {value!r}")
    return value


def parse_dialogue_input(text: str) -> Exchange:
    """The exchange whose response ``synthformer generate`` writes for one input line: a JSON object
    ``{"persona": [...], "turns": [...]}`` or turns separated by ``__eou__``.

    Raises:
        ValueError: a JSON object without a list of string ``turns``, or no turn at all.
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        record = json.loads(stripped)
        turns, persona = record.get("turns"), record.get("persona", [])
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns + list(persona)):
            raise ValueError(f"expected {{'persona': [strings], 'turns': [strings]}}, got {stripped[:60]!r}")
    else:
        turns, persona = [t.strip() for t in stripped.split("__eou__") if t.strip()], []
    if not turns:
        raise ValueError(f"no dialogue turn in the input {text[:60]!r}")
    return Exchange(tuple(persona), tuple(turns), "")


@register_task_type
class DialogueGeneration(SequenceToSequence):
    """``task.type: dialogue`` (see the module docstring)."""

    name = "dialogue"
    metrics = ("loss", "perplexity", *DIALOGUE_METRICS)
    metric_keys = {**SequenceToSequence.metric_keys, "bleu": ("bleu_1", "bleu_2", "bleu_3", "bleu_4"),
                   "distinct": ("distinct_1", "distinct_2")}
    formats = DIALOGUE_FORMATS
    suffix_formats = {".jsonl": "jsonl", ".json": "jsonl"}
    reads = frozenset({"max_target_len", "test_fraction"})
    option_defaults = {"history": 4}
    decoded_metrics = DIALOGUE_METRICS

    def check_config(self, task: TaskConfig) -> None:
        _history(task)
        if task.hf_name is not None:
            raise ConfigError(f"task.hf_name: the dialogue type reads files (formats {', '.join(self.formats)}), "
                              f"got hf_name {task.hf_name!r}")

    def infer_format(self, path: str) -> str:
        from pathlib import Path

        name = Path(path).name
        return "dailydialog" if name.startswith("dialogues_") else self.suffix_formats.get(Path(name).suffix, "parlai")

    def default_metrics(self, task: TaskConfig) -> list[str]:
        return ["loss", *DIALOGUE_METRICS]

    def has_test_split(self, task: TaskConfig) -> bool:
        return task.test is not None or task.test_fraction > 0

    # -- data -------------------------------------------------------------------------------------------
    def read(self, task: TaskConfig) -> RawData:
        def reader(task: TaskConfig, path: str) -> list[Dialogue]:
            return read_dialogues(path, task.file_format, empty_lines=task.empty_lines)

        return RawData(self.name, read_file_splits(task, reader))

    def finish(self, task: TaskConfig, raw: RawData) -> RawData:
        splits = raw.splits
        if "test" not in splits and task.test_fraction > 0:
            # by dialogue, seeded (seed 1: another draw than the valid split's)
            splits["train"], splits["test"] = hold_out(splits["train"], task.test_fraction, seed=1)
        finish_example_splits(task, splits)
        return raw

    def training_texts(self, raw: RawData) -> list[str]:
        return [text for d in raw.splits["train"] for text in (*d.persona, *d.turns)]

    # -- prepared corpora -------------------------------------------------------------------------------
    def preparation(self) -> Preparation:
        # each exchange a pair whose source holds the speaker separators inline, fitted to max_len when read
        # (:mod:`.prepared`); the history window decides which turns are stored, so a run must use the corpus's
        default = self.option_defaults["history"]  # the window of a corpus whose config left it unset
        return dataclasses.replace(
            super().preparation(), encode=encode_exchanges,
            examples=lambda task, source: prepared_exchanges(task, source, _history(task)),
            dataset=lambda run, corpus, split, tokenizer: prepared_dialogue_dataset(
                run, corpus, split, tokenizer, _history(run.task), default))

    def finish_tokenizer(self, task: TaskConfig, tokenizer: Tokenizer) -> Tokenizer:
        try:  # the speaker separators: the first sentinels (T5's own with the sentencepiece kind)
            return with_sentinels(tokenizer, SPEAKER_TOKENS)
        except ValueError as err:
            raise ConfigError(f"task.tokenizer_options.num_sentinels: the speaker separators need {SPEAKER_TOKENS} "
                              f"sentinels, but {err}") from None

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        if not isinstance(tokenizer, SentinelTokenizer):
            raise ConfigError(f"the dialogue type needs a tokenizer with speaker separators, got {tokenizer!r}")
        task = run.task
        exchanges = dialogue_exchanges(raw.splits[split], _history(task))
        return DialogueDataset(exchanges, tokenizer, max_src_len=task.max_len, max_tgt_len=task.target_len,
                               overflow=task.overflow), None

    # -- evaluation -------------------------------------------------------------------------------------
    def evaluate(self, run: RunConfig, data: TaskData, model: nn.Module, split: str, names: list[str], *,
                 batch_size: int, max_batches: int, beam: int | None,
                 max_examples: int | None, shard: EvalShard | None = None) -> tuple[dict[str, Any], list[str]]:
        dataset = data.datasets[split]
        wanted = [n for n in names if n in DIALOGUE_METRICS]

        def references() -> list[str]:
            decoded = getattr(dataset, "raw_examples", None)  # a prepared corpus: the stored responses, decoded
            if decoded is not None:
                return [decoded[i][1] for i in dataset.indices]
            exchanges = dialogue_exchanges(data.raw.splits[split], _history(run.task))
            return [exchanges[i].response for i in dataset.indices]  # skipped-for-length ones excluded

        return evaluate_decoded(run, data, model, split, names, references=references,
                                score=lambda hyps, refs: dialogue_scores(hyps, refs, wanted), decode=bool(wanted),
                                batch_size=batch_size, max_batches=max_batches, beam=beam, max_examples=max_examples,
                                shard=shard)

    def comparison_metric(self, task: TaskConfig) -> str:
        return "bleu_1"

    # -- generation -------------------------------------------------------------------------------------
    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """The response to the last turn of each input (see :func:`parse_dialogue_input`), decoded with the
        run's beam search settings unless ``options`` set them."""
        tok = loaded.tokenizer
        if not isinstance(tok, SentinelTokenizer):
            raise ConfigError(f"{loaded.run_dir}: the run's tokenizer has no speaker separators ({tok!r})")
        history = _history(loaded.config.task)
        src = []
        for text in inputs:
            exchange = parse_dialogue_input(text)
            window = exchange.history if history is None else exchange.history[-history:]
            ids, _ = encode_source(tok, exchange._replace(history=window), loaded.config.task.max_len)
            src.append(torch.tensor(ids, dtype=torch.long))
        ids = self.decode_ids(loaded, src, options)
        return [Generated(text, tok.decode(seq).strip(), None) for text, seq in zip(inputs, ids, strict=True)]
