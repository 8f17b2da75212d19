"""Typed configuration: nested dataclasses, YAML files and dotted ``key=value`` overrides, and :class:`ConfigError`.

Part of the lowest layer (:mod:`synthformer.common`): every package may raise :class:`ConfigError` and load its
settings with the same loader (generic: any dataclass tree; :class:`~synthformer.train.TrainConfig` and the task
pipeline's ``RunConfig`` use it)::

    cfg = load_config("configs/lm.yaml", ExperimentConfig, ["train.lr=3e-4", "model.n_layers=2"])

Values given on the command line are parsed as YAML scalars (``2`` is an int, ``true`` a bool, ``[0.9, 0.98]``
a list, ``null`` None). Every value is then checked against the field's annotation, and errors name the dotted
key, the offending value and what was expected; unknown keys list the valid keys at that level.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, Union

import yaml

from .yaml_unique import DuplicateKeyError, load_unique_keys

__all__ = [
    "ConfigError",
    "apply_overrides",
    "dump_config",
    "from_dict",
    "load_config",
    "parse_override",
    "to_dict",
]

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value or key is invalid. The message names the dotted key."""


# --------------------------------------------------------------------------------------------------------------
# dataclass <-> dict


def to_dict(obj: Any) -> Any:
    """Convert a dataclass tree to plain dicts/lists/scalars (tuples become lists, so YAML can dump it).

    A dataclass with a ``to_dict()`` method of its own (a run config keeps its model section as given) is
    converted by that method."""
    own = getattr(obj, "to_dict", None)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and callable(own):
        return to_dict(own())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _field_types(cls: type) -> dict[str, Any]:
    # get_type_hints resolves string annotations (``from __future__ import annotations``).
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls) if f.init}


def _unknown_key_error(key: str, where: str, valid: Iterable[str]) -> ConfigError:
    valid = sorted(valid)
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    level = f"'{where}'" if where else "the top level"
    return ConfigError(f"unknown key '{_join(where, key)}'{hint}; valid keys at {level}: {', '.join(valid)}")


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _type_error(path: str, value: Any, tp: Any) -> ConfigError:
    return ConfigError(f"{path or 'config'}: expected {_type_name(tp)}, got {value!r} ({type(value).__name__})")


def _coerce(value: Any, tp: Any, path: str) -> Any:
    """Check ``value`` against annotation ``tp`` and convert the lossless cases (int -> float, list -> tuple)."""
    if tp is Any or tp is object:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)

    if origin is Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, path)
            except ConfigError:
                continue
        raise _type_error(path, value, tp)
    if origin is Literal:
        if value in args:
            return value
        raise ConfigError(f"{path}: expected one of {list(args)}, got {value!r}")
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if isinstance(value, Mapping):
            return from_dict(tp, value, _prefix=path)
        raise _type_error(path, value, tp)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _type_error(path, value, tp)
    if tp is int:
        # bool is a subclass of int, but "steps: true" is certainly a mistake.
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _type_error(path, value, tp)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            # PyYAML follows YAML 1.1, where "3e-4" (no dot) is a *string*; accept what Python reads as a float.
            try:
                return float(value)
            except ValueError:
                pass
        raise _type_error(path, value, tp)
    if tp is str:
        if isinstance(value, str):
            return value
        raise _type_error(path, value, tp)
    if tp is Path:
        if isinstance(value, (str, Path)):
            return Path(value)
        raise _type_error(path, value, tp)
    if origin in (list, tuple) or tp in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise _type_error(path, value, tp)
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise ConfigError(f"{path}: expected {len(args)} values ({_type_name(tp)}), got {value!r}")
            return tuple(_coerce(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True)))
        item_tp = args[0] if args else Any
        items = [_coerce(v, item_tp, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if (origin is tuple or tp is tuple) else items
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise _type_error(path, value, tp)
        val_tp = args[1] if len(args) == 2 else Any
        return {k: _coerce(v, val_tp, _join(path, str(k))) for k, v in value.items()}
    if isinstance(tp, type):
        if isinstance(value, tp):
            return value
        raise _type_error(path, value, tp)
    return value  # an annotation we do not understand: accept rather than block the user


def from_dict(cls: type[T], data: Mapping[str, Any] | None, *, _prefix: str = "") -> T:
    """Build dataclass ``cls`` from a (nested) mapping, validating keys and value types.

    Missing keys take the field defaults; unknown keys and wrongly typed values raise :class:`ConfigError`.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    data = {} if data is None else data
    if not isinstance(data, Mapping):
        raise ConfigError(f"{_prefix or 'config'}: expected a mapping of keys to values, got {data!r}")
    types_ = _field_types(cls)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in types_:
            raise _unknown_key_error(str(key), _prefix, types_)
        kwargs[key] = _coerce(value, types_[key], _join(_prefix, key))
    missing = [
        f.name for f in dataclasses.fields(cls)
        if f.init and f.name not in kwargs
        and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"missing required key(s): {', '.join(_join(_prefix, m) for m in missing)}")
    try:
        return cls(**kwargs)
    except ConfigError as err:
        # __post_init__ checks name only the field ("steps: ..."); prepend where it sits in the tree.
        if _prefix:
            raise ConfigError(f"{_prefix}.{err}") from None
        raise


# --------------------------------------------------------------------------------------------------------------
# overrides


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``"a.b.c=value"`` into (["a", "b", "c"], parsed value); the value is read as a YAML scalar."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected the form key=value (e.g. train.lr=3e-4)")
    key, raw = text.split("=", 1)
    key = key.strip()
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise ConfigError(f"override {text!r}: empty key or empty part in dotted key {key!r}")
    try:
        value = load_unique_keys(raw) if raw.strip() else ""
    except yaml.YAMLError as err:
        raise ConfigError(f"override {text!r}: value {raw!r} is not valid YAML: {_yaml_problem(err)}") from None
    return parts, value


def _yaml_problem(err: yaml.YAMLError) -> str:
    """PyYAML's error in one line: the problem, where (1-based line and column) and while doing what. Its own
    text spreads these over four or five lines, which would break the CLI's one-line errors."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = err.problem or err.context or "invalid YAML"
        context = f" ({err.context})" if err.context and err.problem else ""
        return f"{problem}{where}{context}"
    return " ".join(str(err).split())


def _read_yaml(path: Path) -> Any:
    """The YAML document in ``path``; a folder, a file that is not UTF-8 or not YAML, or a key given twice in one
    mapping raises :class:`ConfigError` naming the file and the place (Python's own errors name neither)."""
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, expected a YAML config file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as err:  # no permission, an I/O error
        raise ConfigError(f"{path}: cannot read the file ({err.strerror or err})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start}); "
                          "save the config as UTF-8") from None
    try:
        return load_unique_keys(text)
    except DuplicateKeyError as err:  # PyYAML itself would keep the last copy and drop the first in silence
        raise ConfigError(f"{path}: duplicate key '{err.key}' at line {err.first_line} and again at line "
                          f"{err.second_line}; YAML would keep only the last one: merge the two into one") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {_yaml_problem(err)}") from None


def _set_dotted(data: dict[str, Any], parts: list[str], value: Any, cls: Any, prefix: str = "") -> None:
    """Set ``data[parts...] = value``, checking each key against the dataclass schema ``cls``."""
    key, rest = parts[0], parts[1:]
    path = _join(prefix, key)
    if dataclasses.is_dataclass(cls):
        types_ = _field_types(cls)
        if key not in types_:
            raise _unknown_key_error(key, prefix, types_)
        sub_tp = types_[key]
    elif typing.get_origin(cls) is dict or cls is dict or cls is Any:
        args = typing.get_args(cls)
        sub_tp = args[1] if len(args) == 2 else Any
    else:
        raise ConfigError(f"cannot set '{path}': '{prefix}' is a {_type_name(cls)}, not a group of keys")
    if not rest:
        data[key] = value
        return
    # Optional[SomeDataclass]: descend into the dataclass.
    if typing.get_origin(sub_tp) in (Union, types.UnionType):
        non_none = [a for a in typing.get_args(sub_tp) if a is not type(None)]
        if len(non_none) == 1:
            sub_tp = non_none[0]
    groupable = dataclasses.is_dataclass(sub_tp) or sub_tp is Any or sub_tp is dict or (
        typing.get_origin(sub_tp) is dict
    )
    if not groupable:
        raise ConfigError(
            f"cannot set '{_join(path, '.'.join(rest))}': '{path}' is a {_type_name(sub_tp)}, not a group of keys"
        )
    child = data.get(key)
    if child is None:
        child = {}
    elif not isinstance(child, dict):
        raise ConfigError(f"cannot set '{_join(path, '.'.join(rest))}': '{path}' holds {child!r}, not keys")
    data[key] = child
    _set_dotted(child, rest, value, sub_tp, path)


def _apply_to_dict(data: dict[str, Any], cls: type, overrides: Iterable[str]) -> dict[str, Any]:
    if isinstance(overrides, str):
        raise TypeError("overrides must be a list of 'key=value' strings, not a single string")
    for text in overrides:
        parts, value = parse_override(text)
        _set_dotted(data, parts, value, cls)
    return data


def apply_overrides(obj: T, overrides: Iterable[str]) -> T:
    """Return a copy of dataclass ``obj`` with dotted ``key=value`` overrides applied (``obj`` is untouched).

    >>> cfg = apply_overrides(TrainConfig(), ["lr=3e-4", "betas=[0.9, 0.99]"])
    >>> cfg.lr, cfg.betas
    (0.0003, (0.9, 0.99))
    """
    data = _apply_to_dict(to_dict(obj), type(obj), overrides)
    return from_dict(type(obj), data)


def load_config(path: str | Path | None, cls: type[T], overrides: Iterable[str] = ()) -> T:
    """Load a YAML file into dataclass ``cls``, then apply dotted overrides. ``path=None`` starts from defaults.

    Overrides are applied to the raw mapping before validation, so they can also supply required keys.

    Raises:
        ConfigError: a bad key or value, or a file that is a folder, not UTF-8, not YAML, not a mapping or has a
            key twice in one mapping.
        FileNotFoundError: ``path`` does not exist.
    """
    data: Any = {}
    if path is not None:
        data = _read_yaml(Path(path))
        if data is None:  # an empty file (or only comments): fine if the overrides give every required key
            try:
                return from_dict(cls, _apply_to_dict({}, cls, overrides))
            except ConfigError as err:
                raise ConfigError(f"{path}: the file is empty; {err}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of keys to values, got {type(data).__name__}")
    data = _apply_to_dict(data, cls, overrides)
    return from_dict(cls, data)


def dump_config(obj: Any, path: str | Path | None = None) -> str:
    """Dump a dataclass tree (or mapping) as YAML; also write it to ``path`` when given."""
    text = yaml.safe_dump(to_dict(obj), sort_keys=False)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text

