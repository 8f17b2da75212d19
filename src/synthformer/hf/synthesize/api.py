"""``synthesize``: replace the attention of a ``transformers`` model's self-attention layers by synthesized kinds,
in place, and load such a model back (``from_pretrained``).

What a synthesized model records in its config (``config.synthformer``, saved in ``config.json``)::

    {"format": 1, "kinds": {"0": "R+V", "1": "R+V"}, "max_len": 128, "options": {}}

``kinds`` maps the index of a self-attention module (:func:`.families.self_attention_modules`, an
encoder-decoder's encoder layers first) to its kind; :func:`from_pretrained` rebuilds exactly those layers
before the saved weights are loaded into them. A synthesized model's class is :func:`synthesized_class` of its
``transformers`` class (same name), whose ``save_pretrained`` also writes what loading the folder by path with
``trust_remote_code=True`` needs (:mod:`.remote`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from torch import nn

from synthformer.attention import Mixture, canonical_kind, is_whole_mixer, parse_kind
from synthformer.common import ConfigError

from .backend import IMPLEMENTATION, register_backend
from .families import max_positions, self_attention_modules, sliding_window
from .layer import ATTRIBUTE, ModelDotProduct, SynthesizedAttention, record_input
from .remote import auto_map, install_load_warning, write_module

__all__ = ["MAX_LAYER_PARAMS", "added_parameters", "SPEC_FORMAT", "T5_MAX_LEN", "from_pretrained", "plan", "synthesize",
           "synthesized_class", "synthesized_layers"]

logger = logging.getLogger(__name__)
install_load_warning()  # a plain load of a synthesized folder in this process says what it dropped

SPEC_FORMAT = 1
#: The most length-dependent parameters one synthesized layer may get (R's ``H l^2``, ...): 2**25, 128 MiB in
#: float32. A model whose positions would need more is refused, naming ``max_len``.
MAX_LAYER_PARAMS = 2**25
#: ``max_len`` of a T5 model, whose relative positions have no limit of their own (``synthformer convert`` uses
#: the same default).
T5_MAX_LEN = 512
_HOOK_FLAG = "_synthformer_hook"


def _check_kind(kind: str) -> str:
    if not isinstance(kind, str) or not kind:
        raise ConfigError(f"kind={kind!r}: expected an attention kind such as 'R', 'D' or 'R+V'")
    if is_whole_mixer(kind):
        raise ConfigError(f"kind={kind!r} is a whole token mixer, not attention logits: it cannot replace the "
                          "attention of a transformers module (expected a kind such as 'R', 'D' or 'R+V')")
    try:
        parse_kind(kind)
    except ValueError as err:
        raise ConfigError(f"kind={kind!r}: {err}") from None
    return canonical_kind(kind)


def plan(model: nn.Module, kind: str | None = None, kinds: Sequence[str] | Mapping[int, str] | None = None,
         layers: Sequence[int] | None = None, max_len: int | None = None,
         options: Mapping[str, Any] | None = None) -> tuple[dict[int, str], int]:
    """Check a synthesis without changing ``model``: ``({layer index: kind}, max_len)``.

    Raises:
        ConfigError: (one line) an unsupported model type, an unknown kind, a layer index out of range, a
            ``max_len`` over what the model's positions allow, or positions too many for R's table.
    """
    modules = self_attention_modules(model)
    count = len(modules)
    if (kind is None) == (kinds is None):
        raise ConfigError("give either kind= (one kind for the chosen layers) or kinds= (one per layer)")
    if layers is None:
        chosen = list(range(count))
    else:
        chosen = [int(i) for i in layers]
        bad = [i for i in chosen if not 0 <= i < count]
        if bad:
            raise ConfigError(f"layer index {bad[0]} is out of range: the model has {count} self-attention layers "
                              f"(0 .. {count - 1})")
        if len(set(chosen)) != len(chosen):
            raise ConfigError(f"layers={list(chosen)} names a layer twice")
    if kind is not None:
        plan_kinds = {i: _check_kind(kind) for i in chosen}
    elif isinstance(kinds, Mapping):
        plan_kinds = {int(i): _check_kind(k) for i, k in kinds.items()}
        bad = [i for i in plan_kinds if not 0 <= i < count]
        if bad:
            raise ConfigError(f"layer index {bad[0]} is out of range: the model has {count} self-attention layers "
                              f"(0 .. {count - 1})")
    else:
        if len(kinds) != len(chosen):
            raise ConfigError(f"kinds= names {len(kinds)} kinds for {len(chosen)} layers: expected one per layer")
        plan_kinds = {i: _check_kind(k) for i, k in zip(chosen, kinds, strict=True)}
    config = model.config
    limit = max_positions(config)
    if max_len is None:
        max_len = limit if limit is not None else T5_MAX_LEN
    elif limit is not None and max_len > limit:
        raise ConfigError(f"max_len={max_len} exceeds the model's own {limit} positions")
    if max_len < 1:
        raise ConfigError(f"max_len={max_len}: expected a positive number of positions")
    window = sliding_window(config)
    if window is not None and window < max_len:
        raise ConfigError(f"sliding_window={window} is shorter than max_len={max_len}: the synthesized kinds need "
                          f"every key of the sequence; synthesize with max_len <= {window}")
    d_model = int(config.hidden_size)
    options = dict(options or {})
    for i, k in plan_kinds.items():
        heads = modules[i].heads
        size = sum(cls.num_params(d_model, heads, max_len,
                                  **{n: v for n, v in options.items() if n in cls.option_defaults})
                   for cls in parse_kind(k) if cls.name != "V")
        if size > MAX_LAYER_PARAMS:
            raise ConfigError(f"max_len={max_len}: kind {k} would hold {size:,} parameters in each layer of {heads} "
                              f"heads (more than {MAX_LAYER_PARAMS:,}); give a smaller max_len (--max-len)")
    return plan_kinds, max_len


def added_parameters(model: nn.Module, plan_kinds: Mapping[int, str], max_len: int,
                     options: Mapping[str, Any] | None = None) -> dict[int, int]:
    """The parameters :func:`synthesize` adds to each layer of ``plan_kinds`` (as :func:`plan` returns them),
    counted without building anything: each part's (V's are the module's own) and a mixture's ``H`` weights per
    part."""
    modules = self_attention_modules(model)
    d_model = int(model.config.hidden_size)
    options = dict(options or {})
    added: dict[int, int] = {}
    for i, k in plan_kinds.items():
        parts, heads = parse_kind(k), modules[i].heads
        added[i] = sum(cls.num_params(d_model, heads, max_len,
                                      **{n: v for n, v in options.items() if n in cls.option_defaults})
                       for cls in parts if cls.name != "V")
        added[i] += heads * len(parts) if len(parts) > 1 else 0
    return added


def synthesize(model: nn.Module, kind: str | None = None, *, kinds: Sequence[str] | Mapping[int, str] | None = None,
               layers: Sequence[int] | None = None, max_len: int | None = None,
               options: Mapping[str, Any] | None = None, grow: bool = True) -> nn.Module:
    """Replace the attention of ``model``'s self-attention layers by synthesized kinds, in place.

    Args:
        model: a ``transformers`` model of a supported family (Llama, Mistral, Qwen2, GPT-2, BERT, T5, BART).
        kind: one kind for every chosen layer (``"R"``, ``"D"``, ``"R+V"``, ...); or ``kinds``: one per chosen
            layer (a list), or ``{layer index: kind}``.
        layers: the self-attention layers to synthesize (indices in module order; default all).
        max_len: the longest sequence the length-dependent kinds are sized for (default the model's
            ``max_position_embeddings``; 512 for T5).
        options: kind options (``k`` of FR, ``init_std`` of R, ...).
        grow: a mixture holding ``V`` starts at the pretrained function: its new parts' logits are zero and V's
            weight ``alpha_V`` a power of two cancelled by V's gain (step 0 gives the pretrained logits, to
            rounding). False: the new parts start at their own initialisation.

    Returns:
        ``model``, with ``config.synthformer`` recording the layers' kinds and its attention implementation
        ``"synthformer"`` (:mod:`.backend`).
    """
    plan_kinds, max_len = plan(model, kind, kinds, layers, max_len, options)
    _apply(model, plan_kinds, max_len, dict(options or {}), grow)
    return model


def _apply(model: nn.Module, plan_kinds: dict[int, str], max_len: int, options: dict[str, Any],
           grow: bool) -> None:
    from transformers import PreTrainedModel

    register_backend()
    modules = self_attention_modules(model)
    d_model = int(model.config.hidden_size)
    for i, kind in sorted(plan_kinds.items()):
        target = modules[i]
        layer = SynthesizedAttention(kind, d_model, target.heads, max_len, target.causal, options)
        weight = next(target.module.parameters())
        layer.to(device=weight.device, dtype=weight.dtype)
        if grow:
            _grow(layer, target.name)
        target.module.add_module(ATTRIBUTE, layer)
        if not getattr(target.module, _HOOK_FLAG, False):
            target.module.register_forward_pre_hook(record_input, with_kwargs=True)
            setattr(target.module, _HOOK_FLAG, True)
        if not layer.dot_products():
            logger.info("%s: kind %s does not read the module's queries and keys (still computed and cached)",
                        target.name, kind)
    spec = dict(getattr(model.config, "synthformer", None) or {})
    previous = {int(k): v for k, v in spec.get("kinds", {}).items()}
    previous.update(plan_kinds)
    model.config.synthformer = {"format": SPEC_FORMAT, "kinds": {str(k): v for k, v in sorted(previous.items())},
                                "max_len": max_len, "options": options}
    model.set_attn_implementation(IMPLEMENTATION)
    if isinstance(model, PreTrainedModel):
        # its save_pretrained then writes what loading by path needs; a subclass that adds no state, so the swap
        # keeps every attribute, hook and parameter (and isinstance(model, cls) holds)
        model.__class__ = synthesized_class(type(model))


def _grow(layer: SynthesizedAttention, name: str) -> None:
    synth = layer.synth
    if not isinstance(synth, Mixture):
        return
    index = [n for n, p in enumerate(synth.parts) if isinstance(p, ModelDotProduct)]
    if not index:
        return
    try:
        exact = synth.grow_from_(index[0])
    except NotImplementedError as err:
        raise ConfigError(f"{name}: {err}; pass grow=False (--no-grow) to start it at its own initialisation") from None
    synth.end_growth()  # the layer computes the mixture itself; the grown view serves the native shell only
    if not exact:
        logger.warning("%s: alpha_V is not a power of two on this machine: the grown start matches to rounding", name)


def synthesized_layers(model: nn.Module) -> dict[str, str]:
    """``{module name: kind}`` of the synthesized modules of ``model``."""
    return {name: m.kind for name, m in model.named_modules() if isinstance(m, SynthesizedAttention)}


#: The attribute that marks a class built by :func:`synthesized_class`: the ``transformers`` class it extends.
_BASE = "_synthformer_base"


def _rebuild(base: type) -> Any:
    """An empty instance of ``synthesized_class(base)`` that unpickling fills (see ``__reduce_ex__`` below)."""
    cls = synthesized_class(base)
    return cls.__new__(cls)


@cache
def synthesized_class(cls: type) -> type:
    """A subclass of the ``transformers`` class ``cls`` that builds its synthesized layers from
    ``config.synthformer`` when constructed, so that ``from_pretrained`` loads their weights, and whose
    ``save_pretrained`` makes the folder load by path (``auto_map``, :mod:`.remote`). It keeps ``cls``'s name, so
    that the folders it saves name the ``transformers`` architecture; a class it built is returned as it is.
    Without ``config.synthformer`` it behaves as ``cls``."""
    if getattr(cls, _BASE, None) is not None:
        return cls

    def __init__(self: Any, config: Any, *args: Any, **kwargs: Any) -> None:
        cls.__init__(self, config, *args, **kwargs)
        spec = getattr(config, "synthformer", None)
        if spec:
            kinds = {int(k): v for k, v in spec["kinds"].items()}
            _apply(self, kinds, int(spec["max_len"]), dict(spec.get("options") or {}), grow=False)

    def save_pretrained(self: Any, save_directory: Any, *args: Any, **kwargs: Any) -> Any:
        """``cls.save_pretrained``, and for a synthesized model ``auto_map`` in ``config.json`` and
        :data:`.remote.MODULE` beside it, so that ``from_pretrained(folder, trust_remote_code=True)`` of the Auto
        classes rebuilds the synthesized layers in a process that never imported synthformer."""
        if not getattr(self.config, "synthformer", None):
            return cls.save_pretrained(self, save_directory, *args, **kwargs)
        entries = auto_map(self.config, cls.__name__)
        before = getattr(self.config, "auto_map", None)
        self.config.auto_map = {**(before or {}), **entries}  # written by config.save_pretrained, then restored
        try:
            result = cls.save_pretrained(self, save_directory, *args, **kwargs)
        finally:
            if before is None:
                del self.config.auto_map
            else:
                self.config.auto_map = before
        if kwargs.get("is_main_process", args[0] if args else True) and Path(save_directory).is_dir():
            write_module(save_directory, [name.split(".")[-1] for name in entries.values()])
        return result

    @classmethod
    def register_for_auto_class(klass: type, auto_class: Any = "AutoModel") -> None:
        """Nothing: ``transformers`` calls it on a class loaded with ``trust_remote_code``, and a class so marked
        copies its defining module into every folder it saves (here ``transformers``' own modeling file);
        ``save_pretrained`` above writes the folder's module and ``auto_map`` instead."""

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        # pickle finds a class by its module and name, which here are cls's: rebuild from cls instead
        reduced = cls.__reduce_ex__(self, protocol)
        return (_rebuild, (cls,), *reduced[2:])

    return type(cls.__name__, (cls,), {"__init__": __init__, "save_pretrained": save_pretrained,
                                       "register_for_auto_class": register_for_auto_class,
                                       "__reduce_ex__": __reduce_ex__, _BASE: cls, "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__, "__doc__": cls.__doc__})


def from_pretrained(folder: str, **kwargs: Any) -> nn.Module:
    """Load a synthesized model saved with ``save_pretrained``: its ``transformers`` architecture with the
    synthesized layers of ``config.synthformer`` and their weights. ``kwargs`` go to ``from_pretrained``
    (``dtype``, ``device_map``, ...)."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(folder)
    spec = getattr(config, "synthformer", None)
    if not spec or spec.get("format") != SPEC_FORMAT:
        raise ConfigError(f"{folder}: config.json has no 'synthformer' entry of format {SPEC_FORMAT}: not a folder "
                          "saved from a synthesized model")
    names = getattr(config, "architectures", None) or []
    cls = getattr(transformers, names[0], None) if names else None
    if cls is None:
        raise ConfigError(f"{folder}: config.json names no transformers architecture ({names!r})")
    register_backend()
    model = synthesized_class(cls).from_pretrained(folder, config=config, **kwargs)
    model.set_attn_implementation(IMPLEMENTATION)
    return model
