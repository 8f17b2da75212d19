"""Reading the sources of a prepare (``synthformer.data.prepared.sources``): byte ranges that together give every
record once, every file format, and errors that name the file."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from synthformer.data import DataError
from synthformer.data.prepared.sources import expand_glob, file_ranges, iter_file

PIECES = ["ab", "c d", "é", "\n", "\n", "\r\n", "xyz"]


@pytest.mark.parametrize("unit", ["paragraph", "line"])
def test_byte_ranges_give_every_record_once(tmp_path: Path, unit: str) -> None:
    rng = random.Random(0)
    for trial in range(40):
        path = tmp_path / f"t{trial}.txt"
        path.write_bytes("".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))).encode())
        whole = list(iter_file(path, ["text"], text_unit=unit))
        for size in (1, 2, 3, 7):
            ranges = file_ranges(path.stat().st_size, size)
            got = [r for a, b in ranges for r in iter_file(path, ["text"], start=a, stop=b, text_unit=unit)]
            assert got == whole, (path.read_bytes(), size)


def test_paragraphs_keep_their_inner_line_ends(tmp_path: Path) -> None:
    path = tmp_path / "p.txt"
    path.write_text("First line\nsecond line\n\n\nNext one\n")
    assert [t for _, (t,) in iter_file(path, ["text"])] == ["First line\nsecond line", "Next one"]
    assert [pos for pos, _ in iter_file(path, ["text"])] == [0, 25]


def test_every_format_by_its_suffix(tmp_path: Path) -> None:
    records = [{"text": "one doc", "n": {"inner": "x"}}, {"text": "two docs", "n": {"inner": "y"}}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with gzip.open(tmp_path / "b.json.gz", "wt") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "c.csv").write_text('text,other\n"one doc",1\n"two docs",2\n')
    (tmp_path / "d.tsv").write_text("text\tother\none doc\t1\ntwo docs\t2\n")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["one doc", "two docs"]}), tmp_path / "e.parquet")
    for name in ("a.jsonl", "b.json.gz", "c.csv", "d.tsv", "e.parquet"):
        assert [t for _, (t,) in iter_file(tmp_path / name, ["text"])] == ["one doc", "two docs"], name
    assert [t for _, (t,) in iter_file(tmp_path / "a.jsonl", ["n.inner"])] == ["x", "y"]  # dotted fields


def test_bad_records_name_the_file_and_where(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n{"txt": "typo"}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl: line at byte offset 17: missing field 'text'"):
        list(iter_file(path, ["text"]))
    path.write_bytes(b'{"text": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl: invalid UTF-8 at byte offset 13"):
        list(iter_file(path, ["text"]))
    with pytest.raises(DataError, match="no file matches"):
        expand_glob(str(tmp_path / "c4-train.*.json.gz"))


def test_a_gzip_file_damaged_inside_its_stream_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c4-train.00000-of-01024.json.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("".join(json.dumps({"text": f"document {i}"}) + "\n" for i in range(200)))
    data = bytearray(path.read_bytes())
    data[-12:-8] = b"\xff\xff\xff\xff"  # the last deflate block: zlib's own error, not gzip's
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"c4-train\.00000-of-01024\.json\.gz: damaged gzip file"):
        list(iter_file(path, ["text"]))
