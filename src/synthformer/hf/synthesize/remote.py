"""Loading a synthesized folder by path: ``auto_map`` and a small module that holds no model code.

A synthesized folder keeps its ``transformers`` architecture (``"model_type": "llama"``, ``"architectures":
["LlamaForCausalLM"]``), so a plain ``AutoModelForCausalLM.from_pretrained(folder)`` finds ``transformers``' own
class, builds the original attention and drops the synthesized tensors (listed as UNEXPECTED in its load report).
``transformers`` consults ``config.json``'s ``auto_map`` only with ``trust_remote_code=True``: then it imports the
module ``auto_map`` names from the folder. The module written here imports the installed synthformer and builds
the architecture's class with :func:`~.api.synthesized_class`, so the code that runs is the installed package's.

In a process that has imported :mod:`synthformer.hf.synthesize`, :func:`install_load_warning` makes the plain load
say what happened: a load report listing synthesized tensors as unexpected gets a line naming the two ways to load
the folder. A process that never imported synthformer cannot be told (nothing of synthformer runs in it).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

__all__ = ["MODULE", "auto_classes", "auto_map", "install_load_warning", "module_source", "write_module"]

#: the module ``auto_map`` points to (``<MODULE>.py`` in a synthesized folder)
MODULE = "modeling_synthesized"

_SOURCE = '''"""Written by synthformer with a synthesized model: lets transformers load this folder with
trust_remote_code=True.

It holds no model code: it imports the installed synthformer package (pip install "synthformer[hf]") and builds
each transformers class below with synthformer.hf.synthesize.synthesized_class, which rebuilds the synthesized
attention layers that config.json's "synthformer" entry records before the weights are loaded into them.
"""

import transformers

from synthformer.hf.synthesize import synthesized_class

{assignments}

__all__ = [{names}]
'''


def auto_classes(config: Any, architecture: str) -> dict[str, str]:
    """``{Auto class name: transformers class name}`` for a synthesized ``architecture`` of ``config``'s model
    type: every Auto class whose mapping names ``architecture`` (``GPT2LMHeadModel``: ``AutoModelForCausalLM`` and
    ``AutoModelForPreTraining``), and ``AutoModel`` to the family's base model (``LlamaModel``), whose module names
    a head's checkpoint also fits (``transformers`` strips the head's prefix)."""
    import transformers
    from transformers.models.auto.auto_factory import _BaseAutoModelClass

    model_type = config.model_type
    found: dict[str, str] = {}
    for name in sorted(n for n in dir(transformers) if n.startswith("AutoModel")):
        auto = getattr(transformers, name, None)
        if not (isinstance(auto, type) and issubclass(auto, _BaseAutoModelClass)):
            continue
        names = auto._model_mapping._model_mapping.get(model_type)
        names = names if isinstance(names, (tuple, list)) else (names,)
        if architecture in names:
            found[name] = architecture
    base = transformers.AutoModel._model_mapping._model_mapping.get(model_type)
    if "AutoModel" not in found and isinstance(base, str) and hasattr(transformers, base):
        found["AutoModel"] = base
    return found


def auto_map(config: Any, architecture: str) -> dict[str, str]:
    """``config.json``'s ``auto_map`` for a synthesized ``architecture``: each of :func:`auto_classes` to the
    class of :data:`MODULE` that bears the ``transformers`` class's name."""
    return {auto: f"{MODULE}.{name}" for auto, name in auto_classes(config, architecture).items()}


def module_source(class_names: list[str]) -> str:
    """The text of :data:`MODULE` for ``class_names`` (``transformers`` classes, each rebound to its synthesized
    subclass under its own name)."""
    names = sorted(set(class_names))
    assignments = "\n".join(f"{n} = synthesized_class(transformers.{n})" for n in names)
    return _SOURCE.format(assignments=assignments, names=", ".join(f'"{n}"' for n in names))


def write_module(folder: str | Path, class_names: list[str]) -> Path:
    """Write :data:`MODULE` for ``class_names`` into ``folder``; returns its path."""
    path = Path(folder) / f"{MODULE}.py"
    path.write_text(module_source(class_names), encoding="utf-8")
    return path


class _PlainLoadWarning(logging.Filter):
    """Adds to ``transformers``' load report, when it lists synthesized tensors as unexpected, how to load them."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "LOAD REPORT" in message and ".synthformer.synth" in message and "UNEXPECTED" in message:
            record.msg = (f"{message}\nsynthformer: this folder holds synthesized attention layers that this load "
                          "dropped (the model runs the original attention): load it with trust_remote_code=True "
                          "or synthformer.hf.synthesize.from_pretrained(folder)")
            record.args = None
        return True


def install_load_warning() -> None:
    """Attach the :class:`_PlainLoadWarning` filter to ``transformers``' loading logger (once)."""
    log = logging.getLogger("transformers.modeling_utils")
    if not any(isinstance(f, _PlainLoadWarning) for f in log.filters):
        log.addFilter(_PlainLoadWarning())
