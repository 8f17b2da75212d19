"""Long Range Arena ListOps: a seeded generator, an exact evaluator, the TSV format and tokenization.

Specification (Nangia & Bowman 2018; LRA, Tay et al. 2021), written here from the description:

* An expression is a digit ``0``-``9`` or an operator applied to 2..``max_args`` operands, each of
  them an expression. Operators: ``MAX``, ``MIN``, ``MED`` (median: the mean of the two middle values
  rounded down when the count is even), ``SM`` (sum modulo 10). The target is the value, 0-9.
* Tokens: ``[MAX``, ``[MIN``, ``[MED``, ``[SM``, the digits and the closing ``]``.
* The LRA file format (``Source\\tTarget`` header, CRLF line ends) writes an expression with ``n``
  operands as ``n + 1`` opening parentheses, the operator, then each operand followed by ``)``, then
  ``] )``::

      ( ( ( [MAX 2 ) ( ( ( [SM 4 ) 9 ) ] ) ) ] )        # MAX(2, SM(4, 9)) = 3

  The LRA input pipeline drops ``(`` and ``)`` and splits on whitespace: the model sees
  ``[MAX 2 [SM 4 9 ] ]``. Lengths are counted in those tokens.
* Generation (LRA defaults): an operand at tree level ``d`` (the root is level 1) is a digit with
  probability ``leaf_prob`` = 0.75 and an operator otherwise, except at level ``max_depth`` = 10 where it
  is always a digit, so the tree depth counting the digit level is at most ``max_depth``. Operators and
  digits are drawn uniformly, the operand count uniformly in ``[min_args, max_args]`` = [2, 10].
  Expressions are drawn until their length lies in ``[min_length, max_length]`` = [500, 2000]. The root is
  always an operator (a single digit is never a valid example); a draw is abandoned as soon as it
  passes ``max_length``, which does not change the distribution of the accepted expressions.
"""

from __future__ import annotations

import logging
import os
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from synthformer.data import DataError, FixedVocabTokenizer, read_utf8, split_lines

__all__ = [
    "LISTOPS_VOCAB",
    "OPERATORS",
    "Expr",
    "ListOpsExample",
    "ListOpsNode",
    "apply_operator",
    "evaluate",
    "evaluate_source",
    "expression_depth",
    "expression_length",
    "generate_expression",
    "generate_listops",
    "listops_tokenizer",
    "parse_source",
    "read_listops_tsv",
    "to_source",
    "tokenize_source",
    "write_listops_splits",
    "write_listops_tsv",
]

logger = logging.getLogger(__name__)

OPERATORS: tuple[str, ...] = ("[MAX", "[MIN", "[MED", "[SM")
END = "]"
DIGITS: tuple[str, ...] = tuple(str(d) for d in range(10))
PARENS = ("(", ")")
#: Every token the model sees (parentheses excluded), in the id order of :func:`listops_tokenizer`.
LISTOPS_VOCAB: tuple[str, ...] = (*DIGITS, *OPERATORS, END)
HEADER = "Source\tTarget"


@dataclass(frozen=True)
class ListOpsNode:
    """An operator applied to its operands."""

    op: str
    args: tuple[Expr, ...]


Expr = int | ListOpsNode


class ListOpsExample(NamedTuple):
    """One example: the source in LRA format (with parentheses) and its value 0-9."""

    source: str
    target: int


# -- evaluation ----------------------------------------------------------------------------------
def apply_operator(op: str, values: Sequence[int]) -> int:
    """Value of one operator on its operand values (``op`` with or without the leading ``[``)."""
    if not values:
        raise ValueError(f"operator {op} needs at least one operand")
    name = op.lstrip("[")
    if name == "MAX":
        return max(values)
    if name == "MIN":
        return min(values)
    if name == "SM":
        return sum(values) % 10
    if name == "MED":
        ordered = sorted(values)
        mid = len(ordered) // 2
        if len(ordered) % 2:
            return ordered[mid]
        return (ordered[mid - 1] + ordered[mid]) // 2
    raise ValueError(f"unknown ListOps operator {op!r}; valid: {', '.join(OPERATORS)}")


def evaluate(expr: Expr) -> int:
    """Exact value of an expression tree."""
    if isinstance(expr, int):
        return expr
    return apply_operator(expr.op, [evaluate(a) for a in expr.args])


def tokenize_source(source: str) -> list[str]:
    """The LRA input pipeline: split on whitespace and drop ``(`` and ``)``."""
    return [t for t in source.split() if t not in PARENS]


def _tokens(source: str | Sequence[str]) -> list[str]:
    toks = tokenize_source(source) if isinstance(source, str) else [t for t in source if t not in PARENS]
    if not toks:
        raise ValueError("empty ListOps expression")
    return toks


def evaluate_source(source: str | Sequence[str]) -> int:
    """Exact value of an expression given as text (with or without parentheses) or tokens.

    Raises:
        ValueError: unknown token, unbalanced ``]``, an operator without operands, or not exactly one
            top-level expression.
    """
    return evaluate(parse_source(source))


def parse_source(source: str | Sequence[str]) -> Expr:
    """The expression tree of a text (with or without parentheses) or token list."""
    stack: list[tuple[str, list[Expr]]] = []
    toks = _tokens(source)
    if len(toks) == 1 and toks[0] in DIGITS:
        return int(toks[0])
    result: Expr | None = None
    for pos, tok in enumerate(toks):
        if result is not None:
            raise ValueError(f"token {pos} ({tok!r}): text continues after the complete expression")
        if tok in OPERATORS:
            stack.append((tok, []))
        elif tok == END:
            if not stack:
                raise ValueError(f"token {pos}: ']' without an open operator")
            op, args = stack.pop()
            if not args:
                raise ValueError(f"token {pos}: operator {op} without operands")
            node = ListOpsNode(op, tuple(args))
            if stack:
                stack[-1][1].append(node)
            else:
                result = node
        elif tok in DIGITS:
            if not stack:
                raise ValueError(f"token {pos} ({tok!r}): digit outside an operator")
            stack[-1][1].append(int(tok))
        else:
            raise ValueError(f"token {pos}: unknown ListOps token {tok!r}")
    if stack or result is None:
        raise ValueError(f"unbalanced expression: {len(stack)} operator(s) not closed")
    return result


# -- text form -----------------------------------------------------------------------------------
def to_source(expr: Expr) -> str:
    """The LRA text of an expression, parentheses included (see the module doc)."""
    parts: list[str] = []

    def emit(e: Expr) -> None:
        if isinstance(e, int):
            parts.append(str(e))
            return
        parts.extend("(" * (len(e.args) + 1))
        parts.append(e.op)
        for arg in e.args:
            emit(arg)
            parts.append(")")
        parts.extend((END, ")"))

    emit(expr)
    return " ".join(parts)


def expression_length(expr: Expr) -> int:
    """Number of model tokens (parentheses excluded): 1 per digit, 2 per operator (op and ``]``)."""
    if isinstance(expr, int):
        return 1
    return 2 + sum(expression_length(a) for a in expr.args)


def expression_depth(expr: Expr) -> int:
    """Tree depth counting the digit level: a digit has depth 1, ``[MAX 1 2 ]`` depth 2."""
    if isinstance(expr, int):
        return 1
    return 1 + max(expression_depth(a) for a in expr.args)


# -- generation ----------------------------------------------------------------------------------
class _TooLong(Exception):
    pass


def generate_expression(rng: random.Random, max_depth: int = 10, max_args: int = 10,
                        leaf_prob: float = 0.75, min_args: int = 2,
                        max_length: int | None = None) -> Expr:
    """Draw one expression whose root is an operator (see the module doc for the distribution).

    Raises:
        OverflowError: the draw passed ``max_length`` tokens (it is abandoned early).
    """
    if max_depth < 2:
        raise ValueError(f"max_depth must be at least 2 (an operator over digits), got {max_depth}")
    if not 1 <= min_args <= max_args:
        raise ValueError(f"need 1 <= min_args <= max_args, got {min_args}, {max_args}")
    budget = [max_length if max_length is not None else -1]

    def spend(n: int) -> None:
        if budget[0] >= 0:
            budget[0] -= n
            if budget[0] < 0:
                raise _TooLong

    def draw(level: int, force_op: bool) -> Expr:
        if not force_op and (level >= max_depth or rng.random() < leaf_prob):
            spend(1)
            return rng.randrange(10)
        spend(2)
        op = rng.choice(OPERATORS)
        n_args = rng.randint(min_args, max_args)
        return ListOpsNode(op, tuple(draw(level + 1, False) for _ in range(n_args)))

    try:
        return draw(1, True)
    except _TooLong:
        raise OverflowError(f"expression passed max_length={max_length}") from None


def _max_possible_length(max_depth: int, max_args: int) -> int:
    length = 1  # a digit at level max_depth
    for _ in range(max_depth - 1):
        length = 2 + max_args * length
    return length


def generate_listops(
    num_examples: int,
    *,
    min_length: int = 500,
    max_length: int = 2000,
    max_depth: int = 10,
    max_args: int = 10,
    min_args: int = 2,
    leaf_prob: float = 0.75,
    seed: int = 0,
    max_attempts: int | None = None,
) -> list[ListOpsExample]:
    """Generate ``num_examples`` ListOps examples, reproducibly for a given ``seed``.

    Args:
        num_examples: how many to return.
        min_length, max_length: inclusive bounds on the model length (tokens without parentheses).
            LRA uses 500-2000; small values (e.g. 10-60) make CPU-sized tasks.
        max_depth: bound on the tree depth counting the digit level (LRA: 10).
        max_args, min_args: bounds on the operand count of an operator (LRA: 2-10).
        leaf_prob: probability that an operand below the root is a digit (LRA: 0.75).
        seed: seed of the private ``random.Random`` used (the global RNG is untouched).
        max_attempts: give up after this many draws (default ``1000 * num_examples + 10000``).

    Raises:
        ValueError: bounds that no expression can meet.
        RuntimeError: ``max_attempts`` draws did not give enough examples.
    """
    if num_examples < 0:
        raise ValueError(f"num_examples must be >= 0, got {num_examples}")
    smallest = 2 + min_args
    largest = _max_possible_length(max_depth, max_args)
    if min_length > max_length or max_length < smallest or min_length > largest:
        raise ValueError(
            f"no expression has a length in [{min_length}, {max_length}] with max_depth={max_depth}, "
            f"min_args={min_args}, max_args={max_args} (possible lengths {smallest}..{largest})"
        )
    rng = random.Random(seed)
    attempts = 1000 * num_examples + 10000 if max_attempts is None else max_attempts
    out: list[ListOpsExample] = []
    tried = 0
    while len(out) < num_examples:
        if tried >= attempts:
            raise RuntimeError(f"only {len(out)} of {num_examples} ListOps examples after {tried} draws; "
                               f"widen [min_length, max_length] or raise leaf_prob / max_depth")
        tried += 1
        try:
            expr = generate_expression(rng, max_depth, max_args, leaf_prob, min_args, max_length)
        except OverflowError:
            continue
        if expression_length(expr) < min_length:
            continue
        out.append(ListOpsExample(to_source(expr), evaluate(expr)))
    logger.info("generated %d ListOps examples in %d draws (seed %d)", len(out), tried, seed)
    return out


# -- files ---------------------------------------------------------------------------------------
def write_listops_tsv(examples: Iterable[ListOpsExample], path: str | os.PathLike[str]) -> Path:
    """Write examples in the LRA format: header ``Source\\tTarget``, one example per CRLF line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(HEADER + "\r\n")
        for ex in examples:
            f.write(f"{ex.source}\t{ex.target}\r\n")
    return path


def write_listops_splits(directory: str | os.PathLike[str], num_train: int, num_val: int,
                         num_test: int, seed: int = 0, **options: int | float) -> dict[str, Path]:
    """Generate and write ``basic_train.tsv``, ``basic_val.tsv`` and ``basic_test.tsv``.

    Each split uses its own derived seed (``seed``, ``seed + 1``, ``seed + 2``); ``options`` go to
    :func:`generate_listops`. Returns the written paths by split name.
    """
    paths = {}
    for offset, (split, n) in enumerate((("train", num_train), ("val", num_val), ("test", num_test))):
        examples = generate_listops(n, seed=seed + offset, **options)  # type: ignore[arg-type]
        paths[split] = write_listops_tsv(examples, Path(directory) / f"basic_{split}.tsv")
    return paths


def read_listops_tsv(path: str | os.PathLike[str], check_targets: bool = False) -> list[ListOpsExample]:
    """Read an LRA ListOps TSV file (header ``Source\\tTarget``).

    Args:
        path: the file.
        check_targets: also evaluate every source and require it to equal its target (slower).

    Raises:
        DataError: a missing header, a line without exactly two columns, a target outside 0-9, an
            unparsable source (with ``check_targets``), a wrong target, or no example.
    """
    lines = split_lines(read_utf8(path))
    if not lines or lines[0].strip() != HEADER:
        raise DataError(path, 1, f"expected the header {HEADER!r}")
    out: list[ListOpsExample] = []
    for i, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != 2:
            raise DataError(path, i, f"expected 2 tab-separated columns, found {len(cells)}")
        source, target = cells[0].strip(), cells[1].strip()
        if not source:
            raise DataError(path, i, "empty source")
        if target not in DIGITS:
            raise DataError(path, i, f"target must be a digit 0-9, got {target!r}")
        if check_targets:
            try:
                value = evaluate_source(source)
            except ValueError as exc:
                raise DataError(path, i, f"invalid ListOps expression: {exc}") from exc
            if value != int(target):
                raise DataError(path, i, f"target {target} but the expression evaluates to {value}")
        out.append(ListOpsExample(source, int(target)))
    if not out:
        raise DataError(path, 1, "no examples")
    counts = Counter(ex.target for ex in out)
    logger.debug("%s: %d examples, targets %s", path, len(out), dict(sorted(counts.items())))
    return out


def listops_tokenizer() -> FixedVocabTokenizer:
    """The tokenizer of the LRA pipeline: whitespace tokens, ``(`` and ``)`` dropped.

    Ids: 0-3 specials, 4-13 the digits, 14-17 ``[MAX [MIN [MED [SM``, 18 ``]`` (vocabulary 19).
    """
    return FixedVocabTokenizer(LISTOPS_VOCAB, ignore=PARENS)
