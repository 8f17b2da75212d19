"""The pieces behind "left padding gives what right padding gives" (the whole matrix is
``tests/reliability/test_padding_sides.py``): moving a row's real tokens to its front and back, training on
left-padded batches, and the language model's positions from the padding mask when none are given."""

from __future__ import annotations

import torch

from synthformer.models import positions_from_padding
from synthformer.models.positions import put_columns, real_first, take_columns

from .helpers import tiny_model


def test_real_first_moves_the_real_tokens_to_the_front_in_their_order() -> None:
    pad = torch.tensor([[True, True, False, False], [False, True, False, True], [False, False, True, True]])
    order = real_first(pad)
    ids = torch.tensor([[0, 0, 5, 6], [7, 0, 8, 0], [9, 10, 0, 0]])
    assert take_columns(ids, order).tolist() == [[5, 6, 0, 0], [7, 8, 0, 0], [9, 10, 0, 0]]
    assert not take_columns(pad, order)[:, :2].any()
    x = torch.randn(3, 4, 5)
    assert torch.equal(put_columns(take_columns(x, order), order), x)  # put_columns undoes take_columns
    # nothing to move: right padding, no padding, no mask, and meta tensors (no values to sort)
    assert real_first(pad[2:]) is None and real_first(torch.zeros(2, 3, dtype=torch.bool)) is None
    assert real_first(None) is None and real_first(pad.to("meta")) is None


def test_training_on_left_padded_sources_is_training_on_right_padded_ones() -> None:
    model = tiny_model("seq2seq")
    src = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]])
    left = torch.tensor([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])
    tgt, labels = torch.tensor([[2, 5, 6], [2, 8, 9]]), torch.tensor([[5, 6, 3], [8, 9, 3]])
    grads = []
    for ids in (src, left):
        model.zero_grad()
        loss = model(ids, tgt, ids == 0, labels=labels)["loss"]
        loss.backward()
        grads.append((loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (loss_right, g_right), (loss_left, g_left) = grads
    torch.testing.assert_close(loss_left, loss_right)
    for a, b in zip(g_left, g_right, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


@torch.no_grad()
def test_the_language_model_takes_its_positions_from_the_padding_mask() -> None:
    model = tiny_model("lm", decoder_kind="R").eval()
    ids = torch.tensor([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])
    pad = ids == 0
    given = model(ids, padding_mask=pad, positions=positions_from_padding(pad))["logits"]
    torch.testing.assert_close(model(ids, padding_mask=pad)["logits"][~pad], given[~pad])
    logits, cache = model.decode_step(ids, model.init_cache(2), padding_mask=pad)  # first step: no positions
    torch.testing.assert_close(logits[~pad], given[~pad], atol=1e-5, rtol=1e-5)
    alone = model(ids[:1, 2:])["logits"][0]  # (3, V): the first row unpadded
    torch.testing.assert_close(given[0, 2:], alone, atol=1e-5, rtol=1e-5)
