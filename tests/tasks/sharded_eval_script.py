"""Run by tests/two_process_script.py (the suite's one torchrun launch, 2 processes, gloo on CPU), or alone under
``torchrun --standalone --nproc_per_node=2``: ``ROOT``.

Each process evaluates its part of the same validation samples (a character LM, a seq2seq task decoded with beam
search) and gathers; each writes what it got to ROOT/rank{r}.json. The test computes the one-process numbers
with :func:`evaluate_all` itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from synthformer.tasks import load_run_config
from synthformer.tasks.run.data import build_task_model, prepare_data
from synthformer.tasks.run.evaluation import evaluate_split, make_eval_fn
from synthformer.train.sharding import EvalShard

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))  # `tests` importable when run as a script

from tests.tasks.helpers import lm_config, seq2seq_config, write_yaml  # noqa: E402


def _run(root: Path, name: str, config: dict[str, Any]) -> Any:
    run = load_run_config(write_yaml(root / f"{name}.yaml", config))
    data = prepare_data(run, splits=("train", "valid"))
    model, _ = build_task_model(run, data)
    return run, data, model.eval()


def evaluate_all(root: Path, shard: EvalShard) -> dict[str, Any]:
    """The periodic LM evaluation (3 batches of 3 blocks: 4 blocks on rank 0, 5 on rank 1) and a seq2seq
    evaluation with teacher-forced loss and 7 examples decoded (3 and 4), metrics and hypotheses."""
    torch.set_num_threads(1)
    lm = lm_config(root, eval_steps=3)
    lm["eval"] = {"batch_size": 3}
    run, data, model = _run(root, "lm", lm)
    lm_metrics = make_eval_fn(run, data)(model, shard=shard)
    s2s = seq2seq_config()
    s2s["eval"] = {**s2s["eval"], "max_examples": 7, "batch_size": 2, "metrics": ["loss", "bleu", "chrf",
                                                                                   "exact_match"]}
    run, data, model = _run(root, "s2s", s2s)
    s2s_metrics, hypotheses = evaluate_split(run, data, model, "valid", beam=2, max_examples=7, shard=shard)
    return {"lm": lm_metrics, "seq2seq": s2s_metrics, "hypotheses": hypotheses}


def main(root: Path) -> None:
    own_group = not torch.distributed.is_initialized()  # run alone; in the suite's launch the trainers made one
    if own_group:
        torch.distributed.init_process_group("gloo")
    shard = EvalShard.current()
    assert shard.world_size == 2, shard
    # every process builds the same data and model (seeded); a folder each, so they do not write one file at once
    own = root / f"work{shard.rank}"
    own.mkdir()
    result = evaluate_all(own, shard)
    (root / f"rank{shard.rank}.json").write_text(json.dumps(result))
    if own_group:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
