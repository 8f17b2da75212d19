"""The inputs of ``benchmarks/speed/data.py``: a seeded JSONL corpus of a chosen size drawn from the shared text, the
tokenizer every measurement shares, and the ceiling of plain ``tokenizers`` ``encode_batch`` over the same files.

The corpus is ``DIR/train.jsonl`` (``{"text": ...}`` a line, SIZE bytes) and ``DIR/valid.jsonl`` (a small held-out
draw), plus ``DIR/corpus.json`` saying how it was made. Documents are drawn with replacement from a pool built from
``../shared/data`` (IMDb reviews, tiny Shakespeare paragraphs, enwik8 chunks, groups of Multi30k sentences) with a
seeded RNG: the pool (tens of MB) is the only thing held in memory, whatever SIZE is; the output is streamed.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"

_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}


def parse_size(text: str) -> int:
    """``"0.5G"`` -> 500_000_000 bytes (decimal units K, M, G; a bare number is bytes)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMG]?)B?\s*", text.upper())
    if match is None:
        raise ValueError(f"size {text!r}: expected a number with an optional K, M or G, e.g. 0.5G")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _chunks(text: str, size: int) -> Iterator[str]:
    """Pieces of about ``size`` characters, cut at line ends."""
    piece: list[str] = []
    length = 0
    for line in text.splitlines():
        piece.append(line)
        length += len(line) + 1
        if length >= size:
            yield "\n".join(piece)
            piece, length = [], 0
    if piece:
        yield "\n".join(piece)


def document_pool(shared: Path = SHARED) -> list[str]:
    """Every document the corpus draws from (the sources found under ``shared``; at least one must exist)."""
    pool: list[str] = []
    for name in ("train.jsonl", "test.jsonl"):
        path = shared / "imdb" / name
        if path.is_file():
            with open(path, encoding="utf-8") as fh:
                pool += [json.loads(line)["text"] for line in fh if line.strip()]
    shakespeare = shared / "tiny_shakespeare" / "input.txt"
    if shakespeare.is_file():
        pool += [p for p in shakespeare.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    enwik = shared / "enwik8_small" / "enwik8_small"
    if enwik.is_file():
        pool += list(_chunks(enwik.read_text(encoding="utf-8", errors="replace"), 2000))
    for lang in ("en", "de"):
        path = shared / "multi30k" / f"train.{lang}"
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            pool += [" ".join(lines[i:i + 20]) for i in range(0, len(lines), 20)]
    if not pool:
        raise FileNotFoundError(f"no shared text under {shared} (imdb, tiny_shakespeare, enwik8_small, multi30k)")
    return pool


def _write_draws(path: Path, pool: list[str], rng: random.Random, size: int) -> int:
    """Append seeded draws from ``pool`` to ``path`` until it holds at least ``size`` bytes; returns documents."""
    documents = 0
    written = 0
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as fh:
        while written < size:
            line = json.dumps({"text": pool[rng.randrange(len(pool))]}) + "\n"
            fh.write(line)
            written += len(line.encode("utf-8"))
            documents += 1
    return documents


def make_corpus(size: int, out: Path, seed: int = 0, shared: Path = SHARED) -> dict[str, Any]:
    """Write ``out/train.jsonl`` of ``size`` bytes and ``out/valid.jsonl`` (0.5% of it, 20 KB to 2 MB); returns
    (and writes as ``out/corpus.json``) the sizes, document counts, seed and time taken."""
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    pool = document_pool(shared)
    rng = random.Random(seed)
    valid_size = min(max(size // 200, 20_000), 2_000_000)
    info = {
        "size": size, "seed": seed, "pool_documents": len(pool),
        "valid_documents": _write_draws(out / "valid.jsonl", pool, rng, valid_size),
        "train_documents": _write_draws(out / "train.jsonl", pool, rng, size),
    }  # fmt: skip
    info["train_bytes"] = (out / "train.jsonl").stat().st_size
    info["valid_bytes"] = (out / "valid.jsonl").stat().st_size
    info["seconds"] = round(time.perf_counter() - start, 2)
    (out / "corpus.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


def read_texts(path: Path, limit_bytes: int | None = None) -> Iterator[str]:
    """The ``text`` of each JSONL line of ``path`` (up to about ``limit_bytes`` of file when given)."""
    read = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            yield json.loads(line)["text"]
            read += len(line)
            if limit_bytes is not None and read >= limit_bytes:
                return


def make_tokenizer(config: str, corpus: Path, out: Path, sample_bytes: int = 20_000_000,
                   overrides: tuple[str, ...] = ()) -> Path:
    """Train the config's tokenizer (kind, vocabulary, T5's sentinels) on the first ``sample_bytes`` of the
    corpus's training file and save it to ``out``: every prepare of the benchmark is then given the same one."""
    from synthformer.data import build_tokenizer
    from synthformer.tasks import load_run_config

    task = load_run_config(Path(config), list(overrides)).task
    texts = list(read_texts(corpus / "train.jsonl", sample_bytes))
    tokenizer = build_tokenizer(task.tokenizer_kind, texts, task.vocab_size, **task.tokenizer_options)
    tokenizer = task.task_type.finish_tokenizer(task, tokenizer)
    out.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(out)
    return out


def backend_of(tokenizer: Any) -> Any:
    """The ``tokenizers.Tokenizer`` inside a project tokenizer (through wrappers such as the sentinel one)."""
    current = tokenizer
    for _ in range(4):
        if hasattr(current, "backend"):
            return current.backend
        current = getattr(current, "base", None)
        if current is None:
            break
    raise TypeError(f"{type(tokenizer).__name__} has no 'tokenizers' backend (the ceiling needs a BPE/Unigram kind)")


def encode_ceiling(files: list[Path], tokenizer_file: Path, batch: int = 1000) -> dict[str, Any]:
    """One process, a plain ``encode_batch`` loop over the texts of ``files`` (no ids kept): the rate that
    ``prepare`` cannot beat per process. Returns bytes (of the files), tokens, seconds and MB/s."""
    from synthformer.data import load_tokenizer

    backend = backend_of(load_tokenizer(tokenizer_file))
    start = time.perf_counter()
    tokens = 0
    for path in files:
        texts: list[str] = []
        for text in read_texts(path):
            texts.append(text)
            if len(texts) == batch:
                tokens += sum(len(e.ids) for e in backend.encode_batch(texts, add_special_tokens=False))
                texts = []
        if texts:
            tokens += sum(len(e.ids) for e in backend.encode_batch(texts, add_special_tokens=False))
    seconds = time.perf_counter() - start
    size = sum(p.stat().st_size for p in files)
    return {"bytes": size, "tokens": tokens, "seconds": round(seconds, 3), "mb_per_s": round(size / 1e6 / seconds, 3)}
