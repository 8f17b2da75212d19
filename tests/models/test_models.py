"""The task models: batch contract, losses, training, padding, norms, tied embeddings."""

from __future__ import annotations

import math

import pytest
import torch

from synthformer.models import (
    ConvReluFFN,
    Seq2SeqTransformer,
    TransformerClassifier,
    TransformerLM,
    build_model,
    num_parameters,
    pool,
    token_cross_entropy,
)

from .helpers import BATCHES, PAD, tiny_config, tiny_model, train

ARCHS = ("lm", "seq2seq", "classifier")


@pytest.mark.parametrize("arch", ARCHS)
def test_batch_contract_shapes_and_loss(arch):
    model = tiny_model(arch)
    expected_class = {"lm": TransformerLM, "seq2seq": Seq2SeqTransformer, "classifier": TransformerClassifier}[arch]
    assert type(model) is expected_class
    batch = BATCHES[arch](torch.Generator().manual_seed(0), batch=3)
    out = model(**batch)
    logits, loss = out["logits"], out["loss"]
    assert loss.dim() == 0 and torch.isfinite(loss)
    if arch == "classifier":
        assert logits.shape == (3, 2)
        assert torch.allclose(loss, torch.nn.functional.cross_entropy(logits, batch["labels"]))
    else:
        tokens = batch["input_ids"] if arch == "lm" else batch["tgt_ids"]
        assert logits.shape == (*tokens.shape, 16)
        labels = batch["labels"]
        counted = labels != -100
        assert (~counted).any() or arch == "lm"
        # mean over the counted targets only
        nll = -logits.log_softmax(-1).gather(-1, labels.clamp(min=0)[..., None])[..., 0]
        assert torch.allclose(loss, nll[counted].mean(), atol=1e-6)
    without_labels = model(**{k: v for k, v in batch.items() if k != "labels"})
    assert "loss" not in without_labels and torch.equal(without_labels["logits"], logits)


def test_label_smoothing_matches_a_hand_computation():
    # logits of 2 positions over 3 classes; the second target is ignored
    logits = torch.tensor([[[1.0, 2.0, 0.5], [0.3, 0.1, 0.2]]])
    labels = torch.tensor([[1, -100]])
    eps = 0.1
    z = math.log(math.exp(1.0) + math.exp(2.0) + math.exp(0.5))
    logp = [1.0 - z, 2.0 - z, 0.5 - z]
    # target distribution: 1 - eps + eps/3 on class 1, eps/3 elsewhere
    expected = -((1 - eps + eps / 3) * logp[1] + eps / 3 * (logp[0] + logp[2]))
    assert token_cross_entropy(logits, labels, eps).item() == pytest.approx(expected, abs=1e-6)
    assert token_cross_entropy(logits, labels, 0.0).item() == pytest.approx(-logp[1], abs=1e-6)
    # no counted target: 0, not NaN, and still differentiable
    empty = token_cross_entropy(logits.requires_grad_(), torch.full((1, 2), -100), eps)
    assert empty.item() == 0.0
    empty.backward()


def test_models_use_the_configured_label_smoothing():
    model = tiny_model("seq2seq", label_smoothing=0.1)
    batch = BATCHES["seq2seq"](torch.Generator().manual_seed(1), batch=4)
    out = model(**batch)
    assert out["loss"].item() == pytest.approx(token_cross_entropy(out["logits"], batch["labels"], 0.1).item())
    assert out["loss"].item() != pytest.approx(token_cross_entropy(out["logits"], batch["labels"], 0.0).item())


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kind", ["V", "R", "D", "R+V"])
def test_training_reduces_the_loss(arch, kind):
    stack = "decoder_kind" if arch == "lm" else "encoder_kind"
    extra = {"decoder_kind": kind} if arch == "seq2seq" else {}
    model = tiny_model(arch, **{stack: kind}, **extra)
    # the classifier's signal (one token among ten) needs a larger step to show within 30 steps
    losses = train(model, arch, steps=30, lr=1e-2 if arch == "classifier" else 3e-3)
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert last < 0.75 * first, f"{arch}/{kind}: loss {first:.3f} -> {last:.3f}"


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_pre_and_post_norm_both_train(norm):
    model = tiny_model("lm", norm=norm, decoder_kind="R+V")
    layer = model.decoder.layers[0]
    assert layer.pre_norm == (norm == "pre")
    assert isinstance(model.decoder.final_norm, torch.nn.LayerNorm if norm == "pre" else torch.nn.Identity)
    losses = train(model, "lm", steps=30)
    assert losses[-1] < 0.75 * losses[0]


def test_pre_and_post_norm_compute_different_functions():
    pre, post = tiny_model("lm", seed=3, norm="pre"), tiny_model("lm", seed=3, norm="post")
    post.load_state_dict(pre.state_dict(), strict=False)  # same weights (post has no final LayerNorm)
    ids = torch.randint(4, 16, (2, 9))
    assert not torch.allclose(pre(input_ids=ids)["logits"], post(input_ids=ids)["logits"])


@pytest.mark.parametrize("pooling", ["mean", "max", "cls", "last"])
@pytest.mark.parametrize(("kind", "ffn"), [("V", "relu"), ("R", "conv_relu"), ("D+V", "conv_relu"), ("FR", "relu")])
def test_classifier_ignores_padding_content(pooling, kind, ffn):
    model = tiny_model("classifier", pooling=pooling, encoder_kind=kind, ffn=ffn, positions="learned").eval()
    g = torch.Generator().manual_seed(0)
    batch = BATCHES["classifier"](g, batch=6)
    pad = batch["padding_mask"]
    assert pad.any()
    noisy = batch["input_ids"].masked_scatter(pad, torch.randint(4, 16, (int(pad.sum()),), generator=g))
    assert not torch.equal(noisy, batch["input_ids"])
    a = model(**batch)["logits"]
    b = model(input_ids=noisy, padding_mask=pad)["logits"]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    # and each sequence gives the same logits alone, without any padding
    n = int((~pad[0]).sum())
    alone = model(input_ids=batch["input_ids"][:1, :n], padding_mask=pad[:1, :n])["logits"]
    torch.testing.assert_close(alone, a[:1], atol=1e-5, rtol=0)


def test_classifier_derives_the_padding_mask_from_pad_id():
    model = tiny_model("classifier").eval()
    batch = BATCHES["classifier"](torch.Generator().manual_seed(2), batch=4)
    assert torch.equal(batch["input_ids"] == PAD, batch["padding_mask"])
    explicit = model(**batch)["logits"]
    derived = model(input_ids=batch["input_ids"], labels=batch["labels"])["logits"]
    torch.testing.assert_close(explicit, derived)


def test_pooling_by_hand():
    h = torch.tensor([[[1.0, -2.0], [3.0, 4.0], [100.0, 100.0]]])  # (1, 3, 2), last position padded
    mask = torch.tensor([[False, False, True]])
    assert torch.equal(pool(h, mask, "mean"), torch.tensor([[2.0, 1.0]]))
    assert torch.equal(pool(h, mask, "max"), torch.tensor([[3.0, 4.0]]))
    assert torch.equal(pool(h, mask, "cls"), torch.tensor([[1.0, -2.0]]))
    assert torch.equal(pool(h, mask, "last"), torch.tensor([[3.0, 4.0]]))
    assert torch.equal(pool(h, None, "last"), torch.tensor([[100.0, 100.0]]))
    # two rows, the second padded from position 1: each row's own last real position
    two = torch.cat([h, h + 1])  # (2, 3, 2)
    assert torch.equal(pool(two, torch.tensor([[False, False, True], [False, True, True]]), "last"),
                       torch.tensor([[3.0, 4.0], [2.0, -1.0]]))
    all_pad = torch.ones(1, 3, dtype=torch.bool)
    for how in ("mean", "max", "last"):
        assert torch.equal(pool(h, all_pad, how), torch.zeros(1, 2)), how
    with pytest.raises(ValueError, match="'last', got 'first'"):
        pool(h, mask, "first")


def test_seq2seq_ignores_source_padding_content():
    model = tiny_model("seq2seq", encoder_kind="R+V", ffn="conv_relu").eval()
    g = torch.Generator().manual_seed(4)
    batch = BATCHES["seq2seq"](g, batch=5)
    pad = batch["src_padding_mask"]
    noisy = batch["src_ids"].masked_scatter(pad, torch.randint(4, 16, (int(pad.sum()),), generator=g))
    a = model(**batch)["logits"]
    b = model(**{**batch, "src_ids": noisy})["logits"]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["V", "R", "D", "R+V", "Conv"])
@pytest.mark.parametrize("ffn", ["relu", "conv_relu"])
def test_lm_is_causal(kind, ffn):
    model = tiny_model("lm", decoder_kind=kind, ffn=ffn).eval()
    ids = torch.randint(4, 16, (2, 12))
    changed = ids.clone()
    changed[:, 7:] = torch.randint(4, 16, (2, 5))
    a, b = model(input_ids=ids)["logits"], model(input_ids=changed)["logits"]
    torch.testing.assert_close(a[:, :7], b[:, :7], atol=1e-5, rtol=0)
    assert not torch.allclose(a[:, 7:], b[:, 7:])


@pytest.mark.parametrize(("causal", "reads"), [(True, {3, 4, 5}), (False, {4, 5, 6})])
def test_conv_relu_ffn_window(causal, reads):
    """Output 5 of a width-3 conv FFN reads inputs 3..5 in a decoder, 4..6 in an encoder."""
    torch.manual_seed(0)
    ffn = ConvReluFFN(d_model=8, d_ff=16, kernel_size=3, causal=causal)
    x = torch.randn(1, 10, 8, requires_grad=True)
    ffn(x)[0, 5].sum().backward()
    assert {i for i in range(10) if x.grad[0, i].abs().sum() > 0} == reads


def test_tied_embeddings_share_storage_and_count_once():
    tied, untied = tiny_model("lm", tie_embeddings=True), tiny_model("lm", tie_embeddings=False)
    assert tied.lm_head.weight is tied.embed.token.weight
    assert tied.lm_head.weight.data_ptr() == tied.embed.token.weight.data_ptr()
    assert untied.lm_head.weight.data_ptr() != untied.embed.token.weight.data_ptr()
    assert num_parameters(untied) - num_parameters(tied) == 16 * 32
    # a gradient step on the output projection moves the input embedding
    before = tied.embed.token.weight.detach().clone()
    train(tied, "lm", steps=1)
    assert not torch.equal(before, tied.embed.token.weight)
    assert tied.lm_head.weight.data_ptr() == tied.embed.token.weight.data_ptr()


def test_seq2seq_embedding_sharing():
    shared = tiny_model("seq2seq")  # tgt_vocab_size None: one vocabulary
    assert shared.src_embed is shared.tgt_embed
    assert shared.lm_head.weight.data_ptr() == shared.src_embed.token.weight.data_ptr()
    separate = tiny_model("seq2seq", tgt_vocab_size=12, tie_embeddings=False)
    assert separate.src_embed is not separate.tgt_embed
    assert separate.lm_head.weight.shape == (12, 32)
    assert separate.lm_head.weight.data_ptr() != separate.tgt_embed.token.weight.data_ptr()
    logits = separate(src_ids=torch.randint(4, 16, (2, 5)), tgt_ids=torch.randint(4, 12, (2, 4)))["logits"]
    assert logits.shape == (2, 4, 12)


def test_learned_positions_and_state_dict_round_trip():
    model = tiny_model("lm", positions="learned", decoder_kind="R")
    keys = model.state_dict().keys()
    assert "embed.position.weight" in keys
    assert any(k.endswith("synth.R") for k in keys)  # the random alignment is a saved parameter
    clone = build_model(model.config)
    clone.load_state_dict(model.state_dict())
    ids = torch.randint(4, 16, (2, 6))
    model.eval(), clone.eval()
    assert torch.equal(model(input_ids=ids)["logits"], clone(input_ids=ids)["logits"])
    sinusoidal = tiny_model("lm")
    assert not any("table" in k for k in sinusoidal.state_dict())  # fixed positions are not saved


def test_too_long_input_raises():
    model = tiny_model("lm")
    with pytest.raises(ValueError, match="exceeds max_len 24"):
        model(input_ids=torch.zeros(1, 25, dtype=torch.long))


def test_model_rejects_a_config_of_another_arch():
    with pytest.raises(ValueError, match=r"TransformerLM needs an LMConfig \(arch='lm'\), got arch='classifier'"):
        TransformerLM(tiny_config("classifier"))


def test_synthetic_cross_attention_trains():
    for cross in ("R", "D"):
        model = tiny_model("seq2seq", cross_kind=cross)
        assert model.decoder.layers[0].cross_attn.kind == cross
        losses = train(model, "seq2seq", steps=30)
        assert sum(losses[-3:]) < 0.8 * sum(losses[:3])


def test_embeddings_reset_buffers_recomputes_the_sinusoidal_table() -> None:
    from synthformer.models.layers import Embeddings, sinusoidal_table

    emb = Embeddings(vocab_size=10, d_model=8, max_len=16, positions="sinusoidal", dropout=0.0)
    emb.table.zero_()  # as after transformers' from_pretrained, which builds buffers without data
    emb.reset_buffers()
    assert torch.equal(emb.table, sinusoidal_table(16, 8))
    learned = Embeddings(vocab_size=10, d_model=8, max_len=16, positions="learned", dropout=0.0)
    before = learned.position.weight.clone()
    learned.reset_buffers()  # nothing to recompute: learned positions are parameters, saved with the weights
    assert torch.equal(learned.position.weight, before)
