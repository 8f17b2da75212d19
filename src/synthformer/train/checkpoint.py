"""Crash-safe checkpoints (the run directory around them, its other files and its lock: :mod:`.rundir`).

Layout::

    RUN/checkpoints/step_000100/
        model.safetensors                 weights (tied tensors stored once, ties restored on load)
        optimizer.pt  scheduler.pt        state dicts (tensors and primitives only)
        rng.pt                            RNG states, one per process
        trainer_state.json                step, data position, ...
    RUN/checkpoints/latest                text file naming the newest complete checkpoint ("step_000100")
    RUN/checkpoints/best                  with train.keep_best: the best checkpoint by its metric (JSON, .best)

A checkpoint is written into a temporary directory next to its final place, every file is fsync'ed, and the
directory is then renamed into place with ``os.replace`` (atomic on POSIX); ``latest`` is replaced the same
way afterwards, then ``best`` when this checkpoint is the new best. Old checkpoints are pruned only after both
pointers are in place, never one a pointer names, and each is renamed out of the listing before it is deleted.
A crash at any point therefore leaves the previous checkpoint and pointers intact.
Everything is loaded with ``torch.load(weights_only=True)``: loading a checkpoint never runs pickled code.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import shutil
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_model, save_file, save_model
from torch import nn

# under these names because the fault-injection tests (tests/reliability/test_faults.py) patch them here
from synthformer.common import TMP_PREFIX as _TMP_PREFIX
from synthformer.common import atomic_write_text
from synthformer.common import created_mode as _created_mode
from synthformer.common import fsync_path as _fsync_path

from .best import BEST_FILE, BestRecord, read_best
from .rng import capture_rng_state, restore_rng_state
from .weights_file import finish_weights_file

__all__ = [
    "CHECKPOINTS_DIR",
    "Checkpoint",
    "CheckpointError",
    "WeightsMismatchError",
    "capture_rng_state",
    "checkpoint_name",
    "latest_checkpoint",
    "list_checkpoints",
    "load_checkpoint",
    "load_model_weights",
    "read_trainer_state",
    "restore_rng_state",
    "save_checkpoint",
    "shape_mismatches",
]

logger = logging.getLogger(__name__)

CHECKPOINTS_DIR = "checkpoints"
LATEST_FILE = "latest"
MODEL_FILE = "model.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
SCHEDULER_FILE = "scheduler.pt"
RNG_FILE = "rng.pt"
STATE_FILE = "trainer_state.json"
_STEP_RE = re.compile(r"^step_(\d+)$")
_OLD_RE = re.compile(r"^\.old-(step_\d+)-\d+$")
_OLD_PREFIX = ".old-"


def checkpoint_name(step: int) -> str:
    """Directory name of the checkpoint at ``step`` (zero-padded so names sort like steps)."""
    return f"step_{step:06d}"


# --------------------------------------------------------------------------------------------------------------
# listing


def _step_of(path: Path) -> int | None:
    m = _STEP_RE.match(path.name)
    return int(m.group(1)) if m else None


def _moved_aside(path: Path) -> str | None:
    """``step_X`` for ``.old-step_X-PID``: a complete checkpoint that a re-save of its step moved aside."""
    m = _OLD_RE.match(path.name)
    return m.group(1) if m else None


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first (temporary and half-written directories are ignored).

    A checkpoint moved aside by a re-save of its step that was killed before the new copy went into place
    (``.old-step_X-PID`` without ``step_X``) is listed under its temporary name: it is the only copy of that step.
    """
    root = Path(run_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _step_of(p) is not None and (p / STATE_FILE).is_file()]
    names = {p.name for p in found}
    for p in root.iterdir():
        name = _moved_aside(p)
        if name is not None and name not in names and (p / STATE_FILE).is_file():
            found.append(p)
            names.add(name)
    return sorted(found, key=lambda p: _step_of(Path(_moved_aside(p) or p.name)) or 0)


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint named by ``checkpoints/latest``; the newest complete one if the pointer is missing/stale."""
    root = Path(run_dir) / CHECKPOINTS_DIR
    pointer = root / LATEST_FILE
    if pointer.is_file():
        # a damaged pointer (binary junk included) is only a stale one: the checkpoints themselves decide
        name = pointer.read_bytes().decode("utf-8", errors="replace").strip()
        target = root / name
        if _STEP_RE.match(name) and (target / STATE_FILE).is_file():
            return target
        shown = name if len(name) <= 40 else name[:40] + "..."
        logger.warning("%s names %r, which is not a complete checkpoint; using the newest one", pointer, shown)
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


# --------------------------------------------------------------------------------------------------------------
# save


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    model: nn.Module | Mapping[str, torch.Tensor],
    *,
    optimizer: torch.optim.Optimizer | Mapping[str, Any] | None = None,
    scheduler: Any | None = None,
    rng_states: list[dict[str, Any]] | None = None,
    trainer_state: dict[str, Any] | None = None,
    max_checkpoints: int = 0,
    best: BestRecord | None = None,
    keep: Collection[str] = (),
) -> Path:
    """Write ``RUN/checkpoints/step_XXXXXX`` atomically, point ``latest`` at it, prune to ``max_checkpoints``.

    Args:
        model: the *unwrapped* module (not the DDP wrapper); tied parameters are stored once. Or its full state
            dict, tied tensors already stored once (what a sharded model gathers: see :mod:`.distributed`).
        optimizer: the optimizer, or its ``state_dict()`` (gathered in the same form).
        rng_states: one :func:`capture_rng_state` dict per process (index = rank).
        trainer_state: JSON-serialisable loop state (step, data position, ...); ``step`` is added.
        max_checkpoints: keep only the newest N checkpoints (0 keeps all); the new one is never pruned, nor the
            checkpoints ``latest`` and ``best`` name.
        best: this checkpoint is the new best: ``checkpoints/best`` is pointed at it (``best.checkpoint`` must be
            its name).
        keep: names of older checkpoints rotation must not delete either (the trainer's guard of the best weights,
            :func:`~synthformer.train.checkpoint_losses.guarded`).

    Returns the final checkpoint directory.
    """
    root = Path(run_dir) / CHECKPOINTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(root)
    name = checkpoint_name(step)
    final = root / name
    tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{name}-", dir=root))
    os.chmod(tmp, _created_mode(directory=True))
    old: Path | None = None
    try:
        metadata = {"step": str(step)}
        if isinstance(model, Mapping):
            save_file({k: v.contiguous() for k, v in model.items()}, str(tmp / MODEL_FILE), metadata=metadata)
        else:
            save_model(model, str(tmp / MODEL_FILE), metadata=metadata)
        finish_weights_file(tmp / MODEL_FILE)  # 0644 under umask 022, and equal weights give equal bytes
        if optimizer is not None:
            torch.save(optimizer if isinstance(optimizer, Mapping) else optimizer.state_dict(), tmp / OPTIMIZER_FILE)
        if scheduler is not None:
            torch.save(scheduler.state_dict(), tmp / SCHEDULER_FILE)
        if rng_states is not None:
            torch.save({"world_size": len(rng_states), "states": list(rng_states)}, tmp / RNG_FILE)
        state = dict(trainer_state or {})
        state["step"] = step
        # The state file is written last: list_checkpoints treats a directory without it as incomplete.
        (tmp / STATE_FILE).write_text(json.dumps(state, indent=2, sort_keys=True), encoding="utf-8")
        for f in tmp.iterdir():
            _fsync_path(f)
        _fsync_path(tmp)
        if final.exists():
            # Re-saving a step (e.g. the final save after resuming at it): move the old copy aside first,
            # because os.replace cannot replace a non-empty directory.
            old = root / f"{_OLD_PREFIX}{name}-{os.getpid()}"
            os.replace(final, old)
        os.replace(tmp, final)
        _fsync_path(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not final.exists():
            os.replace(old, final)  # put the previous copy back
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    atomic_write_text(root / LATEST_FILE, name + "\n")
    if best is not None and best.checkpoint == name:
        atomic_write_text(root / BEST_FILE, best.to_json())
    if max_checkpoints > 0:
        _prune(root, max_checkpoints, keep_names={name, *keep})
    logger.info("saved checkpoint %s", final)
    return final


def _remove_stale_temporaries(root: Path) -> None:
    # Left behind only by a hard crash (SIGKILL, power loss) of an earlier save. A temporary is never a valid
    # checkpoint; a copy moved aside is the only one of its step when the crash came before the new copy was in
    # place: that one is put back instead.
    for p in root.iterdir():
        name = _moved_aside(p)
        if name is not None and not (root / name).exists() and (p / STATE_FILE).is_file():
            os.replace(p, root / name)
            logger.warning("restored checkpoint %s, moved aside by a save that was interrupted", root / name)
        elif p.name.startswith((_TMP_PREFIX, _OLD_PREFIX)):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def _prune(root: Path, keep: int, keep_names: set[str]) -> None:
    found = list_checkpoints(root.parent)
    # what the pointers on disk name now (both are written before pruning), whatever a crash left in between
    latest = latest_checkpoint(root.parent)
    record = read_best(root)
    pointed = {*keep_names, latest.name if latest is not None else "", record.checkpoint if record else ""}
    for path in found[:-keep] if keep < len(found) else []:
        if path.name not in pointed:
            # renamed first (atomic): a kill during the deletion leaves a temporary, never a half checkpoint
            doomed = root / f"{_TMP_PREFIX}pruned-{path.name}-{os.getpid()}"
            os.replace(path, doomed)
            shutil.rmtree(doomed, ignore_errors=True)


# --------------------------------------------------------------------------------------------------------------
# load


@dataclass
class Checkpoint:
    """What :func:`load_checkpoint` read besides the state it loaded into the given objects."""

    path: Path
    step: int
    trainer_state: dict[str, Any] = field(default_factory=dict)
    rng_states: list[dict[str, Any]] | None = None


def _resolve(path: str | Path) -> Path:
    """Accept a checkpoint directory or a run directory (then its latest checkpoint)."""
    path = Path(path)
    if (path / STATE_FILE).is_file():
        return path
    found = latest_checkpoint(path)
    if found is None:
        raise FileNotFoundError(f"no checkpoint found in {path} (looked for {STATE_FILE} and {CHECKPOINTS_DIR}/)")
    return found


class WeightsMismatchError(ValueError):
    """A checkpoint's tensors do not fit the model (another size or architecture); the message names them."""


class CheckpointError(ValueError):
    """A checkpoint file that is missing, damaged (cut short, overwritten) or another run's; the message names
    the file. Loading errors of torch and safetensors name neither the file nor the problem in user terms (or
    span many lines), so they are turned into this one."""


def _one_line(err: BaseException, limit: int = 160) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:limit]}{'...' if len(text) > limit else ''}"


def _damaged(path: Path, err: BaseException) -> CheckpointError:
    # torch's refusal of a pickle explains its weights_only default at length; what matters here is the refusal
    detail = ("UnpicklingError: holds something other than tensors; refused, nothing in it was run"
              if isinstance(err, pickle.UnpicklingError) else _one_line(err))
    return CheckpointError(f"{path}: damaged or not a checkpoint file ({detail}); delete the checkpoint folder "
                           f"{path.parent.name} to fall back on the previous checkpoint, or train again")


def _tensor_shapes(file: Path) -> dict[str, list[int]]:
    """The tensor shapes of a safetensors file, from its header."""
    if not file.is_file():
        raise CheckpointError(f"checkpoint file missing: {file}")
    try:
        with safe_open(str(file), framework="pt") as f:
            return {name: list(f.get_slice(name).get_shape()) for name in f.keys()}
    except (SafetensorError, OSError, ValueError) as err:  # cut short, empty, not safetensors at all
        raise _damaged(file, err) from None


def read_trainer_state(path: str | Path) -> dict[str, Any]:
    """A checkpoint's ``trainer_state.json``: a JSON object with an integer ``step``.

    Raises:
        CheckpointError: the file is unreadable, not JSON, or not such an object (naming the file).
    """
    path = Path(path)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # ValueError: invalid JSON or UTF-8
        raise _damaged(path, err) from None
    if not isinstance(state, dict):
        shown = json.dumps(state)
        raise CheckpointError(f"{path}: expected a JSON object with an integer 'step', got "
                              f"{shown[:60]}{'...' if len(shown) > 60 else ''}")
    step = state.get("step")
    if isinstance(step, bool) or not isinstance(step, int):
        raise CheckpointError(f"{path}: 'step' must be an integer, got {step!r}")
    return state


def shape_mismatches(file: str | Path, model: nn.Module) -> list[str]:
    """``"name: checkpoint [..], model [..]"`` for each tensor of the safetensors ``file`` whose shape differs
    from the model's tensor of that name (read from the file's header, no tensor is loaded).

    Raises:
        CheckpointError: the file is missing or not a readable safetensors file.
    """
    own = model.state_dict()
    shapes = _tensor_shapes(Path(file))
    return [f"{name}: checkpoint {shape}, model {list(own[name].shape)}"
            for name, shape in shapes.items() if name in own and list(own[name].shape) != shape]


def load_model_weights(path: str | Path, model: nn.Module, *, strict: bool = True) -> Path:
    """Load only the weights of a checkpoint (or of a run's latest checkpoint) into ``model``.

    Returns the checkpoint directory used. Tied parameters stay tied: tensors are copied into the existing
    parameters, and the de-duplicated names in the file are resolved by ``safetensors.torch.load_model``.

    Raises:
        WeightsMismatchError: tensor shapes differ (the first one named, with both shapes), or, with ``strict``,
            tensors are missing or unexpected.
        CheckpointError: the weights file is missing or damaged.
    """
    ckpt = _resolve(path)
    file = ckpt / MODEL_FILE
    wrong = shape_mismatches(file, model)
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        raise WeightsMismatchError(f"{file}: the weights do not fit the model: {wrong[0]}{more}")
    try:
        missing, unexpected = load_model(model, str(file), strict=False)
    except SafetensorError as err:
        raise _damaged(file, err) from None
    if strict and (missing or unexpected):  # another architecture or depth: count and name the first of each
        parts = [f"{len(names)} tensor(s) {where} (first: {sorted(names)[0]})"
                 for names, where in ((missing, "of the model are not in the checkpoint"),
                                      (unexpected, "of the checkpoint are not in the model")) if names]
        raise WeightsMismatchError(f"{file}: the weights do not fit the model: {'; '.join(parts)}")
    return ckpt


def load_checkpoint(
    path: str | Path,
    model: nn.Module | None = None,
    *,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    map_location: str | torch.device = "cpu",
    strict: bool = True,
) -> Checkpoint:
    """Load a checkpoint (directory, or run directory for its latest) into the objects given.

    Optimizer, scheduler and RNG files are read with ``torch.load(weights_only=True)``: a file holding
    anything but tensors and primitives is refused (a :class:`CheckpointError`) instead of running code.
    RNG states are returned, not applied (each process picks its own; see :func:`restore_rng_state`).

    Raises:
        CheckpointError: a file of the checkpoint is missing, damaged, or another model's (naming the file).
        WeightsMismatchError: the weights do not fit ``model``.
    """
    ckpt = _resolve(path)
    if torch.device(map_location).type == "cpu":
        map_location = "cpu"  # torch.load does not understand "cpu:0", which accelerate uses under torchrun
    state = read_trainer_state(ckpt / STATE_FILE)
    if model is not None:
        load_model_weights(ckpt, model, strict=strict)
    if optimizer is not None:
        _load_state_dict(optimizer, ckpt / OPTIMIZER_FILE, map_location)
    if scheduler is not None:
        _load_state_dict(scheduler, ckpt / SCHEDULER_FILE, map_location)
    rng_states = None
    if (ckpt / RNG_FILE).is_file():
        rng = _load_tensors(ckpt / RNG_FILE, "cpu")
        if not isinstance(rng, dict) or not isinstance(rng.get("states"), list):
            raise CheckpointError(f"{ckpt / RNG_FILE}: expected the RNG states of the run's processes")
        rng_states = rng["states"]
    return Checkpoint(path=ckpt, step=state["step"], trainer_state=state, rng_states=rng_states)


def _load_state_dict(target: Any, path: Path, map_location: str | torch.device) -> None:
    """``target.load_state_dict`` from ``path``; a state of another model (other parameter groups or sizes)
    is named as such."""
    state = _load_tensors(path, map_location)
    try:
        target.load_state_dict(state)
    except (ValueError, KeyError, TypeError, RuntimeError, AttributeError) as err:
        raise CheckpointError(f"{path}: does not fit this run ({_one_line(err)}); it is the state of another "
                              "model or run") from None


def _load_tensors(path: Path, map_location: str | torch.device) -> Any:
    if not path.is_file():
        raise CheckpointError(f"checkpoint file missing: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # noqa: BLE001 - a cut zip (RuntimeError), a refused pickle, EOF...: a damaged file
        raise _damaged(path, err) from None
