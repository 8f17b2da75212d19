"""The dual encoder (LRA Retrieval's model) and the classifier's MLP head (LRA's classifier_head)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from synthformer.models import ClassifierConfig, DualEncoderConfig, build_model

from .helpers import BATCHES, PAD, TINY, tiny_model


def test_logits_are_the_head_of_u_v_their_product_and_difference() -> None:
    model = tiny_model("dual_encoder", head="mlp").eval()
    batch = BATCHES["dual_encoder"](torch.Generator().manual_seed(0), batch=3)
    logits = model(**batch)["logits"]
    u = model.encode(batch["input_ids_1"], batch["padding_mask_1"])  # one encoder for both towers
    v = model.encode(batch["input_ids_2"], batch["padding_mask_2"])
    assert torch.allclose(logits, model.head(torch.cat([u, v, u * v, u - v], dim=-1)), atol=1e-6)
    # LRA's dual head: 4d -> d_ff -> d_ff // 2 -> classes, ReLU between
    widths = [(m.in_features, m.out_features) for m in model.head if isinstance(m, nn.Linear)]
    assert widths == [(4 * TINY["d_model"], TINY["d_ff"]), (TINY["d_ff"], TINY["d_ff"] // 2), (TINY["d_ff"] // 2, 2)]
    concat = tiny_model("dual_encoder", interaction="concat", head="linear")
    assert (concat.head.in_features, concat.head.out_features) == (2 * TINY["d_model"], 2)


def test_padding_changes_nothing_and_the_towers_are_shared() -> None:
    model = tiny_model("dual_encoder").eval()
    ids = torch.tensor([[5, 6, 7, 8]])
    padded = torch.tensor([[5, 6, 7, 8, PAD, PAD, PAD]])
    other = torch.tensor([[9, 10, 11]])
    plain = model(ids, other)["logits"]
    assert torch.allclose(plain, model(padded, other)["logits"], atol=1e-5)
    assert sum(p.numel() for p in model.encoder.parameters()) == sum(
        p.numel() for p in tiny_model("classifier").encoder.parameters())  # one encoder, not two


def test_the_loss_reaches_the_tokens_of_both_texts() -> None:
    model = tiny_model("dual_encoder")
    first, second = torch.tensor([[5, 6]]), torch.tensor([[9, 10, 11]])
    model(first, second, labels=torch.tensor([1]))["loss"].backward()
    grad = model.embed.token.weight.grad.abs().sum(dim=-1)  # (vocab,)
    assert (grad[[5, 6, 9, 10, 11]] > 0).all() and grad[[7, 8, 12]].sum() == 0


def test_mlp_head_of_the_classifier_and_the_old_parameter_names() -> None:
    mlp = tiny_model("classifier", head="mlp", head_dim=24)
    assert [(m.in_features, m.out_features) for m in mlp.head if isinstance(m, nn.Linear)] == [
        (TINY["d_model"], 24), (24, 2)]
    batch = BATCHES["classifier"](torch.Generator().manual_seed(1), batch=4)
    assert mlp(**batch)["logits"].shape == (4, 2)
    # the default head keeps the parameter names of classifiers saved before `head` existed
    assert {"head.weight", "head.bias"} <= set(tiny_model("classifier").state_dict())


@pytest.mark.parametrize(("cls", "field", "value", "message"), [
    (ClassifierConfig, "head", "deep", "head"),
    (ClassifierConfig, "head_dim", 0, "head_dim"),
    (DualEncoderConfig, "interaction", "cross", "interaction"),
])
def test_bad_head_settings_name_the_field(cls, field: str, value, message: str) -> None:
    with pytest.raises(ValueError, match=f"{message}.*{value}"):
        build_model(cls(**TINY, num_classes=2, **{field: value}))
