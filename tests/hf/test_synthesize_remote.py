"""Loading a synthesized folder by path: ``AutoModel*.from_pretrained(folder, trust_remote_code=True)`` in a
process that never imported synthformer rebuilds the synthesized layers and gives the saved model's outputs, for
folders written by ``save_pretrained`` and by ``synthformer synthesize``; a plain load says what it dropped."""

from __future__ import annotations

import json
import logging
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from synthformer.cli.main import main  # noqa: E402
from synthformer.hf.synthesize import from_pretrained, synthesize, synthesized_class, synthesized_layers  # noqa: E402
from synthformer.hf.synthesize.remote import MODULE  # noqa: E402

from .synth_models import HEADS, POSITIONS, VOCAB, WIDTH, build, forward  # noqa: E402

pytestmark = pytest.mark.usefixtures("restore_logging")
#: the tests of the module fixture ``loaded_by_path`` (about 20 s) in one pytest-xdist worker, which builds it
#: once: a test in each worker would build it twice
BY_PATH = pytest.mark.xdist_group("synthesize-remote")


def masked_lm() -> torch.nn.Module:
    """A tiny ``BertForMaskedLM`` (the ``bert`` of :mod:`.synth_models` is a ``BertModel``)."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    return BertForMaskedLM(BertConfig(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=2,
                                      num_attention_heads=HEADS, intermediate_size=64,
                                      max_position_embeddings=POSITIONS, pad_token_id=0)).eval()


#: (name, model, {layer: kind}, the Auto class that loads the folder)
CASES = [
    ("llama_gqa", lambda: build("llama_gqa"), {0: "R+V", 1: "D"}, "AutoModelForCausalLM"),
    ("mistral", lambda: build("mistral"), {1: "FR"}, "AutoModelForCausalLM"),
    ("qwen2", lambda: build("qwen2"), {0: "FD+V"}, "AutoModelForCausalLM"),
    ("gpt2", lambda: build("gpt2"), {1: "FR+D+V"}, "AutoModelForCausalLM"),
    ("bert", lambda: build("bert"), {0: "R", 1: "D+V"}, "AutoModel"),
    ("bert_mlm", masked_lm, {0: "R+D"}, "AutoModelForMaskedLM"),
    ("t5", lambda: build("t5"), {0: "R", 3: "D+V"}, "AutoModelForSeq2SeqLM"),
    ("bart", lambda: build("bart"), {1: "R+V", 2: "FD"}, "AutoModelForSeq2SeqLM"),
]

_SCRIPT = """
import json, sys
import torch
fresh = "synthformer" not in sys.modules  # nothing below imports it: only the folders' own modules do
import transformers

cases, results = json.load(open(sys.argv[1])), {}
for case in cases:
    model = getattr(transformers, case["auto"]).from_pretrained(case["folder"], trust_remote_code=True).eval()
    ids = torch.load(case["inputs"])
    with torch.no_grad():
        kwargs = {"decoder_input_ids": ids} if model.config.is_encoder_decoder else {}
        out = model(input_ids=ids, **kwargs)
    torch.save(out.logits if hasattr(out, "logits") else out.last_hidden_state, case["out"])
    results[case["name"]] = {
        "layers": {n: m.kind for n, m in model.named_modules() if type(m).__name__ == "SynthesizedAttention"},
        "class": type(model).__name__, "attention": model.config._attn_implementation}
    if case.get("again"):  # saved again: the folder's module and auto_map, no transformers modeling file
        model.save_pretrained(case["again"])
print(json.dumps({"fresh": fresh, "results": results}))
"""


def load_by_path(cases: list[dict], tmp_path: Path) -> dict:
    """Run :data:`_SCRIPT` on ``cases`` in a new interpreter (offline, its remote-code cache under ``tmp_path``)."""
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps(cases), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_MODULES_CACHE": str(tmp_path / "modules")}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_SCRIPT), str(spec)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _case(name: str, folder: Path, auto: str, inputs: torch.Tensor, tmp_path: Path, **extra: str) -> dict:
    torch.save(inputs, tmp_path / f"{name}.in.pt")
    return {"name": name, "folder": str(folder), "auto": auto, "inputs": str(tmp_path / f"{name}.in.pt"),
            "out": str(tmp_path / f"{name}.out.pt"), **extra}


@pytest.fixture(scope="module")
def loaded_by_path(tmp_path_factory):
    """The folders of the two tests below (every family of :data:`CASES` saved with ``save_pretrained``, and a Llama
    synthesized by the command line) loaded by path in one new interpreter: a process per test would check nothing
    more and pays the imports of torch and transformers each time."""
    tmp = tmp_path_factory.mktemp("by_path")
    inputs = torch.randint(3, VOCAB, (2, 7), generator=torch.Generator().manual_seed(0))
    cases, saved = [], {}
    for name, make, kinds, auto in CASES:
        model = make()
        synthesize(model, kinds=kinds, grow=False)
        folder = tmp / name
        model.save_pretrained(str(folder))
        extra = {"again": str(tmp / f"{name}-again")} if name == "llama_gqa" else {}
        cases.append(_case(name, folder, auto, inputs, tmp, **extra))
        saved[name] = (model, folder, auto)
    # a head's folder loads as the family's base model too (AutoModel: LlamaModel), its layers synthesized
    cases.append(_case("llama_base", tmp / "llama_gqa", "AutoModel", inputs, tmp))

    source, cli = tmp / "llama", tmp / "llama-rv"
    pretrained = build("llama")
    pretrained.save_pretrained(str(source))
    root = logging.getLogger()  # the CLI configures the root logger: put it back as it was
    level, handlers = root.level, list(root.handlers)
    try:
        status = main(["synthesize", str(source), "--kind", "R+V", "--layers", "1", "--out", str(cli)])
    finally:
        root.setLevel(level)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
    cli_inputs = torch.randint(3, VOCAB, (2, 9), generator=torch.Generator().manual_seed(1))
    if status == 0:
        cases.append(_case("cli", cli, "AutoModelForCausalLM", cli_inputs, tmp))
    return {"tmp": tmp, "inputs": inputs, "saved": saved, "report": load_by_path(cases, tmp), "cli_status": status,
            "cli": (pretrained, cli, cli_inputs)}


@BY_PATH
def test_every_family_loads_by_path_in_a_fresh_process(loaded_by_path):
    tmp_path, inputs, report = (loaded_by_path[key] for key in ("tmp", "inputs", "report"))
    expected = {}
    for name, (model, folder, auto) in loaded_by_path["saved"].items():
        assert not hasattr(model.config, "auto_map")  # written into the folder only
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        assert config["auto_map"][auto] == f"{MODULE}.{type(model).__name__}" and (folder / f"{MODULE}.py").is_file()
        with torch.no_grad():
            expected[name] = (model, forward(model, inputs))
    assert report["fresh"]
    for name, (model, out) in expected.items():
        got = report["results"][name]
        assert got["class"] == type(model).__name__ and got["attention"] == "synthformer"
        assert got["layers"] == synthesized_layers(model), name
        torch.testing.assert_close(torch.load(tmp_path / f"{name}.out.pt"), out, atol=0, rtol=0)
    base_model = expected["llama_gqa"][0]
    base = report["results"]["llama_base"]
    assert base["class"] == "LlamaModel" and len(base["layers"]) == 2
    with torch.no_grad():
        torch.testing.assert_close(torch.load(tmp_path / "llama_base.out.pt"),
                                   base_model.model(input_ids=inputs).last_hidden_state, atol=0, rtol=0)
    again = tmp_path / "llama_gqa-again"
    assert sorted(p.name for p in again.iterdir() if p.suffix == ".py") == [f"{MODULE}.py"]
    assert json.loads((again / "config.json").read_text(encoding="utf-8"))["auto_map"]["AutoModelForCausalLM"] \
        == f"{MODULE}.LlamaForCausalLM"
    mine, theirs = base_model.state_dict(), from_pretrained(str(again)).state_dict()
    assert set(mine) == set(theirs) and all(torch.equal(mine[k], theirs[k]) for k in mine)


@BY_PATH
def test_a_folder_of_the_command_line_loads_by_path(loaded_by_path, tmp_path, capsys):
    assert loaded_by_path["cli_status"] == 0
    pretrained, out, inputs = loaded_by_path["cli"]
    report = loaded_by_path["report"]
    assert report["fresh"] and report["results"]["cli"]["layers"] == {"model.layers.1.self_attn.synthformer": "R+V"}
    with torch.no_grad():  # grown: the pretrained logits
        torch.testing.assert_close(torch.load(loaded_by_path["tmp"] / "cli.out.pt"),
                                   pretrained(input_ids=inputs).logits, atol=1e-5, rtol=0)
    # synthesizing the synthesized folder again keeps its layers and adds the new ones
    more = tmp_path / "llama-more"
    assert main(["synthesize", str(out), "--kind", "D", "--layers", "0", "--out", str(more)]) == 0
    capsys.readouterr()
    assert from_pretrained(str(more)).config.synthformer["kinds"] == {"0": "D", "1": "R+V"}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_plain_load_runs_the_original_attention_and_says_so(tmp_path):
    """Without ``trust_remote_code`` ``transformers`` takes its own class (the folder's architecture is its own):
    the synthesized tensors are dropped, and in a process that imported synthformer the load report says how to
    load them."""
    import transformers
    from transformers import AutoModelForCausalLM

    model = build("llama")
    synthesize(model, kind="R", layers=[0])
    model.save_pretrained(str(tmp_path))
    records, log = _Records(), logging.getLogger("transformers.modeling_utils")
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_warning()
    log.addHandler(records)
    try:
        plain = AutoModelForCausalLM.from_pretrained(str(tmp_path))
    finally:
        log.removeHandler(records)
        transformers.logging.set_verbosity(verbosity)
    assert not synthesized_layers(plain)
    hint = [m for m in records.messages if "synthformer: this folder holds synthesized attention layers" in m]
    assert hint and "trust_remote_code=True" in hint[0] and "synthformer.hf.synthesize.from_pretrained" in hint[0]


def test_the_synthesized_class_keeps_the_name_pickles_and_leaves_plain_models_alone(tmp_path):
    from transformers import LlamaForCausalLM

    model = build("llama")
    synthesize(model, kind="D+V")
    assert isinstance(model, LlamaForCausalLM) and type(model).__name__ == "LlamaForCausalLM"
    assert type(model) is synthesized_class(LlamaForCausalLM) is synthesized_class(type(model))
    inputs = torch.randint(3, VOCAB, (1, 6), generator=torch.Generator().manual_seed(2))
    again = pickle.loads(pickle.dumps(model))  # whole-model pickling (torch.save(model)) finds the class
    with torch.no_grad():
        assert torch.equal(again(input_ids=inputs).logits, model(input_ids=inputs).logits)
    plain = synthesized_class(LlamaForCausalLM)(build("llama").config)  # no config.synthformer: cls itself
    plain.save_pretrained(str(tmp_path))
    assert "auto_map" not in json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))
    assert not (tmp_path / f"{MODULE}.py").exists() and not synthesized_layers(plain)
