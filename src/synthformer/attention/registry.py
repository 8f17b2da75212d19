"""The registry of synthesizing functions, and parsing of ``kind`` strings.

A synthesizing function computes only attention *logits* (the paper's ``S(X)``); the shared shell
(:class:`synthformer.attention.SynthesizerAttention`) owns values, masks, softmax, dropout and the output
projection. Registering a class here makes it usable as a ``kind`` everywhere, alone or in a ``+``-joined
mixture, and puts it under the registry-wide property tests.

Example, a user-defined synthesizing function (no library edit needed)::

    from synthformer.attention import SynthesizingFunction, register

    @register("Banded", aliases=("banded",))
    class Banded(SynthesizingFunction):
        input_dependent = False
        def logits(self, x, start=0, state=None):
            ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import SynthesizingFunction

_REGISTRY: dict[str, type[SynthesizingFunction]] = {}
# lower-cased name or alias -> canonical name
_LOOKUP: dict[str, str] = {}


def register(name: str, aliases: tuple[str, ...] = ()):
    """Class decorator: register a :class:`SynthesizingFunction` under ``name`` (and ``aliases``).

    Names are matched case-insensitively. Registering a name or alias twice is an error, so two
    variants can never silently shadow each other.
    """

    def wrap(cls: type[SynthesizingFunction]) -> type[SynthesizingFunction]:
        if "+" in name:
            raise ValueError(f"kind name {name!r} may not contain '+': '+' joins the parts of a mixture")
        for key in (name, *aliases):
            low = key.lower()
            if low in _LOOKUP:
                raise ValueError(f"kind name {key!r} is already registered (as {_LOOKUP[low]!r})")
        cls.name = name
        cls.aliases = tuple(aliases)
        _REGISTRY[name] = cls
        for key in (name, *aliases):
            _LOOKUP[key.lower()] = name
        return cls

    return wrap


def unregister(name: str) -> None:
    """Remove a registered kind (mainly for tests that register throw-away kinds)."""
    cls = _REGISTRY.pop(name)
    for key in (cls.name, *cls.aliases):
        _LOOKUP.pop(key.lower(), None)


def registered_kinds() -> list[str]:
    """Canonical names of every registered synthesizing function, in registration order."""
    return list(_REGISTRY)


def get_kind(name: str) -> type[SynthesizingFunction]:
    """The class registered under ``name`` or one of its aliases (case-insensitive)."""
    canonical = _LOOKUP.get(name.strip().lower())
    if canonical is None:
        valid = ", ".join(f"{k} ({', '.join(c.aliases)})" if c.aliases else k for k, c in _REGISTRY.items())
        raise ValueError(f"unknown attention kind {name!r}; valid kinds: {valid}; join them with '+' to mix")
    return _REGISTRY[canonical]


def parse_kind(kind: str) -> list[type[SynthesizingFunction]]:
    """Parse ``"R+V"`` (or ``"random+vanilla"``) into the list of registered parts, in the given order.

    Raises ``ValueError`` for an empty kind, an unknown part or a part repeated in one mixture.
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
