"""lm-evaluation-harness's seq2seq backend (``HFLM(backend="seq2seq")``, the code behind ``--model hf
--model_args ...,backend=seq2seq``) on an exported encoder-decoder at batch size 4: it pads the sources of a batch on
the left and asks ``generate()`` for ``max_length`` = context + ``max_gen_toks`` decoder tokens, more than the
model's positions; each generation equals ``synthformer generate``'s on that source alone."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("lm_eval", reason="lm-evaluation-harness is in the hf extra: pip install 'synthformer[hf]'")

import torch  # noqa: E402
from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.models.huggingface import HFLM  # noqa: E402
from safetensors.torch import save_model  # noqa: E402

from synthformer.cli.main import main  # noqa: E402
from synthformer.hf import SynthesizerForConditionalGeneration  # noqa: E402
from synthformer.tasks import load_run  # noqa: E402
from tests.tasks.helpers import seq2seq_config, write_yaml  # noqa: E402

from .helpers import spread, tiny_seq2seq  # noqa: E402

SOURCES = ["12345", "45", "678", "2", "3145"]  # a left-padded batch of 4 (the harness sorts by length), then one
MAX_LEN = 8  # the reversal run's positions (seq2seq_config)
LOGGER = "synthformer.hf.modeling_base"
GEN = {"until": ["\n\n"], "max_gen_toks": MAX_LEN, "do_sample": False}


def seeded_run(tmp: Path) -> tuple[Path, Path]:
    """(run directory, exported folder) of the digit-reversal encoder-decoder (D encoder, R decoder), its weights
    redrawn after one training step: a model trained for seconds answers nearly the same for every source, which
    would hide a wrong source encoding; <pad>, <unk> and <bos> get zero output rows (never the best token)."""
    root = logging.getLogger()  # the CLI configures the root logger: put it back as it was
    level, handlers = root.level, list(root.handlers)
    try:
        run_dir, folder = tmp / "rev", tmp / "rev_hf"
        config = seq2seq_config(steps=1, save_every=1, eval_every=100)
        assert main(["train", str(write_yaml(tmp / "rev.yaml", config)), "--run-dir", str(run_dir), "-q"]) == 0
        model = spread(load_run(run_dir).model, seed=2, std=1.5)
        with torch.no_grad():
            model.lm_head.weight[:3] = 0  # tied: also the source and target embeddings of those ids
        save_model(model, str(run_dir / "checkpoints" / "step_000001" / "model.safetensors"))
        assert main(["export", str(run_dir), str(folder), "-q"]) == 0
    finally:
        root.setLevel(level)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
    return run_dir, folder


def test_the_harness_seq2seq_backend_generates_what_synthformer_does(tmp_path, capsys, caplog):
    run_dir, folder = seeded_run(tmp_path)
    harness = HFLM(pretrained=str(folder), backend="seq2seq", batch_size=4, dtype="float32", device="cpu")
    requests = [Instance(request_type="generate_until", doc={}, arguments=(s, GEN), idx=i)
                for i, s in enumerate(SOURCES)]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        generated = harness.generate_until(requests)
    # max_length = context + max_gen_toks is past the 8 positions: decoding goes on until they run out, said once
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER].count(
        f"max_length 14 counts more decoder tokens than the model's max_len ({MAX_LEN} positions): generation "
        f"stops after {MAX_LEN} tokens (said once per model)") == 1
    capsys.readouterr()  # drop what training and export printed
    for source, text in zip(SOURCES, generated, strict=True):
        assert main(["generate", str(run_dir), "--prompt", source, "--beam", "1", "--max-new-tokens",
                     str(MAX_LEN)]) == 0
        assert text == capsys.readouterr().out.removesuffix("\n")
    assert len(set(generated)) >= 4 and all(generated)  # the sources are told apart


def test_max_length_past_the_positions_is_capped_and_max_new_tokens_refused(caplog):
    model = SynthesizerForConditionalGeneration.from_native(tiny_seq2seq("R", max_len=6)).eval()
    source = torch.tensor([[5, 6, 7, 3], [0, 0, 8, 3]])
    mask = (source != 0).long()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        capped = model.generate(source, attention_mask=mask, max_length=20, do_sample=False, eos_token_id=None)
        again = model.generate(source, attention_mask=mask, max_length=20, do_sample=False, eos_token_id=None)
    assert capped.shape == again.shape == (2, 7)  # <bos> and the 6 positions' tokens
    assert torch.equal(capped, model.generate(source, attention_mask=mask, max_new_tokens=6, do_sample=False,
                                              eos_token_id=None))
    assert len([r for r in caplog.records if r.name == LOGGER]) == 1  # once per model
    with pytest.raises(ValueError, match="would read 7 positions .* max_len is 6"):
        model.generate(source, attention_mask=mask, max_new_tokens=7)
