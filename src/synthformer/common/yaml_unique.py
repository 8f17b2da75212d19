"""YAML that refuses a key given twice in one mapping.

PyYAML keeps the last of two equal keys and drops the first without a word, so a config with two ``train:``
sections (one pasted below the other) silently trains with half of what the user wrote. :func:`load_unique_keys`
reads like :func:`yaml.safe_load`, but first walks the composed node tree and raises :class:`DuplicateKeyError`
(a :class:`yaml.YAMLError`) naming the key's dotted path and the two lines. Merge keys (``<<: *defaults``) are
not duplicates: overriding a merged key is what they are for.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["DuplicateKeyError", "load_unique_keys"]

_MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKeyError(yaml.YAMLError):
    """A mapping holds the same key twice: ``key`` (its dotted path from the top) at 1-based ``first_line`` and
    ``second_line``."""

    def __init__(self, key: str, first_line: int, second_line: int) -> None:
        self.key, self.first_line, self.second_line = key, first_line, second_line
        super().__init__(f"duplicate key {key!r} at lines {first_line} and {second_line}")


def load_unique_keys(text: str) -> Any:
    """The YAML document in ``text`` (as :func:`yaml.safe_load` reads it; None when empty).

    Raises:
        DuplicateKeyError: a key appears twice in one mapping, at any depth.
        yaml.YAMLError: ``text`` is not valid YAML.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_node(loader, node, "", set())
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_node(loader: yaml.SafeLoader, node: yaml.Node, path: str, seen: set[int]) -> None:
    """Raise :class:`DuplicateKeyError` for the first key given twice under ``node`` (at ``path``)."""
    if id(node) in seen:  # an alias met again (possibly a recursive one): checked already
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_node(loader, item, f"{path}[{i}]", seen)
        return
    if not isinstance(node, yaml.MappingNode):
        return
    lines: dict[Any, int] = {}
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            _check_node(loader, value_node, path, seen)
            continue
        key = _key_of(loader, key_node)
        dotted = f"{path}.{key}" if path else str(key)
        line = key_node.start_mark.line + 1
        if key is not None:
            if key in lines:
                raise DuplicateKeyError(dotted, lines[key], line)
            lines[key] = line
        _check_node(loader, value_node, dotted, seen)


def _key_of(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """The key ``node`` stands for, as the constructor will build it (``1`` and ``0x1`` are one key); None when it
    is not a hashable scalar (a mapping as a key: the constructor's own error reports it)."""
    if not isinstance(node, yaml.ScalarNode):
        return None
    try:
        key = loader.construct_object(node, deep=True)
        hash(key)
    except (yaml.YAMLError, TypeError):
        return None
    return key
