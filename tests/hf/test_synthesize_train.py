"""Synthesized transformers models train with the Trainer and with PEFT (LoRA), every kind the backend takes, and
come back from ``save_pretrained`` in a fresh process with their kinds and weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("transformers")
pytest.importorskip("peft")

import torch  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

from synthformer.attention import canonical_kind, get_kind, registered_kinds  # noqa: E402
from synthformer.common.config import ConfigError  # noqa: E402
from synthformer.hf.synthesize import from_pretrained, synthesize, synthesized_layers  # noqa: E402

from .synth_models import build, forward  # noqa: E402


def counting_data(n: int = 16, length: int = 12) -> list[dict[str, torch.Tensor]]:
    """Sequences that count up modulo 8 from a random start."""
    gen = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(n):
        ids = 4 + (int(torch.randint(0, 8, (1,), generator=gen)) + torch.arange(length)) % 8
        rows.append({"input_ids": ids, "labels": ids.clone()})
    return rows


def train(model: torch.nn.Module, out: str, steps: int = 4) -> list[float]:
    args = TrainingArguments(out, max_steps=steps, per_device_train_batch_size=4, learning_rate=1e-2, report_to=[],
                             logging_steps=1, use_cpu=True, save_strategy="no", seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=counting_data())
    trainer.train()
    return [h["loss"] for h in trainer.state.log_history if "loss" in h]


@pytest.mark.parametrize("family", ["llama_gqa", "gpt2"])
def test_the_trainer_trains_a_grown_mixture(family, tmp_path):
    model = build(family)
    synthesize(model, kind="R+V")
    layer = next(m for m in model.modules() if type(m).__name__ == "SynthesizedAttention")
    R, alpha = layer.synth.parts[0].R.detach().clone(), layer.synth.alpha_logits.detach().clone()
    gain = layer.synth.parts[1].gain.clone()
    losses = train(model.train(), str(tmp_path))
    assert len(losses) == 4 and all(torch.isfinite(torch.tensor(losses)))
    assert not torch.equal(layer.synth.parts[0].R, R) and not torch.equal(layer.synth.alpha_logits, alpha)
    assert torch.equal(layer.synth.parts[1].gain, gain)  # a buffer: the grown start's scale, never trained


#: Every kind the backend takes alone (the registered kinds that read no neighbouring tokens; V alone is the model's
#: own attention), and mixtures with V, which start grown (Fix+V cannot: Fix has no zero start).
PURE = [k for k in registered_kinds() if k != "V" and not get_kind(k).reads_context]
KINDS = [*PURE, "R+V", "D+V", "FR+V", "R+D"]


def _synthesized_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Copies of the trainable tensors of the synthesized layers (a PEFT copy's included)."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if ".synthformer." in n and p.requires_grad}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_trains_with_the_trainer(kind, tmp_path):
    assert {"R", "D", "FR", "FD"} <= set(PURE)
    model = build("llama")
    synthesize(model, kind=kind, grow="V" in kind)
    before = _synthesized_tensors(model)
    assert before or kind == "Fix"  # Fix's table is a buffer: only the projections train
    losses = train(model.train(), str(tmp_path))
    assert len(losses) == 4 and all(torch.isfinite(torch.tensor(losses)))
    after = _synthesized_tensors(model)
    assert set(after) == set(before)
    assert all(not torch.equal(after[n], before[n]) for n in before), [n for n in before
                                                                       if torch.equal(after[n], before[n])]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_trains_with_lora(kind, tmp_path):
    """LoRA on the query and value projections beside the synthesized tensors (``modules_to_save``): the value
    adapters and the synthesized tensors train for every kind, the query adapters only where V reads the queries
    (without V the module's queries reach no output)."""
    from peft import LoraConfig, get_peft_model

    model = build("llama")
    synthesize(model, kind=kind, grow="V" in kind)
    peft = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                            modules_to_save=["synthformer"]))
    trainable = {n for n, p in peft.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or ".synthformer." in n for n in trainable)
    before = _synthesized_tensors(peft)
    adapters = {n: p.detach().clone() for n, p in peft.named_parameters() if "lora_B" in n}
    losses = train(peft.train(), str(tmp_path))
    assert all(torch.isfinite(torch.tensor(losses)))
    after = _synthesized_tensors(peft)
    assert all(not torch.equal(after[n], before[n]) for n in before), kind
    moved = {n for n, p in peft.named_parameters() if n in adapters and not torch.equal(p, adapters[n])}
    assert {n for n in adapters if "v_proj" in n} <= moved
    assert any("q_proj" in n for n in moved) == ("V" in kind.split("+"))
    merged = peft.merge_and_unload()
    assert set(synthesized_layers(merged).values()) == {canonical_kind(kind)}


_FRESH_LOADER = textwrap.dedent("""
    import json, sys, torch
    from synthformer.hf.synthesize import from_pretrained, synthesized_layers
    layers = {}
    for name, folder, inputs, logits in json.loads(sys.argv[1]):
        model = from_pretrained(folder).eval()
        ids = torch.load(inputs)
        with torch.no_grad():
            if model.config.is_encoder_decoder:
                out = model(input_ids=ids, decoder_input_ids=ids).logits
            else:
                out = model(input_ids=ids).logits
        torch.save(out, logits)
        layers[name] = synthesized_layers(model)
    print(json.dumps(layers))
""")


def _load_in_a_fresh_process(folders: dict[str, str], inputs: dict[str, torch.Tensor],
                             tmp) -> dict[str, tuple[torch.Tensor, dict]]:
    """{name: (logits, synthesized layers)} of each folder loaded with ``from_pretrained`` in one new interpreter,
    which never held the saved models: a fresh process per folder would check nothing more and pays the imports of
    torch and transformers each time."""
    jobs = []
    for name, folder in folders.items():
        torch.save(inputs[name], tmp / f"{name}.inputs.pt")
        jobs.append((name, folder, str(tmp / f"{name}.inputs.pt"), str(tmp / f"{name}.logits.pt")))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _FRESH_LOADER, json.dumps(jobs)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    layers = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: (torch.load(tmp / f"{name}.logits.pt"), layers[name]) for name in folders}


#: the tests of the module fixture ``fresh_loads`` (a LoRA training and a fresh process, about 15 s) in one
#: pytest-xdist worker, which builds it once: a test in each worker would build it twice
FRESH_LOADS = pytest.mark.xdist_group("synthesize-fresh-loads")
FRESH = [("llama_gqa", {0: "R+V", 1: "D"}), ("gpt2", {1: "FR+D+V"}), ("t5", {0: "R", 3: "D+V"})]


def _lora_merged(tmp) -> dict:
    """A Llama with R+V trained with LoRA and merged, saved; what the LoRA test checks of it."""
    from peft import LoraConfig, get_peft_model

    model = build("llama")
    synthesize(model, kind="R+V")
    R = model.model.layers[0].self_attn.synthformer.synth.parts[0].R.detach().clone()
    peft = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                            modules_to_save=["synthformer"]))
    trainable = {n for n, p in peft.named_parameters() if p.requires_grad}
    losses = train(peft.train(), str(tmp / "out"))
    merged = peft.merge_and_unload().eval()
    merged.save_pretrained(str(tmp / "merged"))
    return {"R": R, "trainable": trainable, "losses": losses, "merged": merged, "folder": str(tmp / "merged")}


@pytest.fixture(scope="module")
def fresh_loads(tmp_path_factory):
    """The models of the fresh-process tests below (each family of :data:`FRESH` synthesized and saved, and the
    LoRA-trained merged Llama), their inputs, and what one new interpreter loaded from their folders."""
    tmp = tmp_path_factory.mktemp("fresh_loads")
    models, folders, inputs = {}, {}, {}
    for family, kinds in FRESH:
        model = build(family)
        synthesize(model, kinds=kinds, grow=False)
        folders[family] = str(tmp / family)
        model.save_pretrained(folders[family])
        models[family] = model
        inputs[family] = torch.randint(3, 40, (2, 7), generator=torch.Generator().manual_seed(0))
    lora = _lora_merged(tmp)
    folders["lora"] = lora["folder"]
    inputs["lora"] = torch.randint(3, 40, (2, 7), generator=torch.Generator().manual_seed(1))
    return {"models": models, "folders": folders, "inputs": inputs, "lora": lora,
            "loaded": _load_in_a_fresh_process(folders, inputs, tmp)}


@FRESH_LOADS
@pytest.mark.parametrize(("family", "kinds"), FRESH)
def test_save_pretrained_and_from_pretrained_in_a_fresh_process(family, kinds, fresh_loads):
    model, folder, inputs = (fresh_loads[key][family] for key in ("models", "folders", "inputs"))
    logits, layers = fresh_loads["loaded"][family]
    assert layers == synthesized_layers(model)
    with torch.no_grad():
        torch.testing.assert_close(logits, forward(model, inputs), atol=0, rtol=0)
    again = from_pretrained(folder)
    mine, theirs = model.state_dict(), again.state_dict()
    assert set(mine) == set(theirs) and all(torch.equal(mine[k], theirs[k]) for k in mine)


@FRESH_LOADS
def test_lora_adapts_the_projections_and_trains_the_synthesized_layers(fresh_loads):
    lora = fresh_loads["lora"]
    trainable, merged = lora["trainable"], lora["merged"]
    assert trainable and all("lora_" in n or ".synthformer." in n for n in trainable)
    assert all(torch.isfinite(torch.tensor(lora["losses"])))
    assert set(synthesized_layers(merged).values()) == {"R+V"}
    assert not torch.equal(merged.model.layers[0].self_attn.synthformer.synth.parts[0].R, lora["R"])
    logits, _ = fresh_loads["loaded"]["lora"]
    with torch.no_grad():
        torch.testing.assert_close(logits, merged(input_ids=fresh_loads["inputs"]["lora"]).logits, atol=0, rtol=0)


def test_a_folder_of_a_plain_model_is_refused_in_one_line(tmp_path):
    build("llama").save_pretrained(str(tmp_path))
    with pytest.raises(ConfigError, match="config.json has no 'synthformer' entry") as err:
        from_pretrained(str(tmp_path))
    assert "\n" not in str(err.value)
