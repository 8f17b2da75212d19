"""Data for synthformer: tokenizers, readers, generated tasks, and torch datasets with the model batches.

Flow: read text (``read_*`` / ``load_hf_*``) or generate it (``generate_listops``,
``generate_algorithmic``, ``generate_pathfinder``) -> build a tokenizer on the training split
(``build_tokenizer``) -> wrap in a dataset (``LMBlockDataset``, ``Seq2SeqDataset``, ``ClassificationDataset``)
-> ``build_dataloader``, whose batches carry exactly the keys of ``docs/CONTRACTS.md``.

Malformed input raises :class:`DataError` (a ``ValueError``) naming the file, line and problem.
"""

from synthformer.data.algorithmic import (
    ALGORITHMIC_TASKS,
    algorithmic_tokenizer,
    generate_algorithmic,
    solve_algorithmic,
)
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
from synthformer.data.cifar10 import read_cifar10, read_cifar10_batch
from synthformer.data.errors import DataError
from synthformer.data.hf import load_hf_dataset, load_hf_pairs, load_hf_text
from synthformer.data.listops import (
    ListOpsExample,
    evaluate_source,
    generate_listops,
    listops_tokenizer,
    read_listops_tsv,
    tokenize_source,
    write_listops_splits,
    write_listops_tsv,
)
from synthformer.data.matching import MatchingExample, PairClassificationDataset, read_matching_tsv
from synthformer.data.pathfinder import PATHFINDER_SPECS, generate_pathfinder
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
    "ALGORITHMIC_TASKS",
    "CLASSIFICATION_FORMATS",
    "IGNORE_INDEX",
    "LM_SPLITS",
    "OVERFLOW_POLICIES",
    "PATHFINDER_SPECS",
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
    "ListOpsExample",
    "MatchingExample",
    "PairClassificationDataset",
    "Seq2SeqCollator",
    "Seq2SeqDataset",
    "SentencePieceTokenizer",
    "SentinelTokenizer",
    "Tokenizer",
    "TranslationPair",
    "WordTokenizer",
    "algorithmic_tokenizer",
    "build_dataloader",
    "build_label_set",
    "build_tokenizer",
    "collate_lm",
    "encode_corpus",
    "evaluate_source",
    "generate_algorithmic",
    "generate_listops",
    "generate_pathfinder",
    "listops_tokenizer",
    "load_hf_dataset",
    "load_hf_pairs",
    "load_hf_text",
    "load_label_set",
    "load_tokenizer",
    "pad_sequences",
    "read_cifar10",
    "read_cifar10_batch",
    "read_classification",
    "read_listops_tsv",
    "read_matching_tsv",
    "read_parallel",
    "read_parallel_tsv",
    "read_text_file",
    "read_translation_split",
    "save_label_set",
    "solve_algorithmic",
    "split_text",
    "tokenize_source",
    "write_listops_splits",
    "write_listops_tsv",
]
