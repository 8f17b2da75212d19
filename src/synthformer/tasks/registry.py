"""The tables of registered task types and data generators: register, look up, list. Nothing else.

What a task type or a generator is (and does) is :mod:`synthformer.tasks.contract`; the built-in ones register
themselves when :mod:`synthformer.tasks` is imported (``types/`` and ``generators/``).

The lookups are typed loosely (``Any``) on purpose: the run configuration checks itself against the registered
task types (:mod:`synthformer.tasks.run.task_config`), and the contract's hooks take that configuration, so a
typed import of the contract here would close an import circle (``tests/test_layering.py`` refuses it). The
objects held are :class:`~synthformer.tasks.contract.TaskType` and
:class:`~synthformer.tasks.contract.Generator` instances.
"""

from __future__ import annotations

import difflib
from typing import Any, TypeVar

from synthformer.common import ConfigError

__all__ = [
    "get_generator",
    "get_task_type",
    "list_generators",
    "list_task_types",
    "register_generator",
    "register_task_type",
    "task_type_for_arch",
    "unregister_generator",
    "unregister_task_type",
]

_T = TypeVar("_T")
_TASK_TYPES: dict[str, Any] = {}
_GENERATORS: dict[str, Any] = {}


def _register(table: dict[str, Any], what: str, obj: Any) -> None:
    if not obj.name:
        raise ValueError(f"a {what} needs a class attribute 'name'")
    if obj.name in table:
        raise ValueError(f"{what} {obj.name!r} is already registered ({type(table[obj.name]).__name__})")
    table[obj.name] = obj


def register_task_type(cls: type[_T]) -> type[_T]:
    """Class decorator: register an instance of a :class:`TaskType` subclass under its ``name``."""
    _register(_TASK_TYPES, "task type", cls())
    return cls


def register_generator(cls: type[_T]) -> type[_T]:
    """Class decorator: register an instance of a :class:`Generator` subclass under its ``name``."""
    _register(_GENERATORS, "generator", cls())
    return cls


def unregister_task_type(name: str) -> None:
    """Remove a registered task type (for tests that register throw-away ones)."""
    _TASK_TYPES.pop(name)


def unregister_generator(name: str) -> None:
    """Remove a registered generator."""
    _GENERATORS.pop(name)


def list_task_types() -> list[str]:
    """Registered task type names, in registration order."""
    return list(_TASK_TYPES)


def list_generators() -> list[str]:
    """Registered generators as written in a config (``algorithmic:<name>`` spelled out)."""
    return [spelled for g in _GENERATORS.values() for spelled in ([f"{g.name}:{a}" for a in g.arguments] or [g.name])]


def _unknown(what: str, name: str, valid: list[str]) -> ConfigError:
    close = difflib.get_close_matches(str(name), valid, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return ConfigError(f"unknown {what} {name!r}{hint}; valid: {', '.join(valid)}")


def get_task_type(name: str) -> Any:
    """The registered :class:`TaskType` ``name``; unknown names raise :class:`ConfigError` listing the valid ones."""
    if name not in _TASK_TYPES:
        raise _unknown("task type", name, list(_TASK_TYPES))
    return _TASK_TYPES[name]


def get_generator(spec: str) -> tuple[Any, str | None]:
    """The registered :class:`Generator` of ``spec`` (``"listops"``, ``"algorithmic:reverse"``) and its argument
    (or None)."""
    name, _, arg = str(spec).partition(":")
    if name not in _GENERATORS:
        raise _unknown("generator", spec, list_generators())
    gen = _GENERATORS[name]
    if gen.arguments and arg not in gen.arguments:
        raise ConfigError(f"{spec!r} needs one of {', '.join(f'{name}:{a}' for a in gen.arguments)}")
    if not gen.arguments and arg:
        raise ConfigError(f"{name!r} takes no ':' argument, got {spec!r}")
    return gen, (arg or None)


def task_type_for_arch(arch: str) -> Any:
    """The first registered :class:`TaskType` that trains ``arch`` (``bench`` draws its random batches from it)."""
    for task_type in _TASK_TYPES.values():
        if task_type.arch == arch:
            return task_type
    raise ValueError(f"no registered task type trains arch {arch!r} (task types: "
                     f"{', '.join(f'{t.name} ({t.arch})' for t in _TASK_TYPES.values())})")
