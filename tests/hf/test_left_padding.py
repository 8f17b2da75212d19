"""Batched generation with left padding through ``generate()``: positions come from the attention mask (or
``position_ids``), so a left-padded row gives exactly the tokens and scores it gives alone, in greedy search, beam
search and sampling, with the native cache and without it, for every registered mixer that can decode."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from synthformer.hf import SynthesizerForCausalLM  # noqa: E402

from .helpers import decoding_kinds, tiny_lm  # noqa: E402

PROMPTS = [[2, 5, 6], [2, 8, 9, 10, 11, 12], [2, 14, 15, 7]]
NEW = 6


def left_padded(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, W) ids left-padded with 0 and their attention mask (B, W), as a left-padding tokenizer returns them."""
    width = max(map(len, prompts))
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    mask = torch.zeros(len(prompts), width, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    return ids, mask


def generate(model, ids, mask=None, **options):
    return model.generate(ids, attention_mask=mask, max_new_tokens=NEW, eos_token_id=None, pad_token_id=0,
                          return_dict_in_generate=True, output_logits=True, **options)


@pytest.mark.parametrize("kind", decoding_kinds())
def test_greedy_rows_of_a_left_padded_batch_equal_single_rows(kind):
    model = SynthesizerForCausalLM.from_native(tiny_lm(kind)).eval()
    ids, mask = left_padded(PROMPTS)
    batch = generate(model, ids, mask, do_sample=False)
    width = ids.shape[1]
    for row, prompt in enumerate(PROMPTS):
        alone = generate(model, torch.tensor([prompt]), do_sample=False)
        assert batch.sequences[row, width:].tolist() == alone.sequences[0, len(prompt):].tolist()
        for step in range(NEW):  # the raw logits of every step
            torch.testing.assert_close(batch.logits[step][row], alone.logits[step][0], atol=1e-5, rtol=1e-5)
    recomputed = model.generate(ids, attention_mask=mask, max_new_tokens=NEW, eos_token_id=None, pad_token_id=0,
                                do_sample=False, use_cache=False)
    assert torch.equal(recomputed, batch.sequences)


@pytest.mark.parametrize("kind", ["R", "FR", "D+V", "Conv"])
def test_beam_search_rows_of_a_left_padded_batch_equal_single_rows(kind):
    model = SynthesizerForCausalLM.from_native(tiny_lm(kind)).eval()
    ids, mask = left_padded(PROMPTS)
    options = dict(num_beams=3, do_sample=False, output_scores=True, length_penalty=1.0)
    batch = generate(model, ids, mask, **options)
    for row, prompt in enumerate(PROMPTS):
        alone = generate(model, torch.tensor([prompt]), **options)
        assert batch.sequences[row, ids.shape[1]:].tolist() == alone.sequences[0, len(prompt):].tolist()
        torch.testing.assert_close(batch.sequences_scores[row], alone.sequences_scores[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["R", "Fix", "FD", "R+V"])
def test_sampled_rows_are_scored_as_their_unpadded_sequences(kind):
    model = SynthesizerForCausalLM.from_native(tiny_lm(kind)).eval()
    ids, mask = left_padded(PROMPTS)
    torch.manual_seed(0)
    batch = generate(model, ids, mask, do_sample=True, temperature=1.5, top_k=0)
    torch.manual_seed(0)
    assert torch.equal(model.generate(ids, attention_mask=mask, max_new_tokens=NEW, eos_token_id=None,
                                      pad_token_id=0, do_sample=True, temperature=1.5, top_k=0, use_cache=False),
                       batch.sequences)
    for row, prompt in enumerate(PROMPTS):
        new = batch.sequences[row, ids.shape[1]:].tolist()
        with torch.no_grad():
            alone = model(input_ids=torch.tensor([prompt + new])).logits[0, len(prompt) - 1 : -1]  # (NEW, V)
        torch.testing.assert_close(torch.stack([step[row] for step in batch.logits]), alone, atol=1e-5, rtol=1e-5)


def test_position_ids_given_explicitly_are_used():
    model = SynthesizerForCausalLM.from_native(tiny_lm("R")).eval()
    ids, mask = left_padded(PROMPTS)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        derived = model(input_ids=ids, attention_mask=mask).logits
        given = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
        columns = model(input_ids=ids, attention_mask=mask, position_ids=torch.arange(ids.shape[1])[None]).logits
    real = mask.bool()
    torch.testing.assert_close(given[real], derived[real])
    assert not torch.allclose(columns[0, 3:], derived[0, 3:], atol=1e-3)  # the columns as positions differ
