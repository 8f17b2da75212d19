"""The token-mixer contract for the baselines: registration, parameter counts, option and input validation.

The checks shared with every attention kind (one loop over the whole registry) are in
``test_registry_contract.py``.
"""

from __future__ import annotations

import re

import pytest
import torch

from synthformer.attention import build_mixer, get_mixer, is_whole_mixer, registered_kinds, registered_mixers
from synthformer.mixers import DynamicConv, LightConv, Linformer

from .conftest import ALL_CLASSES, CONV_CLASSES


def test_the_baselines_register_themselves_by_name_and_alias():
    assert registered_mixers() == ["LightConv", "DynamicConv", "Linformer"]
    assert not set(registered_mixers()) & set(registered_kinds())
    for name, cls in (("LightConv", LightConv), ("DynamicConv", DynamicConv), ("Linformer", Linformer)):
        assert get_mixer(name) is cls and get_mixer(name.upper()) is cls and is_whole_mixer(name.lower())
        assert type(build_mixer(f" {name.lower()} ", 8, 2, 16)) is cls
    assert get_mixer("light_conv") is LightConv and get_mixer("Dynamic_Conv") is DynamicConv


@pytest.mark.parametrize(
    ("cls", "options"),
    [
        (LightConv, {}),
        (LightConv, {"kernel_size": 7, "weight_dropout": 0.1}),
        (DynamicConv, {}),
        (DynamicConv, {"kernel_size": 15, "weight_softmax": False}),
        (Linformer, {}),
        (Linformer, {"k": 8, "share_kv": True}),
        (Linformer, {"k": 8, "share_heads": False}),
        (Linformer, {"k": 8, "share_kv": True, "share_heads": False}),
    ],
)
def test_num_params(cls, options):
    d_model, n_heads, max_len = 48, 4, 40
    m = cls(d_model, n_heads, max_len, **options)
    counted = sum(p.numel() for p in m.parameters() if p.requires_grad)
    assert cls.num_params(d_model, n_heads, max_len, **options) == counted


def test_num_params_values():
    # Written out for d=512, H=8, K=3, max_len=512, k=32 so a wrong formula cannot agree with a wrong module.
    assert LightConv.num_params(512, 8, 512) == 3 * 512 * 512 + 3 * 512 + 8 * 3
    assert DynamicConv.num_params(512, 8, 512) == 3 * 512 * 512 + 3 * 512 + 513 * 24
    assert Linformer.num_params(512, 8, 512) == 4 * (512 * 512 + 512) + 2 * 32 * 512


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_unknown_option_names_it_and_lists_valid(cls):
    with pytest.raises(TypeError) as err:
        cls(8, 2, 16, kernal_size=3)
    msg = str(err.value)
    assert "'kernal_size'" in msg
    valid = (
        ["kernel_size", "weight_dropout", "weight_softmax", "impl"]
        if cls in CONV_CLASSES
        else ["k", "share_kv", "share_heads"]
    )
    assert all(name in msg for name in valid)
    with pytest.raises(TypeError, match="kernal_size"):
        cls.num_params(8, 2, 16, kernal_size=3)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_too_long_input_names_both_numbers(cls):
    m = cls(8, 2, 6)
    with pytest.raises(ValueError, match=r"\b7\b.*max_len=6"):
        m(torch.randn(2, 7, 8))
    assert m(torch.randn(2, 6, 8)).shape == (2, 6, 8)


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_decoding_past_max_len(cls):
    m = cls(8, 2, 6, causal=True)
    _, cache = m(torch.randn(1, 5, 8), cache=m.init_cache(1))
    with pytest.raises(ValueError, match=r"7 \(5 cached \+ 2 new\) exceeds max_len=6"):
        m(torch.randn(1, 2, 8), cache=cache)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("shape", [(2, 5, 7), (5, 8), (1, 2, 5, 8), (2, 0, 8)], ids=["width", "2d", "4d", "empty"])
def test_bad_input_shape(cls, shape):
    m = cls(8, 2, 16)
    with pytest.raises(ValueError, match=re.escape("(B, L, d_model=8)") + "|at least one position"):
        m(torch.randn(shape))


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_bad_mask(cls):
    m = cls(8, 2, 16)
    x = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=re.escape("(2, 5)")):
        m(x, key_padding_mask=torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool"):  # a fault of the mask's type, as in the attention shell
        m(x, key_padding_mask=torch.zeros(2, 5))
    with pytest.raises(TypeError, match="bool"):
        m(x, key_padding_mask=[[False] * 5] * 2)


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_decoding_mask_must_cover_all_positions(cls):
    m = cls(8, 2, 16, causal=True)
    _, cache = m(torch.randn(2, 3, 8), cache=m.init_cache(2))
    with pytest.raises(ValueError, match=re.escape("(2, 5)")):
        m(torch.randn(2, 2, 8), key_padding_mask=torch.zeros(2, 2, dtype=torch.bool), cache=cache)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        ((8, 3, 16), "divisible"),
        ((0, 1, 16), "d_model"),
        ((8, 2, 0), "max_len"),
        ((8, True, 16), "n_heads"),
    ],
)
def test_bad_core_arguments(cls, args, pattern):
    with pytest.raises(ValueError, match=pattern):
        cls(*args)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_bad_dropout(cls):
    with pytest.raises(ValueError, match="dropout"):
        cls(8, 2, 16, dropout=1.0)


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"kernel_size": 0}, "kernel_size"),
        ({"kernel_size": 2.5}, "kernel_size"),
        ({"weight_dropout": -0.1}, "weight_dropout"),
        ({"weight_softmax": "yes"}, "weight_softmax"),
        ({"impl": "fft"}, "impl"),
    ],
)
def test_bad_conv_options(cls, options, pattern):
    with pytest.raises(ValueError, match=pattern):
        cls(8, 2, 16, **options)


@pytest.mark.parametrize(("options", "pattern"), [({"k": 0}, "k must"), ({"share_kv": 1}, "share_kv")])
def test_bad_linformer_options(options, pattern):
    with pytest.raises(ValueError, match=pattern):
        Linformer(8, 2, 16, **options)


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_non_causal_conv_has_no_cache(cls):
    m = cls(8, 2, 16)
    with pytest.raises(ValueError, match="causal"):
        m.init_cache(2)
    cache = cls(8, 2, 16, causal=True).init_cache(2)
    with pytest.raises(ValueError, match="non-causal"):
        m(torch.randn(2, 3, 8), cache=cache)


@pytest.mark.parametrize("cls", CONV_CLASSES, ids=lambda c: c.__name__)
def test_cache_of_another_shape_is_refused(cls):
    m = cls(8, 2, 16, causal=True, kernel_size=3)
    other = cls(8, 2, 16, causal=True, kernel_size=5).init_cache(2)
    with pytest.raises(ValueError, match=r"\(B, K - 1, d_model\)"):
        m(torch.randn(2, 1, 8), cache=other)
