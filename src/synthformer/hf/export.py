"""``export_run``: a synthformer run directory as a Hugging Face model folder.

The folder holds what ``from_pretrained`` reads, offline and without pickle: ``config.json`` (a
:class:`SynthesizerConfig`), ``model.safetensors`` (each tied tensor once), ``generation_config.json``, the tokenizer
in ``transformers``' form (``tokenizer.json``, ``tokenizer_config.json``; a language model's pads on the left, as
batched generation needs) and a generated model card ``README.md``. ``config.json``'s ``auto_map`` and two small
modules let ``transformers`` load the folder by path with ``trust_remote_code=True`` in a process that has not
imported :mod:`synthformer.hf` (see :mod:`synthformer.hf.remote_code`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from .auto import MODEL_CLASSES
from .model_card import model_card
from .remote_code import auto_map
from .tokenizer import to_hf_tokenizer

__all__ = ["export_run"]

logger = logging.getLogger(__name__)


def export_run(run_dir: str | Path, out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Write the latest checkpoint of ``run_dir`` to ``out_dir`` as a Hugging Face model folder; return its path.

    Args:
        run_dir: a run directory written by ``synthformer train``.
        out_dir: the folder to write (created; must be empty unless ``overwrite``).
        overwrite: replace the exported files of an existing folder.

    Raises:
        RunError: ``run_dir`` is not a complete run (see :func:`synthformer.tasks.load_run`).
        FileExistsError: ``out_dir`` holds files and ``overwrite`` is False.
        ValueError: the run's architecture has no ``transformers`` wrapper.
    """
    from synthformer.tasks import load_run

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file; expected a folder to export into")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} is not empty; choose another folder or pass --overwrite")
    loaded = load_run(run_dir)
    arch = loaded.model_config.arch
    if arch not in MODEL_CLASSES:
        raise ValueError(f"arch {arch!r} has no Hugging Face wrapper; expected one of {', '.join(MODEL_CLASSES)}")
    extra = {}
    if loaded.model_config.classifier and loaded.label_set:
        extra["id2label"] = dict(enumerate(loaded.label_set))
        extra["label2id"] = {label: i for i, label in enumerate(loaded.label_set)}
    wrapper = MODEL_CLASSES[arch]
    model = wrapper.from_native(loaded.model, **extra)
    model.config.auto_map = auto_map(wrapper.auto_class, wrapper.__name__)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)  # safetensors, tied tensors written once; the modules auto_map names
    tokenizer = to_hf_tokenizer(loaded.tokenizer, loaded.model_config, max_len=loaded.model_config.max_len)
    tokenizer.save_pretrained(out)
    (out / "README.md").write_text(model_card(loaded), encoding="utf-8")
    logger.info("exported %s (step %d) to %s", loaded.run_dir, loaded.step, out)
    return out
