"""The HF Trainer trains the three wrapped models, and PEFT LoRA adapts the attention projections of every layer."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytest.importorskip("peft")

import torch  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

from synthformer.hf import (  # noqa: E402
    SynthesizerForCausalLM,
    SynthesizerForConditionalGeneration,
    SynthesizerForSequenceClassification,
)
from synthformer.models import ClassifierConfig, LMConfig, Seq2SeqConfig, build_model  # noqa: E402

from .helpers import SMALL  # noqa: E402


def pattern_data(n: int = 32, length: int = 12) -> list[dict[str, torch.Tensor]]:
    """Sequences that count up modulo 8 from a random start: easy to learn in a few steps."""
    gen = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(n):
        start = int(torch.randint(0, 8, (1,), generator=gen))
        ids = 4 + (start + torch.arange(length)) % 8
        rows.append({"input_ids": ids, "labels": ids.clone()})
    return rows


def mean_loss(model, data) -> float:
    batch = {k: torch.stack([row[k] for row in data]) for k in data[0]}
    model.eval()
    with torch.no_grad():
        return float(model(**batch).loss)


def arguments(tmp_path, **changes) -> TrainingArguments:
    options = dict(output_dir=str(tmp_path), per_device_train_batch_size=8, max_steps=12, learning_rate=1e-2,
                   report_to=[], use_cpu=True, save_strategy="no", logging_steps=4, disable_tqdm=True, seed=0)
    return TrainingArguments(**{**options, **changes})


@pytest.mark.parametrize("kind", ["R", "R+V"])
def test_trainer_lowers_the_loss(kind, tmp_path):
    torch.manual_seed(0)
    model = SynthesizerForCausalLM.from_native(build_model(LMConfig(**{**SMALL, "decoder_kind": kind})))
    data = pattern_data()
    before = mean_loss(model, data)
    Trainer(model=model, args=arguments(tmp_path), train_dataset=data).train()
    assert mean_loss(model, data) < 0.7 * before


def test_trainer_on_the_encoder_decoder(tmp_path):
    torch.manual_seed(0)
    model = SynthesizerForConditionalGeneration.from_native(
        build_model(Seq2SeqConfig(**{**SMALL, "encoder_kind": "D", "decoder_kind": "R"})))
    gen = torch.Generator().manual_seed(2)
    data = []
    for _ in range(32):  # reverse the source; labels end with <eos>, decoder inputs come from the labels
        src = torch.randint(4, 24, (6,), generator=gen)
        data.append({"input_ids": src, "labels": torch.cat([src.flip(0), torch.tensor([3])])})
    before = mean_loss(model, data)
    Trainer(model=model, args=arguments(tmp_path, max_steps=20), train_dataset=data).train()
    assert mean_loss(model, data) < 0.8 * before


def test_trainer_on_the_classifier(tmp_path):
    torch.manual_seed(0)
    native = build_model(ClassifierConfig(**{**SMALL, "encoder_kind": "D", "num_classes": 2}))
    model = SynthesizerForSequenceClassification.from_native(native)
    # the class is whether token 5 occurs
    gen = torch.Generator().manual_seed(1)
    data = []
    for i in range(32):
        ids = torch.randint(6, 24, (10,), generator=gen)
        if i % 2:
            ids[int(torch.randint(0, 10, (1,), generator=gen))] = 5
        data.append({"input_ids": ids, "labels": torch.tensor(i % 2)})
    before = mean_loss(model, data)
    Trainer(model=model, args=arguments(tmp_path, max_steps=20), train_dataset=data).train()
    assert mean_loss(model, data) < before


@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")  # peft calls it
def test_lora_trains_only_its_adapters(tmp_path):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    base = SynthesizerForCausalLM.from_native(build_model(LMConfig(**{**SMALL, "n_layers": 2, "decoder_kind": "R+V"})))
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["value", "out", "qk"], task_type="CAUSAL_LM")
    model = get_peft_model(base, lora)
    adapted = {name for name, p in model.named_parameters() if p.requires_grad}
    assert adapted and all("lora_" in name for name in adapted)
    for layer in range(2):  # every layer's value and output projections and the dot-product part's Q/K
        for proj in ("self_attn.value", "self_attn.out", "self_attn.synth.parts.1.qk"):
            assert any(f"layers.{layer}.{proj}.lora_A" in name for name in adapted)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    data = pattern_data()
    loss_before = mean_loss(model, data)
    Trainer(model=model, args=arguments(tmp_path, learning_rate=3e-2), train_dataset=data).train()
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert changed and changed <= adapted  # the base weights did not move
    assert any("lora_B" in name for name in changed)
    assert mean_loss(model, data) < loss_before
    # generation still runs through the adapted model on the native cache
    out = model.generate(input_ids=torch.tensor([[4, 5, 6]]), max_new_tokens=4, do_sample=False)
    assert out.shape == (1, 7)
