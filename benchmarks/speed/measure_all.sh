#!/usr/bin/env bash
# Every timing table of docs/benchmarks.md, measured in sequence and appended to benchmarks/results/bench_*.jsonl.
# Run it on a QUIET machine (nothing else running: no tests, no training, no second lane), from the repository
# root: `bash benchmarks/speed/measure_all.sh` (about 1.5 hours, 65-100 minutes, on the 2-core development CPU;
# step 6, LRA's Table 2, is 20-25 of them).
# Pass --shared-cpu as the first argument only to try it out: the entries then say the CPU was shared, and such
# timings are not published. It also measures docs/reliability.md's "Threads" table.
# Then `python benchmarks/docs_tables.py` rebuilds every table of docs/benchmarks.md and reliability.md's Threads
# table from these records (builders: benchmarks/doc_tables/bench.py and doc_tables/bench_goals.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
SHARED=("$@")
R=benchmarks/results
TUNED=(env MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=68719476736)
A=(python benchmarks/speed/attention.py)

# 1. the attention layer: the full tables (~15 min), the attention layer's targets at L=256, L=512/1024, the allocator
"${TUNED[@]}" "${A[@]}" --lengths 128 256 512 1024 --record $R/bench_module.jsonl "${SHARED[@]}"
"${A[@]}" --lengths 256 --modes fwd+bwd --repeats 21 --warmup 3 --no-memory --kinds V R Fix FR D FD R+V D+V \
    --record $R/bench_targets_l256.jsonl "${SHARED[@]}"
"${A[@]}" --lengths 512 1024 --modes fwd+bwd --repeats 9 --warmup 2 --no-memory --kinds V R Fix FR D FD R+V D+V R+D \
    --record $R/bench_l512_l1024.jsonl "${SHARED[@]}"
ALLOC=(--lengths 1024 --modes fwd+bwd fwd --repeats 5 --warmup 1 --no-memory --kinds V D FD R+V D+V Conv)
"${A[@]}" "${ALLOC[@]}" --record $R/bench_allocator.jsonl --name allocator-default "${SHARED[@]}"
"${TUNED[@]}" "${A[@]}" "${ALLOC[@]}" --record $R/bench_allocator.jsonl --name allocator-tuned "${SHARED[@]}"
"${TUNED[@]}" "${A[@]}" --lengths 256 --causal --modes fwd+bwd --no-memory --record $R/bench_causal.jsonl "${SHARED[@]}"
"${TUNED[@]}" "${A[@]}" --lengths 256 --dtype bf16 --modes fwd+bwd fwd --no-memory --record $R/bench_bf16.jsonl \
    "${SHARED[@]}"
"${A[@]}" --fr-memory --record $R/bench_fr_memory.jsonl "${SHARED[@]}"

# 2. incremental decoding
"${A[@]}" --decode --contexts 128 256 512 1024 --record $R/bench_decode.jsonl "${SHARED[@]}"

# 3. the paper's Table 4 at model level, fp32 (~5.5 min) and bf16
python benchmarks/speed/record_bench.py --record $R/bench_model.jsonl "${SHARED[@]}" -- --preset lm-base \
    --vocab-size 8000
# bf16 at model level only where the CPU has bf16 instructions (AVX512-BF16 / AMX): elsewhere it is emulated and the
# run takes hours (an AVX2 host, 2026-11-26); docs/benchmarks.md shows its table only once this record exists
if grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo 2>/dev/null; then
  python benchmarks/speed/record_bench.py --record $R/bench_model_bf16.jsonl "${SHARED[@]}" -- --preset lm-base \
      --vocab-size 8000 --bf16
fi

# 4. Hugging Face generate() against the native loops (needs the hf extra)
python benchmarks/speed/hf_generate.py --threads 2 --record $R/bench_hf_generate.jsonl "${SHARED[@]}"

# 5. the fused materialized path: its goals (~3 min) and the backends of a fused block
"${TUNED[@]}" "${A[@]}" --goals --record $R/bench_goals.jsonl "${SHARED[@]}"
"${TUNED[@]}" python benchmarks/speed/fused_backends.py --record $R/bench_fused_backends.jsonl "${SHARED[@]}"
# the long-length goals at 1K and 2K, dropout 0 and 0.1, as a user runs them (no allocator settings; ~20 min)
python benchmarks/speed/speed_goals.py --record $R/bench_speed_goals.jsonl "${SHARED[@]}"

# 6. LRA's Table 2: LRA Text's classifier at 1K-4K, 8 kinds, bidirectional and causal (~20-25 min)
python benchmarks/speed/lra_table2.py --no-progress --record $R/bench_lra_table2.jsonl "${SHARED[@]}"
# and where a step's time goes per kind at 2K (~3 min)
python benchmarks/speed/lra_profile.py --record $R/bench_lra_profile.jsonl "${SHARED[@]}"

# docs/reliability.md's "Threads" table: 1 to 3 training processes sharing the cores (~3 min)
python benchmarks/speed/threads.py --seconds 20 --record $R/bench_threads.jsonl "${SHARED[@]}"
echo "recorded: $(ls $R/bench_*.jsonl | tr '\n' ' ')"
