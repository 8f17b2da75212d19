"""The readers of the LRA data that cannot be fetched here, on tiny made-up files: CIFAR-10's python batches (Image)
and the ACL Anthology pairs' TSV (Retrieval), and the pair dataset a dual encoder reads."""

from __future__ import annotations

import collections
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from synthformer.data import ByteTokenizer, DataError
from synthformer.tasks.suites.lra import PairClassificationDataset, read_cifar10, read_cifar10_batch, read_matching_tsv


def write_batch(path: Path, data: np.ndarray, labels: list[int]) -> Path:
    """A batch as CIFAR-10's files hold it: a protocol-2 pickle with bytes keys (they were written by Python 2)."""
    with path.open("wb") as f:
        pickle.dump({b"batch_label": b"made up", b"labels": labels, b"data": data, b"filenames": [b"x.png"]}, f,
                    protocol=2)
    return path


def test_cifar_batch_becomes_gray_pixels_in_row_order(tmp_path: Path) -> None:
    data = np.zeros((3, 3072), dtype=np.uint8)
    data[0, 5] = 255  # image 0: red at row 0, column 5 (the red plane comes first)
    data[0, 1024 + 32] = 255  # green at row 1, column 0
    data[1] = 255  # image 1: white
    data[2] = 128  # image 2: mid gray
    records = read_cifar10_batch(write_batch(tmp_path / "data_batch_1", data, [0, 9, 3]))
    assert [label for _, label in records] == ["0", "9", "3"]
    gray = [np.frombuffer(pixels, dtype=np.uint8) for pixels, _ in records]
    assert all(g.shape == (1024,) for g in gray)
    # tf.image.rgb_to_grayscale then its uint8 cast: floor(weights . rgb / 255 * 255.5)
    assert gray[0][5] == 76 and gray[0][32] == 149 and gray[0].sum() == 76 + 149
    assert (gray[1] == 255).all() and (gray[2] == 128).all()


def test_cifar_folder_reads_the_five_training_batches_in_order(tmp_path: Path) -> None:
    for i in range(1, 6):
        write_batch(tmp_path / f"data_batch_{i}", np.full((1, 3072), i, dtype=np.uint8), [i])
    assert [label for _, label in read_cifar10(tmp_path)] == ["1", "2", "3", "4", "5"]
    (tmp_path / "data_batch_4").unlink()
    with pytest.raises(DataError, match="needs data_batch_4"):
        read_cifar10(tmp_path)


def test_cifar_reader_refuses_anything_but_arrays(tmp_path: Path) -> None:
    evil = tmp_path / "evil"
    evil.write_bytes(pickle.dumps(collections.OrderedDict(data=1), protocol=2))
    with pytest.raises(DataError, match="refused to load collections.OrderedDict"):
        read_cifar10_batch(evil)
    wrong = write_batch(tmp_path / "wrong", np.zeros((2, 100), dtype=np.uint8), [0, 1])
    with pytest.raises(DataError, match=r"shape \(N, 3072\), got uint8 \(2, 100\)"):
        read_cifar10_batch(wrong)
    labels = write_batch(tmp_path / "labels", np.zeros((2, 3072), dtype=np.uint8), [0, 10])
    with pytest.raises(DataError, match=r"labels:2: label must be an integer 0-9, got 10"):
        read_cifar10_batch(labels)


def test_matching_tsv_reads_lra_columns_and_labels(tmp_path: Path) -> None:
    path = tmp_path / "pairs.train.tsv"
    path.write_text("1\tP01\tP02\tfirst paper text\tsecond paper\n0.0\tP03\tP04\tthird\tfourth one\n",
                    encoding="utf-8")
    first, second = read_matching_tsv(path)
    assert (first.text1, first.text2, first.label, first.id1, first.id2) == ("first paper text", "second paper",
                                                                             "1", "P01", "P02")
    assert second.label == "0" and second.line == 2


@pytest.mark.parametrize(("line", "message"), [
    ("1\tA\tB\tonly four", "pairs.tsv:1: expected 5 tab-separated columns"),
    ("2\tA\tB\tx\ty", "pairs.tsv:1: label must be 0 or 1"),
    ("1\tA\tB\t\ty", "pairs.tsv:1: empty text1"),
])
def test_matching_tsv_errors_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "pairs.tsv"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_matching_tsv(path)


def test_pair_dataset_pads_each_side_and_cuts_long_texts() -> None:
    tok = ByteTokenizer()
    pairs = [("abc", "de", "1"), ("a", "fghijk", "0")]
    dataset = PairClassificationDataset(pairs, tok, ["0", "1"], max_len=5, add_bos=True)
    assert dataset.length_report.truncated == 1  # "fghijk" + <bos> is 7 > 5
    batch = dataset.collate([dataset[0], dataset[1]])
    assert batch["input_ids_1"].shape == (2, 4) and batch["input_ids_2"].shape == (2, 5)
    assert batch["input_ids_1"][:, 0].tolist() == [tok.bos_id, tok.bos_id]
    assert batch["padding_mask_1"].tolist() == [[False] * 4, [False, False, True, True]]
    assert tok.decode(batch["input_ids_2"][1]) == "fghi"
    assert torch.equal(batch["labels"], torch.tensor([1, 0]))
