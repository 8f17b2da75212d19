"""``synthformer bench --explain CONFIG [KEY=VALUE ...]``: which execution path each attention layer of a run's
model takes on this machine, and why every other registered path does not.

The path depends on the kind, the call's shapes, training or not, the fast-path settings, the calibration file
and the device, so it differs between machines. :func:`explain_run` builds the run's model on the CPU with the
config's weights initialization (nothing is read from the corpus: the vocabulary is what ``--dry-run`` would
plan), runs one training forward and backward pass and one evaluation forward on a random batch of one example at
the config's lengths, and records every attention call through :func:`synthformer.attention.observe_paths`; for
each layer, phase and call shape, the chosen path and each other path's reason
(:func:`synthformer.attention.explain_call`). A path a user registered shows up with its reason like the built-in
ones.

    synthformer bench --explain configs/mixing_mqar.yaml model.decoder_kind=R+V
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from synthformer.attention import PathChoice, describe_call, explain_call, observe_paths
from synthformer.common import ConfigError

__all__ = ["FLAG", "LayerPaths", "explain_main", "explain_model", "explain_run", "format_explanation"]

FLAG = "--explain"
LOWEST = -(2**31)  # the reference path's priority, below any other


@dataclass(frozen=True)
class LayerPaths:
    """The path choice of one attention layer for one kind of call: ``layer`` (the module's name in the model),
    ``phase`` ("training" or "evaluation"), ``call`` (:func:`~synthformer.attention.describe_call`) and
    ``choices`` (every registered path, in the order they are asked)."""

    layer: str
    phase: str
    call: str
    choices: tuple[PathChoice, ...]

    @property
    def chosen(self) -> str:
        return next(c.path for c in self.choices if c.chosen)


def explain_model(model: nn.Module, batch: dict[str, torch.Tensor]) -> list[LayerPaths]:
    """The path choices of ``model``'s attention layers on ``batch``: a training step (forward and backward) and
    an evaluation forward without gradients; one entry per layer, phase and call shape, in call order. The model
    is left in the mode it was in."""
    names = {id(m): name for name, m in model.named_modules()}
    found: dict[tuple, LayerPaths] = {}
    phase = "training"

    def observe(call: Any, path: Any) -> None:
        described = describe_call(call)
        key = (id(call.layer), phase, described)
        if key not in found:
            found[key] = LayerPaths(names.get(id(call.layer), type(call.layer).__name__), phase, described,
                                    tuple(explain_call(call)))

    was_training = model.training
    stop = observe_paths(observe)
    try:
        model.train()
        out = model(**batch)
        loss = out["loss"] if isinstance(out, dict) else getattr(out, "loss", None)
        if loss is not None:
            loss.backward()
        phase = "evaluation"
        model.eval()
        with torch.no_grad():
            model(**batch)
    finally:
        stop()
        model.train(was_training)
    return list(found.values())


def explain_run(config: str, overrides: Sequence[str] = ()) -> list[LayerPaths]:
    """:func:`explain_model` for the model a run config trains, at its lengths (one example; see the module
    docstring).

    Raises:
        ConfigError: the config cannot be read or its model built (named key).
    """
    from synthformer.tasks import example_lengths, load_run_config, resolve_model_config

    from .measure import random_batch
    from .plan_data import Problems, plan_data, plan_inputs

    run = load_run_config(config, list(overrides))
    problems = Problems()
    _, vocab = plan_data(run, processes=1, inputs=plan_inputs(run, None, problems), problems=problems)
    from synthformer.models import build_model

    torch.manual_seed(run.train.seed)
    model = build_model(resolve_model_config(run, vocab.size, vocab.classes, vocab.special_ids))
    lengths = example_lengths(run)
    batch = random_batch(model.config, 1, lengths["input"], seed=run.train.seed)
    if "target" in lengths and "tgt_ids" in batch:  # an encoder-decoder: the decoder at its own length
        batch["tgt_ids"] = batch["tgt_ids"][:, :1].expand(1, lengths["target"]).clone()
        batch["labels"] = batch["tgt_ids"].clone()
    return explain_model(model, batch)


def format_explanation(found: Sequence[LayerPaths]) -> list[str]:
    """The report's lines: per layer and call, the chosen path, then every other path and its reason."""
    lines = []
    for entry in found:
        lines.append(f"{entry.layer} [{entry.phase}: {entry.call}] -> {entry.chosen}")
        lines += [f"    {c.path} (priority {'lowest' if c.priority <= LOWEST else c.priority}): {c.reason}"
                  for c in entry.choices if not c.chosen]
    return lines


def explain_main(argv: Sequence[str], prog: str = "synthformer bench --explain") -> int:
    """``synthformer bench --explain CONFIG [KEY=VALUE ...]``: print :func:`format_explanation` of the run."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="a run config (YAML), as `synthformer train` takes it")
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE overrides of the config")
    args = parser.parse_args(list(argv))
    try:
        found = explain_run(args.config, args.overrides)
    except (ConfigError, FileNotFoundError) as err:
        parser.error(str(err))
    if not found:
        sys.stdout.write("no attention call went through the execution paths (the model has no Synthesizer "
                         "attention layer)\n")
        return 0
    sys.stdout.write("\n".join(format_explanation(found)) + "\n")
    return 0
