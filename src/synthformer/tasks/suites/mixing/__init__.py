"""Token-mixing benchmarks (docs/results/mixing.md): small synthetic tasks made to separate token mixers at small
scale, each a causal language model scored at its answer positions (the task type ``token_mixing``,
:mod:`.task_type`). MQAR (Zoology's multi-query associative recall, :mod:`.mqar`) and the MAD tasks. A benchmark
is one :class:`~.sequences.MixingBenchmark` registered in :mod:`.sequences`' table; the config names it
``generator: mixing:<name>``. Importing registers the task type, the generator and the benchmarks."""

from .mqar import MQAR, generate_mqar, mqar_vocabulary
from .sequences import MixingBenchmark, MixingSequence, get_benchmark, list_benchmarks, register_benchmark
from .task_type import AnswerDataset, MixingGenerator, TokenMixing, answer_metrics

__all__ = ["MQAR", "AnswerDataset", "MixingBenchmark", "MixingGenerator", "MixingSequence", "TokenMixing",
           "answer_metrics", "generate_mqar", "get_benchmark", "list_benchmarks", "mqar_vocabulary",
           "register_benchmark"]
