"""Task type ``retrieval``: Long Range Arena's document matching (ACL Anthology Network citation pairs) with a
dual encoder (arch ``dual_encoder``: each document encoded on its own, the pooled vectors combined and
classified).

Files: ``lra_tsv``, LRA's five tab-separated columns ``label id1 id2 text1 text2`` without a header
(:func:`.matching.read_matching_tsv`); each document is cut at ``task.max_len`` tokens (LRA: 4000
bytes with the ``byte`` tokenizer, the default here). Metrics: loss and accuracy; baseline: the majority class.
Generation reads one pair per input line, the two texts separated by a tab (anything else: a ValueError naming
the line), and predicts its label.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from synthformer.common import ConfigError

from ...contract import Generated, GenerateOptions, RawData, random_ids
from ...registry import register_task_type
from ...sources import read_file_splits
from ...types.classification import Classification, predict_classes
from .matching import PairClassificationDataset, read_matching_tsv

if TYPE_CHECKING:
    from synthformer.data import Tokenizer
    from synthformer.models import ModelConfig

    from ...contract import LoadedRun
    from ...run.config import RunConfig
    from ...run.task_config import TaskConfig

__all__ = ["Retrieval"]

logger = logging.getLogger(__name__)


def _pair(text: str) -> tuple[str, str]:
    first, sep, second = text.partition("\t")
    if not sep or not first or not second:  # an empty text has no token to encode
        raise ValueError(f"retrieval: an input is two non-empty texts separated by a tab, got {text[:60]!r}")
    return first, second


@register_task_type
class Retrieval(Classification):
    """``task.type: retrieval`` (see the module docstring). The label checks, limits and evaluation are those of
    ``classification``, on ``(text1, text2, label)`` records."""

    name = "retrieval"
    arch = "dual_encoder"
    formats = ("lra_tsv",)
    suffix_formats = {".tsv": "lra_tsv"}
    default_tokenizer = "byte"

    label_index = 2  # records are (text1, text2, label)

    def read(self, task: TaskConfig) -> RawData:
        if task.hf_name is not None:
            raise ConfigError("hf_name: the retrieval task reads LRA's TSV files (task.train), not a Hugging Face set")
        return RawData(self.name, read_file_splits(task, lambda _task, path: read_matching_tsv(path)))

    def training_texts(self, raw: RawData) -> list[str]:
        return [text for ex in raw.splits["train"] for text in (ex[0], ex[1])]

    def build_dataset(self, run: RunConfig, raw: RawData, split: str, tokenizer: Tokenizer,
                      model_config: ModelConfig | None) -> tuple[Any, float | None]:
        cls_token = model_config is not None and getattr(model_config, "pooling", None) == "cls"
        if cls_token and tokenizer.bos_id == tokenizer.pad_id:
            raise ConfigError("model.pooling: 'cls' puts <bos> first, but this tokenizer's <bos> is its <pad>; use "
                              "model.pooling=mean")
        return PairClassificationDataset(raw.splits[split], tokenizer, raw.label_set or [], max_len=run.task.max_len,
                                         overflow=run.task.overflow, add_bos=cls_token), None

    def count_tokens(self, batch: Mapping[str, Tensor]) -> Tensor:
        # input tokens of both texts; a batch without masks (a benchmark's random batch) has no padding
        return sum((~batch[f"padding_mask_{side}"]).sum() if f"padding_mask_{side}" in batch  # type: ignore[return-value]
                   else torch.tensor(batch[f"input_ids_{side}"].numel()) for side in ("1", "2"))

    def generate(self, loaded: LoadedRun, inputs: list[str], options: GenerateOptions) -> list[Generated]:
        """The predicted label of each ``text1<TAB>text2`` input, with its probability as the score."""
        labels = loaded.label_set or []
        pairs = [(*_pair(t), labels[0]) for t in inputs]
        dataset = PairClassificationDataset(pairs, loaded.tokenizer, labels, max_len=loaded.config.task.max_len,
                                            overflow="truncate",
                                            add_bos=getattr(loaded.model_config, "pooling", None) == "cls")
        preds, probs = predict_classes(loaded.model, dataset, options.batch_size)
        return [Generated(t, labels[p], q) for t, p, q in zip(inputs, preds, probs, strict=True)]

    def random_batch(self, config: ModelConfig, batch_size: int, seq_len: int,
                     generator: torch.Generator) -> dict[str, Tensor]:
        shape = (batch_size, seq_len)
        return {"input_ids_1": random_ids(generator, shape, config.vocab_size, config.pad_id),
                "input_ids_2": random_ids(generator, shape, config.vocab_size, config.pad_id),
                "labels": torch.randint(0, int(getattr(config, "num_classes", 2)), (batch_size,),
                                        generator=generator)}
