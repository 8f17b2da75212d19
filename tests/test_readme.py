"""The README's Python snippets run as written (so the documentation cannot rot)."""

from __future__ import annotations

import re
from pathlib import Path

from synthformer.attention import registered_kinds, unregister

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    namespace: dict = {}
    try:
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
        assert namespace["y"].shape == (4, 100, 512)
        assert namespace["p"].shape == (4, 8, 100, 100)
        assert namespace["cache"].length == 10
        assert "Band" in registered_kinds()
        from synthformer.bench.flops import layer_macs  # a kind from the README gets its FLOP count, no other edit

        assert layer_macs("Band+V", 1, 8, 16, 2) == layer_macs("V", 1, 8, 16, 2)
    finally:
        if "Band" in registered_kinds():
            unregister("Band")
