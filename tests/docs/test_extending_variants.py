"""The claims of docs/extending.md, "A model variant": its code block is the whole of a new variant; once
registered, configs take it (and its feed-forward network), the encoder-decoder builds it and trains a step, its
config reads back; an unknown variant, or a setting the variant does not take, is an error naming the registered
variants or what the variant needs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from synthformer.models import ModelConfig, Seq2SeqConfig, build_model, list_variants, unregister_variant

from ..models.helpers import assert_cached_decoding_equals_forward

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
SMALL = dict(vocab_size=20, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=8, dropout=0.0, pad_id=0,
             bos_id=1, eos_id=2)


def _section_block() -> str:
    """The one python block of the "A model variant" section."""
    section = DOC.read_text(encoding="utf-8").split("## A model variant\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


@pytest.fixture
def pre_gelu() -> Iterator[dict]:
    """The documented variant, registered for one test, and the names its block defines."""
    namespace: dict = {}
    exec(compile(_section_block(), str(DOC), "exec"), namespace)
    try:
        yield namespace
    finally:
        unregister_variant("pre_gelu")


def test_the_documented_variant_builds_an_encoder_decoder_that_trains_a_step(pre_gelu):
    assert "pre_gelu" in list_variants()
    torch.manual_seed(0)
    config = Seq2SeqConfig(**SMALL, variant="pre_gelu", ffn="gelu")
    model = build_model(config)
    assert all(isinstance(layer.ffn, pre_gelu["GeluFFN"]) for layer in [*model.encoder.layers,
                                                                         *model.decoder.layers])
    assert isinstance(model.encoder.final_norm, torch.nn.LayerNorm)  # pre-norm: the stack ends with the norm
    ids = torch.randint(3, 20, (2, 6))
    before = model.encoder.layers[0].ffn.fc1.weight.detach().clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(src_ids=ids, tgt_ids=ids, labels=ids)["loss"]
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss) and not torch.equal(before, model.encoder.layers[0].ffn.fc1.weight)
    # the decoding cache works with the variant's FFN (position-wise, no state): steps equal the full forward
    assert_cached_decoding_equals_forward(model.eval(), ids, ids)


def test_the_documented_variants_config_reads_back(pre_gelu):
    config = Seq2SeqConfig(**SMALL, variant="pre_gelu", ffn="gelu")
    saved = config.to_dict()
    assert saved["variant"] == "pre_gelu"
    assert ModelConfig.from_dict(saved) == config


def test_an_unknown_variant_names_itself_and_the_registered_ones(pre_gelu):
    with pytest.raises(ValueError, match=r"variant must be one of 'transformer', 't5', 'pre_gelu' .*got 'gelu2'"):
        Seq2SeqConfig(**SMALL, variant="gelu2")


@pytest.mark.parametrize("changes,message", [
    ({"norm": "post", "ffn": "gelu"}, "norm='post' is not the pre-norm GELU Transformer's: variant='pre_gelu' "
                                      "needs norm 'pre'"),
    ({"ffn": "relu"}, "ffn='relu' is not the pre-norm GELU Transformer's: variant='pre_gelu' needs ffn 'gelu' "
                      "(variant 'transformer' or 't5' has it)"),
])
def test_a_setting_the_variant_does_not_take_says_what_it_needs(pre_gelu, changes, message):
    with pytest.raises(ValueError) as err:
        Seq2SeqConfig(**SMALL, variant="pre_gelu", **changes)
    assert str(err.value) == message


def test_without_the_variant_its_ffn_is_not_a_setting():
    """The ffn names a config accepts are those of the registered variants: nothing is left behind."""
    assert "pre_gelu" not in list_variants()
    with pytest.raises(ValueError, match="ffn must be one of 'relu', 'conv_relu', 'gated-gelu', got 'gelu'"):
        Seq2SeqConfig(**SMALL, ffn="gelu")
