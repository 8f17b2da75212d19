"""Bad command lines, verb by verb: options out of range or of the wrong type, missing and contradictory
arguments, and the files the options name (``generate --input``, ``compare --config``, ``--run-dir``, ``--out``).

Every verb that takes a run directory is pointed at a copy of a trained one, which must come out unchanged."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .harness import BINARY, LATIN1, UTF16, Case, Env, case

Argv = Callable[[Env], Sequence[Any]]

# -- top level ------------------------------------------------------------------------------------------------
TOP = "cli: top level"
TOP_CASES: list[Case] = [
    case(TOP, "cli-no-verb", lambda env: [], "the following arguments are required: VERB"),
    case(TOP, "cli-unknown-verb", lambda env: ["trian"], "invalid choice: 'trian'"),
    case(TOP, "cli-unknown-option", lambda env: ["--colour", "eval", env.run("lm")],
         "unrecognized arguments: --colour"),
]

# -- train ----------------------------------------------------------------------------------------------------
TRAIN = "cli: train"


def _train_into_file(env: Env) -> list[Any]:
    return ["train", env.config("lm"), "--run-dir", env.write("taken", "a file, not a directory\n")]


TRAIN_CASES: list[Case] = [
    case(TRAIN, "train-no-config", lambda env: ["train"], "the following arguments are required: CONFIG"),
    case(TRAIN, "train-resume-and-overwrite",
         lambda env: ["train", env.config("lm"), "--run-dir", env.run("lm"), "--resume", "--overwrite"],
         "--overwrite", "not allowed with argument --resume"),
    case(TRAIN, "train-into-earlier-run", lambda env: ["train", env.config("lm"), "--run-dir", env.run("lm")],
         "run-lm", "already holds a run", "--resume"),
    case(TRAIN, "train-run-dir-is-file", _train_into_file, "taken", "is not a directory"),
    case(TRAIN, "train-run-dir-no-value", lambda env: ["train", env.config("lm"), "--run-dir"],
         "argument --run-dir: expected one argument"),
    case(TRAIN, "train-unknown-option",
         lambda env: ["train", env.config("lm"), "--run-dir", env.fresh_run(), "--step", "5"],
         "unrecognized arguments: --step"),
]

# -- eval -----------------------------------------------------------------------------------------------------
EVAL = "cli: eval"


def _eval(*options: str, kind: str = "lm") -> Argv:
    return lambda env: ["eval", env.run(kind), *options]


EVAL_CASES: list[Case] = [
    case(EVAL, "eval-no-run-dir", lambda env: ["eval"], "the following arguments are required: RUN_DIR"),
    case(EVAL, "eval-beam-zero", _eval("--beam", "0", kind="seq2seq"), "--beam must be >= 1, got 0"),
    case(EVAL, "eval-beam-not-int", _eval("--beam", "four"), "argument --beam: invalid int value: 'four'"),
    case(EVAL, "eval-batch-size-zero", _eval("--batch-size", "0"), "--batch-size must be >= 1, got 0"),
    case(EVAL, "eval-max-examples-negative", _eval("--max-examples", "-3", kind="seq2seq"),
         "--max-examples must be >= 1, got -3"),
    case(EVAL, "eval-split-unknown", _eval("--split", "train"), "argument --split: invalid choice: 'train'"),
    case(EVAL, "eval-split-absent", _eval("--split", "test"), "run-lm", "no 'test' split", "valid"),
    case(EVAL, "eval-unknown-option", _eval("--bleu"), "unrecognized arguments: --bleu"),
]

# -- generate -------------------------------------------------------------------------------------------------
GENERATE = "cli: generate"


def _generate(*options: str, kind: str = "lm") -> Argv:
    return lambda env: ["generate", env.run(kind), *options]


def _generate_input(name: str, data: bytes | str | None, *, deny: bool = False, kind: str = "lm") -> Argv:
    def argv(env: Env) -> list[Any]:
        path = env.tmp / name if data is None else env.write(name, data)
        if name.endswith("/"):
            path.mkdir()
        return ["generate", env.run(kind), "--input", env.deny(path) if deny else path]
    return argv


GENERATE_CASES: list[Case] = [
    case(GENERATE, "generate-top-p-above-one", _generate("--prompt", "def", "--top-p", "1.5"),
         "--top-p must be in (0, 1], got 1.5"),
    case(GENERATE, "generate-top-p-zero", _generate("--prompt", "def", "--top-p", "0"), "--top-p", "got 0.0"),
    case(GENERATE, "generate-temperature-negative", _generate("--prompt", "def", "--temperature", "-1"),
         "--temperature must be >= 0, got -1.0"),
    case(GENERATE, "generate-temperature-not-number", _generate("--prompt", "def", "--temperature", "hot"),
         "argument --temperature: invalid float value: 'hot'"),
    case(GENERATE, "generate-top-k-zero", _generate("--prompt", "def", "--top-k", "0"), "--top-k must be >= 1, got 0"),
    case(GENERATE, "generate-max-new-tokens-zero", _generate("--prompt", "def", "--max-new-tokens", "0"),
         "--max-new-tokens must be >= 1, got 0"),
    case(GENERATE, "generate-beam-zero", _generate("--prompt", "12", "--beam", "0", kind="seq2seq"),
         "--beam must be >= 1, got 0"),
    case(GENERATE, "generate-seed-not-int", _generate("--prompt", "def", "--seed", "x"),
         "argument --seed: invalid int value: 'x'"),
    case(GENERATE, "generate-no-input", _generate(), "one of the arguments --prompt --input is required"),
    case(GENERATE, "generate-prompt-and-input", _generate("--prompt", "a", "--input", "b.txt"),
         "not allowed with argument --prompt"),
    case(GENERATE, "generate-input-missing", _generate_input("absent.txt", None), "absent.txt", "file not found"),
    case(GENERATE, "generate-input-directory", _generate_input("folder/", None, kind="cls"), "folder",
         "is a directory"),
    case(GENERATE, "generate-input-unreadable", _generate_input("secret.txt", "def f():\n", deny=True),
         "Permission denied", "secret.txt"),
    case(GENERATE, "generate-input-empty", _generate_input("empty.txt", b""), "empty.txt", "empty"),
    case(GENERATE, "generate-input-binary", _generate_input("image.png", BINARY, kind="seq2seq"), "image.png",
         "invalid UTF-8", "0x89"),
    case(GENERATE, "generate-input-latin1", _generate_input("reviews.txt", LATIN1, kind="cls"), "reviews.txt:2",
         "invalid UTF-8", "0xe9"),
    case(GENERATE, "generate-input-utf16", _generate_input("prompts.txt", UTF16), "prompts.txt:1", "0xff"),
]

# -- compare --------------------------------------------------------------------------------------------------
COMPARE = "cli: compare"


def _compare(*options: str, steps: bool = True) -> Argv:
    """``compare`` into a fresh --out with one step per kind (so a case that failed to fail stays short)."""
    def argv(env: Env) -> list[Any]:
        out = env.fresh_run("comparison")
        return ["compare", "--out", out, *(["--steps", "1"] if steps else []), *options]
    return argv


def _compare_into_earlier(env: Env) -> list[Any]:
    out = env.tmp / "comparison"
    env.run("lm", "comparison/V")
    return ["compare", "--out", out, "--steps", "1", "--kinds", "V", "R"]


def _compare_config(make: Callable[[Env], Any]) -> Argv:
    return lambda env: ["compare", "--out", env.fresh_run("comparison"), "--steps", "1", "--config", make(env)]


COMPARE_CASES: list[Case] = [
    case(COMPARE, "compare-kind-unknown", _compare("--kinds", "V", "XYZ"), "'XYZ'"),
    case(COMPARE, "compare-kinds-duplicate", _compare("--kinds", "V", "R", "V"), "duplicate kinds",
         "['V', 'R', 'V']"),
    case(COMPARE, "compare-kinds-only-overrides", _compare("--kinds", "model.d_model=32"), "at least one"),
    case(COMPARE, "compare-steps-zero", _compare("--steps", "0", steps=False), "--steps must be >= 1, got 0"),
    case(COMPARE, "compare-steps-not-int", _compare("--steps", "many", steps=False),
         "argument --steps: invalid int value: 'many'"),
    case(COMPARE, "compare-task-unknown", _compare("--task", "imdb"), "argument --task: invalid choice: 'imdb'"),
    case(COMPARE, "compare-override-bad-value", _compare("model.d_model=wide"), "d_model", "'wide'"),
    case(COMPARE, "compare-override-unknown-key", _compare("train.lr_max=1"), "unknown key 'train.lr_max'"),
    case(COMPARE, "compare-config-missing", _compare_config(lambda env: env.tmp / "gone.yaml"),
         "config file not found", "gone.yaml"),
    case(COMPARE, "compare-config-truncated", _compare_config(lambda env: env.write("half.yaml", "task: {type: lm")),
         "half.yaml", "not valid YAML"),
    case(COMPARE, "compare-config-init-from",
         _compare_config(lambda env: env.config("lm", {"init_from": str(env.run("lm", "pretrained"))})),
         "init_from", "from scratch"),
    case(COMPARE, "compare-into-earlier-run", _compare_into_earlier, "comparison/V", "already holds a run",
         "--overwrite"),
    case(COMPARE, "compare-out-is-file",
         lambda env: ["compare", "--out", env.write("table.md", "| kind |\n"), "--steps", "1", "--kinds", "V"],
         "table.md", "not a directory"),
]

# -- bench ----------------------------------------------------------------------------------------------------
BENCH = "cli: bench"
# The smallest measurement, so that a case that failed to fail stays short; the bad option comes after these
# and wins (argparse keeps the last value).
_SMALL = ["--preset", "lm-small", "--rows", "V", "--seq-len", "8", "--batch-size", "1", "--steps", "1",
          "--repeats", "1", "--warmup", "0", "--no-memory", "--no-progress"]


def _bench(*options: str) -> Argv:
    return lambda env: ["bench", *_SMALL, *options]


BENCH_CASES: list[Case] = [
    case(BENCH, "bench-preset-unknown", _bench("--preset", "lm-huge"), "argument --preset: invalid choice: 'lm-huge'"),
    case(BENCH, "bench-row-unknown", _bench("--rows", "V", "Syn (Q)"), "Syn (Q)"),
    case(BENCH, "bench-set-bad-value", _bench("--set", "n_layers=abc"), "n_layers", "'abc'"),
    case(BENCH, "bench-set-reserved", _bench("--set", "vocab_size=5"), "vocab_size", "set by the benchmark"),
    case(BENCH, "bench-set-unknown", _bench("--set", "n_layer=2"), "n_layer"),
    case(BENCH, "bench-set-no-value", _bench("--set", "n_layers"), "--set expects KEY=VALUE", "'n_layers'"),
    case(BENCH, "bench-seq-len-zero", _bench("--seq-len", "0"), "seq_len", "got 0"),
    case(BENCH, "bench-batch-size-zero", _bench("--batch-size", "0"), "batch_size", "got 0"),
    case(BENCH, "bench-steps-zero", _bench("--steps", "0"), "steps", "got 0"),
    case(BENCH, "bench-repeats-zero", _bench("--repeats", "0"), "repeats", "got 0"),
    case(BENCH, "bench-warmup-negative", _bench("--warmup", "-1"), "warmup", "got -1"),
    case(BENCH, "bench-threads-zero", _bench("--threads", "0"), "threads", "got 0"),
    case(BENCH, "bench-vocab-size-one", _bench("--vocab-size", "1"), "vocab_size", "got 1"),
    case(BENCH, "bench-batch-size-not-int", _bench("--batch-size", "eight"),
         "argument --batch-size: invalid int value: 'eight'"),
    case(BENCH, "bench-unknown-option", _bench("--gpu"), "unrecognized arguments: --gpu"),
]

CLI_CASES: list[Case] = [*TOP_CASES, *TRAIN_CASES, *EVAL_CASES, *GENERATE_CASES, *COMPARE_CASES, *BENCH_CASES]
