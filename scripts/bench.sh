#!/usr/bin/env bash
# The project's reference workload (the PyTorch FP8 report's): GPT-1.5B, batch 12 x 1024, random tokens, one GPU, bf16 and fp8 in ONE
# run on ONE machine, median step over the steady steps. Usage: scripts/bench.sh [STEPS] [OUTDIR] [precisions...]
set -u
steps=${1:-30}; out=${2:-logs/bench}; shift 2 2>/dev/null || true
precisions=("$@"); [ ${#precisions[@]} -eq 0 ] && precisions=(bf16 fp8)
mkdir -p "$out"
for p in "${precisions[@]}"; do
  ./train_gpt --model 1.5b --batch 12 --seq 1024 --train-data random --steps "$steps" --precision "$p" \
    --log-every 5 --profile ${BENCH_ARGS:-} --log-dir "$out/$p" > "$out/$p.log" 2>&1 || { echo "bench: $p failed:"; tail -5 "$out/$p.log"; }
done
echo "| precision | median step ms | tokens/s | TFLOP/s (honest) | MFU | peak GB |"
echo "|---|---|---|---|---|---|"
for p in "${precisions[@]}"; do
  python3 - "$out/$p/train.jsonl" "$p" <<'PY' || true
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in recs if r["kind"] == "summary"]
if s:
    s = s[0]
    print(f"| {sys.argv[2]} | {s['median_step_ms']:.1f} | {s['tokens_per_s']:.0f} | {s['tflops']:.1f} | {100*s['mfu']:.1f}% | {s['peak_mem_gb']:.1f} |")
PY
done
