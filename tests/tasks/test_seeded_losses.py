"""Seeded short trainings of shipped configs give the same losses from version to version: a refactoring of the
task pipeline, the registries or the model builders changes no number.

Why pinned numbers and not a check that holds for a reason: a trained loss has no independent oracle (no formula
or reference library gives it), and what is tested is exactly that nothing changed: the seeding, the data order,
the initialisation and the parameter order (the RNG draws in order) of every architecture. The invariants that do
hold for a reason are tested elsewhere (resume gives bit-identical weights: tests/train; each mixer against the
paper's equations: tests/attention). Re-measure these only for an intended change of numerics, and say so in the
commit.

The expected numbers were measured on commit 6b771a6 (before task types, per-architecture model configs and
cross-attention through the registry) with the same overrides, by running ``synthformer train`` on each case and
reading ``metrics.jsonl``: the training loss logged at steps 10, 20, 30 and the final validation loss. They cover
the three task types, a generator of each kind and the three cross-attention kinds of the old ``CrossAttention``
(V, R, D), whose initialisation and parameter order the new cross-attention must keep.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synthformer.tasks import load_run_config, train_run

ROOT = Path(__file__).resolve().parents[2]
COMMON = ["train.steps=30", "train.log_every=10", "train.eval_every=0", "train.save_every=0", "train.eval_steps=4"]
SEQ2SEQ = ["task.generator_options.num_train=2000", "eval.train_decode_examples=0"]

# name -> (config, overrides, training losses at steps 10/20/30, final validation loss), from commit 6b771a6
CASES: dict[str, tuple[str, list[str], list[float], float]] = {
    "seq2seq_cross_V": ("algorithmic_reverse.yaml", ["model.cross_kind=V", *SEQ2SEQ],
                        [5.039022445678711, 3.804775619506836, 2.804434394836426], 2.551461030679471),
    "seq2seq_cross_R": ("algorithmic_reverse.yaml", ["model.cross_kind=R", *SEQ2SEQ],
                        [5.252957534790039, 4.018221282958985, 2.9145570755004884], 2.5946343590709953),
    "seq2seq_cross_D": ("algorithmic_reverse.yaml", ["model.cross_kind=D", *SEQ2SEQ],
                        [5.295843887329101, 3.980438995361328, 2.847965621948242], 2.5599829830340486),
    "classification_listops": ("listops.yaml", ["task.generator_options.num_train=2000"],
                               [2.3841617584228514, 2.336526870727539, 2.307426643371582], 2.3152390718460083),
    "lm_compare_RV": ("compare_pystdlib.yaml", ["model.decoder_kind=R+V",
                                                "task.generator_options.max_train_chars=200000",
                                                "task.generator_options.max_eval_chars=20000"],
                      [4.2793701171875, 3.129106140136719, 2.6853706359863283], 2.6247918605804443),
}


@pytest.mark.parametrize("name", list(CASES))
def test_seeded_losses_are_those_of_the_previous_version(name: str, tmp_path: Path) -> None:
    config, overrides, losses, eval_loss = CASES[name]
    run = load_run_config(ROOT / "configs" / config, [*overrides, *COMMON])
    result = train_run(run, tmp_path / "run")
    lines = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    got = [line["loss"] for line in lines if "loss" in line]
    # float32 training on one machine: the same to rounding, not only "close"
    assert got == pytest.approx(losses, rel=1e-5, abs=1e-6)
    assert result.metrics["eval_loss"] == pytest.approx(eval_loss, rel=1e-5, abs=1e-6)
