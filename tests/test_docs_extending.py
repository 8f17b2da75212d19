"""The code of docs/extending.md runs: its task type and its architecture register, build and train a step."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from synthformer.models import build_model, unregister_arch
from synthformer.tasks import get_task_type, unregister_task_type

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _block(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"expected one python block with {marker!r} in {DOC}"
    return found[0]


def test_the_documented_task_type_registers_and_reads_pairs(tmp_path: Path) -> None:
    namespace: dict = {}
    exec(compile(_block("class PairClassification"), str(DOC), "exec"), namespace)
    try:
        task_type = get_task_type("pair_classification")
        assert task_type.arch == "classifier" and task_type.option_defaults["separator"] == " | "
        (tmp_path / "train.jsonl").write_text('{"premise": "a b", "hypothesis": "c", "label": 1}\n' * 4,
                                              encoding="utf-8")
        from synthformer.tasks import TaskConfig

        task = TaskConfig(type="pair_classification", train=str(tmp_path / "train.jsonl"), valid_fraction=0.5)
        raw = task_type.read(task)
        assert raw.splits["train"][0] == ("a b | c", "1")
    finally:
        unregister_task_type("pair_classification")


def test_the_documented_architecture_builds_and_trains_a_step() -> None:
    namespace: dict = {}
    exec(compile(_block("@register_arch"), str(DOC), "exec"), namespace)
    try:
        config = namespace["TaggerConfig"](vocab_size=12, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=8,
                                           num_tags=3, encoder_kind="R+V")
        model = build_model(config)
        ids = torch.randint(1, 12, (2, 8))
        out = model(input_ids=ids, labels=torch.randint(0, 3, (2, 8)))
        assert out["logits"].shape == (2, 8, 3)
        out["loss"].backward()
        assert model.encoder.layers[0].self_attn.kind == "R+V"  # the mixer came from the factory, by name
    finally:
        unregister_arch("tagger")
