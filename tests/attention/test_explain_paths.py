"""The execution paths explain themselves: every built-in rule is the reason it gives (a path serves a call exactly
where its reason is None), the choice is the one the rules made before they gave reasons, ``explain_call`` names
the chosen path and a reason for every other one, a path registered by a user shows up with its reason, the debug
log says it once per layer and call shape, and ``synthformer bench --explain CONFIG`` prints it for a model."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from synthformer.attention import (
    build_mixer,
    explain_call,
    get_path,
    observe_paths,
    register_path,
    registered_kinds,
    registered_paths,
    select_path,
    unregister_path,
)
from synthformer.attention.fast import fused, triton_kernels
from synthformer.attention.fast.feature_form import materializes
from synthformer.attention.fast.rules import is_materialized, is_shared
from synthformer.attention.fast.settings import current, fast_path_settings

ROOT = Path(__file__).resolve().parents[2]
KINDS = [*registered_kinds(), "R+V", "D+V", "FR+V"]


def _old_rules(call) -> dict[str, bool]:
    """The built-in rules as they were written before they gave reasons (plain booleans): the oracle of the
    choice."""
    materialized = is_materialized(call)
    training = call.layer.causal and call.key_padding_mask is None and torch.is_grad_enabled()
    return {
        "triton": materialized and call.state is None and call.drop == 0.0 and triton_kernels.available(call.v.device),
        "fused": materialized and call.state is None and fused.should_fuse(
            torch.is_grad_enabled(), call.keys, call.layer.causal and call.start == 0),
        "blocks": materialized,
        "causal_shared": training and call.keys >= current().causal_shared_min_len and is_shared(call),
        "shared_alignment": is_shared(call),
        "sdpa": call.synth.has_features and not is_shared(call) and (
            call.position_bias is not None or not materializes(call)),
        "reference": True,
    }


def _calls(kind: str, causal: bool, length: int, padded: bool, decode: bool) -> list[tuple]:
    """(call, chosen path, explanation, old rules) of every dispatched call of one layer: a training step and an
    evaluation forward (and, for a causal layer, decoding a prompt then one position)."""
    torch.manual_seed(0)
    layer = build_mixer(kind, 16, 2, length, causal=causal)
    x = torch.randn(2, length, 16)
    mask = torch.zeros(2, length, dtype=torch.bool)
    mask[1, -3:] = True
    seen: list[tuple] = []

    def observe(call, path) -> None:  # at dispatch time: the rules read the grad mode and the call's state
        for name in registered_paths():  # a path serves a call exactly where its reason is None
            assert get_path(name).applies(call) == (get_path(name).reason(call) is None), (kind, name)
        assert select_path(call).name == path.name
        seen.append((call, path.name, explain_call(call), _old_rules(call)))

    stop = observe_paths(observe)
    try:
        layer.train()
        layer(x, key_padding_mask=mask if padded else None).sum().backward()
        layer.eval()
        with torch.no_grad():
            layer(x, key_padding_mask=mask if padded else None)
            if decode:
                cache = layer.init_cache(2)
                _, cache = layer(x[:, : length - 1], cache=cache)
                layer(x[:, length - 1:], cache=cache)
    finally:
        stop()
    return seen


@pytest.mark.parametrize("kind", KINDS)
def test_each_rule_is_its_reason_and_the_choice_is_the_old_rules(kind: str) -> None:
    seen = []
    for causal in (True, False):
        for length, padded in ((8, False), (8, True), (300, False)):
            seen += _calls(kind, causal, length, padded, decode=causal and length == 8 and not padded)
    # one long FR-style call through SDPA, below the usual threshold
    with fast_path_settings(fr_sdpa_min_len=4, fuse_min_keys=4, fuse_min_keys_causal=4):
        seen += _calls(kind, True, 8, False, decode=False)
    assert seen
    for call, chosen, choices, old in seen:
        expected = "reference" if not call.fast else next(n for n in registered_paths() if old[n])
        assert chosen == expected, (kind, chosen, expected)
        assert [c.path for c in choices] == registered_paths()
        assert [c.path for c in choices if c.chosen] == [chosen]
        assert all(c.reason for c in choices if not c.chosen), choices  # every other path says why not


def test_the_reasons_name_what_decided() -> None:
    (call, chosen, choices, _), *_ = _calls("D", True, 8, False, decode=False)
    assert chosen == "blocks"
    why = {c.path: c.reason for c in choices}
    assert f"fuse_min_keys_causal={current().fuse_min_keys_causal}" in why["fused"] and "8 keys" in why["fused"]
    assert "cpu" in why["triton"] and "D's features take the materialized blocks at 8 keys" in why["sdpa"]
    assert "D is input-dependent" in why["shared_alignment"] and "'blocks' is asked first" in why["reference"]
    (_, chosen, choices, _), *_ = _calls("R", True, 8, False, decode=False)
    assert chosen == "shared_alignment"
    why = {c.path: c.reason for c in choices}
    assert "R has no feature form" in why["sdpa"] and why["blocks"].startswith("a shared call")
    steps = [s for s in _calls("V", True, 8, False, decode=True) if s[0].state is not None and s[0].queries == 1]
    assert steps and steps[0][1] == "reference"
    assert all("decode_plain_max_new" in c.reason for c in steps[0][2] if not c.chosen)


def test_a_path_registered_by_a_user_shows_its_reason() -> None:
    def why_not(call):
        return None if call.keys % 2 == 0 else f"{call.keys} keys is odd (this path wants an even number)"

    register_path("even_only", why_not=why_not, priority=90)(lambda call: get_path("reference").run(call))
    register_path("never", applies=lambda call: False, priority=85)(lambda call: None)
    try:
        odd = _calls("D", False, 7, False, decode=False)
        even = _calls("D", False, 8, False, decode=False)
    finally:
        unregister_path("even_only")
        unregister_path("never")
    why = {c.path: c.reason for c in odd[0][2]}
    assert odd[0][1] == "blocks" and why["even_only"] == "7 keys is odd (this path wants an even number)"
    assert "registered without reasons" in why["never"]
    assert even[0][1] == "even_only"
    assert "'even_only' is asked first" in {c.path: c.reason for c in even[0][2]}["blocks"]
    with pytest.raises(ValueError, match="give its rule"):
        register_path("nothing", priority=1)
    with pytest.raises(ValueError, match="priority must be an integer"):
        register_path("nothing", applies=lambda call: True)


def test_the_debug_log_says_it_once_per_layer_and_shape(caplog) -> None:
    layer = build_mixer("D", 16, 2, 8, causal=True)
    x = torch.randn(2, 8, 16)
    with caplog.at_level(logging.DEBUG, logger="synthformer.attention.paths"):
        for _ in range(3):
            layer(x)
        layer(x[:, :5])
    lines = [r.getMessage() for r in caplog.records if r.name == "synthformer.attention.paths"]
    assert len(lines) == 2, lines
    assert lines[0].startswith("attention path ") and "T=8, S=8" in lines[0] and "T=5, S=5" in lines[1]
    assert all(f"{name}:" in lines[0] for name in registered_paths() if name not in lines[0].split("'")[1])


def test_bench_explain_prints_every_layer_and_every_other_paths_reason(capsys) -> None:
    from synthformer.bench import main

    config = ROOT / "configs" / "mixing_mqar.yaml"
    assert main(["--explain", str(config), "model.decoder_kind=R+V", "model.d_model=32", "model.d_ff=64"]) == 0
    out = capsys.readouterr().out.splitlines()
    heads = [line for line in out if not line.startswith("    ")]
    # two decoder layers, training and evaluation
    assert [h.split(" [")[0] for h in heads] == ["decoder.layers.0.self_attn", "decoder.layers.1.self_attn"] * 2
    assert all(h.endswith("-> blocks") for h in heads) and "[training: R+V, causal, T=64, S=64" in heads[0]
    first = out[out.index(heads[0]) + 1: out.index(heads[1])]
    assert sorted(line.split(" (")[0].strip() for line in first) == sorted(
        n for n in registered_paths() if n != "blocks")
    with pytest.raises(SystemExit):
        main(["--explain", str(ROOT / "configs" / "no_such.yaml")])
