"""lm-evaluation-harness (its ``hf`` backend, through its command line, offline, its built-in tasks not indexed) on
an exported tiny LM and local task files: its log-likelihoods equal synthformer's own scoring of the same texts
(bits per byte for the rolling ones), and its greedy generations at batch size 4 (left-padded prompts) equal
``synthformer generate``'s."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("lm_eval", reason="lm-evaluation-harness is in the hf extra: pip install 'synthformer[hf]'")

import torch  # noqa: E402
import yaml  # noqa: E402

from synthformer.cli.main import main  # noqa: E402
from synthformer.data import LMBlockDataset  # noqa: E402
from synthformer.tasks import load_run  # noqa: E402
from synthformer.tasks.metrics.likelihood import token_nll  # noqa: E402
from synthformer.tasks.metrics.units import bits_per_byte  # noqa: E402

from .clients import fresh_env, train_and_export  # noqa: E402

PAIRS = [("def add(a, b):\n    return", " a + b"), ("class Po", "int:"), ("def sub(a, b):", "\n"),
         ("    return a", " - b")]
TEXTS = ["def add(a, b):", "    return a - b", "class Point:\n", "self.y = y"]
PROMPTS = ["def ", "class Point:\n    def", "    return a", "x", "def sub(a, b):\n"]
UNTIL, MAX_GEN = "\n\n", 8
#: ``python -m lm_eval`` (its command line, parsed and run by its own code), except that its task manager indexes
#: only ``--include_path``, not the harness's thousands of built-in task files (5 of the run's 11 CPU-seconds here):
#: the three tasks are local, and no built-in one is read.
HARNESS_WITHOUT_ITS_TASKS = (
    "import functools\n"
    "from lm_eval.tasks import TaskManager\n"
    "TaskManager.__init__ = functools.partialmethod(TaskManager.__init__, include_defaults=False)\n"
    "from lm_eval.__main__ import cli_evaluate\n"
    "cli_evaluate()\n")


def write_tasks(folder: Path, suppress: list[int]) -> Path:
    """Three local tasks (YAML + JSONL), one per request type; the generations never produce the ids ``suppress``
    (what ``synthformer generate`` does: it never samples <pad>, <bos> or <eos>)."""
    folder.mkdir()

    def task(name: str, rows: list[dict], **fields) -> None:
        data = folder / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        spec = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data)}},
                "test_split": "test", **fields}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")

    task("synth_ll", [{"context": c, "continuation": t} for c, t in PAIRS], output_type="loglikelihood",
         doc_to_text="{{context}}", doc_to_target="{{continuation}}", metric_list=[{"metric": "perplexity"}])
    task("synth_rolling", [{"text": t} for t in TEXTS], output_type="loglikelihood_rolling", doc_to_text="",
         doc_to_target="{{text}}", metric_list=[{"metric": "bits_per_byte"}])
    task("synth_gen", [{"prompt": p, "target": ""} for p in PROMPTS], output_type="generate_until",
         doc_to_text="{{prompt}}", doc_to_target="{{target}}", metric_list=[{"metric": "exact_match"}],
         generation_kwargs={"until": [UNTIL], "max_gen_toks": MAX_GEN, "do_sample": False,
                            "suppress_tokens": suppress})
    return folder


def samples(out: Path, task: str) -> list[dict]:
    """The harness's logged requests of ``task``, in document order."""
    path = next(out.rglob(f"samples_{task}_*.jsonl"))
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return sorted(rows, key=lambda r: r["doc_id"])


def test_the_harness_scores_and_generates_what_synthformer_does(tmp_path, capsys):
    (run_dir, folder), = train_and_export(tmp_path, only=("lm",)).values()
    run = load_run(run_dir)
    tok, model = run.tokenizer, run.model
    tasks, out = write_tasks(tmp_path / "tasks", [tok.pad_id, tok.bos_id, tok.eos_id]), tmp_path / "results"
    command = [sys.executable, "-c", HARNESS_WITHOUT_ITS_TASKS, "run", "--model", "hf", "--model_args",
               f"pretrained={folder},trust_remote_code=True,dtype=float32", "--tasks",
               "synth_ll,synth_rolling,synth_gen", "--include_path", str(tasks), "--batch_size", "4", "--device",
               "cpu", "--output_path", str(out), "--log_samples"]
    done = subprocess.run(command, capture_output=True, text=True, env=fresh_env(tmp_path), timeout=900,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]

    # loglikelihood: log p(continuation | context), the continuation's tokens split off the whole text's
    for (context, continuation), row in zip(PAIRS, samples(out, "synth_ll"), strict=True):
        whole, n_context = tok.encode(context + continuation), len(tok.encode(context))
        with torch.no_grad():
            logp = model(input_ids=torch.tensor([whole[:-1]]))["logits"][0].log_softmax(-1)  # (len - 1, V)
        own = logp[n_context - 1 :].gather(1, torch.tensor(whole[n_context:])[:, None]).sum()
        assert float(row["filtered_resps"][0][0]) == pytest.approx(float(own), abs=1e-4)  # logged as text

    # loglikelihood_rolling: each text scored after <bos> (the harness's prefix token), one window each
    total, count, size = 0.0, 0, 0
    for text in TEXTS:
        ids = [tok.bos_id, *tok.encode(text)]
        nats, n = token_nll(model, LMBlockDataset(ids, len(ids) - 1), batch_size=1, max_batches=0)
        total, count, size = total + nats, count + n, size + len(text.encode("utf-8"))
    results = json.loads(next(out.rglob("results_*.json")).read_text(encoding="utf-8"))["results"]
    ours = bits_per_byte(total / count, count, size)
    assert results["synth_rolling"]["bits_per_byte,none"] == pytest.approx(ours, rel=1e-5)
    assert math.isfinite(ours) and ours > 0

    # generate_until: greedy, left-padded batches of 4, cut at the stop string as the harness cuts
    capsys.readouterr()  # drop what training and export printed
    for prompt, row in zip(PROMPTS, samples(out, "synth_gen"), strict=True):
        assert main(["generate", str(run_dir), "--prompt", prompt, "--temperature", "0", "--max-new-tokens",
                     str(MAX_GEN)]) == 0
        ours = capsys.readouterr().out.removesuffix("\n")[len(prompt):].split(UNTIL)[0]
        assert row["filtered_resps"][0] == ours
