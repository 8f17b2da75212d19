"""Synthesizing pretrained transformers models: what each kind keeps of the pretrained model's loss.

For each family (a Llama- and a GPT-2-shaped model built with transformers' own classes), a small model is
pretrained on Tiny Shakespeare (characters), then for each kind it is synthesized (``synthformer.hf.synthesize``;
a kind with R and no V starts from the pretrained mean attention and is distilled for ``--distill-steps``) and
finetuned for ``--finetune-steps``; V itself (the pretrained model finetuned as long) is the reference. One row per
(family, kind, seed): the validation loss of the pretrained model, of the synthesized one before and after the
attention transfer (step 0 of finetuning) and after finetuning, the finetuning's steps per second, and the trivial
baseline beside them: a unigram model of the training tokens (add-one smoothed) on the same validation tokens.
Seeds change the synthesized parameters' initialisation and the finetuning's batch order; the pretrained model is
one (seed 0).

Resumable: pretraining checkpoints go to ``--work`` (``Trainer`` resumes from the last), a finished pretrained model
is kept there, and a (family, kind) row already in ``--record`` with the same settings is not run again.

Usage (hours of CPU; run it on a quiet machine):
    python benchmarks/studies/hf_synthesize.py --record benchmarks/results/hf_synthesize.jsonl
    python benchmarks/studies/hf_synthesize.py --smoke --work /tmp/hfs --record /tmp/hfs.jsonl  # a few steps: it runs
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import ROOT, add_record_options, commit, load, write_record  # noqa: E402 - benchmarks/records.py

FAMILIES = ("llama", "gpt2")
KINDS = ("R+V", "D+V", "R", "D")
SETTINGS = ("width", "layers", "heads", "seq_len", "pretrain_steps", "finetune_steps", "distill_steps", "batch", "lr")


def char_tokenizer(text: str):
    """A character-level tokenizer of ``text`` in transformers' form (made here: nothing is downloaded)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(sorted(set(text)))}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


def build(family: str, vocab: int, args: argparse.Namespace) -> torch.nn.Module:
    import transformers as tf

    if family == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(
            vocab_size=vocab, hidden_size=args.width, intermediate_size=4 * args.width, num_hidden_layers=args.layers,
            num_attention_heads=args.heads, num_key_value_heads=args.heads, max_position_embeddings=args.seq_len))
    return tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=vocab, n_embd=args.width, n_layer=args.layers,
                                            n_head=args.heads, n_positions=args.seq_len, bos_token_id=1,
                                            eos_token_id=2))


def blocks(ids: torch.Tensor, length: int) -> list[dict[str, torch.Tensor]]:
    rows = ids[: ids.numel() // length * length].view(-1, length)  # (N, L)
    return [{"input_ids": r, "labels": r.clone()} for r in rows]


def train(model, data, steps: int, args, out: Path, resume: bool = False, seed: int = 0) -> float:
    """Train ``steps`` steps with transformers' Trainer; returns the training steps per second."""
    from transformers import Trainer, TrainingArguments

    targs = TrainingArguments(str(out), max_steps=steps, per_device_train_batch_size=args.batch,
                              learning_rate=args.lr, warmup_steps=min(100, steps // 10), report_to=[],
                              logging_steps=max(1, steps // 20), save_steps=max(1, steps // 10), save_total_limit=1,
                              use_cpu=not torch.cuda.is_available(), seed=seed, disable_tqdm=True)
    resume_from = resume and any(out.glob("checkpoint-*"))
    result = Trainer(model=model, args=targs, train_dataset=data).train(
        resume_from_checkpoint=True if resume_from else None)
    return float(result.metrics.get("train_steps_per_second", math.nan))


def unigram_loss(train_ids: torch.Tensor, valid: list[dict[str, torch.Tensor]], vocab: int) -> float:
    """Nats per token of ``valid``'s predicted tokens (the model scores all but each block's first) under the
    training tokens' add-one smoothed unigram frequencies: what a model that reads no context reaches (the
    language-model task type's baseline, in nats)."""
    from synthformer.tasks.types.lm import unigram_bits_per_token

    targets = torch.cat([d["input_ids"][1:] for d in valid])  # (N,)
    return unigram_bits_per_token(train_ids, targets, vocab) * math.log(2)


@torch.no_grad()
def val_loss(model, data, batch: int = 16) -> float:
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(data), batch):
        ids = torch.stack([d["input_ids"] for d in data[i : i + batch]]).to(model.device)
        total += float(model(input_ids=ids, labels=ids).loss) * ids.shape[0]
        count += ids.shape[0]
    return total / count


def done_rows(record: Path | None, settings: dict) -> set[tuple[str, str]]:
    if record is None or not record.is_file():
        return set()
    seen = set()
    for line in record.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        for row in entry.get("rows", []):
            if row.get("settings") == settings:
                seen.add((row["family"], row["kind"], row.get("seed", 0)))
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "tiny_shakespeare" / "input.txt")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "hf_synthesize")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS))
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--pretrain-steps", type=int, default=3000)
    parser.add_argument("--finetune-steps", type=int, default=500)
    parser.add_argument("--distill-steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seeds", type=int, default=3, help="finetuning runs per (family, kind)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes and a few steps: checks that it runs")
    add_record_options(parser)
    args = parser.parse_args()
    if args.smoke:
        args.width, args.layers, args.heads, args.seq_len = 32, 1, 2, 32
        args.pretrain_steps, args.finetune_steps, args.distill_steps, args.batch = 3, 2, 2, 4
    if args.threads:
        torch.set_num_threads(args.threads)
    from synthformer.hf.synthesize import synthesize
    from synthformer.hf.synthesize.transfer import distill, init_random_from_attention, mean_attention, pretrained_copy

    started, launched = load(), commit()
    text = args.data.read_text(encoding="utf-8")
    if args.smoke:
        text = text[:20000]
    tokenizer = char_tokenizer(text)
    ids = torch.tensor(tokenizer(text, add_special_tokens=False).input_ids)  # (N,)
    split = int(0.9 * ids.numel())
    train_data, valid = blocks(ids[:split], args.seq_len), blocks(ids[split:], args.seq_len)[:64]
    settings = {k: getattr(args, k) for k in SETTINGS}
    skip = done_rows(args.record, settings)
    unigram = unigram_loss(ids[:split], valid, len(tokenizer))
    rows = []
    for family in args.families:
        folder = args.work / family / "pretrained"
        if not (folder / "config.json").is_file():
            torch.manual_seed(0)
            model = build(family, len(tokenizer), args)
            train(model, train_data, args.pretrain_steps, args, args.work / family / "checkpoints", resume=True)
            model.save_pretrained(str(folder))
            tokenizer.save_pretrained(str(folder))
        import transformers

        load_pretrained = getattr(transformers, json.loads((folder / "config.json").read_text())["architectures"][0])
        pretrained_loss = val_loss(load_pretrained.from_pretrained(str(folder)), valid)
        for seed in range(args.seeds):
            for kind in ["V", *args.kinds]:
                if (family, kind, seed) in skip:
                    continue
                began = time.perf_counter()
                model = load_pretrained.from_pretrained(str(folder))
                losses: list[float] = []
                synthesized = None
                if kind != "V":
                    sample = [torch.stack([d["input_ids"] for d in train_data[i : i + args.batch]])
                              for i in range(0, min(len(train_data), 8 * args.batch), args.batch)]
                    means, teacher = mean_attention(model, sample), pretrained_copy(model)
                    torch.manual_seed(seed)  # the synthesized parameters' initialisation
                    synthesize(model, kind=kind, max_len=args.seq_len)
                    synthesized = val_loss(model, valid)  # before any transfer (exact start for the +V mixtures)
                    init_random_from_attention(model, means)
                    if "V" not in kind.split("+"):
                        losses = distill(model, teacher, sample, args.distill_steps)
                step0 = val_loss(model, valid)
                rate = train(model.train(), train_data, args.finetune_steps, args,
                             args.work / family / f"finetune-{kind}-seed{seed}", seed=seed)
                after = val_loss(model, valid)
                rows.append({"family": family, "kind": kind, "seed": seed, "settings": settings,
                             "val_loss_pretrained": pretrained_loss, "val_loss_synthesized": synthesized,
                             "val_loss_step0": step0, "val_loss_finetuned": after, "val_ppl_finetuned": math.exp(after),
                             "val_loss_unigram": unigram, "finetune_steps_per_second": rate,
                             "distill_mse": [losses[0], losses[-1]] if losses else None,
                             "seconds": round(time.perf_counter() - began, 1)})
                print(json.dumps(rows[-1]))
                # one entry per row: a killed run keeps what it finished
                write_record(args, [rows[-1]], started, launched)


if __name__ == "__main__":
    main()
