"""CIFAR-10's "python version" batches (``cifar-10-batches-py``) as Long Range Arena's Image task reads them.

The files (``data_batch_1`` .. ``data_batch_5``, ``test_batch``) are Python pickles of a dict with ``data``, a
(10000, 3072) uint8 array (each row the 1024 red, then green, then blue values of a 32 x 32 image, row by row),
and ``labels``, 10000 integers 0-9. A pickle can run any code when it is loaded, so they are read with an
unpickler that builds nothing but plain containers and numpy arrays (:class:`_ArrayOnlyUnpickler`); any other
object in a file is refused.

LRA's Image task sees each image in grayscale, one pixel per token (1024 tokens, 256 levels): its input
pipeline casts ``tf.image.rgb_to_grayscale`` of the uint8 image, which weighs R, G, B by 0.2989, 0.5870, 0.1140
on values scaled to [0, 1] and converts back to uint8 by multiplying with 255.5 and truncating; :func:`grayscale`
does the same.
"""

from __future__ import annotations

import importlib
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from synthformer.data import DataError

__all__ = ["CIFAR10_TRAIN_BATCHES", "grayscale", "read_cifar10", "read_cifar10_batch"]

#: The training batch files of a ``cifar-10-batches-py`` folder, in the order LRA's data (TFDS) reads them.
CIFAR10_TRAIN_BATCHES: tuple[str, ...] = tuple(f"data_batch_{i}" for i in range(1, 6))
_SIDE = 32
_RGB_WEIGHTS = np.array([0.2989, 0.5870, 0.1140])  # tf.image.rgb_to_grayscale's weights
# The only globals a CIFAR-10 batch refers to: how numpy rebuilds an array (numpy 1 and 2 spell the module apart),
# and how a protocol-2 pickle written by Python 3 spells a bytes object (codecs.encode of a str: no code runs).
_ALLOWED = {
    ("_codecs", "encode"): ("_codecs",),
    ("numpy.core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "numpy.core.multiarray"),
    ("numpy._core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "numpy.core.multiarray"),
    ("numpy", "ndarray"): ("numpy",),
    ("numpy", "dtype"): ("numpy",),
}


class _ArrayOnlyUnpickler(pickle.Unpickler):
    """Builds containers, strings, numbers and numpy arrays; refuses every other global a pickle names."""

    def find_class(self, module: str, name: str) -> Any:
        homes = _ALLOWED.get((module, name))
        if homes is None:
            raise pickle.UnpicklingError(f"refused to load {module}.{name} (a CIFAR-10 batch holds only arrays)")
        for home in homes:
            try:
                return getattr(importlib.import_module(home), name)
            except (ImportError, AttributeError):
                continue
        raise pickle.UnpicklingError(f"numpy has no {module}.{name}")


def grayscale(rgb: np.ndarray) -> np.ndarray:
    """(N, 3072) CIFAR rows (R, G, B planes) -> (N, 1024) uint8 gray levels, as LRA's pipeline computes them."""
    planes = rgb.reshape(len(rgb), 3, _SIDE * _SIDE).astype(np.float64) / 255.0  # (N, 3, 1024)
    gray = np.einsum("c,ncp->np", _RGB_WEIGHTS, planes)  # (N, 1024) in [0, 1]
    return np.minimum(np.floor(gray * 255.5), 255).astype(np.uint8)


def _field(batch: dict[Any, Any], name: str) -> Any:
    # the original files were pickled by Python 2: their keys are bytes
    for key in (name.encode(), name):
        if key in batch:
            return batch[key]
    raise KeyError(name)


def read_cifar10_batch(path: str | os.PathLike[str]) -> list[tuple[bytes, str]]:
    """One batch file as ``(1024 gray pixels as bytes, label "0".."9")`` records, in file order.

    Raises:
        DataError: a missing or unreadable file, a pickle holding anything but arrays and containers, or a batch
            without ``data`` / ``labels`` of the shapes above.
    """
    path = Path(path)
    try:
        with path.open("rb") as f:
            batch = _ArrayOnlyUnpickler(f, encoding="bytes").load()
    except FileNotFoundError:
        raise DataError(path, None, "file not found (a cifar-10-batches-py batch was expected)") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise DataError(path, None, f"not a CIFAR-10 python batch ({err})") from None
    if not isinstance(batch, dict):
        raise DataError(path, None, f"expected a pickled dict with 'data' and 'labels', got {type(batch).__name__}")
    try:
        data, labels = np.asarray(_field(batch, "data")), list(_field(batch, "labels"))
    except KeyError as err:
        raise DataError(path, None, f"the batch has no {err.args[0]!r} entry") from None
    if data.ndim != 2 or data.shape[1] != 3 * _SIDE * _SIDE or data.dtype != np.uint8:
        raise DataError(path, None, f"'data' must be a uint8 array of shape (N, 3072), got {data.dtype} "
                                    f"{tuple(data.shape)}")
    if len(labels) != len(data):
        raise DataError(path, None, f"{len(labels)} labels for {len(data)} images")
    bad = next((i for i, label in enumerate(labels) if not (isinstance(label, int) and 0 <= label <= 9)), None)
    if bad is not None:
        raise DataError(path, bad + 1, f"label must be an integer 0-9, got {labels[bad]!r}")
    return [(row.tobytes(), str(label)) for row, label in zip(grayscale(data), labels, strict=True)]


def read_cifar10(path: str | os.PathLike[str]) -> list[tuple[bytes, str]]:
    """A batch file, or a ``cifar-10-batches-py`` folder's five training batches in order (50000 images).

    Raises:
        DataError: see :func:`read_cifar10_batch`; a folder without the training batches.
    """
    path = Path(path)
    if not path.is_dir():
        return read_cifar10_batch(path)
    missing = [name for name in CIFAR10_TRAIN_BATCHES if not (path / name).is_file()]
    if missing:
        raise DataError(path, None, f"a cifar-10-batches-py folder needs {', '.join(missing)}")
    return [record for name in CIFAR10_TRAIN_BATCHES for record in read_cifar10_batch(path / name)]
