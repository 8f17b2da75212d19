"""``convert_t5``: a Hugging Face T5 folder (``save_pretrained`` output, read offline) as a synthformer run
directory, so that ``synthformer eval``, ``generate``, ``train --resume``, ``init_from`` (finetuning, growing
Synthesizers) and ``export`` work on it as on a trained run.

The run directory holds what training would have written: ``config.yaml`` (the given run config, its ``model``
section replaced by the converted model's settings and its tokenizer settings cleared: the tokenizer is the
checkpoint's), the tokenizer, ``model_config.json`` and a step-0 checkpoint (the converted weights, a fresh
optimizer and scheduler state for ``--resume``). So ``synthformer train RUN/config.yaml init_from=RUN
model.encoder_kind=R+V --run-dir NEW`` finetunes (or grows) from it with no other setting to copy.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from synthformer.common import ConfigError
from synthformer.data import Tokenizer, load_tokenizer
from synthformer.models import Seq2SeqConfig, config_class
from synthformer.tasks import RunConfig, absolute_paths, load_run_config, resolve_model_config
from synthformer.train import Run, RunDir, build_optimizer, build_scheduler, capture_rng_state, trainer_state

from .t5_convert import check_t5_config, from_t5

__all__ = ["convert_t5"]

logger = logging.getLogger(__name__)

#: Model settings a run config never sets (the task and the tokenizer decide them).
_DERIVED = ("arch", "vocab_size", "pad_id", "bos_id", "eos_id")


def _tokenizer(folder: Path, path: str | Path | None) -> Tokenizer:
    if path is not None:
        return load_tokenizer(path)
    own = folder / RunDir.TOKENIZER
    if own.is_file():
        return load_tokenizer(own)
    raise ConfigError(f"{folder} holds no synthformer tokenizer ({RunDir.TOKENIZER}): pass --tokenizer FILE, the "
                      "tokenizer whose ids the checkpoint was trained on")


def check_vocabulary(tokenizer: Tokenizer, config: Seq2SeqConfig) -> None:
    """Raise :class:`ConfigError` unless the tokenizer's ids are the checkpoint's: the same vocabulary size and the
    same padding, end and decoder-start ids."""
    if tokenizer.vocab_size != config.vocab_size:
        raise ConfigError(f"the tokenizer has {tokenizer.vocab_size} ids but the T5 checkpoint's vocabulary has "
                          f"{config.vocab_size}: they do not belong together")
    pairs = (("pad", tokenizer.pad_id, config.pad_id), ("eos", tokenizer.eos_id, config.eos_id),
             ("bos (the decoder start)", tokenizer.bos_id, config.bos_id))
    for name, ours, theirs in pairs:
        if ours != theirs:
            raise ConfigError(f"the tokenizer's {name} id is {ours} but the T5 checkpoint's is {theirs}: they do "
                              "not belong together")


def convert_t5(folder: str | Path, run_dir: str | Path, config: str | Path | RunConfig, *,
               overrides: tuple[str, ...] | list[str] = (), tokenizer: str | Path | None = None,
               overwrite: bool = False) -> Path:
    """Write the T5 model of ``folder`` as the run directory ``run_dir``; return its path.

    Args:
        folder: a local folder written by ``T5ForConditionalGeneration.save_pretrained`` (no network is used).
        run_dir: the run directory to create.
        config: the run config (a YAML file or a :class:`RunConfig`) whose ``task``, ``train`` and ``eval``
            sections the run keeps (what it is evaluated and finetuned on); its task type must train an
            encoder-decoder. ``model.max_len`` (default: the task's longest sequence) sizes the converted model.
        overrides: dotted ``key=value`` overrides of ``config``.
        tokenizer: a synthformer tokenizer file; default the folder's own ``synthformer_tokenizer.json``.
        overwrite: replace an earlier run in ``run_dir``.

    Raises:
        ConfigError: a T5 setting synthformer cannot represent, a tokenizer whose ids are not the checkpoint's, a
            config whose task is not an encoder-decoder one.
        RunError: ``run_dir`` holds an earlier run and ``overwrite`` is False.
    """
    from transformers import AutoConfig, T5ForConditionalGeneration

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise ConfigError(f"{folder}: not a Hugging Face model folder (no config.json)")
    check_t5_config(AutoConfig.from_pretrained(folder, local_files_only=True))
    run = config if isinstance(config, RunConfig) else load_run_config(config, list(overrides))
    if not issubclass(config_class(run.task.task_type.arch), Seq2SeqConfig):
        raise ConfigError(f"task.type: {run.task.type!r} trains arch {run.task.task_type.arch!r}; a T5 model "
                          "converts into an encoder-decoder task (seq2seq, span_corruption, text_to_text)")
    tok = _tokenizer(folder, tokenizer)
    hf = T5ForConditionalGeneration.from_pretrained(folder, local_files_only=True)
    model, model_config = from_t5(hf, max_len=run.model.max_len)
    check_vocabulary(tok, model_config)
    derived = {*_DERIVED, *run.task.task_type.derived_model_fields}
    section = {k: v for k, v in model_config.to_dict().items() if k not in derived}
    # the run's tokenizer is the checkpoint's, not one to train: a finetuning run may then use this config.yaml
    # as it is (init_from refuses a task.tokenizer other than the pretrained run's)
    task = dataclasses.replace(run.task, tokenizer=None, vocab_size=None, tokenizer_options={})
    run = absolute_paths(dataclasses.replace(run, task=task, model=section))
    resolved = resolve_model_config(run, tok.vocab_size, None, (tok.pad_id, tok.bos_id, tok.eos_id))
    if resolved != model_config:  # the task decided a field differently: name it rather than save a mismatch
        theirs, ours = model_config.to_dict(), resolved.to_dict()
        diffs = [f"{k}: checkpoint {theirs[k]!r}, task {ours[k]!r}" for k in theirs if theirs[k] != ours.get(k)]
        raise ConfigError(f"the task decides model settings other than the checkpoint's ({'; '.join(diffs)})")
    # a plain write, not a training run: one process, and the run files are those the pipeline would write
    with Run.open(run_dir, overwrite=overwrite) as owner:
        owner.start(run, tokenizer=tok, model_config=model_config.to_dict())
        optimizer = build_optimizer(model, run.train)
        state = trainer_state(run.train, batches_consumed=0, tokens_seen=0, elapsed_s=0.0, batches_per_epoch=None,
                              world_size=1)
        owner.save_checkpoint(0, model, optimizer=optimizer, scheduler=build_scheduler(optimizer, run.train),
                              rng_states=[capture_rng_state()], trainer_state=state)
    logger.info("converted %s into the run directory %s", folder, owner.path)
    return owner.path
