"""Tests of the Table 4 benchmark at tiny sizes: every row measured, ratios, FLOPs, parameters, outputs, errors."""

from __future__ import annotations

import csv
import math

import pytest
import torch
import torch.nn.functional as F

from synthformer.bench import (
    COLUMNS,
    DECODER_ROWS,
    ENCODER_ROWS,
    bench_config,
    conv_kernel_sizes,
    count_flops,
    main,
    peak_bytes,
    resolve_rows,
    row_config,
    run_table,
    to_csv,
    to_markdown,
    valid_row_names,
    write_outputs,
)
from synthformer.models import build_model, num_parameters

# two layers, so the per-layer kernel schedule (3, 7) is visible; width 32 keeps a step to milliseconds.
# One thread: tiny steps gain nothing from two, and on a shared 2-core machine two threads wait on each other
# whenever another job holds a core (measured: 3 ms -> 750 ms per step).
TINY = {"n_layers": 2, "d_model": 32, "n_heads": 2, "d_ff": 64}
TINY_RUN = dict(batch_size=2, seq_len=16, vocab_size=50, steps=1, warmup=0, repeats=1, overrides=TINY, threads=1)
#: one pytest-xdist worker runs the module, so that each preset's table (the module fixtures, seconds each) is
#: measured once rather than once in each worker
pytestmark = pytest.mark.xdist_group("bench-tables")


@pytest.fixture(scope="module")
def lm_results() -> list[dict]:
    return run_table("lm-small", **TINY_RUN)


@pytest.fixture(scope="module")
def cls_results() -> list[dict]:
    return run_table("cls-small", **TINY_RUN)


def _positive_numbers(row: dict) -> None:
    for key in ("params", "flops_per_step", "steps_per_s", "tokens_per_s", "step_ms", "peak_mib", "resident_mib"):
        value = row[key]
        assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, (row["model"], key, value)


def test_every_decoder_row_is_measured_with_positive_numbers(lm_results):
    assert [r["model"] for r in lm_results] == list(DECODER_ROWS)
    for r in lm_results:
        _positive_numbers(r)
        assert set(r) == set(COLUMNS)
        assert r["tokens_per_step"] == 2 * 16
        assert r["tokens_per_s"] == pytest.approx(r["steps_per_s"] * 32)


def test_encoder_preset_adds_the_factorized_rows_and_linformer(cls_results):
    assert [r["model"] for r in cls_results] == list(ENCODER_ROWS)
    assert {"Synthesizer (FR)", "Synthesizer (FR+V)", "Linformer"} <= {r["model"] for r in cls_results}
    for r in cls_results:
        _positive_numbers(r)


def test_transformer_ratio_is_exactly_one(lm_results):
    transformer = lm_results[0]
    assert transformer["model"] == "Transformer"
    assert transformer["steps_per_s_ratio"] == 1.0
    assert transformer["tokens_per_s_ratio"] == 1.0
    for r in lm_results[1:]:
        assert r["steps_per_s_ratio"] == pytest.approx(r["steps_per_s"] / transformer["steps_per_s"])


def test_random_synthesizer_needs_fewer_flops_than_the_transformer(lm_results):
    flops = {r["model"]: r["flops_per_step"] for r in lm_results}
    # same width and depth; R drops the Q and K projections and the Q K^T product
    assert flops["Synthesizer (R)"] < flops["Transformer"]
    # the mixtures do at least the work of their parts (flash and math attention paths counted alike)
    assert flops["Synthesizer (R+V)"] >= flops["Transformer"]
    assert flops["Synthesizer (D+V)"] > flops["Transformer"]
    assert flops["Synthesizer (R+V)"] > flops["Synthesizer (R)"]
    assert flops["Synthesizer (D+V)"] > flops["Synthesizer (D)"]


def test_cpu_attention_kernel_is_counted():
    # torch's counter has no formula for the CPU flash kernel; without ours the Transformer's attention is 0 FLOPs
    b, h, length, d = 2, 3, 16, 8
    q = torch.randn(b, h, length, d)
    expected_forward = 2 * (2 * b * h * length * length * d)  # Q K^T and P V
    assert count_flops(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True)) == expected_forward
    qg = q.clone().requires_grad_()
    total = count_flops(lambda: F.scaled_dot_product_attention(qg, qg, qg).sum().backward())
    # backward: the four gradient products, as the unfused (math) path would count them
    assert total == 3 * expected_forward
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        math_total = count_flops(lambda: F.scaled_dot_product_attention(qg, qg, qg).sum().backward())
    assert math_total == total


def test_parameter_counts_match_the_built_models(lm_results, cls_results):
    for preset, results in (("lm-small", lm_results), ("cls-small", cls_results)):
        base = bench_config(preset, vocab_size=50, seq_len=16, overrides=TINY)
        for r in results:
            model = build_model(row_config(base, r["model"]))
            assert r["params"] == num_parameters(model), (preset, r["model"])


def test_convolutions_get_the_per_layer_kernel_schedule():
    assert conv_kernel_sizes(6) == [3, 7, 15, 31, 31, 31]
    assert conv_kernel_sizes(8) == [3, 7, 15, 31, 31, 31, 31, 31]
    assert conv_kernel_sizes(1) == [3]
    base = bench_config("lm-small", vocab_size=50, seq_len=16, overrides=TINY)
    for name in ("Lightweight Conv", "Dynamic Conv"):
        model = build_model(row_config(base, name))
        mixers = [layer.self_attn for layer in model.decoder.layers]
        assert [m.kernel_size for m in mixers] == [3, 7]
        assert all(m.impl == "auto" for m in mixers)
        assert all(m.causal for m in mixers)


def test_factorized_rows_use_k_32():
    base = bench_config("cls-small", vocab_size=50, seq_len=64, overrides=TINY)
    fr = build_model(row_config(base, "Syn (FR)"))
    lin = build_model(row_config(base, "Linformer"))
    # FR: R1, R2 (H, l, k) per layer; Linformer: E (and F) (1, k, l)
    assert any(p.shape[-1] == 32 for p in fr.encoder.layers[0].self_attn.parameters())
    assert lin.encoder.layers[0].self_attn.E.shape[-2] == 32


def test_markdown_and_csv_outputs_parse(lm_results, tmp_path):
    md_path, csv_path = write_outputs(lm_results, tmp_path / "table4.md", command="synthformer bench --preset x")
    assert md_path.name == "table4.md" and csv_path.name == "table4.csv"

    with open(csv_path, newline="") as f:
        records = list(csv.DictReader(f))
    assert [rec["model"] for rec in records] == list(DECODER_ROWS)
    for rec, r in zip(records, lm_results, strict=True):
        assert int(rec["params"]) == r["params"]
        assert float(rec["steps_per_s"]) == pytest.approx(r["steps_per_s"])
    assert to_csv(lm_results) == csv_path.read_text()

    text = md_path.read_text()
    assert "command: synthformer bench --preset x" in text
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table == to_markdown(lm_results).splitlines()
    header = [c.strip() for c in table[0].strip("|").split("|")]
    assert header[:2] == ["Model", "Params"]
    assert set(table[1].strip("|").replace(":", "").split("|")) == {"---"}
    body = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:]]
    assert len(body) == len(lm_results)
    for cells, r in zip(body, lm_results, strict=True):
        assert len(cells) == len(header)
        assert cells[0].startswith(r["model"])
        assert float(cells[header.index("Steps/s vs Transformer")]) == pytest.approx(r["steps_per_s_ratio"], abs=0.005)
    assert body[1][0] == "Dynamic Conv (K=3-7)"


def test_unknown_rows_are_refused_with_the_valid_names():
    config = bench_config("lm-small", overrides=TINY)
    with pytest.raises(ValueError) as err:
        resolve_rows(["Synthesizer (Q)", "R"], config)
    message = str(err.value)
    assert "Synthesizer (Q)" in message
    for name in valid_row_names():
        assert repr(name) in message


def test_row_aliases_and_the_transformer_is_always_first():
    config = bench_config("lm-small", overrides=TINY)
    rows = resolve_rows(["syn (r)", "R+V", "lightconv", "Synthesizer (R)"], config)
    assert [r.name for r in rows] == ["Transformer", "Synthesizer (R)", "Synthesizer (R+V)", "Lightweight Conv"]


@pytest.mark.parametrize("preset", ["lm-small", "mt-small"])
def test_linformer_is_refused_for_decoder_presets(preset):
    with pytest.raises(ValueError, match=r"Linformer.*causal.*cls-base"):
        run_table(preset, rows=["Linformer"], **TINY_RUN)
    # the same row is fine for an encoder preset
    assert [r.name for r in resolve_rows(["Linformer"], bench_config("cls-small"))] == ["Transformer", "Linformer"]


def test_bad_overrides_are_refused():
    with pytest.raises(ValueError, match="vocab_size"):
        bench_config("lm-small", overrides={"vocab_size": 10})
    with pytest.raises(ValueError, match="n_layer: not a setting of arch 'lm'"):
        bench_config("lm-small", overrides={"n_layer": 1})
    with pytest.raises(ValueError, match="unknown model preset"):
        bench_config("lm-huge")
    assert bench_config("lm-small", seq_len=24).max_len == 24


def test_bf16_run_with_a_row_subset_includes_the_transformer():
    threads = torch.get_num_threads()
    results = run_table("lm-small", rows=["R"], dtype="bf16", memory=False, **TINY_RUN)
    assert torch.get_num_threads() == threads  # the run's thread count is restored afterwards
    assert [r["model"] for r in results] == ["Transformer", "Synthesizer (R)"]
    assert all(r["dtype"] == "bf16" and r["threads"] == 1 for r in results)
    assert math.isnan(results[0]["peak_mib"])  # memory measurement was switched off
    assert "Peak MiB" in to_markdown(results)


def test_peak_bytes_tracks_the_high_water_mark():
    n = 2**18  # 1 MiB of float32

    def fn() -> None:
        a = torch.ones(n)
        b = a * 2  # 2 MiB alive here
        del a, b
        c = torch.ones(n)  # back to 1 MiB
        del c

    peak = peak_bytes(fn)
    assert 2 * 4 * n <= peak < 2 * 4 * n + 4096


def test_main_prints_machine_command_and_table(tmp_path, capsys):
    argv = [
        "--preset", "lm-small", "--rows", "V,R", "--set", "n_layers=1", "d_model=32", "n_heads=2", "d_ff=64",
        "--seq-len", "16", "--batch-size", "2", "--vocab-size", "50", "--steps", "1", "--repeats", "1",
        "--warmup", "0", "--threads", "1", "--no-progress", "--out", str(tmp_path / "t"),
    ]  # fmt: skip
    assert main(argv, prog="synthformer bench") == 0
    out = capsys.readouterr().out
    assert "command: synthformer bench --preset lm-small --rows V,R" in out
    assert "torch " + torch.__version__ in out and "1 torch threads" in out
    assert "| Synthesizer (R) |" in out
    assert (tmp_path / "t.md").exists() and (tmp_path / "t.csv").exists()


def test_main_reports_bad_rows_as_usage_errors(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--preset", "lm-small", "--rows", "Bogus"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Bogus" in err and "'Synthesizer (R+V)'" in err
    with pytest.raises(SystemExit):
        main(["--preset", "lm-small", "--rows", "Linformer"])
    assert "cls-base" in capsys.readouterr().err


def test_encoder_decoder_preset_swaps_both_self_attention_stacks():
    config = row_config(bench_config("mt-small", overrides=TINY), "Syn (R)")
    assert config.encoder_kind == config.decoder_kind == "R"
    assert config.cross_kind == "V"  # the paper keeps cross-attention dot-product
    results = run_table("mt-small", rows=["R"], memory=False, **TINY_RUN)
    assert [r["model"] for r in results] == ["Transformer", "Synthesizer (R)"]
    assert all(r["tokens_per_step"] == 2 * 2 * 16 for r in results)  # source and target tokens
    assert results[1]["flops_per_step"] < results[0]["flops_per_step"]
