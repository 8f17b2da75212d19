"""generate() through the Hugging Face wrapper against synthformer's own decoders, and the cache's bytes per token.

For each kind (V and R by default) one language model of the ``lm-base`` preset is built; the native decoder
(``greedy_loop`` / ``beam_search_loop`` over an ``LMStepper`` on the native cache) and
``SynthesizerForCausalLM.generate()`` (the same model, wrapped, on ``SynthesizerCache``) each produce ``--new-tokens``
tokens for ``--batch`` prompts of one ``<bos>``, greedy and with beam search (length penalty 0.6). ``<eos>`` is
disabled in both so every run produces exactly the same number of tokens. Times are medians over ``--repeats``,
native and wrapper alternating (background load hits both alike); the wrapper's cost is ``time_hf / time_native -
1`` (goal: at most 10%). The cache's bytes per token (preallocated bytes / (batch * max_len), read from the
``SynthesizerCache`` that ``generate()`` returns) are reported for each kind, and R's against V's (goal: 0.5).

Usage (the full measurement, for docs/benchmarks.md; run it on a quiet machine):
    python benchmarks/speed/hf_generate.py --threads 2 --json hf_generate.json
    python benchmarks/speed/hf_generate.py --quick    # a reduced size: checks that everything runs (seconds)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from synthformer.generate import LMStepper, beam_search_loop, greedy_loop
from synthformer.hf import SynthesizerForCausalLM
from synthformer.models import build_model, get_preset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: records.py and the rooms
from records import add_record_options, load, write_record  # noqa: E402 - benchmarks/records.py

NO_EOS = -1  # an id no token has: both decoders run to the token budget


def native_run(model, batch: int, new_tokens: int, beams: int) -> torch.Tensor:
    """The native decoder: greedy (beams 1) or beam search over the native cache; returns the tokens."""
    config = model.config
    with torch.no_grad():
        if beams == 1:
            stepper = LMStepper(model, batch, use_cache=True)
            return greedy_loop(stepper, batch, config.bos_id, NO_EOS, config.pad_id, new_tokens).tokens
        stepper = LMStepper(model, batch * beams, use_cache=True)
        return beam_search_loop(stepper, batch, config.bos_id, NO_EOS, config.pad_id, beams, 0.6, new_tokens).tokens


def hf_run(wrapper, batch: int, new_tokens: int, beams: int, return_cache: bool = False):
    """``generate()`` with the same settings; returns the new tokens (and the cache when asked)."""
    bos = torch.full((batch, 1), wrapper.config.bos_id, dtype=torch.long)
    options = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, eos_token_id=None,
                   num_beams=beams, return_dict_in_generate=True)
    if beams > 1:
        options.update(length_penalty=0.6, early_stopping=True)
    out = wrapper.generate(bos, **options)
    tokens = out.sequences[:, 1:]  # (B, new_tokens): without the <bos> prompt
    return (tokens, out.past_key_values) if return_cache else tokens


def seconds(fn, *args) -> float:
    """Wall time of one call ``fn(*args)``."""
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def build(kind: str, args) -> SynthesizerForCausalLM:
    config = dataclasses.replace(get_preset(args.preset), decoder_kind=kind, dropout=0.0, attention_dropout=0.0)
    if args.quick:
        config = dataclasses.replace(config, d_model=64, n_heads=4, n_layers=2, d_ff=128, vocab_size=1000,
                                     max_len=max(64, args.new_tokens))
    torch.manual_seed(0)
    return SynthesizerForCausalLM.from_native(build_model(config)).eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="lm-base")
    parser.add_argument("--kinds", nargs="+", default=["V", "R"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--quick", action="store_true",
                        help="a reduced model (d_model 64, 2 layers), batch 2, 16 new tokens, 1 repeat")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    add_record_options(parser)
    args = parser.parse_args()
    started = load()
    if args.quick:
        args.batch, args.new_tokens, args.repeats = 2, 16, 1
    if args.threads:
        torch.set_num_threads(args.threads)
    rows, cache_bytes = [], {}
    for kind in args.kinds:
        wrapper = build(kind, args)
        native = wrapper.model
        for beams in args.beams:
            # warm-up, and the check that both produce the same tokens (the timings compare equal work)
            same = torch.equal(native_run(native, args.batch, args.new_tokens, beams),
                               hf_run(wrapper, args.batch, args.new_tokens, beams))
            t_native, t_hf = [], []
            for _ in range(args.repeats):  # alternate, so background load hits both alike
                t_native.append(seconds(native_run, native, args.batch, args.new_tokens, beams))
                t_hf.append(seconds(hf_run, wrapper, args.batch, args.new_tokens, beams))
            tn, th = statistics.median(t_native), statistics.median(t_hf)
            tokens = args.batch * args.new_tokens
            rows.append({"kind": kind, "beams": beams, "batch": args.batch, "new_tokens": args.new_tokens,
                         "native_tokens_per_s": tokens / tn, "hf_tokens_per_s": tokens / th,
                         "hf_overhead": th / tn - 1.0, "same_tokens": same})
        _, cache = hf_run(wrapper, args.batch, 2, 1, return_cache=True)
        cache_bytes[kind] = cache.bytes_per_token()
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, threads "
          f"{torch.get_num_threads()}, preset {args.preset}{' (quick: reduced size)' if args.quick else ''}")
    print("| kind | beams | native tokens/s | HF generate() tokens/s | HF overhead | same tokens |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['kind']} | {r['beams']} | {r['native_tokens_per_s']:.1f} | {r['hf_tokens_per_s']:.1f} | "
              f"{100 * r['hf_overhead']:+.1f}% | {r['same_tokens']} |")
    print("\n| kind | cache bytes per token (batch row and position) | vs V |")
    print("|---|---|---|")
    for kind, b in cache_bytes.items():
        ratio = f"{b / cache_bytes['V']:.2f}x" if "V" in cache_bytes else "-"
        print(f"| {kind} | {b:,.0f} | {ratio} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"rows": rows, "cache_bytes_per_token": cache_bytes, "threads": torch.get_num_threads(),
                       "preset": args.preset, "quick": args.quick}, f, indent=1)
    write_record(args, rows, started, cache_bytes_per_token=cache_bytes, preset=args.preset, quick=args.quick)


if __name__ == "__main__":
    main()
