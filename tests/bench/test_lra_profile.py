"""``synthformer.bench.lra_profile`` and ``benchmarks/speed/lra_profile.py``: a training step's profiled time split into
matrix products, SDPA, softmax, AdamW and the rest, per LRA kind (issue 31: why a kind misses its FLOP limit)."""

from __future__ import annotations

import json

import pytest

from synthformer.bench.lra_profile import CATEGORIES, categorize, profile_kinds, profile_markdown

from .scripts import load_script

TINY = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}


@pytest.mark.parametrize(("name", "ancestors", "expected"), [
    ("aten::mm", [], "matmul"),
    ("aten::addmm", ["aten::linear"], "matmul"),
    ("aten::_softmax", ["aten::softmax"], "softmax"),
    ("aten::mul", ["Optimizer.step#AdamW.step", "aten::_foreach_mul_"], "optimizer"),
    ("aten::mm", ["Optimizer.step#AdamW.step"], "optimizer"),  # anything under the optimizer's range
    ("aten::fill_", ["Optimizer.zero_grad#AdamW.zero_grad"], "optimizer"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", ["aten::scaled_dot_product_attention"], "sdpa"),
    ("aten::bmm", ["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math"], "sdpa"),
    ("aten::_softmax", ["aten::scaled_dot_product_attention", "aten::softmax"], "sdpa"),  # SDPA's math path
    ("aten::exp_", [], "other"),
    ("aten::native_dropout", ["aten::dropout"], "other"),
])
def test_categorize(name, ancestors, expected):
    assert categorize(name, ancestors) == expected


def test_profile_kinds_splits_every_kind_s_step_and_the_shares_sum_to_one():
    rows = profile_kinds(["R", "R+V"], length=32, warmup=1, steps=1, overrides=TINY)
    assert [r["kind"] for r in rows] == ["V", "R", "R+V"]  # V first, always
    for r in rows:
        assert r["L"] == 32 and r["causal"] is False and r["params"] > 0
        assert r["total_ms"] == pytest.approx(sum(r[f"{c}_ms"] for c in CATEGORIES))
        assert sum(r[f"{c}_share"] for c in CATEGORIES) == pytest.approx(1.0)
        assert r["matmul_ms"] > 0 and r["optimizer_ms"] > 0 and r["other_ms"] > 0
        # the operators' self times fall within the profiled wall time (threads of one process, run in turn)
        assert 0 < r["total_ms"] <= r["wall_ms"] * 1.05
        top = r["other_top"]
        assert 0 < len(top) <= 5 and all(categorize(name, []) == "other" for name, _ in top)
        assert [ms for _, ms in top] == sorted((ms for _, ms in top), reverse=True) and sum(
            ms for _, ms in top) <= r["other_ms"] + 1e-9
    # R has a learned L x L alignment per head and no queries/keys: more parameters than V at this width
    assert rows[1]["params"] > rows[0]["params"]


def test_causal_profile_leaves_out_linformer():
    rows = profile_kinds(["D", "Linformer"], length=16, causal=True, steps=1, overrides=TINY)
    assert [r["kind"] for r in rows] == ["V", "D"] and all(r["causal"] for r in rows)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kinds": ["Q"]}, "unknown LRA Table 2 kind"),
    ({"steps": 0}, "steps must be an integer >= 1, got 0"),
    ({"warmup": -1}, "warmup must be an integer >= 0, got -1"),
    ({"length": 0}, "length must be an integer >= 1, got 0"),
    ({"overrides": {"vocab_size": 3}}, "set by the LRA Table 2 harness itself"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        profile_kinds(**{"length": 16, "overrides": TINY, **kwargs})


def test_markdown_has_a_row_per_kind_with_ms_and_share():
    row = {"kind": "R", "total_ms": 2000.0, **{f"{c}_ms": 400.0 for c in CATEGORIES},
           **{f"{c}_share": 0.2 for c in CATEGORIES}}
    text = profile_markdown([row])
    assert text.splitlines()[2] == "| R | 2,000 ms | 400 ms (20%) | 400 ms (20%) | 400 ms (20%) | 400 ms (20%) | " \
                                   "400 ms (20%) |"
    assert "largest operators" not in text  # a row without other_top: the table alone
    row["other_top"] = [["aten::rand", 150.0], ["aten::exp_", 100.4], ["aten::copy_", 50.0], ["aten::mul", 9.0]]
    assert text + "\n\nEverything else, its largest operators per step:\n- R: `aten::rand` 150 ms, `aten::exp_` " \
                  "100 ms, `aten::copy_` 50 ms" == profile_markdown([row])


def test_the_script_prints_the_table_and_appends_its_record(tmp_path, monkeypatch, capsys):
    lra_profile = load_script("speed/lra_profile", monkeypatch)

    record = tmp_path / "bench_lra_profile.jsonl"
    argv = ["--kinds", "D", "--length", "16", "--steps", "1", "--set", "d_model=16", "n_heads=2", "n_layers=1",
            "d_ff=32", "--record", str(record)]
    assert lra_profile.main(argv) == 0
    out = capsys.readouterr().out
    assert "| kind | profiled step | matrix products | SDPA | softmax | AdamW | everything else |" in out
    assert "| V |" in out and "| D |" in out
    entry = json.loads(record.read_text().splitlines()[-1])
    assert [r["kind"] for r in entry["rows"]] == ["V", "D"] and entry["table"] == "bench_lra_profile"
    with pytest.raises(SystemExit):
        lra_profile.main(["--kinds", "nope", "--length", "16"])
    assert "unknown LRA Table 2 kind(s) ['nope']" in capsys.readouterr().err
