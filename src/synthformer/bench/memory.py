"""Whether a run's planned peak memory fits the machine it would train on.

``synthformer train --dry-run`` prints the machine's memory under the plan and warns when the plan's peak is over
it; a real ``synthformer train`` refuses to start then (exit status 2, one line naming :data:`OVERRIDE`), since such
a run swaps for hours or is killed by the kernel's out-of-memory killer, often after the data are read.

The memory compared with is where the run allocates: the first GPU's when CUDA is available (one process per
GPU), else this machine's RAM, shared by the processes started on it. RAM is ``MemTotal`` of ``/proc/meminfo``
(``os.sysconf`` where there is none), or the cgroup's limit when a container sets a lower one. Only the machine's
whole memory can refuse a run: what is available at the moment changes as other jobs come and go, so the dry run
only mentions it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .plan_data import format_bytes

__all__ = ["OVERRIDE", "MachineMemory", "fit_report", "machine_memory", "over_memory"]

logger = logging.getLogger(__name__)

#: The option of ``synthformer train`` that starts a run whose plan is over the machine's memory.
OVERRIDE = "--no-memory-check"
_MEMINFO = Path("/proc/meminfo")
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


@dataclass(frozen=True)
class MachineMemory:
    """The memory a run here allocates from: ``total`` bytes (and ``available`` now, when known), ``where`` it is
    (``RAM``, ``GPU 0``), ``source`` how it was read and ``shared`` whether the processes of one machine share it."""

    total: int
    available: int | None
    where: str
    source: str
    shared: bool


def _meminfo() -> dict[str, int]:
    """``/proc/meminfo`` in bytes (its values are in kB), or {} where there is none."""
    try:
        text = _MEMINFO.read_text(encoding="ascii")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        words = value.split()
        if words and words[0].isdigit():
            out[name.strip()] = int(words[0]) * (1024 if words[1:] == ["kB"] else 1)
    return out


def _cgroup_limit() -> int | None:
    """The container's memory limit in bytes, or None without one ("max", or v1's huge "unlimited" value)."""
    for path in _CGROUP_LIMITS:
        try:
            value = path.read_text(encoding="ascii").strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 2**60:
            return int(value)
    return None


def machine_memory() -> MachineMemory | None:
    """The memory a run started here allocates from (see the module docstring); None when it cannot be read."""
    if torch.cuda.is_available():
        free, total = torch.cuda.mem_get_info(0)
        return MachineMemory(total, free, "GPU 0", torch.cuda.get_device_name(0), shared=False)
    info = _meminfo()
    total, source = info.get("MemTotal"), "MemTotal of /proc/meminfo"
    if total is None:
        try:
            total, source = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "os.sysconf"
        except (AttributeError, OSError, ValueError):
            return None
    limit = _cgroup_limit()
    if limit is not None and limit < total:
        total, source = limit, "the cgroup's memory limit"
    available = info.get("MemAvailable")
    return MachineMemory(total, None if available is None else min(available, total), "RAM", source, shared=True)


def _need(per_process: int, processes: int, memory: MachineMemory) -> tuple[int, str]:
    """Bytes the run needs of ``memory`` and how they add up."""
    if memory.shared and processes > 1:
        return per_process * processes, f"{format_bytes(per_process)} per process x {processes} processes"
    return per_process, format_bytes(per_process)


def over_memory(per_process: int, processes: int, memory: MachineMemory | None) -> str | None:
    """Why a run of ``processes`` processes on this machine, each with a planned peak of ``per_process`` bytes,
    does not fit ``memory``; None when it does (or the memory is unknown)."""
    if memory is None:
        return None
    need, how = _need(per_process, processes, memory)
    if need <= memory.total:
        return None
    return (f"the plan's peak memory ({how}) is over this machine's {memory.where} of {format_bytes(memory.total)} "
            f"({memory.source}): shrink train.batch_size or task.max_len, or train.grad_accum for the same batch "
            f"(synthformer train CONFIG --dry-run prints the plan), or pass {OVERRIDE} to start anyway")


def fit_report(per_process: int, processes: int, memory: MachineMemory | None) -> tuple[str, str | None]:
    """``(line, warning)`` for the dry run: the machine's memory beside the plan's peak, and the warning (None when
    it fits)."""
    if memory is None:
        return "memory of this machine unknown (no /proc/meminfo or os.sysconf)", None
    need, how = _need(per_process, processes, memory)
    now = "" if memory.available is None else f", {format_bytes(memory.available)} available now"
    line = f"{memory.where} {format_bytes(memory.total)} ({memory.source}{now}); the plan needs {how}"
    warning = over_memory(per_process, processes, memory)
    if warning is None and memory.available is not None and need > memory.available:
        warning = (f"the plan's peak memory ({how}) is over the {format_bytes(memory.available)} available now "
                   "(other processes hold the rest)")
    return line, warning
