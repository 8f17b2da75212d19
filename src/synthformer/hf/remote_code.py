"""Loading an exported folder by path, with no ``import synthformer.hf`` first: ``auto_map`` and two small modules.

``transformers`` knows a ``model_type`` only once something registers it; version 5 has no plugin mechanism
(entry points) by which an installed package could register one on its own, so a process that has not imported
:mod:`synthformer.hf` reads ``"model_type": "synthesizer"`` as an unknown architecture. Tools that load models by
path (``pipeline(model=folder)``, lm-evaluation-harness's ``--model_args pretrained=folder``, serving stacks) take
``trust_remote_code=True`` for such folders: ``transformers`` then imports the modules that ``config.json``'s
``auto_map`` names from the folder itself. The export writes those modules, and they hold no model code: each
imports the installed synthformer (whose import registers the Auto classes) and re-exports its classes, so the
code that runs is the installed package's, of whatever version is installed.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CONFIG_MODULE", "MODEL_MODULE", "auto_map", "write_remote_code"]

#: the module names ``auto_map`` points to (files ``<name>.py`` in the exported folder)
CONFIG_MODULE = "configuration_synthesizer"
MODEL_MODULE = "modeling_synthesizer"

_HEADER = '''"""Written by 'synthformer export': lets transformers load this folder with trust_remote_code=True.

It holds no model code: it imports the installed synthformer package (pip install "synthformer[hf]"), whose
import registers model_type "synthesizer" with the Auto classes, and re-exports its classes.
"""

'''

_SOURCES = {
    CONFIG_MODULE: _HEADER + '''from synthformer.hf.config import SynthesizerConfig

__all__ = ["SynthesizerConfig"]
''',
    MODEL_MODULE: _HEADER + '''from synthformer.hf import (
    SynthesizerForCausalLM,
    SynthesizerForConditionalGeneration,
    SynthesizerForSequenceClassification,
)

__all__ = ["SynthesizerForCausalLM", "SynthesizerForConditionalGeneration", "SynthesizerForSequenceClassification"]
''',
}


def auto_map(auto_class: str, model_class: str) -> dict[str, str]:
    """``config.json``'s ``auto_map``: ``AutoConfig`` and the model's Auto class (e.g. ``AutoModelForCausalLM``)
    to the classes of the folder's modules."""
    return {"AutoConfig": f"{CONFIG_MODULE}.SynthesizerConfig", auto_class: f"{MODEL_MODULE}.{model_class}"}


def write_remote_code(folder: str | Path) -> list[Path]:
    """Write the two modules ``auto_map`` names into ``folder``; returns their paths."""
    paths = []
    for name, source in _SOURCES.items():
        path = Path(folder) / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        paths.append(path)
    return paths
