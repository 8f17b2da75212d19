"""``synthformer synthesize``: a model folder in, a synthesized folder out; the input folder is never modified, and
bad input is one line naming the bad value and what was expected."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from synthformer.cli.main import main  # noqa: E402
from synthformer.hf.synthesize import from_pretrained, synthesized_layers  # noqa: E402

from .synth_models import build  # noqa: E402

pytestmark = pytest.mark.usefixtures("restore_logging")
TEXT = "the quick brown fox jumps over the lazy dog; " * 80


def folder_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def char_tokenizer():
    """A character tokenizer whose ids fit the tiny models' 40 (made here: nothing is downloaded)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(TEXT))
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


@pytest.fixture
def llama_dir(tmp_path) -> Path:
    folder = tmp_path / "llama"
    build("llama").save_pretrained(str(folder))
    char_tokenizer().save_pretrained(str(folder))
    return folder


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_grown_folder_gives_the_pretrained_logits_and_the_input_is_untouched(llama_dir, tmp_path, capsys):
    before = folder_hash(llama_dir)
    out = tmp_path / "llama-rv"
    code, printed, err = run(capsys, "synthesize", llama_dir, "--kind", "R+V", "--out", out, "--max-len", "16")
    assert code == 0, err
    assert "2 self-attention layers synthesized (0: R+V, 1: R+V), max_len 16" in printed
    assert folder_hash(llama_dir) == before
    assert (out / "tokenizer.json").is_file() and (out / "tokenizer_config.json").is_file()
    model = from_pretrained(str(out))
    ids = torch.randint(3, 40, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).logits, build("llama")(input_ids=ids).logits, atol=1e-5,
                                   rtol=0)


def test_transfer_and_distillation(llama_dir, tmp_path, capsys):
    before = folder_hash(llama_dir)
    text = tmp_path / "sample.txt"
    text.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "llama-r"
    code, printed, err = run(capsys, "synthesize", llama_dir, "--kind", "R", "--layers", "1", "--out", out,
                             "--data", text, "--distill-steps", "3", "--seq-len", "16")
    assert code == 0, err
    assert "R initialised from the pretrained mean attention in 1 layers" in printed
    assert "distilled 3 steps: layer-output MSE" in printed
    assert folder_hash(llama_dir) == before
    assert synthesized_layers(from_pretrained(str(out))) == {"model.layers.1.self_attn.synthformer": "R"}


def test_a_dry_run_writes_nothing(llama_dir, tmp_path, capsys):
    code, printed, _ = run(capsys, "synthesize", llama_dir, "--kind", "D", "--dry-run", "--out", tmp_path / "no")
    assert code == 0 and "dry run: nothing written" in printed
    # the parameters added per layer and the memory they take, summing to the total
    per_layer = [int(line.split(": ")[1].split(" parameters")[0].replace(",", ""))
                 for line in printed.splitlines() if line.startswith("  layer ")]
    total = int(printed.split("synthesized")[1].split(" parameters added")[0].rsplit(", ", 1)[1].replace(",", ""))
    assert per_layer and sum(per_layer) == total > 0 and "MiB in fp32" in printed and "to train with AdamW" in printed
    assert "parameters added" in printed and not (tmp_path / "no").exists()


def _other_model(tmp_path) -> Path:
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    folder = tmp_path / "neox"
    GPTNeoXForCausalLM(GPTNeoXConfig(vocab_size=40, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                     intermediate_size=64)).save_pretrained(str(folder))
    return folder


def _long_llama(tmp_path) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path / "long"
    LlamaForCausalLM(LlamaConfig(vocab_size=40, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                 intermediate_size=64, max_position_embeddings=8192)).save_pretrained(str(folder))
    return folder


@pytest.mark.parametrize(("make", "args", "message"), [
    (None, ["--kind", "Q"], "kind='Q': unknown attention kind 'Q'; valid kinds: V"),
    (None, ["--kind", "R", "--layers", "5"], "layer index 5 is out of range: the model has 2 self-attention layers"),
    (None, ["--kind", "R", "--max-len", "64"], "max_len=64 exceeds the model's own 32 positions"),
    (None, ["--kind", "R", "--distill-steps", "2"], "--distill-steps needs --data TEXT"),
    (None, ["--kind", "R", "--data", "missing.txt"], "--data missing.txt: no such file"),
    (None, ["--kind", "Conv"], "kind 'Conv' reads neighbouring tokens"),
    (_other_model, ["--kind", "R"], "model_type='gpt_neox' cannot be synthesized: expected one of llama, mistral"),
    (_long_llama, ["--kind", "R"], "max_len=8192: kind R would hold 268,435,456 parameters in each layer of 4 heads"),
])
def test_bad_input_is_one_line_and_nothing_is_changed(make, args, message, llama_dir, tmp_path, capsys):
    folder = make(tmp_path) if make else llama_dir
    before = folder_hash(folder)
    out = tmp_path / "out"
    code, printed, err = run(capsys, "synthesize", folder, *args, "--out", out)
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("synthformer synthesize: error: ")
    assert folder_hash(folder) == before and not out.exists()


def test_an_output_folder_in_use_is_refused(llama_dir, tmp_path, capsys):
    out = tmp_path / "used"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    code, _, err = run(capsys, "synthesize", llama_dir, "--kind", "R", "--out", out)
    assert code == 2 and "--out" in err and "exists and is not empty; pass --overwrite" in err
    assert (out / "keep.txt").read_text(encoding="utf-8") == "mine"
    code, _, err = run(capsys, "synthesize", llama_dir, "--kind", "R", "--out", llama_dir / "sub")
    assert code == 2 and "is inside MODEL_DIR" in err
    code, _, err = run(capsys, "synthesize", tmp_path / "nothing", "--kind", "R", "--out", tmp_path / "o")
    assert code == 2 and "no config.json" in err
