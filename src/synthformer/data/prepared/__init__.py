"""Prepared corpora: token shards on disk that training memory-maps instead of reading and tokenizing its data.

``synthformer prepare CONFIG --out DIR`` writes one (:mod:`synthformer.tasks.prepared`); this package holds the
format (:mod:`.format`), the reader (:class:`PreparedCorpus`, :class:`PreparedSplit`, :class:`TokenStream`) and
the shard writer (:class:`ShardWriter`, :func:`write_prepared` for small corpora built in memory). See
``docs/data.md``.
"""

from .format import FORMAT, LAYOUTS, MANIFEST, TOKENIZER, VERSION, dtype_for, read_manifest, sha256_file
from .reader import PreparedCorpus, PreparedSplit, TokenStream
from .writer import DEFAULT_SHARD_TOKENS, ShardWriter, write_prepared

__all__ = [
    "DEFAULT_SHARD_TOKENS",
    "FORMAT",
    "LAYOUTS",
    "MANIFEST",
    "TOKENIZER",
    "VERSION",
    "PreparedCorpus",
    "PreparedSplit",
    "ShardWriter",
    "TokenStream",
    "dtype_for",
    "read_manifest",
    "sha256_file",
    "write_prepared",
]
