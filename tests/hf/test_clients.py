"""Exported folders in the clients that load models by path, in a fresh process that never imported synthformer:
``trust_remote_code=True`` (the folder's ``auto_map``) loads them; the pipelines at batch size 4 give, row for row,
what the native model gives each input alone."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from synthformer.generate import greedy_search, sample  # noqa: E402
from synthformer.tasks import load_run  # noqa: E402

from .clients import run_fresh, train_and_export  # noqa: E402

PROMPTS = ["def ", "class Po", "    return a", "x", "def sub(a, b):"]  # 5: a batch of 4 and one more
TEXTS = ["a witty movie", "a dull , pretentious mess", "the acting is wooden", "one of the best films of the year",
         "wooden"]
SOURCES = ["1 2 3", "4 5", "6 7 8", "2"]  # characters: the longest with its <eos> fills 6 of the 8 positions

CLIENTS = r"""
import json, pathlib, sys
import transformers
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

jobs = json.loads(sys.argv[1])
out = {}
try:  # without trust_remote_code, a process that never imported synthformer.hf does not know the model type
    AutoModelForCausalLM.from_pretrained(jobs["lm"])
    out["unknown"] = ""
except ValueError as exc:
    out["unknown"] = str(exc)
out["imported_before"] = "synthformer" in sys.modules
generate = pipeline("text-generation", model=jobs["lm"], trust_remote_code=True, batch_size=4)
out["generated"] = [r[0]["generated_text"] for r in generate(jobs["prompts"], max_new_tokens=6, do_sample=False,
                                                             return_full_text=False)]
out["classified"] = pipeline("text-classification", model=jobs["cls"], trust_remote_code=True,
                             batch_size=4)(jobs["texts"])
out["text2text_pipeline"] = "text2text-generation" in transformers.pipelines.SUPPORTED_TASKS
if out["text2text_pipeline"]:
    transduce = pipeline("text2text-generation", model=jobs["rev"], trust_remote_code=True, batch_size=4)
    out["transduced"] = [r["generated_text"] for r in transduce(jobs["sources"], max_new_tokens=8, do_sample=False)]
else:  # transformers 5 removed it: the same batch through the Auto class and generate()
    tokenizer = AutoTokenizer.from_pretrained(jobs["rev"])
    model = AutoModelForSeq2SeqLM.from_pretrained(jobs["rev"], trust_remote_code=True)
    batch = tokenizer(jobs["sources"], padding=True, return_tensors="pt")
    out["padded"] = bool((batch.attention_mask == 0).any())
    out["transduced"] = tokenizer.batch_decode(model.generate(**batch, max_new_tokens=8, do_sample=False),
                                               skip_special_tokens=True)
out["class"] = type(generate.model).__module__ + "." + type(generate.model).__name__
generate.model.save_pretrained(jobs["resaved"])  # a model loaded with remote code, saved again
out["resaved"] = sorted(p.name for p in pathlib.Path(jobs["resaved"]).iterdir())
print("\n" + json.dumps(out))  # on a line of its own: the refused load above printed a prompt without a newline
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return train_and_export(tmp_path_factory.mktemp("clients"))


def test_folders_load_by_path_with_trust_remote_code_and_the_pipelines_batch_by_four(exported, tmp_path):
    folders = {name: str(folder) for name, (_, folder) in exported.items()}
    jobs = {**folders, "prompts": PROMPTS, "texts": TEXTS, "sources": SOURCES, "resaved": str(tmp_path / "again")}
    out = run_fresh(CLIENTS, jobs, tmp_path)
    assert "trust_remote_code=True" in out["unknown"] and not out["imported_before"]
    assert out["class"] == "synthformer.hf.causal_lm.SynthesizerForCausalLM"  # the installed package's code
    assert out["resaved"] == ["config.json", "configuration_synthesizer.py", "generation_config.json",
                              "model.safetensors", "modeling_synthesizer.py"]  # no copy of synthformer's source

    run = load_run(exported["lm"][0])
    hf_tokenizer = AutoTokenizer.from_pretrained(exported["lm"][1])
    assert hf_tokenizer.padding_side == "left"
    for prompt, text in zip(PROMPTS, out["generated"], strict=True):
        alone = sample(run.model, [run.tokenizer.encode(prompt)], max_new_tokens=6, temperature=0)
        assert text == hf_tokenizer.decode(alone.to_lists()[0], skip_special_tokens=True)

    run = load_run(exported["cls"][0])
    for text, result in zip(TEXTS, out["classified"], strict=True):
        with torch.no_grad():
            probs = run.model(input_ids=torch.tensor([run.tokenizer.encode(text)]))["logits"][0].softmax(-1)
        assert result["label"] == run.label_set[int(probs.argmax())]
        assert result["score"] == pytest.approx(float(probs.max()), abs=1e-5)

    run = load_run(exported["rev"][0])
    assert out["text2text_pipeline"] or out["padded"]
    hf_tokenizer = AutoTokenizer.from_pretrained(exported["rev"][1])
    for source, text in zip(SOURCES, out["transduced"], strict=True):
        alone = greedy_search(run.model, torch.tensor([run.tokenizer.encode(source, add_eos=True)]), max_new_tokens=8)
        assert text == hf_tokenizer.decode(alone.to_lists()[0], skip_special_tokens=True)
