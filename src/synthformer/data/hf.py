"""Loading Hugging Face ``datasets`` by name (an optional dependency, imported only when used).

The functions call :func:`datasets.load_dataset` and turn its rows into the same records the file
readers return, with the same checks: a missing field, a non-string text, a label outside the label set
or an empty text raise :class:`~synthformer.data.errors.DataError` naming the data set, split and
1-based row. Fields may be dotted paths into nested records (``"translation.de"`` for WMT-style data).

They work offline on local files through the generic builders, e.g.
``load_hf_dataset("json", "train", data_files={"train": "train.jsonl"})``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from synthformer.data.errors import DataError
from synthformer.data.readers import ClassificationExample, TranslationPair

__all__ = ["load_hf_dataset", "load_hf_pairs", "load_hf_text"]

logger = logging.getLogger(__name__)


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "loading Hugging Face data sets needs the optional 'datasets' package: "
            "pip install datasets (it is part of synthformer's 'dev' extra)"
        ) from exc
    return datasets


def _load(name: str, split: str, config: str | None, kwargs: dict[str, Any]) -> Any:
    datasets = _import_datasets()
    logger.info("loading Hugging Face data set %s (config %s, split %s)", name, config, split)
    return datasets.load_dataset(name, config, split=split, **kwargs)


def _get(record: Mapping[str, Any], field: str, where: str, row: int) -> Any:
    value: Any = record
    for part in field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            present = sorted(value) if isinstance(value, Mapping) else type(value).__name__
            raise DataError(where, row, f"missing field {field!r} (at {part!r}; present: {present})")
        value = value[part]
    return value


def _text(record: Mapping[str, Any], field: str, where: str, row: int) -> str:
    value = _get(record, field, where, row)
    if not isinstance(value, str):
        raise DataError(where, row, f"field {field!r} must be a string, got {type(value).__name__}")
    return value


def _rows(ds: Iterable[Mapping[str, Any]]) -> Iterator[tuple[int, Mapping[str, Any]]]:
    return enumerate(ds, start=1)


def _empty(where: str, row: int, what: str, policy: str, counter: list[int]) -> None:
    if policy == "error":
        raise DataError(where, row, f"{what} (pass empty='skip' to skip such rows)")
    if policy != "skip":
        raise ValueError(f"empty must be 'error' or 'skip', got {policy!r}")
    counter.append(row)


def _report(where: str, skipped: list[int], total: int) -> None:
    if skipped:
        logger.warning("%s: skipped %d empty row(s), the first at row %d", where, len(skipped), skipped[0])
    if total == 0:
        raise DataError(where, 1, "no rows left (split empty or every row skipped)")


def load_hf_dataset(
    name: str,
    split: str,
    text_field: str = "text",
    label_field: str = "label",
    *,
    config: str | None = None,
    label_set: Iterable[str] | None = None,
    use_label_names: bool = False,
    empty: str = "error",
    **load_kwargs: Any,
) -> list[ClassificationExample]:
    """A classification split of a Hugging Face data set as :class:`ClassificationExample` records.

    Args:
        name: data set name or generic builder (``"imdb"``, ``"json"``, ``"csv"``, ...).
        split: ``"train"``, ``"test"``, or any split expression ``datasets`` accepts.
        text_field, label_field: (dotted) field names.
        config: the data set's configuration name, if it has several.
        label_set: if given, every label must be in it.
        use_label_names: for a ``ClassLabel`` feature, use the class names instead of the integers
            (which are otherwise turned into strings, ``1`` -> ``"1"``, like the file readers do).
        empty: ``"error"`` or ``"skip"`` for rows whose text is empty.
        **load_kwargs: passed to ``datasets.load_dataset`` (``data_files``, ``cache_dir``, ...).

    Raises:
        ImportError: ``datasets`` is not installed.
        DataError: a malformed row (data set, split and row named) or no rows.
    """
    ds = _load(name, split, config, load_kwargs)
    where = f"{name}[{split}]"
    feature = getattr(ds, "features", {}).get(label_field) if "." not in label_field else None
    int2str = getattr(feature, "int2str", None) if use_label_names else None
    allowed = None if label_set is None else set(label_set)
    out: list[ClassificationExample] = []
    skipped: list[int] = []
    for row, record in _rows(ds):
        text = _text(record, text_field, where, row)
        raw = _get(record, label_field, where, row)
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise DataError(where, row, f"label field {label_field!r} must be a string or an integer, "
                                        f"got {type(raw).__name__}")
        label = str(int2str(raw)) if int2str is not None and isinstance(raw, int) else str(raw)
        if allowed is not None and label not in allowed:
            raise DataError(where, row, f"label {label!r} is not in the label set {sorted(allowed)}")
        if not text.strip():
            _empty(where, row, "empty text", empty, skipped)
            continue
        out.append(ClassificationExample(text, label, row))
    _report(where, skipped, len(out))
    return out


def load_hf_text(name: str, split: str, text_field: str = "text", *, config: str | None = None,
                 **load_kwargs: Any) -> list[str]:
    """The texts of one split (for language modelling); every row's field must be a string."""
    ds = _load(name, split, config, load_kwargs)
    where = f"{name}[{split}]"
    texts = [_text(record, text_field, where, row) for row, record in _rows(ds)]
    _report(where, [], len(texts))
    return texts


def load_hf_pairs(name: str, split: str, source_field: str, target_field: str, *,
                  config: str | None = None, empty: str = "error",
                  **load_kwargs: Any) -> list[TranslationPair]:
    """Sentence pairs of one split, e.g. ``load_hf_pairs("wmt14", "train", "translation.de",
    "translation.en", config="de-en")``; empty sides follow ``empty`` (``"error"`` or ``"skip"``)."""
    ds = _load(name, split, config, load_kwargs)
    where = f"{name}[{split}]"
    out: list[TranslationPair] = []
    skipped: list[int] = []
    for row, record in _rows(ds):
        src = _text(record, source_field, where, row).strip()
        tgt = _text(record, target_field, where, row).strip()
        if not src or not tgt:
            _empty(where, row, "empty source or target", empty, skipped)
            continue
        out.append(TranslationPair(src, tgt, row))
    _report(where, skipped, len(out))
    return out
