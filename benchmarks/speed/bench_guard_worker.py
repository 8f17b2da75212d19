"""The timing process of ``benchmarks/speed/bench_guard.py``: imports ``synthformer`` from the tree that ``PYTHONPATH``
names and times the attention layers the guard asks for, one request at a time.

Each tree gets a process of its own: two trees' modules in one process would share ``sys.modules`` (one of them
would silently time the other's code) and caches (a compiled C++ block, the allocator's free lists). The guard keeps
one worker per tree alive and sends a request to one of them at a time, so the two never run at once.

Protocol (JSON, one object per line): the worker first answers ``{"ready": true, "synthformer": PATH, "threads":
N}`` (PATH: the package it imported, so the guard can check that it is the intended tree's), then answers every
request ``{"kind", "L", "dropout", "causal", "batch", "d_model", "heads", "warmup", "repeats"}`` with ``{"ms":
MEDIAN, "times": [MS, ...]}`` or ``{"error": TEXT}``. Answers are the stdout lines that start with ``@guard ``;
anything else a library prints is ignored. An empty line or end of input ends the worker.

Only ``torch`` and ``SynthesizerAttention(d_model, n_heads, max_len, kind=, causal=, dropout=)`` are used, an API
that older commits share, and nothing from ``benchmarks/``: this file runs unchanged against any commit's code.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

import torch

PREFIX = "@guard "


def _answer(payload: dict[str, Any]) -> None:
    sys.stdout.write(PREFIX + json.dumps(payload) + "\n")
    sys.stdout.flush()


class Worker:
    """The layers of the current group (length, dropout, causality), built once and reused across rounds."""

    def __init__(self) -> None:
        from synthformer.attention import SynthesizerAttention  # the tree named by PYTHONPATH

        self.attention = SynthesizerAttention
        self.group: tuple[Any, ...] | None = None
        self.layers: dict[str, torch.nn.Module] = {}
        self.x: torch.Tensor | None = None

    def _layer(self, req: dict[str, Any]) -> tuple[torch.nn.Module, torch.Tensor]:
        group = (req["L"], req["dropout"], req["causal"], req["batch"], req["d_model"], req["heads"])
        if group != self.group:  # a new group: drop the last one's layers (at L=1024, R's logits are 32 MiB each)
            self.group, self.layers = group, {}
            torch.manual_seed(0)
            self.x = torch.randn(req["batch"], req["L"], req["d_model"], requires_grad=True)
        if req["kind"] not in self.layers:
            torch.manual_seed(0)  # the same weights in every round, and in both trees where their code agrees
            self.layers[req["kind"]] = self.attention(req["d_model"], req["heads"], req["L"], kind=req["kind"],
                                                      causal=req["causal"], dropout=req["dropout"]).train()
        assert self.x is not None
        return self.layers[req["kind"]], self.x

    def measure(self, req: dict[str, Any]) -> dict[str, Any]:
        """``req``'s layer: ``warmup`` untimed steps, then ``repeats`` timed ones (forward + backward)."""
        layer, x = self._layer(req)
        times = []
        for i in range(req["warmup"] + req["repeats"]):
            start = time.perf_counter()
            layer(x).sum().backward()
            layer.zero_grad(set_to_none=True)
            x.grad = None
            if i >= req["warmup"]:
                times.append(1e3 * (time.perf_counter() - start))
        return {"ms": statistics.median(times), "times": times}


def main() -> int:
    if len(sys.argv) > 1 and int(sys.argv[1]) > 0:
        torch.set_num_threads(int(sys.argv[1]))
    worker = Worker()
    import synthformer

    _answer({"ready": True, "synthformer": synthformer.__file__, "threads": torch.get_num_threads()})
    for line in sys.stdin:
        if not line.strip():
            break
        try:
            _answer(worker.measure(json.loads(line)))
        except Exception as err:  # noqa: BLE001 - reported to the guard, which records it for that row
            _answer({"error": f"{type(err).__name__}: {err}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
