"""The architecture registry: each architecture is one module with its config class and a builder function.

A builder receives the config and a *token-mixer factory* (``build_mixer``'s signature:
``factory(kind, d_model, n_heads, max_len, causal, dropout, **options) -> nn.Module``) and passes the factory on to
its stacks, so the layers never name a mixer implementation themselves. Registering makes the architecture usable
everywhere: :func:`build_model`, :meth:`ModelConfig.from_dict` (saved configs) and the task types, which name
the architecture they train.

Example, a new architecture in its own module::

    @dataclass
    class TaggerConfig(ModelConfig):
        arch: ClassVar[str] = "tagger"
        stacks: ClassVar[tuple[str, ...]] = ("encoder",)
        num_tags: int = 2
        encoder_kind: str | list[str] = "V"
        encoder_kind_options: dict | list[dict] | None = None

    @register_arch(TaggerConfig)
    def build_tagger(config: TaggerConfig, mixer_factory: MixerFactory) -> nn.Module:
        return Tagger(config, mixer_factory)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from torch import nn

__all__ = ["ArchConfig", "MixerFactory", "ModelBuilder", "build_model", "config_class", "list_archs", "num_parameters",
           "register_arch", "unregister_arch"]

logger = logging.getLogger(__name__)


class MixerFactory(Protocol):
    """Builds a token mixer by name (:func:`synthformer.attention.build_mixer` is one)."""

    def __call__(self, kind: str, d_model: int, n_heads: int, max_len: int, causal: bool = False,
                 dropout: float = 0.0, **options: Any) -> nn.Module: ...


class ArchConfig(Protocol):
    """What the registry reads of a config: :class:`~synthformer.models.config.ModelConfig` is one. Named here
    by its members, not imported, because ``ModelConfig.from_dict`` looks classes up in this registry."""

    arch: ClassVar[str]

    def validate(self) -> None: ...

    @classmethod
    def field_names(cls) -> list[str]: ...


ModelBuilder = Callable[[Any, MixerFactory], nn.Module]

_ARCHS: dict[str, tuple[type[ArchConfig], ModelBuilder]] = {}


def register_arch(config_cls: type[ArchConfig]) -> Callable[[ModelBuilder], ModelBuilder]:
    """Decorator: register ``builder`` for ``config_cls.arch``. Registering an arch name twice is an error."""

    def wrap(builder: ModelBuilder) -> ModelBuilder:
        name = config_cls.arch
        if not name:
            raise ValueError(f"{config_cls.__name__} needs a class attribute 'arch' naming the architecture")
        if name in _ARCHS:
            raise ValueError(f"architecture {name!r} is already registered ({_ARCHS[name][0].__name__})")
        _ARCHS[name] = (config_cls, builder)
        return builder

    return wrap


def unregister_arch(name: str) -> None:
    """Remove a registered architecture (for tests that register throw-away ones)."""
    _ARCHS.pop(name)


def list_archs() -> list[str]:
    """Names of the registered architectures, in registration order."""
    return list(_ARCHS)


def config_class(arch: str) -> type[ArchConfig]:
    """The config class of ``arch``; unknown names raise ``ValueError`` listing the registered ones."""
    if arch not in _ARCHS:
        raise ValueError(f"arch must be one of {', '.join(repr(a) for a in _ARCHS)}, got {arch!r}")
    return _ARCHS[arch][0]


def build_model(config: ArchConfig, mixer_factory: MixerFactory | None = None) -> nn.Module:
    """The model ``config`` describes, built by its architecture's builder with ``mixer_factory`` (default:
    :func:`synthformer.attention.build_mixer`). The config is validated again first, so a config edited in place
    after creation cannot slip through."""
    if not isinstance(getattr(type(config), "arch", None), str) or not callable(getattr(config, "validate", None)):
        raise TypeError(f"build_model expects a ModelConfig, got {type(config).__name__}")
    config.validate()
    registered = config_class(config.arch)
    builder = _ARCHS[config.arch][1]
    if not isinstance(config, registered):
        raise TypeError(f"arch {config.arch!r} is built from a {registered.__name__}, got {type(config).__name__}")
    if mixer_factory is None:
        from synthformer.attention import build_mixer as mixer_factory
    model = builder(config, mixer_factory)
    logger.info("built %s (%s) with %d parameters", type(model).__name__, config.arch, num_parameters(model))
    return model


def num_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of parameters of ``model``, each shared tensor counted once (tied embeddings count once).

    Args:
        trainable_only: count only parameters with ``requires_grad`` (a frozen ``Fix`` alignment is then not
            counted, as in the paper's tables); False counts every parameter.
    """
    # model.parameters() already yields each shared Parameter once; data_ptr also catches distinct Parameter
    # objects viewing the same storage. A meta tensor (a dry run's model) has no storage, its data_ptr is 0 for
    # all: those are told apart as Parameter objects.
    seen: set[tuple[int, int]] = set()
    total = 0
    for p in model.parameters():
        if trainable_only and not p.requires_grad:
            continue
        key = (id(p), -1) if p.is_meta else (p.data_ptr(), p.numel())
        if key in seen:
            continue
        seen.add(key)
        total += p.numel()
    return total
