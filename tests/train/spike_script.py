"""Run by two_process_script.py (test_distributed.py's job ``spike``) under torchrun, 2 processes, gloo on CPU.

A loss spike on one process only: process 1's loss of step 3 is a million times its own, process 0's is normal;
with ``train.nonfinite: skip`` both must skip that step's update (the decision is agreed on, not taken by each
process alone: otherwise the replicas would part, or one would wait in a collective the other never enters). Writes
each rank's final weights and its view of the run to ROOT/rank{r}.safetensors and ROOT/rank{r}.json.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
from safetensors.torch import save_model
from toymodels import CountingDataset, ToyLM, open_run

from synthformer.train import TrainConfig, Trainer, seed_everything

SPIKE_STEP = 3


class SpikeOnRank(ToyLM):
    """:class:`ToyLM` whose training loss at forward call ``at`` is a million times its own (``at`` None: never)."""

    def __init__(self, at: int | None) -> None:
        super().__init__(dropout=0.2)
        self.at = at

    def forward(self, input_ids, labels=None):
        out = super().forward(input_ids, labels)
        if self.training and self.calls == self.at:
            out["loss"] = out["loss"] * 1e6
        return out


def main(root: Path) -> None:
    torch.set_num_threads(1)
    seed_everything(0)
    config = TrainConfig(steps=6, batch_size=4, lr=1e-2, save_every=3, log_every=1, nonfinite="skip")
    rank = int(os.environ["RANK"])  # torchrun's: the model must know it before the trainer wraps it
    trainer = Trainer(SpikeOnRank(SPIKE_STEP if rank == 1 else None), CountingDataset(64), config,
                      open_run(root / "run"), progress=False)
    trainer.train()
    trainer.close()
    save_model(trainer.accelerator.unwrap_model(trainer.model), str(root / f"rank{rank}.safetensors"))
    (root / f"rank{rank}.json").write_text(json.dumps({"skipped": trainer.policy.skipped_steps,
                                                       "reference": trainer.policy.losses.state()}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
