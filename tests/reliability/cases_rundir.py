"""Run directories that cannot be used as they are: each file a run holds (weights ``model.safetensors``,
optimizer state ``optimizer.pt``, the tokenizer, ``model_config.json``, ``config.yaml``, ``trainer_state.json``,
``checkpoints/latest``, ``labels.json``) missing, truncated, replaced by another run's (foreign) or by junk, met
by every verb that reads it (``eval``, ``generate``, ``train --resume``); run directories that are not runs, runs
of another task type, and ``--resume`` with a changed config.

The damaged run is a watched copy: whatever the command says, it must not change a byte of it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from synthformer.train.checkpoint import latest_checkpoint

from .harness import BINARY, Case, Env, case

Argv = Callable[[Env], Sequence[Any]]
Damage = Callable[[Env, Path], Any]
PROMPTS = {"lm": "def ", "seq2seq": "123", "cls": "a gorgeous movie"}


def ckpt_file(name: str) -> Callable[[Path], Path]:
    """The file ``name`` of a run's latest checkpoint."""
    return lambda run: latest_checkpoint(run) / name  # type: ignore[operator]


def run_file(name: str) -> Callable[[Path], Path]:
    """The file ``name`` at the top of a run directory."""
    return lambda run: run / name


# -- damage -----------------------------------------------------------------------------------------------------


def missing(where: Callable[[Path], Path]) -> Damage:
    return lambda env, run: where(run).unlink()


def truncated(where: Callable[[Path], Path]) -> Damage:
    """The first half of the file, as a write cut short by a full disk leaves it."""
    def damage(env: Env, run: Path) -> None:
        path = where(run)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    return damage


def cut_after(where: Callable[[Path], Path], marker: str) -> Damage:
    """The file cut right after the first ``marker``: a write that stopped mid-value."""
    def damage(env: Env, run: Path) -> None:
        path = where(run)
        text = path.read_text(encoding="utf-8")
        path.write_text(text[: text.index(marker) + len(marker)], encoding="utf-8")
    return damage


def edited_text(where: Callable[[Path], Path], old: str, new: str) -> Damage:
    """The file with its first ``old`` replaced by ``new`` (a hand edit)."""
    def damage(env: Env, run: Path) -> None:
        path = where(run)
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {path}"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return damage


def replaced(where: Callable[[Path], Path], data: bytes | str) -> Damage:
    def damage(env: Env, run: Path) -> None:
        where(run).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return damage


def foreign(where: Callable[[Path], Path], other: str) -> Damage:
    """The same file of another trained run (``other``: lm, seq2seq, cls)."""
    return lambda env, run: shutil.copyfile(where(env.trained.runs[other]), where(run))


def edited_json(where: Callable[[Path], Path], **changes: Any) -> Damage:
    def damage(env: Env, run: Path) -> None:
        path = where(run)
        path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), **changes}), encoding="utf-8")
    return damage


# -- the verbs that read a run ----------------------------------------------------------------------------------


def verb_argv(env: Env, verb: str, kind: str, run: Path) -> list[Any]:
    """``eval RUN``, ``generate RUN --prompt ...`` or ``train CONFIG --run-dir RUN --resume`` (the config the run
    was trained with)."""
    if verb == "eval":
        return ["eval", run]
    if verb == "generate":
        return ["generate", run, "--prompt", PROMPTS[kind]]
    return ["train", env.config(kind), "--run-dir", run, "--resume"]


def on_damaged(verb: str, damage: Damage, kind: str = "lm") -> Argv:
    def argv(env: Env) -> list[Any]:
        run = env.run(kind)
        damage(env, run)
        return verb_argv(env, verb, kind, run)
    return argv


def _cases(category: str, name: str, damage: Damage, verbs: Sequence[str], *expect: str, kind: str = "lm",
           xfail: dict[str, str] | None = None) -> list[Case]:
    """One case per verb reading the damaged file (``xfail``: the reason, by verb)."""
    return [case(category, f"{name}-{verb}", on_damaged(verb, damage, kind), *expect,
                 xfail=(xfail or {}).get(verb)) for verb in verbs]


ALL = ("eval", "generate", "resume")
WEIGHTS, OPTIMIZER = ckpt_file("model.safetensors"), ckpt_file("optimizer.pt")
STATE, TOKENIZER = ckpt_file("trainer_state.json"), run_file("synthformer_tokenizer.json")
MODEL_CONFIG, CONFIG = run_file("model_config.json"), run_file("config.yaml")
LATEST = run_file("checkpoints/latest")

W = "run directory: weights"
WEIGHTS_CASES = [
    *_cases(W, "weights-missing", missing(WEIGHTS), ALL, "model.safetensors"),
    *_cases(W, "weights-truncated", truncated(WEIGHTS), ALL, "model.safetensors"),
    *_cases(W, "weights-foreign", foreign(WEIGHTS, "seq2seq"), ALL, "model.safetensors", "do not fit the model"),
    *_cases(W, "weights-empty", replaced(WEIGHTS, b""), ("eval", "generate"), "model.safetensors"),
    *_cases(W, "weights-text", replaced(WEIGHTS, "these are not weights\n"), ("generate",), "model.safetensors"),
]

O = "run directory: optimizer, scheduler and RNG state"
STATE_FILE_CASES = [
    *_cases(O, "optimizer-missing", missing(OPTIMIZER), ("resume",), "optimizer.pt"),
    *_cases(O, "optimizer-truncated", truncated(OPTIMIZER), ("resume",), "optimizer.pt"),
    *_cases(O, "optimizer-foreign", foreign(OPTIMIZER, "seq2seq"), ("resume",), "optimizer.pt"),
    *_cases(O, "optimizer-text", replaced(OPTIMIZER, "{}\n"), ("resume",), "optimizer.pt"),
    *_cases(O, "scheduler-truncated", truncated(ckpt_file("scheduler.pt")), ("resume",), "scheduler.pt"),
    *_cases(O, "rng-truncated", truncated(ckpt_file("rng.pt")), ("resume",), "rng.pt"),
]

T = "run directory: tokenizer"
TOKENIZER_CASES = [
    *_cases(T, "tokenizer-missing", missing(TOKENIZER), ALL, "synthformer_tokenizer.json"),
    *_cases(T, "tokenizer-truncated", truncated(TOKENIZER), ALL, "synthformer_tokenizer.json", "not a valid"),
    *_cases(T, "tokenizer-foreign", foreign(TOKENIZER, "cls"), ("eval", "generate"), "synthformer_tokenizer.json",
            "35 ids", "32"),
    *_cases(T, "tokenizer-foreign", foreign(TOKENIZER, "cls"), ("resume",), "vocab_size: 32 -> 35"),
    *_cases(T, "tokenizer-binary", replaced(TOKENIZER, BINARY), ("generate",), "synthformer_tokenizer.json"),
    *_cases(T, "tokenizer-hf-file", replaced(TOKENIZER, '{"version": "1.0", "model": {"type": "BPE"}}'),
            ("eval",), "synthformer_tokenizer.json", "not a synthformer tokenizer"),
    *_cases(T, "tokenizer-fields-missing", replaced(TOKENIZER, '{"kind": "char", "format_version": 1}'),
            ("generate", "eval"), "synthformer_tokenizer.json"),
]

M = "run directory: model_config.json"
MODEL_CONFIG_CASES = [
    *_cases(M, "model-config-missing", missing(MODEL_CONFIG), ALL, "model_config.json"),
    *_cases(M, "model-config-truncated", truncated(MODEL_CONFIG), ALL, "model_config.json", "not a valid model config"),
    *_cases(M, "model-config-foreign", foreign(MODEL_CONFIG, "seq2seq"), ("eval", "generate"), "model_config.json",
            "arch='seq2seq'"),
    *_cases(M, "model-config-foreign", foreign(MODEL_CONFIG, "seq2seq"), ("resume",), "arch: 'seq2seq' -> 'lm'"),
    *_cases(M, "model-config-wrong-type", edited_json(MODEL_CONFIG, d_model="sixteen"), ("generate", "eval"),
            "model_config.json", "'sixteen'"),
    *_cases(M, "model-config-not-object", replaced(MODEL_CONFIG, "[16, 2]\n"), ("generate",), "model_config.json"),
    *_cases(M, "model-config-edited", edited_json(MODEL_CONFIG, n_layers=2), ("eval",), "model_config.json",
            "are not in the checkpoint", "decoder.layers.1."),
    *_cases(M, "model-config-edited", edited_json(MODEL_CONFIG, n_layers=2), ("resume",), "n_layers: 2 -> 1"),
]

C = "run directory: config.yaml"
CONFIG_CASES = [
    *_cases(C, "config-yaml-missing", missing(CONFIG), ("eval", "generate"), "config.yaml"),
    *_cases(C, "config-yaml-truncated", cut_after(CONFIG, "d_model:"), ALL, "config.yaml", "d_model", "None"),
    *_cases(C, "config-yaml-unclosed-bracket", edited_text(CONFIG, "d_model: 16", "d_model: [16"), ("eval",),
            "config.yaml", "not valid YAML", "line"),
    *_cases(C, "config-yaml-foreign", foreign(CONFIG, "seq2seq"), ("eval", "generate"), "config.yaml",
            "'seq2seq'", "arch='lm'"),
    *_cases(C, "config-yaml-binary", replaced(CONFIG, BINARY), ("generate",), "config.yaml", "not UTF-8"),
    *_cases(C, "config-yaml-unknown-key", replaced(CONFIG, "task: {type: lm, trian: x}\n"), ("eval",), "config.yaml",
            "unknown key 'task.trian'"),
]

S = "run directory: trainer_state.json and checkpoints/latest"
CHECKPOINT_CASES = [
    *_cases(S, "trainer-state-truncated", truncated(STATE), ALL, "trainer_state.json", "damaged"),
    *_cases(S, "trainer-state-not-object", replaced(STATE, "[6]\n"), ("generate", "resume"), "trainer_state.json"),
    *_cases(S, "trainer-state-step-text", edited_json(STATE, step="six"), ("eval", "resume"), "trainer_state.json",
            "'six'"),
    *_cases(S, "trainer-state-foreign", replaced(STATE, '{"step": 6}'), ("resume",), "trainer_state.json",
            "batches_consumed"),
    *_cases(S, "checkpoints-missing", lambda env, run: shutil.rmtree(run / "checkpoints"), ("eval", "generate"),
            "has no checkpoint yet"),
    # recovered, with a warning naming the file: the previous complete checkpoint is used (generate writes nothing)
    case(S, "latest-binary-generate", on_damaged("generate", replaced(LATEST, BINARY)), "latest",
         "not a complete checkpoint", exit_code=0),
    case(S, "latest-empty-generate", on_damaged("generate", replaced(LATEST, b"")), "latest",
         "not a complete checkpoint", exit_code=0),
    case(S, "latest-names-missing-step-generate", on_damaged("generate", replaced(LATEST, "step_999999\n")),
         "step_999999", "not a complete checkpoint", exit_code=0),
    case(S, "trainer-state-missing-generate", on_damaged("generate", missing(STATE)), "step_000006",
         "not a complete checkpoint", exit_code=0),
]

L = "run directory: labels.json"
LABELS, LABELS_KIND = run_file("labels.json"), "cls"
LABEL_CASES = [
    *_cases(L, "labels-missing", missing(LABELS), ("eval", "generate"), "labels.json", kind=LABELS_KIND),
    *_cases(L, "labels-truncated", truncated(LABELS), ("eval", "generate", "resume"), "labels.json",
            kind=LABELS_KIND),
    *_cases(L, "labels-three-classes", replaced(LABELS, '["0", "1", "2"]\n'), ("generate",), "labels.json",
            kind=LABELS_KIND),
    *_cases(L, "labels-not-strings", replaced(LABELS, "[0, 1]\n"), ("eval",), "labels.json", kind=LABELS_KIND),
]

# -- not runs, runs of another task type, --resume with a changed config ------------------------------------------
R = "run directory: not a run, another task type"


def _not_a_run(make: Callable[[Env], Path], verb: str) -> Argv:
    return lambda env: verb_argv(env, verb, "lm", make(env))


def _folder_of_notes(env: Env) -> Path:
    path = env.write("notes/todo.txt", "buy milk\n").parent
    env.watched.append(path)
    return path


def _other_type(config_kind: str, run_kind: str) -> Argv:
    return lambda env: ["train", env.config(config_kind), "--run-dir", env.run(run_kind), "--resume"]


OTHER_RUN_CASES = [
    *[case(R, f"run-dir-missing-{verb}", _not_a_run(lambda env: env.tmp / "no-such-run", verb), "no-such-run",
           "not found") for verb in ("eval", "generate")],
    *[case(R, f"run-dir-is-file-{verb}", _not_a_run(lambda env: env.write("run.txt", "x"), verb), "run.txt")
      for verb in ("eval", "generate")],
    *[case(R, f"run-dir-not-a-run-{verb}", _not_a_run(_folder_of_notes, verb), "notes",
           "not a synthformer run directory") for verb in ("eval", "generate")],
    case(R, "resume-lm-config-on-classification-run", _other_type("lm", "cls"), "run-cls", "task.type",
         "'classification'", "'lm'"),
    case(R, "resume-classification-config-on-lm-run", _other_type("cls", "lm"), "run-lm", "task.type", "'lm'",
         "'classification'"),
    case(R, "resume-seq2seq-config-on-lm-run", _other_type("seq2seq", "lm"), "run-lm", "task.type", "'lm'",
         "'seq2seq'"),
]

CHANGED = "run directory: --resume with a changed config"


def _resume_changed(changes: dict[str, Any], kind: str = "lm") -> Argv:
    return lambda env: ["train", env.config(kind, changes), "--run-dir", env.run(kind), "--resume"]


def _other_corpus(env: Env) -> str:
    return str(env.write("other.txt", "completely different text\n" * 50))


RESUME_CASES = [
    case(CHANGED, "resume-changed-model", _resume_changed({"model.d_model": 24}), "run-lm", "model.d_model: 16 -> 24"),
    case(CHANGED, "resume-changed-kind", _resume_changed({"model.decoder_kind": "D"}), "decoder_kind: 'R+V' -> 'D'"),
    case(CHANGED, "resume-changed-lr", _resume_changed({"train.lr": 0.1}), "train.lr: 0.003 -> 0.1"),
    case(CHANGED, "resume-changed-seed", _resume_changed({"train.seed": 7}), "train.seed: 0 -> 7"),
    case(CHANGED, "resume-changed-tokenizer", _resume_changed({"task.tokenizer": "byte"}),
         "task.tokenizer: 'char' -> 'byte'"),
    case(CHANGED, "resume-changed-max-len", _resume_changed({"task.max_len": 8, "model.max_len": 16}),
         "task.max_len: 16 -> 8"),
]


def _resume_other_data(env: Env) -> list[Any]:
    return ["train", env.config("lm", {"task.train": _other_corpus(env)}), "--run-dir", env.run("lm"), "--resume"]


RESUME_CASES.append(case(CHANGED, "resume-changed-data", _resume_other_data, "task.train", "other.txt"))

RUNDIR_CASES: list[Case] = [*WEIGHTS_CASES, *STATE_FILE_CASES, *TOKENIZER_CASES, *MODEL_CONFIG_CASES, *CONFIG_CASES,
                            *CHECKPOINT_CASES, *LABEL_CASES, *OTHER_RUN_CASES, *RESUME_CASES]
