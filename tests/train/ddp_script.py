"""Run by two_process_script.py (test_distributed.py's job ``agree``) under torchrun, 2 processes, gloo on CPU.

Trains the toy LM for 10 steps (ROOT/reference), and separately for 6 steps then resumed to 10 (ROOT/run), and
writes each rank's final weights to ROOT/{reference,run}-rank{r}.safetensors for the test to compare.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_model
from toymodels import CountingDataset, ToyLM, open_run

from synthformer.train import TrainConfig, Trainer, seed_everything


def make(run_dir: Path, steps: int, init_seed: int = 0, resume: bool = False) -> Trainer:
    seed_everything(init_seed)
    cfg = TrainConfig(steps=steps, batch_size=4, lr=1e-2, grad_accum=2, save_every=3, log_every=2, eval_every=3)
    return Trainer(ToyLM(dropout=0.2), CountingDataset(64), cfg, open_run(run_dir, resume=resume),
                   eval_data=CountingDataset(10, seed=1), progress=False)


def main(root: Path) -> None:
    torch.set_num_threads(1)
    # Uninterrupted reference: 10 steps.
    reference = make(root / "reference", 10)
    assert reference.world_size == 2, reference.world_size
    reference.train()
    # The same run stopped after 6 steps and resumed in a new Trainer with a differently initialised model.
    make(root / "run", 6).train()
    trainer = make(root / "run", 10, init_seed=99, resume=True)
    assert trainer.step == 6
    result = trainer.train()
    for name, t in (("reference", reference), ("run", trainer)):
        save_model(t.accelerator.unwrap_model(t.model), str(root / f"{name}-rank{t.rank}.safetensors"))
    if trainer.is_main:
        (root / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
