"""Capturing attention: the re-initialisation equals the run's initial weights, each part's weights are a
softmax over keys, and a mixture is the softmax of its alpha-weighted part logits (eq. 8-9, as mixture.py forms it)."""

from __future__ import annotations

import pytest
import torch

from synthformer.analysis import attention_sites, capture_inputs, initial_model, part_weights, valid_positions
from synthformer.attention import SynthesizerAttention, masked_softmax
from synthformer.attention.masking import disallowed
from synthformer.tasks import load_run

from ..tasks.helpers import lm_config
from .runs import train_tiny

#: the tests of tests/analysis that read the session's tiny trained runs (tests/analysis/conftest.py) in one
#: xdist worker, so each run is trained once per suite instead of once per worker that uses it
pytestmark = pytest.mark.xdist_group("analysis-runs")


@pytest.mark.parametrize("which", ["lm_run", "seq2seq_run"])
def test_reinitialisation_gives_the_weights_the_run_started_from(which, request) -> None:
    run = request.getfixturevalue(which)
    loaded = load_run(run.path)
    state = torch.get_rng_state()
    model, note = initial_model(loaded)
    assert "exactly the weights the run started from" in note
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random stream is left alone
    rebuilt = model.state_dict()
    assert rebuilt.keys() == run.initial.keys()
    for name, tensor in run.initial.items():
        assert torch.equal(rebuilt[name], tensor), name
    # and training changed them (the trained weights are not the initial ones)
    trained = loaded.model.state_dict()
    assert any(not torch.equal(trained[k], v) for k, v in run.initial.items())


def _mixture(kind: str, causal: bool) -> SynthesizerAttention:
    torch.manual_seed(0)
    attn = SynthesizerAttention(d_model=16, n_heads=2, max_len=12, kind=kind, causal=causal).eval()
    with torch.no_grad():
        attn.synth.alpha_logits.copy_(torch.tensor([[1.5, -0.5], [-1.0, 0.3]]))  # unequal alpha per head
    return attn


@pytest.mark.parametrize(("kind", "causal"), [("R+V", True), ("D+V", False)])
def test_part_weights_are_softmaxes_and_the_mixture_mixes_logits(kind, causal) -> None:
    attn = _mixture(kind, causal)
    x = torch.randn(3, 10, 16)
    pad = torch.zeros(3, 10, dtype=torch.bool)
    pad[1, 7:] = True  # sample 1 has 7 real tokens
    got = part_weights(attn, x, pad)
    assert list(got) == [*kind.split("+"), kind]
    rows = ~pad[:, None, :, None].expand(3, 2, 10, 1).squeeze(-1)  # (B, H, L) real query rows
    for name, w in got.items():
        assert w.shape == (3, 2, 10, 10), name
        sums = w.sum(-1)  # (B, H, L)
        assert torch.allclose(sums[rows], torch.ones(()), atol=1e-5), name
        assert (w[1][..., 7:] == 0).all(), name  # padded keys get nothing
        if causal:
            assert (w.triu(1) == 0).all(), name
    # paper eq. (8): softmax(sum_n alpha_n S_n(X)), i.e. the parts' logits are mixed, not their probabilities
    alpha = attn.synth.alpha()  # (H, N)
    mask = disallowed(10, 10, 0, causal, pad, x.device)
    parts = list(attn.synth.parts)
    logits = sum(alpha[None, :, n, None, None] * part.logits(x, 0, None, pad) for n, part in enumerate(parts))
    assert torch.allclose(got[kind], masked_softmax(logits, mask), atol=1e-5)
    mixed_probs = sum(alpha[None, :, n, None, None] * got[p] for n, p in enumerate(kind.split("+")))
    assert not torch.allclose(got[kind], mixed_probs, atol=1e-3)
    # each part alone is its own logits' softmax
    for part in parts:
        alone = masked_softmax(part.logits(x, 0, None, pad), mask)  # (B|1, H, L, L)
        assert torch.allclose(got[part.name], alone.expand(3, -1, -1, -1))


def test_plain_kind_gives_one_entry_equal_to_the_layer_api() -> None:
    torch.manual_seed(1)
    attn = SynthesizerAttention(16, 2, 12, kind="R", causal=True).eval()
    x = torch.randn(2, 9, 16)
    got = part_weights(attn, x)
    assert list(got) == ["R"]
    assert torch.equal(got["R"], attn.attention_weights(x))


def test_sites_and_captured_inputs_of_an_encoder_decoder(seq2seq_run) -> None:
    loaded = load_run(seq2seq_run.path)
    sites = attention_sites(loaded.model)
    assert [(s.stack, s.layer, s.kind) for s in sites] == [("encoder", 1, "D"), ("decoder", 1, "R")]
    src = torch.tensor([[3, 4, 5, 0], [3, 4, 0, 0]])  # pad id 0: the second source is shorter
    tgt = torch.tensor([[1, 5, 4, 3, 2]] * 2)
    labels = tgt.clone()
    labels[1, 3:] = -100
    batch = {"src_ids": src, "tgt_ids": tgt, "labels": labels}
    captured = capture_inputs(loaded.model, sites, batch)
    enc, dec = captured["encoder_layer1"], captured["decoder_layer1"]
    assert enc.x.shape == (2, 4, 16) and dec.x.shape == (2, 5, 16)
    assert torch.equal(valid_positions(batch, sites[0], enc), src != loaded.model.config.pad_id)
    assert torch.equal(valid_positions(batch, sites[1], dec), labels != -100)  # the decoder gets no mask
    # the captured input reproduces the layer's output: it is what the layer was given
    y = sites[0].module(enc.x, key_padding_mask=enc.key_padding_mask)
    assert y.shape == enc.x.shape


def test_a_finetuned_run_starts_from_its_pretrained_weights(lm_run, tmp_path) -> None:
    cfg = lm_config(tmp_path, steps=2, eval_every=0)
    cfg["init_from"] = str(lm_run.path)
    finetuned = train_tiny(tmp_path / "finetuned", cfg)
    model, note = initial_model(load_run(finetuned.path))
    assert f"the pretrained weights of {lm_run.path} (step 6)" in note
    rebuilt = model.state_dict()
    for name, tensor in finetuned.initial.items():
        assert torch.equal(rebuilt[name], tensor), name
    # the pretrained run gone: the random weights they replaced, and the note says so
    moved = tmp_path / "moved"
    cfg2 = lm_config(tmp_path, steps=1, eval_every=0)
    train_tiny(moved, cfg2)
    cfg2["init_from"] = str(moved)
    other = train_tiny(tmp_path / "other", cfg2)
    for path in (moved / "checkpoints").iterdir():
        path.rename(tmp_path / f"gone_{path.name}")
    _, note = initial_model(load_run(other.path))
    assert "no longer there" in note
