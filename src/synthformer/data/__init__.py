"""Data for synthformer, whatever the benchmark: tokenizers, file-format readers, and torch datasets with the model
batches. A benchmark's own readers and generators (GLUE, dialogue, LRA, the probes) live in its suite,
``synthformer.tasks.suites``.

Flow: read text (``read_*`` / ``load_hf_*``) -> build a tokenizer on the training split (``build_tokenizer``) ->
wrap in a dataset (``LMBlockDataset``, ``Seq2SeqDataset``, ``ClassificationDataset``) -> ``build_dataloader``,
whose batches carry exactly the keys of ``docs/CONTRACTS.md``.

Malformed input raises :class:`DataError` (a ``ValueError``) naming the file, line and problem.
"""

from synthformer.data.batching import (
    IGNORE_INDEX,
    OVERFLOW_POLICIES,
    BucketBatchSampler,
    ClassificationCollator,
    ClassificationDataset,
    LengthReport,
    LMBlockDataset,
    Seq2SeqCollator,
    Seq2SeqDataset,
    build_dataloader,
    collate_lm,
    encode_corpus,
    pad_sequences,
)
from synthformer.data.errors import DataError
from synthformer.data.hf import load_hf_dataset, load_hf_pairs, load_hf_text
from synthformer.data.readers import (
    CLASSIFICATION_FORMATS,
    LM_SPLITS,
    ClassificationExample,
    TranslationPair,
    build_label_set,
    load_label_set,
    read_classification,
    read_parallel,
    read_parallel_tsv,
    read_text_file,
    read_translation_split,
    save_label_set,
    split_text,
)
from synthformer.data.tokenization import (
    MAX_VOCAB_SIZE,
    SPECIAL_TOKENS,
    TOKENIZER_KINDS,
    BPETokenizer,
    ByteTokenizer,
    CharTokenizer,
    FixedVocabTokenizer,
    SentencePieceTokenizer,
    SentinelTokenizer,
    Tokenizer,
    WordTokenizer,
    build_tokenizer,
    load_tokenizer,
)

__all__ = [
    "CLASSIFICATION_FORMATS",
    "IGNORE_INDEX",
    "LM_SPLITS",
    "MAX_VOCAB_SIZE",
    "OVERFLOW_POLICIES",
    "SPECIAL_TOKENS",
    "TOKENIZER_KINDS",
    "BPETokenizer",
    "BucketBatchSampler",
    "ByteTokenizer",
    "CharTokenizer",
    "ClassificationCollator",
    "ClassificationDataset",
    "ClassificationExample",
    "DataError",
    "FixedVocabTokenizer",
    "LMBlockDataset",
    "LengthReport",
    "Seq2SeqCollator",
    "Seq2SeqDataset",
    "SentencePieceTokenizer",
    "SentinelTokenizer",
    "Tokenizer",
    "TranslationPair",
    "WordTokenizer",
    "build_dataloader",
    "build_label_set",
    "build_tokenizer",
    "collate_lm",
    "encode_corpus",
    "load_hf_dataset",
    "load_hf_pairs",
    "load_hf_text",
    "load_label_set",
    "load_tokenizer",
    "pad_sequences",
    "read_classification",
    "read_parallel",
    "read_parallel_tsv",
    "read_text_file",
    "read_translation_split",
    "save_label_set",
    "split_text",
]
