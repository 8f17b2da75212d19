"""The model card (``README.md``) of an exported run: what the model is, what it was trained on, how well it did.

Everything comes from the run directory: the kinds and sizes from the model config, the data and training settings
from ``config.yaml``, the scores from the ``eval_<split>.json`` files (``synthformer eval``) and the last periodic
evaluation in ``metrics.jsonl``. Local file paths are reduced to their names.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from synthformer.models import num_parameters
from synthformer.train import RunDir

from .auto import MODEL_CLASSES

__all__ = ["PIPELINE_TAGS", "model_card"]

logger = logging.getLogger(__name__)

#: the Hub's pipeline tag of each architecture (declared by its wrapper class)
PIPELINE_TAGS = {arch: cls.pipeline_tag for arch, cls in MODEL_CLASSES.items()}


def _kinds(model_config: Any) -> list[str]:
    """One line per stack: its kind (or kinds per layer) and options, plus the cross-attention kind."""
    lines = []
    for stack in model_config.stacks:
        kinds = model_config.layer_kinds(stack)
        shown = kinds[0] if len(set(kinds)) == 1 else ", ".join(kinds)
        options = {k: v for o in model_config.layer_options(stack) for k, v in o.items()}
        extra = f" (options {options})" if options else ""
        layers = f"{len(kinds)} layer{'s' if len(kinds) > 1 else ''}"
        lines.append(f"- {stack} self-attention: `{shown}` ({layers}){extra}")
    if model_config.encoder_decoder:
        lines.append(f"- cross-attention: `{model_config.cross_kind}`")
    return lines


def _data(task: dict[str, Any]) -> list[str]:
    if task.get("generator"):
        source = f"built-in generator `{task['generator']}`"
    elif task.get("hf_name"):
        source = f"Hugging Face dataset `{task['hf_name']}`" + (f" ({task['hf_config']})" if task.get("hf_config")
                                                                 else "")
    else:
        files = [Path(str(task[s])).name for s in ("train", "valid", "test") if task.get(s)]
        source = "local files " + ", ".join(f"`{f}`" for f in files) if files else "unknown"
    lines = [f"- task type: `{task.get('type')}`", f"- data: {source}",
             f"- tokenizer: `{task.get('tokenizer') or 'the generator’s fixed vocabulary'}`"]
    if task.get("max_len"):
        lines.append(f"- longest example: {task['max_len']} tokens")
    return lines


def _metric_rows(run_dir: Path) -> list[str]:
    """A Markdown table of every scalar metric of every ``eval_<split>.json``, then the last periodic evaluation."""
    rows = []
    for path in sorted(run_dir.glob("eval_*.json")):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            logger.warning("model card: skipping %s (%s)", path.name, err)
            continue
        if not isinstance(report, dict) or not isinstance(report.get("metrics"), dict):
            continue
        where = f"{report.get('split', path.stem[5:])} (synthformer eval, step {report.get('step', '?')})"
        rows += [f"| {where} | {k} | {v:.4g} |" for k, v in report["metrics"].items()
                 if isinstance(v, (int, float)) and not isinstance(v, bool)]
    last = next((r for r in reversed(RunDir(run_dir).read_metrics()) if any(k.startswith("eval_") for k in r)),
                None)
    if last is not None:
        where = f"valid (during training, step {last.get('step', '?')})"
        rows += [f"| {where} | {k[5:]} | {v:.4g} |" for k, v in last.items()
                 if k.startswith("eval_") and isinstance(v, (int, float))]
    return ["| split | metric | value |", "|---|---|---|", *rows] if rows else ["No evaluation recorded."]


def model_card(loaded: Any, repo_id: str = "path/to/exported") -> str:
    """The Markdown model card of a loaded run (:class:`synthformer.tasks.LoadedRun`)."""
    mc, run = loaded.model_config, loaded.config
    arch = mc.arch
    wrapper = MODEL_CLASSES[arch]
    task = dataclasses.asdict(run.task)
    train = run.train
    kinds = [k for s in mc.stacks for k in mc.layer_kinds(s)]
    front = ["---", "library_name: transformers", f"pipeline_tag: {wrapper.pipeline_tag}",
             "tags:", "- synthformer", "- synthesizer", *[f"- kind-{k}" for k in dict.fromkeys(kinds)], "---", ""]
    body = [
        f"# {loaded.run_dir.name}", "",
        "A Synthesizer Transformer (Tay et al., *Synthesizer: Rethinking Self-Attention for Transformer Models*) "
        f"trained with synthformer and exported with `synthformer export`: a {arch} model "
        f"with {num_parameters(loaded.model):,} trainable parameters.", "",
        "## Model", "", *_kinds(mc),
        f"- d_model {mc.d_model}, {mc.n_heads} heads, d_ff {mc.d_ff} ({mc.ffn}), {mc.norm}-norm, "
        f"{mc.positions} positions, max_len {mc.max_len}, vocabulary {mc.vocab_size}", "",
        "## Data", "", *_data(task), "",
        "## Training", "",
        f"- {loaded.step} steps (checkpoint exported), batch size {train.batch_size}, {train.optimizer} "
        f"lr {train.lr} ({train.schedule}), seed {train.seed}", "",
        "## Metrics", "", *_metric_rows(loaded.run_dir), "",
        "## Use", "", "```python",
        "import synthformer.hf  # registers model_type 'synthesizer' with the Auto classes",
        f"from transformers import AutoTokenizer, {wrapper.auto_class}", "",
        f'model = {wrapper.auto_class}.from_pretrained("{repo_id}")',
        f'tokenizer = AutoTokenizer.from_pretrained("{repo_id}")',
        *_usage(mc.classifier), "```", "",
        "Tools that load the folder by path without that import (`pipeline(model=...)`, lm-evaluation-harness, "
        "servers) take `trust_remote_code=True`: the modules that `auto_map` names import the installed "
        'synthformer (`pip install "synthformer[hf]"`).', "",
    ]
    return "\n".join(front + body)


def _usage(classifier: bool) -> list[str]:
    if classifier:
        return ['logits = model(**tokenizer(["some text"], return_tensors="pt")).logits',
                "label = model.config.id2label[int(logits.argmax(-1))]"]
    return ['ids = tokenizer(["some text"], return_tensors="pt").input_ids',
            "out = model.generate(ids, max_new_tokens=32, num_beams=4)",
            "print(tokenizer.batch_decode(out, skip_special_tokens=True))"]
