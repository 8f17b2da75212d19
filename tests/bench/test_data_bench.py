"""``benchmarks/speed/data.py`` (issue 32's data-at-scale goals) on a ~100 KB corpus: each piece runs and records the
fields the goals read, with sane values. No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import sys
from argparse import Namespace
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))  # as the scripts do: records.py and the rooms
from speed import data_corpus, data_measure  # noqa: E402 - benchmarks/speed/data_corpus.py, data_measure.py

# benchmarks/speed/data.py under a name of its own (a top-level module called "data" would be too easy to shadow)
_spec = importlib.util.spec_from_file_location("benchmarks_data_script", BENCH / "speed" / "data.py")
bench_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_data)

CONFIG = str(BENCH.parent / "configs" / "t5_cpu_pretrain_imdb.yaml")
TINY = ["model.d_model=16", "model.n_heads=2", "model.n_layers=1", "model.d_ff=32", "train.batch_size=4",
        "task.max_len=32"]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small stand-in for ../shared/data: 300 IMDb-like reviews and a Shakespeare-like text."""
    root = tmp_path_factory.mktemp("shared")
    (root / "imdb").mkdir()
    with open(root / "imdb" / "train.jsonl", "w", encoding="utf-8") as fh:
        for i in range(300):
            fh.write(json.dumps({"text": f"review {i}: the film was " + "good and long " * (i % 17 + 3)}) + "\n")
    (root / "tiny_shakespeare").mkdir()
    (root / "tiny_shakespeare" / "input.txt").write_text("ROMEO:\nWherefore art thou.\n\nJULIET:\nHere.\n" * 40)
    return root


def test_parse_size() -> None:
    assert data_corpus.parse_size("0.5G") == 500_000_000
    assert data_corpus.parse_size("20M") == 20_000_000
    assert data_corpus.parse_size("1000") == 1000
    with pytest.raises(ValueError):
        data_corpus.parse_size("big")


def test_corpus_is_seeded_and_of_its_size(shared: Path, tmp_path: Path) -> None:
    a = data_corpus.make_corpus(100_000, tmp_path / "a", seed=3, shared=shared)
    b = data_corpus.make_corpus(100_000, tmp_path / "b", seed=3, shared=shared)
    assert 100_000 <= a["train_bytes"] < 101_000 and a["valid_bytes"] >= 20_000
    assert (tmp_path / "a" / "train.jsonl").read_bytes() == (tmp_path / "b" / "train.jsonl").read_bytes()
    assert a["train_documents"] == b["train_documents"] > 100
    texts = list(data_corpus.read_texts(tmp_path / "a" / "valid.jsonl"))
    assert len(texts) == a["valid_documents"] and all(texts)


def test_ceiling_and_loader_record_their_fields(shared: Path, tmp_path: Path) -> None:
    from synthformer.tasks import load_run_config
    from synthformer.tasks.prepared import prepare_corpus

    corpus = tmp_path / "corpus"
    data_corpus.make_corpus(100_000, corpus, seed=0, shared=shared)
    tokenizer = data_corpus.make_tokenizer(CONFIG, corpus, tmp_path / "tokenizer.json",
                                           overrides=("task.vocab_size=400",))
    ceiling = data_corpus.encode_ceiling([corpus / "train.jsonl"], tokenizer)
    assert ceiling["bytes"] == (corpus / "train.jsonl").stat().st_size
    assert ceiling["tokens"] > 10_000 and ceiling["mb_per_s"] > 0

    files = [f"task.train={corpus / 'train.jsonl'}", f"task.valid={corpus / 'valid.jsonl'}"]
    # the tokenizer's size, as prepare_command passes it (the config asks a larger vocabulary)
    task = load_run_config(Path(CONFIG), [*data_measure.source_overrides(), *files, "task.vocab_size=null"]).task
    prepare_corpus(task, tmp_path / "prepared", tokenizer=str(tokenizer))
    numbers = data_measure.loader_and_steps(CONFIG, tmp_path / "prepared", TINY, batches=2, steps=1)
    assert numbers["batch_size"] == 4 and numbers["examples"] > 100
    assert numbers["loader_examples_per_s"] > 0 and numbers["loop_examples_per_s"] > 0
    assert 0 < numbers["data_wait_share"] < 1


def test_watch_reports_the_first_step_and_stops_at_the_cap(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    code = (f"import json, time; open({str(metrics)!r}, 'w').write(json.dumps({{'step': 1, 'loss': 1.0}}) + '\\n');"
            " x = bytearray(400_000_000); time.sleep(30)")
    result = data_measure.watch([sys.executable, "-c", code], cap_bytes=200e6, metrics=metrics, timeout_s=20)
    assert result["exceeded_cap"] is True and result["timed_out"] is False and result["peak_rss_gb"] > 0.2
    assert result["first_step_s"] is not None and result["first_step_s"] <= result["seconds"] < 20

    with pytest.raises(FileExistsError):  # a metrics file from before the run would fake its first step
        data_measure.watch([sys.executable, "-c", "pass"], metrics=metrics)
    slow = data_measure.watch([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5)
    assert slow["timed_out"] is True and slow["exceeded_cap"] is False and slow["seconds"] < 20


def test_records_and_goal_verdicts(tmp_path: Path) -> None:
    args = Namespace(work=tmp_path, record=tmp_path / "bench.jsonl", shared_cpu=True, rerun=False)
    bench = bench_data.Bench(args)
    bench.record("train_prepared@5G", {"peak_rss_gb": 1.05, "first_step_s": 4.0, "examples_per_s": 10.0}, 0.5)
    bench.record("train_prepared@0.5G", {"peak_rss_gb": 1.0}, 0.5)
    bench.record("train_in_memory@0.5G", {"peak_rss_gb": 16.1, "note": "exceeded the cap at 16.1 GB after 90 s"}, 0.5)
    bench.record("loader@5G", {"loader_examples_per_s": 50.0, "data_wait_share": 0.03}, 0.5)
    entries = [json.loads(line) for line in (tmp_path / "bench.jsonl").read_text().splitlines()]
    assert len(entries) == 4
    for key in ("table", "row", "command", "date", "machine", "commit", "threads", "shared_cpu", "load_1min"):
        assert key in entries[0]
    assert entries[0]["shared_cpu"] is True and entries[0]["row"] == "train_prepared@5G"
    text = "\n".join(bench_data.goal_lines(bench.results, "0.5G", "5G"))
    assert "within 10% of prepared 0.5G (measured 1.05 GB vs 1.0 GB): holds" in text
    assert "below the in-memory path at 0.5G (measured 1.05 GB vs 16.1 GB; in-memory exceeded the cap" in text
    assert "<= 10 s (measured 4.0 s): holds" in text
    assert "(measured loader 50.0 examples/s, trainer 10.0 examples/s: 5.0x): does not hold" in text
    assert "(measured 3% with train.num_workers None (next(stream) timed" in text and "does not hold" in text
    # a second sitting with the same record reuses the recorded rows instead of measuring them again
    again = bench_data.Bench(args)
    assert again.reuse("loader@5G") and again.results["loader@5G"]["loader_examples_per_s"] == 50.0
    assert not again.reuse("loader@0.5G")
    assert not bench_data.Bench(Namespace(**{**vars(args), "rerun": True})).reuse("loader@5G")
    # --rerun ROW: only the named rows are measured again
    some = bench_data.Bench(Namespace(**{**vars(args), "rerun": ["loader@5G"]}))
    assert not some.reuse("loader@5G") and some.reuse("train_prepared@5G")
    assert bench_data.parse_args(["--all", "--rerun"]).rerun is True
    assert bench_data.parse_args(["--all", "--rerun", "prepare@0.5G"]).rerun == ["prepare@0.5G"]
    assert bench_data.parse_args(["--all"]).rerun is None and bench_data.parse_args(["--quick"]).rerun is True
