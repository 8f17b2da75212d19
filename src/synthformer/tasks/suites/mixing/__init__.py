"""Token-mixing benchmarks (docs/results/mixing.md): small synthetic tasks made to separate token mixers at small
scale, each a causal language model scored at its answer positions (the task type ``token_mixing``,
:mod:`.task_type`): MQAR (Zoology's multi-query associative recall, :mod:`.mqar`) and the MAD tasks (Poli et al.
2024) recall, noisy recall, fuzzy recall, selective copying and memorization; MAD's compression, which rebuilds a
sequence from one aggregation token, is its own task type ``compression`` on the arch ``compressor``. A benchmark
is one :class:`~.sequences.MixingBenchmark` registered in :mod:`.sequences`' table; the config names it
``generator: mixing:<name>``. Importing registers the task types, the generators, the arch and the benchmarks."""

from . import mad_copying, mad_fuzzy_recall, mad_memorization, mad_recall  # noqa: F401 - register the MAD tasks
from .mad_compression import Compression, CompressionGenerator
from .mad_compressor import Compressor, CompressorConfig
from .mqar import MQAR, generate_mqar, mqar_vocabulary
from .sequences import MixingBenchmark, MixingSequence, get_benchmark, list_benchmarks, register_benchmark
from .task_type import AnswerDataset, MixingGenerator, TokenMixing, answer_metrics

__all__ = ["MQAR", "AnswerDataset", "Compression", "CompressionGenerator", "Compressor", "CompressorConfig",
           "MixingBenchmark", "MixingGenerator", "MixingSequence", "TokenMixing", "answer_metrics", "generate_mqar",
           "get_benchmark", "list_benchmarks", "mqar_vocabulary", "register_benchmark"]
