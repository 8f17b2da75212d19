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

from .batching import Seq2SeqItems, check_overflow, frame_ids, padding_mask
from .catalog import (
    CATALOG,
    FetchError,
    cache_root,
    ensure,
    fetch,
    fetch_blocker,
    find_local,
    get_data_set,
    has_split,
    holds,
    refusal,
    status,
)
from .errors import check_data_path, json_object, read_utf8, split_lines
from .mixture import MixtureDataset, MixtureSchedule, mixing_rates
from .prepared import PreparedCorpus, PreparedSplit, read_manifest
from .prepared.format import LAYOUTS, MANIFEST, TOKENIZER, dtype_for, np_dtype, sha256_file, shard_name
from .prepared.reader import ID_SCAN_BYTES
from .prepared.sources import expand_glob, file_ranges, file_stat, hf_shards, iter_file, iter_hf, splittable
from .prepared.writer import (
    DEFAULT_SHARD_TOKENS,
    ShardWriter,
    base_manifest,
    manifest_shard,
    split_entry,
    write_manifest,
)
from .sentinels import DEFAULT_NUM_SENTINELS, with_sentinels
from .span_corruption import SpanCorruptionDataset, t5_lengths
from .spelling import first_misspelling
from .streamed import DecodedPairs, PairsDataset, StreamBlockDataset
from .tokenizer_kinds import byte_symbols
from .tokenizer_spm import BYTE_FALLBACK_MIN_PIECES

__all__ = [
    "CLASSIFICATION_FORMATS", "IGNORE_INDEX", "LM_SPLITS", "MAX_VOCAB_SIZE", "OVERFLOW_POLICIES", "SPECIAL_TOKENS",
    "TOKENIZER_KINDS", "BPETokenizer", "BucketBatchSampler", "ByteTokenizer", "CharTokenizer",
    "ClassificationCollator", "ClassificationDataset", "ClassificationExample", "DataError", "FixedVocabTokenizer",
    "LMBlockDataset", "LengthReport", "Seq2SeqCollator", "Seq2SeqDataset", "SentencePieceTokenizer",
    "SentinelTokenizer", "Tokenizer", "TranslationPair", "WordTokenizer", "build_dataloader", "build_label_set",
    "build_tokenizer", "collate_lm", "encode_corpus", "load_hf_dataset", "load_hf_pairs", "load_hf_text",
    "load_label_set", "load_tokenizer", "pad_sequences", "read_classification", "read_parallel",
    "read_parallel_tsv", "read_text_file", "read_translation_split", "save_label_set", "split_text",
    "BYTE_FALLBACK_MIN_PIECES", "CATALOG", "DEFAULT_NUM_SENTINELS", "DEFAULT_SHARD_TOKENS", "DecodedPairs",
    "LAYOUTS", "MANIFEST", "MixtureDataset", "MixtureSchedule", "PairsDataset", "PreparedCorpus", "PreparedSplit",
    "Seq2SeqItems", "ShardWriter", "SpanCorruptionDataset", "StreamBlockDataset", "TOKENIZER", "base_manifest",
    "byte_symbols", "cache_root", "check_data_path", "check_overflow", "dtype_for", "ensure", "expand_glob",
    "fetch_blocker", "file_ranges", "file_stat", "find_local", "first_misspelling", "frame_ids", "get_data_set",
    "has_split", "hf_shards", "iter_file", "iter_hf", "json_object", "manifest_shard", "mixing_rates", "np_dtype",
    "padding_mask", "read_manifest", "read_utf8", "refusal", "sha256_file", "shard_name", "split_entry",
    "split_lines", "splittable", "status", "t5_lengths", "with_sentinels", "write_manifest", "FetchError", "fetch",
    "holds", "ID_SCAN_BYTES",
]
