"""The materialized block size follows the CPU's last-level cache (read from sysfs), with a fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthformer.attention.fast import cpu_caches
from synthformer.attention.fast.settings import DEFAULTS, FastPathSettings


def _cache(root: Path, index: int, level: int, kind: str, size: str) -> None:
    folder = root / f"index{index}"
    folder.mkdir(parents=True)
    (folder / "level").write_text(f"{level}\n")
    (folder / "type").write_text(f"{kind}\n")
    (folder / "size").write_text(f"{size}\n")


def test_the_highest_data_cache_level_is_read(tmp_path):
    _cache(tmp_path, 0, 1, "Data", "32K")
    _cache(tmp_path, 1, 1, "Instruction", "32K")
    _cache(tmp_path, 2, 2, "Unified", "512K")
    _cache(tmp_path, 3, 3, "Unified", "32768K")
    assert cpu_caches.last_level_cache_bytes(tmp_path) == 32 << 20


def test_a_machine_without_l3_uses_its_l2_and_instruction_caches_never_count(tmp_path):
    _cache(tmp_path, 0, 1, "Data", "48K")
    _cache(tmp_path, 1, 2, "Unified", "2M")
    _cache(tmp_path, 2, 3, "Instruction", "64M")  # not a data cache, whatever its level
    assert cpu_caches.last_level_cache_bytes(tmp_path) == 2 << 20


def test_an_unreadable_or_missing_sysfs_gives_none(tmp_path):
    assert cpu_caches.last_level_cache_bytes(tmp_path / "absent") is None
    _cache(tmp_path, 0, 3, "Unified", "lots")
    assert cpu_caches.last_level_cache_bytes(tmp_path) is None


@pytest.mark.parametrize(("cache", "elements"), [
    (32 << 20, 1 << 21),  # the development machine: 8 MiB of fp32 logits, the measured setting
    (None, 1 << 21),  # unknown: the development machine's cache is assumed
    (48 << 20, 1 << 21),  # rounded down to a power of two
    (260 << 20, 1 << 23),  # capped at 32 MiB of logits
    (4 << 20, 1 << 18),  # at least 1 MiB of logits
    (16 << 20, 1 << 20),
])
def test_the_block_is_a_quarter_of_the_cache_in_a_power_of_two(cache, elements):
    assert cpu_caches.chunk_elements_for(cache) == elements


def test_the_settings_default_is_this_machines_and_an_explicit_value_wins():
    assert DEFAULTS.chunk_elements == cpu_caches.chunk_elements_for(cpu_caches.last_level_cache_bytes())
    assert FastPathSettings(chunk_elements=7).chunk_elements == 7
