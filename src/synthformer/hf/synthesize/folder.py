"""Synthesize a model folder (a ``save_pretrained`` folder) into a new folder: what ``synthformer synthesize``
runs. The input folder is only read."""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from synthformer.common import ConfigError

from .api import added_parameters, plan, synthesize, synthesized_class
from .families import family_of, self_attention_modules
from .remote import MODULE
from .transfer import distill, init_random_from_attention, mean_attention, pretrained_copy

__all__ = ["SynthesisReport", "load_folder", "synthesize_folder", "text_batches"]

logger = logging.getLogger(__name__)

#: The files ``save_pretrained`` writes (the rest of the folder, the tokenizer's files, is copied).
_WRITTEN = ("config.json", "generation_config.json", "model.safetensors", "model.safetensors.index.json",
            f"{MODULE}.py")
_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")


@dataclass
class SynthesisReport:
    """What :func:`synthesize_folder` did (or, in a dry run, would do)."""

    model_type: str
    layers: dict[int, str]
    max_len: int
    added_params: dict[int, int] = field(default_factory=dict)
    """Parameters added per synthesized layer."""
    transferred_tables: int = 0
    distill_losses: list[float] = field(default_factory=list)
    out: str | None = None

    def lines(self) -> list[str]:
        kinds = ", ".join(f"{i}: {k}" for i, k in self.layers.items())
        total = sum(self.added_params.values())
        text = [f"{self.model_type}: {len(self.layers)} self-attention layers synthesized ({kinds}), max_len "
                f"{self.max_len}, {total:,} parameters added ({_mib(total)} in fp32; {_mib(4 * total)} to train "
                "with AdamW: weights, gradients and two moments)"]
        text += [f"  layer {i} ({self.layers[i]}): {n:,} parameters, {_mib(n)}" for i, n in self.added_params.items()]
        if self.transferred_tables:
            text.append(f"R initialised from the pretrained mean attention in {self.transferred_tables} layers")
        if self.distill_losses:
            text.append(f"distilled {len(self.distill_losses)} steps: layer-output MSE {self.distill_losses[0]:.4g} "
                        f"-> {self.distill_losses[-1]:.4g}")
        return text


def _mib(params: int) -> str:
    """The memory of ``params`` fp32 numbers, in MiB."""
    return f"{4 * params / 2**20:.2f} MiB"


def load_folder(model_dir: str, weights: bool = True) -> torch.nn.Module:
    """The ``transformers`` model of a local folder (its ``architectures`` class, synthesized layers included),
    refusing in one line a folder without ``config.json`` or of a family that cannot be synthesized (checked
    before the weights are read).
    ``weights=False``: the model built on the ``meta`` device from the config alone (for checks: nothing read)."""
    import transformers

    folder = Path(model_dir)
    if not (folder / "config.json").is_file():
        raise ConfigError(f"{model_dir}: no config.json (expected a folder written by save_pretrained)")
    try:
        config = transformers.AutoConfig.from_pretrained(model_dir)
    except (ValueError, KeyError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"{model_dir}: config.json cannot be read by transformers: {first}") from None
    family_of(config)
    names = getattr(config, "architectures", None) or []
    cls = getattr(transformers, names[0], None) if names else None
    if cls is None:
        raise ConfigError(f"{model_dir}: config.json names no transformers architecture ({names!r})")
    if getattr(config, "synthformer", None):
        cls = synthesized_class(cls)  # a synthesized folder keeps its layers (synthesizing more adds to them)
    if not weights:
        with torch.device("meta"):
            return cls(config)
    return cls.from_pretrained(model_dir).eval()


def text_batches(model_dir: str, text_file: str, length: int, batch: int = 8, limit: int = 64) -> list[torch.Tensor]:
    """Up to ``limit`` sequences of ``length`` tokens of ``text_file``, tokenized by the folder's tokenizer, in
    batches of ``batch``: (B, length) each."""
    from transformers import AutoTokenizer

    path = Path(text_file)
    if not path.is_file():
        raise ConfigError(f"--data {text_file}: no such file")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ids = tokenizer(path.read_text(encoding="utf-8"), return_tensors="pt", add_special_tokens=False).input_ids[0]
    rows = min(limit, ids.numel() // length)
    if rows < 1:
        raise ConfigError(f"--data {text_file}: {ids.numel()} tokens, fewer than one sequence of {length}")
    seqs = ids[: rows * length].view(rows, length)  # (N, L)
    return list(seqs.split(batch))


def synthesize_folder(model_dir: str, out: str | None, kind: str, layers: list[int] | None = None,
                      max_len: int | None = None, grow: bool = True, dry_run: bool = False,
                      distill_steps: int = 0, data: str | None = None, seq_len: int = 64, lr: float = 1e-2,
                      overwrite: bool = False, options: dict[str, Any] | None = None) -> SynthesisReport:
    """Synthesize the model of ``model_dir`` and save it, with the folder's tokenizer files, in ``out``.

    With ``data`` (a text file), kinds with R but without V start from the pretrained model's mean attention on
    it, and ``distill_steps`` fit the synthesized layers to the pretrained layers' outputs on it. Every check
    (the model, the kinds, the layers, ``max_len``, ``out``) is made before anything is written.
    """
    if distill_steps and not data:
        raise ConfigError("--distill-steps needs --data TEXT (the text the layers are fitted on)")
    if distill_steps < 0:
        raise ConfigError(f"--distill-steps {distill_steps}: expected 0 or more")
    source = Path(model_dir).resolve()
    target = Path(out).resolve() if out else None
    if not dry_run:
        if target is None:
            raise ConfigError("--out DIR is needed (or --dry-run)")
        if target == source or source in target.parents:
            raise ConfigError(f"--out {out} is inside MODEL_DIR {model_dir}, which is never written")
        if target.exists() and any(target.iterdir()) and not overwrite:
            raise ConfigError(f"--out {out} exists and is not empty; pass --overwrite to replace it")
    shape = load_folder(model_dir, weights=False)  # every check before the weights are read
    plan_kinds, max_len = plan(shape, kind=kind, layers=layers, max_len=max_len, options=options)
    report = SynthesisReport(shape.config.model_type, plan_kinds, max_len)
    report.added_params = added_parameters(shape, plan_kinds, max_len, options)
    batches = text_batches(model_dir, data, min(seq_len, max_len)) if data else []
    if dry_run:
        return report
    model = load_folder(model_dir)
    means = mean_attention(model, batches) if batches else None
    teacher = pretrained_copy(model) if distill_steps else None
    synthesize(model, kind=kind, layers=layers, max_len=max_len, options=options, grow=grow)
    if means is not None:
        report.transferred_tables = init_random_from_attention(model, means)
    if teacher is not None:
        report.distill_losses = distill(model, teacher, batches, distill_steps, lr=lr)
    assert target is not None
    if target.exists() and overwrite:
        shutil.rmtree(target)
    model.save_pretrained(str(target))
    for path in source.iterdir():  # the tokenizer and whatever else the folder holds, never its weights
        if path.is_file() and path.name not in _WRITTEN and not path.name.endswith(_WEIGHTS):
            shutil.copy2(path, target / path.name)
    report.out = str(target)
    logger.info("synthesized %d of %d self-attention layers into %s", len(plan_kinds),
                len(self_attention_modules(model)), target)
    return report
