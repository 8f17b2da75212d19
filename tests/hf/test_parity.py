"""The wrappers compute what the native models compute: logits, and greedy / beam output token for token, for
every registered token mixer that can decode (and two mixtures)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from synthformer.attention import available_mixers  # noqa: E402
from synthformer.generate import LMStepper, beam_search, beam_search_loop, greedy_search, sample  # noqa: E402
from synthformer.hf import (  # noqa: E402
    SynthesizerForCausalLM,
    SynthesizerForConditionalGeneration,
    SynthesizerForSequenceClassification,
)

from .helpers import VOCAB, decoding_kinds, source_batch, tiny_classifier, tiny_lm, tiny_seq2seq  # noqa: E402

KINDS = decoding_kinds()
BOS, EOS = 2, 3


def until_eos(rows: torch.Tensor) -> list[list[int]]:
    """Each row up to and including its first <eos> (transformers and synthformer pad finished rows differently)."""
    out = []
    for row in rows.tolist():
        out.append(row[: row.index(EOS) + 1] if EOS in row else row)
    return out


def prompts(batch: int = 3, length: int = 4, seed: int = 2) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, VOCAB, (batch, length), generator=gen)
    ids[:, 0] = BOS
    return ids


def test_every_decoding_mixer_is_covered():
    assert set(available_mixers()) - set(KINDS) == {"Linformer"}  # the one mixer that cannot be causal


@pytest.mark.parametrize("kind", KINDS)
def test_causal_lm_logits_equal_native(kind):
    native = tiny_lm(kind)
    model = SynthesizerForCausalLM.from_native(native).eval()
    ids = prompts(length=7)
    with torch.no_grad():
        full = model(input_ids=ids).logits
        assert torch.equal(full, native(input_ids=ids)["logits"])
        # incremental: a prompt chunk, then one token at a time, on the HF cache
        cache = model.new_cache()
        steps = [model(input_ids=ids[:, :3], past_key_values=cache).logits]
        steps += [model(input_ids=ids[:, t : t + 1], past_key_values=cache).logits for t in range(3, 7)]
    assert cache.get_seq_length() == 7
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_seq2seq_logits_equal_native(kind):
    native = tiny_seq2seq(kind)
    model = SynthesizerForConditionalGeneration.from_native(native).eval()
    src, tgt = source_batch(), prompts(length=5)
    with torch.no_grad():
        assert torch.equal(model(input_ids=src, decoder_input_ids=tgt).logits,
                           native(src_ids=src, tgt_ids=tgt)["logits"])


@pytest.mark.parametrize("kind", available_mixers() + ["R+V"])
def test_classifier_logits_equal_native(kind):
    native = tiny_classifier(kind)
    model = SynthesizerForSequenceClassification.from_native(native).eval()
    src = source_batch()
    with torch.no_grad():
        assert torch.equal(model(input_ids=src).logits, native(input_ids=src)["logits"])
        # an explicit attention_mask means the same padding as the pad ids
        assert torch.equal(model(input_ids=src, attention_mask=(src != 0).long()).logits,
                           native(input_ids=src)["logits"])


@pytest.mark.parametrize("kind", KINDS)
def test_lm_greedy_and_beam_equal_native(kind):
    native = tiny_lm(kind)
    model = SynthesizerForCausalLM.from_native(native).eval()
    ids = prompts()
    hf = model.generate(ids, max_new_tokens=10, do_sample=False)[:, ids.shape[1]:]
    ref = sample(native, ids, max_new_tokens=10, temperature=0)
    assert until_eos(hf) == ref.to_lists()
    # beam search from <bos> (the native loop's start), no length penalty: both rank by log-probability alone
    k, bos = 3, torch.full((2, 1), BOS)
    hf = model.generate(bos, max_new_tokens=10, num_beams=k, length_penalty=0.0, early_stopping=True,
                        do_sample=False)[:, 1:]
    with torch.no_grad():
        ref = beam_search_loop(LMStepper(native, 2 * k, use_cache=True), 2, BOS, EOS, 0, k, 0.0, 10)
    assert until_eos(hf) == ref.to_lists()


@pytest.mark.parametrize("kind", KINDS)
def test_seq2seq_greedy_and_beam_equal_native(kind):
    native = tiny_seq2seq(kind)
    model = SynthesizerForConditionalGeneration.from_native(native).eval()
    src = source_batch()  # row 1 is padded: no attention_mask given, the mask comes from the pad id as natively
    hf = model.generate(src, max_new_tokens=10, do_sample=False)[:, 1:]
    assert until_eos(hf) == greedy_search(native, src, max_new_tokens=10).to_lists()
    hf = model.generate(src, max_new_tokens=10, num_beams=3, length_penalty=0.0, early_stopping=True,
                        do_sample=False)[:, 1:]
    assert until_eos(hf) == beam_search(native, src, beam_size=3, alpha=0.0, max_new_tokens=10).to_lists()


def test_losses_follow_the_transformers_label_conventions():
    native = tiny_lm("R+V")
    model = SynthesizerForCausalLM.from_native(native).eval()
    ids = prompts(length=8)
    labels = ids.clone()
    labels[0, -2:] = -100
    with torch.no_grad():
        # transformers: labels aligned with input_ids, the model shifts; native: labels already shifted
        hf = model(input_ids=ids, labels=labels).loss
        # the same mean over the same tokens, reduced in another order: equal to float rounding
        torch.testing.assert_close(hf, native(input_ids=ids[:, :-1], labels=labels[:, 1:])["loss"], atol=1e-6, rtol=0)
    seq2seq = tiny_seq2seq("R")
    model = SynthesizerForConditionalGeneration.from_native(seq2seq).eval()
    src, targets = source_batch(), prompts(length=5)[:, 1:]  # y1 .. y4
    decoder_inputs = torch.cat([torch.full((3, 1), BOS), targets[:, :-1]], dim=1)  # <bos> y1 .. y3
    with torch.no_grad():
        hf = model(input_ids=src, labels=targets).loss  # decoder inputs built from the labels
        assert torch.equal(hf, seq2seq(src_ids=src, tgt_ids=decoder_inputs, labels=targets)["loss"])
