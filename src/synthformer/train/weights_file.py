"""The finishing touches of a checkpoint's ``model.safetensors``: the permissions of any other run file, and one
byte sequence per content.

safetensors writes its file with mode 0600 (a private temporary renamed into place), while every other file of a run
gets what ``open()`` gives under the umask (0644 under the usual 022): the weights were unreadable to the user's
group alone. And it keeps the header's ``__metadata__`` (here the step and the names of tied tensors stored once) in
a hash map whose order changes from process to process, so two saves of equal weights differed in their first bytes
and ``sha256sum`` reported a difference that was none. :func:`finish_weights_file` fixes both; the tensors and their
data are not touched.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from pathlib import Path

from synthformer.common import created_mode

__all__ = ["finish_weights_file"]

logger = logging.getLogger(__name__)

#: safetensors: an 8-byte little-endian header length, then the JSON header (padded with spaces), then the data.
_LENGTH = struct.Struct("<Q")


def finish_weights_file(path: str | os.PathLike[str]) -> None:
    """Give the safetensors file ``path`` the mode ``open()`` would (0666 less the umask) and rewrite its header in
    place with the metadata in sorted order (the tensors' entries keep the writer's order, which is fixed).

    The rewritten header has the same length: only the order of the metadata's entries changes, and the compact
    JSON written here escapes as safetensors' writer does. Should it come out longer (it cannot, for what synthformer
    saves), the file is left as written, with a warning: still valid, only its bytes not fixed.
    """
    path = Path(path)
    os.chmod(path, created_mode())
    with open(path, "r+b") as fh:
        (size,) = _LENGTH.unpack(fh.read(_LENGTH.size))
        header = json.loads(fh.read(size))
        metadata = header.pop("__metadata__", None)
        ordered = {} if metadata is None else {"__metadata__": dict(sorted(metadata.items()))}
        ordered.update(header)
        text = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if len(text) > size:
            logger.warning("%s: the safetensors header came out longer when sorted; left as written", path)
            return
        fh.seek(_LENGTH.size)
        fh.write(text + b" " * (size - len(text)))  # safetensors pads its header with spaces too
