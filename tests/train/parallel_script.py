"""Run by two_process_script.py (test_distributed.py's jobs ``ddp`` and ``fsdp``) under torchrun, 2 processes, gloo
on CPU: ``main(MODE, ROOT)``, or ``MODE ROOT`` as a script.

Trains :func:`toymodels.tiny_seq2seq` for 6 steps with ``train.distributed=MODE`` into ROOT/two, then resumes
ROOT/one_to_two (a single-process run the test rewound to its step-3 checkpoint) to step 6. Writes for the test:
each rank's whole weights at the end of ROOT/two (``two-rank{r}``) and right after the resume
(``resumed-rank{r}``), gathered from the shards under FSDP, and how the model was sharded (``shards.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from toymodels import CountingPairs, open_run, tiny_seq2seq

from synthformer.train import TrainConfig, Trainer, seed_everything

#: Per process: 2 processes x 4 examples = the single-process run's 8 (test_distributed.py).
BATCH = 4


def probe(model: torch.nn.Module) -> dict[str, float]:
    """An eval function that runs the model on the main process only, by ``forward`` and by the decoding methods
    (which FSDP does not hook): evaluation must need no collectives (under FSDP the weights are unsharded for it),
    or this would wait for the other process forever."""
    if torch.distributed.get_rank() != 0:
        return {}
    batch = {k: v[None] for k, v in CountingPairs(1, seed=2)[0].items()}
    memory, mask = model.encode(batch["src_ids"], None)
    logits, _ = model.decode_step(batch["tgt_ids"][:, :1], model.init_cache(memory, mask))
    return {"probe": model(**batch)["loss"].item(), "probe_token": logits.argmax().item()}


def make(run_dir: Path, mode: str, resume: bool = False) -> Trainer:
    seed_everything(0)
    cfg = TrainConfig(steps=6, batch_size=BATCH, grad_accum=2, lr=1e-2, schedule="constant", save_every=1, log_every=1,
                      eval_every=3, max_checkpoints=0, distributed=mode)
    # 9 eval examples: 5 on rank 0 (2 batches), 4 on rank 1 (1 batch)
    return Trainer(tiny_seq2seq(), CountingPairs(64), cfg, open_run(run_dir, resume=resume),
                   eval_data=CountingPairs(9, seed=1), eval_fn=probe, progress=False)


def whole_weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    """This process's view of the whole model: its replica (DDP), or the shards gathered on every process."""
    if trainer.sharded:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        state = get_model_state_dict(trainer.model, options=StateDictOptions(full_state_dict=True))
    else:
        state = trainer.accelerator.unwrap_model(trainer.model).state_dict()
    return {k: v.detach().clone().contiguous() for k, v in state.items()}  # clones: ties untied for save_file


def main(mode: str, root: Path) -> None:
    torch.set_num_threads(1)
    two = make(root / "two", mode)
    assert two.world_size == 2 and two.sharded == (mode == "fsdp"), (two.world_size, two.sharded)
    if two.sharded:
        from torch.distributed.fsdp import FSDPModule

        units = [type(m).__name__ for m in two.model.modules() if isinstance(m, FSDPModule)]
        sizes = {n: [p.to_local().numel(), p.numel()] for n, p in two.model.named_parameters()}
        if two.is_main:
            (root / "shards.json").write_text(json.dumps({"units": units, "sizes": sizes}))
    two.train()
    save_file(whole_weights(two), str(root / f"two-rank{two.rank}.safetensors"))
    two.close()

    resumed = make(root / "one_to_two", mode, resume=True)
    assert resumed.step == 3, resumed.step
    save_file(whole_weights(resumed), str(root / f"resumed-rank{resumed.rank}.safetensors"))
    resumed.train()
    resumed.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
