"""``synthformer.models.widening``: parameters counted on the meta device, and T5 (Base+)'s widening to a count."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from synthformer.models import Seq2SeqConfig, build_model, num_parameters
from synthformer.models.widening import count_parameters, widen_to_parameters

TINY = Seq2SeqConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, vocab_size=64, max_len=12)


def test_meta_count_is_the_built_models_count() -> None:
    # tied embeddings counted once, the frozen Fix alignment not counted, length-sized R and D counted
    for kinds in (("V", "V"), ("R+V", "Fix"), ("D+V", "FR")):
        config = dataclasses.replace(TINY, encoder_kind=kinds[0], decoder_kind=kinds[1])
        assert count_parameters(config) == num_parameters(build_model(config))


@pytest.mark.parametrize(("dim", "step"), [("d_ff", None), ("d_ff", 8), ("d_model", None)])
def test_widening_reaches_the_target_within_one_step(dim: str, step: int | None) -> None:
    base = count_parameters(TINY)
    target = base * 3 // 2  # several steps of either dimension away
    wider, count = widen_to_parameters(TINY, target, dim=dim, step=step)
    assert count == count_parameters(wider) and count > base
    width, unit = getattr(wider, dim), step or (TINY.n_heads if dim == "d_model" else 1)
    assert (width - getattr(TINY, dim)) % unit == 0
    # the chosen width is the closer of the two around the target: no other multiple of the step is closer
    for other in (width - unit, width + unit):
        assert abs(count - target) <= abs(count_parameters(dataclasses.replace(TINY, **{dim: other})) - target)
    # everything else is the base model's
    assert dataclasses.replace(wider, **{dim: getattr(TINY, dim)}) == TINY


def test_the_base_count_is_its_own_target_and_bad_arguments_are_one_line_errors() -> None:
    base = count_parameters(TINY)
    assert widen_to_parameters(TINY, base) == (TINY, base)
    with pytest.raises(ValueError, match=rf"target {base - 1} parameters is below the base model's {base:,}"):
        widen_to_parameters(TINY, base - 1)
    with pytest.raises(ValueError, match="dim must be one of d_ff, d_model, got 'n_layers'"):
        widen_to_parameters(TINY, base, dim="n_layers")
    with pytest.raises(ValueError, match="step 3 for d_model must be a multiple of n_heads"):
        widen_to_parameters(TINY, base, dim="d_model", step=3)
    with pytest.raises(ValueError, match="step must be a positive integer, got 0"):
        widen_to_parameters(TINY, base, step=0)


def test_the_base_plus_script_prints_the_table() -> None:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "studies" / "t5_base_plus.py"
    spec = importlib.util.spec_from_file_location("t5_base_plus_script", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    base = script.base_config("seq2seq", dict(d_model=16, n_heads=2, n_layers=2, d_ff=32, vocab_size=64, max_len=12))
    found = script.rows(base, encoder_only=False, dim="d_ff", step=None, plus=1000)
    assert [row[0] for row in found] == ["T5 (Base)", "Syn (R+V)", "Syn (D+V)", "T5 (Base+)", "T5 (Base+)",
                                         "T5 (Base+)"]
    unit = count_parameters(dataclasses.replace(base, d_ff=33)) - found[0][3]  # one unit of d_ff
    targets = [found[0][3] + 1000, found[2][3], found[1][3]]  # +1000 (the paper's 10M), = Syn (D+V), = Syn (R+V)
    assert [row[1] for row in found[3:]] == ["d_ff widened, +0.001M", "d_ff widened, = Syn (D+V)",
                                              "d_ff widened, = Syn (R+V)"]
    assert all(abs(row[3] - target) <= unit / 2 for row, target in zip(found[3:], targets, strict=True))
    assert script.rows(base, True, "d_ff", None, 1000)[1][3] < found[1][3]  # encoder only: fewer R parameters
