"""``generate()`` on synthesized transformers models: with the cache it gives what it gives without (greedy, beam
search, sampling with a seed), and a left-padded batch gives each prompt what it gives alone."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from synthformer.hf.synthesize import synthesize  # noqa: E402

from .synth_models import VOCAB, build  # noqa: E402

KINDS = ["R", "D", "R+V", "FR+D"]
DECODING = {
    "greedy": dict(do_sample=False),
    "beam": dict(do_sample=False, num_beams=3, num_return_sequences=2),
    "sampling": dict(do_sample=True, top_k=0, temperature=1.5),
}


def prompt(length: int, seed: int) -> torch.Tensor:
    return torch.randint(3, VOCAB, (1, length), generator=torch.Generator().manual_seed(seed))


def generate(model, inputs: torch.Tensor, how: str, **kwargs) -> torch.Tensor:
    torch.manual_seed(0)  # the sampler's draws; min_new_tokens: no row stops early at <eos>
    with torch.no_grad():
        return model.generate(inputs, max_new_tokens=6, min_new_tokens=6, pad_token_id=0, **DECODING[how], **kwargs)


@pytest.mark.parametrize("family", ["llama_gqa", "gpt2", "qwen2", "t5", "bart"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", list(DECODING))
def test_the_cache_gives_what_recomputing_gives(family, kind, how):
    model = build(family)
    synthesize(model, kind=kind, grow=False)
    inputs = torch.cat([prompt(5, 1), prompt(5, 2)])
    cached = generate(model, inputs, how, use_cache=True)
    assert torch.equal(cached, generate(model, inputs, how, use_cache=False))


@pytest.mark.parametrize("family", ["llama", "llama_gqa", "mistral", "gpt2"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["greedy", "beam"])
def test_a_left_padded_batch_gives_each_prompt_what_it_gives_alone(family, kind, how):
    model = build(family)
    synthesize(model, kind=kind, grow=False)
    long, short = prompt(7, 3), prompt(4, 4)
    batch = torch.cat([long, torch.cat([torch.zeros(1, 3, dtype=torch.long), short], dim=1)])
    mask = torch.ones_like(batch)
    mask[1, :3] = 0
    for use_cache in (True, False):
        out = generate(model, batch, how, attention_mask=mask, use_cache=use_cache)
        rows = out.shape[0] // 2
        assert torch.equal(out[:rows], generate(model, long, how))
        assert torch.equal(out[rows:, 3:], generate(model, short, how))


def test_a_grown_model_generates_what_the_pretrained_model_generates():
    pretrained = build("llama")
    model = build("llama")
    synthesize(model, kind="R+V")
    inputs = torch.cat([prompt(5, 5), prompt(5, 6)])
    for how in DECODING:
        assert torch.equal(generate(model, inputs, how), generate(pretrained, inputs, how)), how
