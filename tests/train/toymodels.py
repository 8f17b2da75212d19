"""Tiny models and datasets obeying the batch contract (docs/CONTRACTS.md), for the training-engine tests."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset


class ToyLM(nn.Module):
    """Embedding -> Linear -> ReLU -> Dropout -> LayerNorm -> output tied to the embedding.

    The dropout makes training depend on the RNG (so resume must restore it); the tie makes safetensors'
    shared-tensor handling matter. ``crash_at`` raises ``crash_with`` at that training forward call (1-based).
    """

    def __init__(self, vocab: int = 16, d: int = 32, dropout: float = 0.1) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, d)
        self.drop = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab)
        self.out.weight = self.emb.weight  # tied
        self.calls = 0
        self.crash_at: int | None = None
        self.crash_with: BaseException | type[BaseException] = RuntimeError("simulated crash")
        self.on_call = None  # optional hook(call_number)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        if self.training:
            self.calls += 1
            if self.on_call is not None:
                self.on_call(self.calls)
            if self.crash_at is not None and self.calls == self.crash_at:
                raise self.crash_with
        h = self.norm(self.drop(torch.relu(self.proj(self.emb(input_ids)))))
        logits = self.out(h)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)
        return out


class ToyClassifier(nn.Module):
    """Mean-pooled embeddings -> linear; labels (B,) as in the classifier contract."""

    def __init__(self, vocab: int = 16, n_classes: int = 2, d: int = 16) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.head = nn.Linear(d, n_classes)

    def forward(self, input_ids, padding_mask=None, labels=None):
        logits = self.head(self.emb(input_ids).mean(dim=1))
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits, labels)
        return out


class CountingDataset(Dataset):
    """Sequences that count up modulo ``vocab`` from a random start: the next token is the current one + 1.

    A model that looks only at the current token can learn it perfectly, so the loss must fall fast.
    The first label of every example is -100 (ignored), to exercise target counting.
    """

    def __init__(self, n: int = 64, length: int = 8, vocab: int = 16, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        starts = torch.randint(0, vocab, (n, 1), generator=g)
        self.seqs = (starts + torch.arange(length + 1)) % vocab

    def __len__(self) -> int:
        return len(self.seqs)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        seq = self.seqs[i]
        labels = seq[1:].clone()
        labels[0] = -100
        return {"input_ids": seq[:-1], "labels": labels}


class ParityDataset(Dataset):
    """Classification: label = whether token 0 appears in the sequence."""

    def __init__(self, n: int = 32, length: int = 6, vocab: int = 16, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, vocab, (n, length), generator=g)
        self.y = (self.x == 0).any(dim=1).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.x[i], "labels": self.y[i]}


def state_equal(a: nn.Module, b: nn.Module) -> bool:
    """True if every tensor of the two state dicts is bit-identical."""
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


class CountingPairs(CountingDataset):
    """:class:`CountingDataset` for an encoder-decoder: the source is the sequence, the decoder reads it too."""

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        example = super().__getitem__(i)
        return {"src_ids": example["input_ids"], "tgt_ids": example["input_ids"], "labels": example["labels"]}


def tiny_seq2seq(vocab: int = 16) -> nn.Module:
    """A real synthformer encoder-decoder, as small as it gets: one encoder and one decoder block of width 16,
    ``R+V`` self-attention, dot-product cross-attention, shared tied embeddings, no dropout (so runs on different
    numbers of processes can be compared step by step)."""
    from synthformer.models import Seq2SeqConfig, build_model

    return build_model(Seq2SeqConfig(vocab_size=vocab, d_model=16, n_heads=2, n_layers=1, n_decoder_layers=1,
                                     d_ff=32, max_len=16, dropout=0.0, encoder_kind="R+V", decoder_kind="R+V"))


#: The runs the tests of this process opened, by path (see :func:`open_run`).
_OPEN_RUNS: dict[str, object] = {}


def open_run(run_dir, *, resume: bool = False, overwrite: bool = False, training_only: bool = True):
    """``Run.open`` for a test's Trainer on its own (``training_only``, as a Trainer-only run), closing first the
    Run this process opened earlier for the same directory: a test that "kills" a trainer and resumes it in the same
    process stands for two processes, and the kernel releases a killed process's lock."""
    import os

    from synthformer.train import Run

    key = os.path.realpath(run_dir)
    earlier = _OPEN_RUNS.pop(key, None)
    if earlier is not None:
        earlier.close()
    run = Run.open(run_dir, resume=resume, overwrite=overwrite, training_only=training_only)
    _OPEN_RUNS[key] = run
    return run
