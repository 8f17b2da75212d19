"""The one registry of token-mixer names, and parsing of ``kind`` strings.

Two sorts of classes register here, through the same :func:`register`:

* **synthesizing functions** (subclasses of :class:`~synthformer.attention.SynthesizingFunction`, the
  *kinds*): they compute only attention *logits* (the paper's ``S(X)``); the shared shell
  (:class:`synthformer.attention.SynthesizerAttention`) owns values, masks, softmax, dropout and the output
  projection. A kind is usable alone or as a part of a ``+``-joined mixture (``"R+V"``).
* **whole token mixers**: any ``nn.Module`` that satisfies :class:`~synthformer.attention.contract.TokenMixer`
  by itself (the baselines LightConv, DynamicConv, Linformer). They are used alone, never in a mixture.

Names and aliases are matched case-insensitively and may not contain ``+``; registering a name or alias twice is
an error, so two classes can never silently shadow each other. Every registered name is accepted by
:func:`synthformer.attention.build_mixer` and covered by the registry-wide tests.

Example, a user-defined synthesizing function (no library edit needed)::

    from synthformer.attention import SynthesizingFunction, register

    @register("Banded", aliases=("banded",))
    class Banded(SynthesizingFunction):
        input_dependent = False
        def logits(self, x, start=0, state=None, key_padding_mask=None):
            ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from torch import nn

from .base import SynthesizingFunction
from .contract import missing_members

__all__ = [
    "canonical_kind",
    "get_kind",
    "get_mixer",
    "is_whole_mixer",
    "paper_names",
    "parse_kind",
    "register",
    "registered_kinds",
    "registered_mixers",
    "unregister",
]

T = TypeVar("T", bound=type)


@dataclass(frozen=True)
class _Entry:
    name: str
    aliases: tuple[str, ...]
    cls: type
    #: True for a whole token mixer, False for a synthesizing function (a kind).
    whole: bool


# canonical name -> entry, in registration order
_REGISTRY: dict[str, _Entry] = {}
# lower-cased name or alias -> canonical name
_LOOKUP: dict[str, str] = {}


def register(name: str, aliases: tuple[str, ...] = ()) -> Callable[[T], T]:
    """Class decorator: register a synthesizing function or a whole token mixer under ``name`` (and ``aliases``).

    A subclass of :class:`SynthesizingFunction` becomes a *kind* (``cls.name`` and ``cls.aliases`` are set on it);
    any other class must be an ``nn.Module`` with every member of the
    :class:`~synthformer.attention.contract.TokenMixer` protocol.

    Raises:
        ValueError: a name containing ``+``, or a name or alias already registered (case-insensitively).
        TypeError: a class that is neither a synthesizing function nor a complete token mixer.
    """

    def wrap(cls: T) -> T:
        if not isinstance(cls, type):
            raise TypeError(f"register({name!r}) decorates a class, got {cls!r}")
        for key in (name, *aliases):
            if not isinstance(key, str) or not key.strip() or "+" in key:
                raise ValueError(
                    f"token-mixer name {key!r} must be a non-empty string without '+' ('+' joins the parts of a "
                    "mixture)"
                )
            if key.lower() in _LOOKUP:
                raise ValueError(f"token-mixer name {key!r} is already registered (as {_LOOKUP[key.lower()]!r})")
        whole = not issubclass(cls, SynthesizingFunction)
        if whole:
            missing = missing_members(cls) if issubclass(cls, nn.Module) else ["an nn.Module subclass"]
            if missing:
                raise TypeError(
                    f"register({name!r}): {cls.__name__} is neither a SynthesizingFunction nor a complete token "
                    f"mixer; it lacks: {', '.join(missing)} (see synthformer.attention.contract.TokenMixer)"
                )
        else:
            cls.name = name
            cls.aliases = tuple(aliases)
        _REGISTRY[name] = _Entry(name, tuple(aliases), cls, whole)
        for key in (name, *aliases):
            _LOOKUP[key.lower()] = name
        return cls

    return wrap


def unregister(name: str) -> None:
    """Remove a registered class by its name or an alias (mainly for tests that register throw-away classes)."""
    entry = _entry(name)
    if entry is None:
        raise ValueError(f"cannot unregister {name!r}: no token mixer of that name is registered")
    del _REGISTRY[entry.name]
    for key in (entry.name, *entry.aliases):
        _LOOKUP.pop(key.lower(), None)


def _entry(name: object) -> _Entry | None:
    canonical = _LOOKUP.get(name.strip().lower()) if isinstance(name, str) else None
    return None if canonical is None else _REGISTRY[canonical]


def registered_kinds() -> list[str]:
    """Canonical names of every registered synthesizing function (kind), in registration order."""
    return [e.name for e in _REGISTRY.values() if not e.whole]


def registered_mixers() -> list[str]:
    """Canonical names of every registered whole token mixer (the baselines), in registration order."""
    return [e.name for e in _REGISTRY.values() if e.whole]


def paper_names() -> dict[str, str]:
    """Each registered kind that the paper names -> that name (``paper_name``: ``"R"`` -> ``"Random"``)."""
    return {e.name: e.cls.paper_name for e in _REGISTRY.values() if not e.whole and e.cls.paper_name}


def is_whole_mixer(name: str) -> bool:
    """True when ``name`` (or an alias, any case) is a registered whole token mixer, not a kind or mixture."""
    entry = _entry(name)
    return entry is not None and entry.whole


def get_mixer(name: str) -> type:
    """The class registered under ``name`` or one of its aliases (case-insensitive), kind or whole mixer.

    Raises:
        ValueError: for an unknown name, listing the valid ones.
    """
    entry = _entry(name)
    if entry is None:
        raise ValueError(_unknown(name))
    return entry.cls


def get_kind(name: str) -> type[SynthesizingFunction]:
    """The synthesizing function registered under ``name`` or one of its aliases (case-insensitive).

    Raises:
        ValueError: for an unknown name (listing the valid ones) or the name of a whole token mixer.
    """
    entry = _entry(name)
    if entry is None:
        raise ValueError(_unknown(name))
    if entry.whole:
        raise ValueError(
            f"{entry.name!r} is a whole token mixer, not a synthesizing function: it cannot be a part of a '+' "
            f"mixture; use it alone (build_mixer({entry.name!r}, ...))"
        )
    return entry.cls


def _unknown(name: object) -> str:
    def listed(entries: list[_Entry]) -> str:
        return ", ".join(f"{e.name} ({', '.join(e.aliases)})" if e.aliases else e.name for e in entries)

    kinds = listed([e for e in _REGISTRY.values() if not e.whole])
    message = f"unknown attention kind {name!r}; valid kinds: {kinds}; join them with '+' to mix"
    wholes = [e for e in _REGISTRY.values() if e.whole]
    return message + (f"; whole token mixers (used alone): {listed(wholes)}" if wholes else "")


def parse_kind(kind: str) -> list[type[SynthesizingFunction]]:
    """Parse ``"R+V"`` (or ``"random+vanilla"``) into the list of registered parts, in the given order.

    Raises ``ValueError`` for an empty kind, an unknown part, a whole token mixer or a part repeated in one
    mixture.
    """
    if not isinstance(kind, str) or not kind.strip():
        raise ValueError(f"attention kind must be a non-empty string such as 'R' or 'R+V', got {kind!r}")
    parts = [get_kind(p) for p in kind.split("+")]
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise ValueError(f"attention kind {kind!r} repeats a part ({'+'.join(names)}); each part may appear once")
    return parts


def canonical_kind(kind: str) -> str:
    """The canonical spelling of a kind: ``"random+vanilla"`` -> ``"R+V"``."""
    return "+".join(p.name for p in parse_kind(kind))
