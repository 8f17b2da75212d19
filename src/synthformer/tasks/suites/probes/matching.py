"""``generator: matching:<pair|control>``: a cross-segment matching probe and its control.

The paper explains why Syn (R) and Syn (D) fall behind on GLUE/SuperGLUE pair tasks but not on SST-2: an encoder
must then compare the tokens of one sentence with those of the other, and synthesized weights do not depend on
token-token interactions. This task asks exactly that and nothing else. An example is ``A | B``: two segments of
``length`` symbols (``t0`` ... ``t<vocab-1>``). A holds distinct symbols; B is A shuffled (label ``match``) or
A shuffled with ``num_replaced`` of its positions replaced by symbols that do not occur in A (label
``mismatch``), each with probability 1/2. Deciding means checking every symbol of B against A's.

``matching:control`` draws the very same inputs (same seed: the same sequences) and labels each by the majority
class of A's symbols: ``low`` when more than half of them are below ``vocab / 2``, ``high`` when fewer, and on a
tie (even ``length``) the class of A's first symbol. That is a count over one segment: a mean over the tokens
answers it (up to the tie), with no token compared with another, so every kind should learn it.

Options: ``num_train``, ``num_valid``, ``num_test`` (examples), ``seed`` (split k uses ``seed + k``), ``vocab``
(symbols drawn from, at most 256), ``length`` (symbols per segment; None: the most that fit ``task.max_len``,
``(max_len - 1) // 2``), ``num_replaced``, ``replace_with`` (``absent``: a mismatch's replacements are symbols
absent from A, so the sequence then holds ``num_replaced`` more distinct symbols than a match, a count that max
pooling over symbol features reads without comparing any two tokens; ``present``: copies of A's other symbols, so
both labels show the same set of symbols). The vocabulary is fixed (the 256 symbols and ``|``), whatever
``vocab`` is, so one tokenizer serves every setting.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synthformer.common import ConfigError
from synthformer.data import FixedVocabTokenizer

from ...registry import register_generator
from .common import ProbeGenerator, check_int, derived

if TYPE_CHECKING:
    from ...run.task_config import TaskConfig

__all__ = ["MAX_SYMBOLS", "MatchingGenerator", "PairExample", "control_label", "generate_pairs", "pair_label",
           "symbol"]

#: Symbols of the fixed vocabulary (``vocab`` may use fewer).
MAX_SYMBOLS = 256
#: ``replace_with`` values: where a mismatch's replacement symbols come from.
REPLACE_WITH: tuple[str, ...] = ("absent", "present")
#: The separator between A and B.
SEPARATOR = "|"


def symbol(index: int) -> str:
    """The token of symbol ``index`` (``t17``)."""
    return f"t{index}"


@dataclass(frozen=True)
class PairExample:
    """One ``A | B`` input: the symbol indices of both segments and the vocabulary size they were drawn from."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    vocab: int

    @property
    def text(self) -> str:
        """``t3 t9 ... | t9 t3 ...``: 2 * length + 1 tokens."""
        return " ".join([*map(symbol, self.a), SEPARATOR, *map(symbol, self.b)])


def pair_label(example: PairExample) -> str:
    """``match`` when B is a rearrangement of A, else ``mismatch``."""
    return "match" if sorted(example.a) == sorted(example.b) else "mismatch"


def control_label(example: PairExample) -> str:
    """The majority class of A's symbols (``low``: below ``vocab / 2``); a tie takes A's first symbol's class."""
    low = sum(2 * s < example.vocab for s in example.a)
    if 2 * low == len(example.a):
        return "low" if 2 * example.a[0] < example.vocab else "high"
    return "low" if 2 * low > len(example.a) else "high"


def generate_pairs(n: int, *, vocab: int, length: int, num_replaced: int, seed: int,
                   replace_with: str = "absent") -> list[PairExample]:
    """``n`` seeded ``A | B`` inputs, B a shuffled A (probability 1/2) or a shuffled A with ``num_replaced``
    positions replaced by symbols absent from A (``replace_with="absent"``; needs ``vocab >= length +
    num_replaced``) or by copies of A's symbols at B's other positions (``"present"``: B then repeats some of A's
    symbols and lacks the replaced ones, so the sequence holds the same set of symbols under both labels; needs
    ``num_replaced < length``)."""
    if replace_with not in REPLACE_WITH:
        raise ConfigError(f"task.generator_options.replace_with: expected one of {', '.join(REPLACE_WITH)}, "
                          f"got {replace_with!r}")
    if replace_with == "present" and num_replaced >= length:
        raise ConfigError(f"task.generator_options.num_replaced: {num_replaced} replaced positions leave no symbol "
                          f"of B to copy; expected num_replaced < length = {length} with replace_with='present'")
    if vocab < length + (num_replaced if replace_with == "absent" else 0):
        raise ConfigError(f"task.generator_options.vocab: {vocab} symbols cannot give {length} distinct symbols "
                          f"plus {num_replaced} absent from them; expected vocab >= {length + num_replaced}")
    rng = random.Random(seed)
    out: list[PairExample] = []
    for _ in range(n):
        a = rng.sample(range(vocab), length)
        b = rng.sample(a, length)  # a shuffled copy
        if rng.random() < 0.5:  # one draw per example in both modes: "absent" keeps its earlier data
            if replace_with == "present":
                positions = rng.sample(range(length), num_replaced)
                kept = [b[i] for i in range(length) if i not in positions]
                for position in positions:  # each replaced symbol is now missing from B: a mismatch
                    b[position] = rng.choice(kept)
            else:
                present = set(a)
                fresh = rng.sample([s for s in range(vocab) if s not in present], num_replaced)
                for position, s in zip(rng.sample(range(length), num_replaced), fresh, strict=True):
                    b[position] = s
        out.append(PairExample(tuple(a), tuple(b), vocab))
    return out


@register_generator
class MatchingGenerator(ProbeGenerator):
    """``matching:pair`` and ``matching:control`` (see the module docstring for the task and its options)."""

    name = "matching"
    arguments = ("pair", "control")
    option_defaults: dict[str, Any] = dict(num_train=10000, num_valid=500, num_test=500, seed=0, vocab=MAX_SYMBOLS,
                                           length=None, num_replaced=1, replace_with="absent")

    def examples(self, task: TaskConfig, opts: dict[str, Any]) -> tuple[Callable[[int, int], list[PairExample]],
                                                                         Callable[[PairExample], str], list[str]]:
        spec = str(task.generator)
        vocab = check_int(spec, "vocab", opts["vocab"], 2, MAX_SYMBOLS)
        length = derived(spec, "length", opts["length"], task.max_len, lambda m: (m - 1) // 2)
        replaced = check_int(spec, "num_replaced", opts["num_replaced"], 1, length)

        def make(n: int, seed: int) -> list[PairExample]:
            return generate_pairs(n, vocab=vocab, length=length, num_replaced=replaced, seed=seed,
                                  replace_with=opts["replace_with"])

        if task.generator_arg == "control":
            return make, control_label, ["high", "low"]
        return make, pair_label, ["match", "mismatch"]

    def tokenizer(self) -> FixedVocabTokenizer:
        return FixedVocabTokenizer([*map(symbol, range(MAX_SYMBOLS)), SEPARATOR])
