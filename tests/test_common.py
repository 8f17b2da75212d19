"""The lowest layer, ``synthformer.common``: the shared constant and the nested-tensor walkers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

import synthformer.data
import synthformer.models
from synthformer.common import IGNORE_INDEX, iter_tensors, map_tensors, sum_tensors, tensor_nbytes


@dataclass
class _Inner:
    keys: Tensor
    length: int = 0


@dataclass
class _Outer:
    inner: _Inner
    extra: dict = field(default_factory=dict)
    doubled: int = field(init=False)

    def __post_init__(self) -> None:
        self.doubled = 2 * self.inner.length


class _Pair(NamedTuple):
    first: Tensor
    second: Any


class _SelfHandling:
    """Not a container: handles ``reorder`` and ``nbytes`` itself (like a mixer's decoding cache)."""

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor

    def reorder(self, index: Tensor) -> _SelfHandling:
        return _SelfHandling(self.tensor.index_select(0, index))

    def nbytes(self) -> int:
        return 1000


def _nested() -> dict[str, Any]:
    return {
        "outer": _Outer(_Inner(torch.arange(6.0).reshape(3, 2), length=3), extra={"v": torch.ones(3, 1)}),
        "items": [torch.zeros(3), None, "name", 7],
        "pair": _Pair(torch.full((3,), 2.0), (torch.ones(3, 4, dtype=torch.int64),)),
    }


def test_ignore_index_is_the_cross_entropy_default_and_the_one_every_package_exports():
    assert IGNORE_INDEX == -100
    logits = torch.tensor([[2.0, 0.0], [0.0, 5.0]])
    assert torch.equal(F.cross_entropy(logits, torch.tensor([0, IGNORE_INDEX])), F.cross_entropy(logits[:1],
                                                                                                torch.tensor([0])))
    assert synthformer.models.IGNORE_INDEX is IGNORE_INDEX
    assert synthformer.data.IGNORE_INDEX is IGNORE_INDEX


def test_map_tensors_transforms_every_tensor_and_keeps_the_rest():
    obj = _nested()
    out = map_tensors(obj, lambda t: t * 10)
    assert torch.equal(out["outer"].inner.keys, torch.arange(6.0).reshape(3, 2) * 10)
    assert out["outer"].inner.length == 3
    assert torch.equal(out["outer"].extra["v"], torch.full((3, 1), 10.0))
    assert out["items"][1:] == [None, "name", 7]
    assert torch.equal(out["items"][0], torch.zeros(3))
    assert isinstance(out["pair"], _Pair)  # named tuples are rebuilt field by field
    assert torch.equal(out["pair"].first, torch.full((3,), 20.0))
    assert isinstance(out["pair"].second, tuple)
    assert torch.equal(out["pair"].second[0], torch.full((3, 4), 10))


def test_map_tensors_builds_new_containers_and_leaves_the_input_unchanged():
    obj = _nested()
    keys = obj["outer"].inner.keys
    out = map_tensors(obj, lambda t: t + 1)
    assert out is not obj and out["outer"] is not obj["outer"] and out["items"] is not obj["items"]
    assert obj["outer"].inner.keys is keys
    assert torch.equal(keys, torch.arange(6.0).reshape(3, 2))
    assert type(out["items"]) is list and type(out["pair"].second) is tuple


def test_map_tensors_rebuilds_dataclasses_from_init_fields_so_post_init_runs_again():
    outer = _Outer(_Inner(torch.zeros(2), length=4))
    out = map_tensors(outer, lambda t: t)
    assert isinstance(out, _Outer) and out is not outer
    assert out.doubled == 8


def test_map_tensors_lets_an_object_with_the_named_method_handle_itself():
    index = torch.tensor([2, 0])
    handled = _SelfHandling(torch.arange(3))
    out = map_tensors({"cache": handled, "t": torch.arange(3)}, lambda t: t.index_select(0, index),
                      method="reorder", method_args=(index,))
    assert isinstance(out["cache"], _SelfHandling)
    assert out["cache"].tensor.tolist() == [2, 0]
    assert out["t"].tolist() == [2, 0]
    # without ``method`` the object is an opaque leaf, kept as it is
    assert map_tensors(handled, lambda t: t + 1) is handled


def test_method_takes_precedence_over_walking_a_dataclass():
    @dataclass
    class Cache:
        window: Tensor

        def nbytes(self) -> int:
            return 1

    assert sum_tensors([Cache(torch.zeros(100))], tensor_nbytes, method="nbytes") == 1
    assert sum_tensors([Cache(torch.zeros(100))], tensor_nbytes) == 400


def test_a_class_is_a_leaf_even_when_it_has_the_method():
    assert map_tensors(_SelfHandling, lambda t: t, method="reorder", method_args=(torch.tensor([0]),)) is _SelfHandling
    assert sum_tensors(_SelfHandling, tensor_nbytes, method="nbytes") == 0


def test_iter_tensors_yields_every_tensor_depth_first_in_container_order():
    obj = _nested()
    found = list(iter_tensors(obj))
    expected = [
        obj["outer"].inner.keys,
        obj["outer"].extra["v"],
        obj["items"][0],
        obj["pair"].first,
        obj["pair"].second[0],
    ]
    assert len(found) == len(expected)
    assert all(a is b for a, b in zip(found, expected, strict=True))


@pytest.mark.parametrize("leaf", [None, 3, "text", 1.5, _SelfHandling(torch.zeros(2))])
def test_leaves_hold_no_tensors(leaf):
    assert list(iter_tensors(leaf)) == []
    assert sum_tensors(leaf, tensor_nbytes) == 0
    assert list(iter_tensors({"a": [leaf, (leaf,)]})) == []


def test_sum_tensors_adds_one_number_per_tensor():
    obj = _nested()
    expected = sum(t.numel() * t.element_size() for t in iter_tensors(obj))
    assert expected == 6 * 4 + 3 * 4 + 3 * 4 + 3 * 4 + 12 * 8
    assert sum_tensors(obj, tensor_nbytes) == expected
    assert sum_tensors(obj, lambda t: t.numel()) == 6 + 3 + 3 + 3 + 12
    assert sum_tensors({"c": _SelfHandling(torch.zeros(5)), "t": torch.zeros(2)}, tensor_nbytes,
                       method="nbytes") == 1000 + 8


def test_tensor_nbytes_counts_the_elements_of_a_view_only():
    base = torch.zeros(10, 4, dtype=torch.float16)
    assert tensor_nbytes(base) == 80
    assert tensor_nbytes(base[:2]) == 16
