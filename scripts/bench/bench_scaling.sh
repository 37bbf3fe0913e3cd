#!/usr/bin/env bash
# Data-parallel scaling benchmark: GPT-1.5B (or SCALING_MODEL), batch 12 per GPU, T=1024, random tokens,
# bf16 and fp8, on 1, 2, 4, ... GPUs of this machine (up to SCALING_MAX_GPUS or all), one process per GPU
# started with torchrun's variables. Prints one table: median step ms, global tokens/s, scaling efficiency
# against 1 GPU (tokens/s / (GPUs x 1-GPU tokens/s)), peak memory per GPU. Logs under $OUT (or
# logs/scaling). Usage: bash scripts/bench/bench_scaling.sh [STEPS]
set -u
export NCCL_NVLS_ENABLE=0
STEPS=${1:-20}
BIN=${TRAIN_GPT:-./train_gpt}
MODEL=${SCALING_MODEL:-1.5b}
BATCH=${SCALING_BATCH:-12}
OUTDIR=${OUT:-logs}/scaling
mkdir -p "$OUTDIR"
ngpu=$(nvidia-smi -L | wc -l)
max=${SCALING_MAX_GPUS:-$ngpu}
counts=()
for n in 1 2 4 8 16; do [ "$n" -le "$max" ] && counts+=("$n"); done
source "$(dirname "$0")/../../test/lib_gpu.sh"  # free_port

run() {  # precision gpus
  local prec=$1 n=$2 dir=$OUTDIR/$1_$2gpu port pids=()
  port=$(free_port)
  mkdir -p "$dir"
  rm -f "$dir/log/train.jsonl"  # no earlier call's summary for a run that fails at once
  for ((r = n - 1; r >= 0; r--)); do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n \
      "$BIN" --model "$MODEL" --batch "$BATCH" --seq 1024 --steps "$STEPS" --precision "$prec" \
      --train-data random --log-every 5 --log-dir "$dir/log" > "$dir/rank$r.txt" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  grep "^summary:" "$dir/rank0.txt" || { echo "$prec on $n GPUs failed (status $rc):"; tail -5 "$dir/rank0.txt"; }
}
for prec in bf16 fp8; do
  for n in "${counts[@]}"; do run "$prec" "$n"; done
done

python3 - "$OUTDIR" "${counts[@]}" <<'EOF'
import json, os, sys
outdir, counts = sys.argv[1], [int(c) for c in sys.argv[2:]]
print(f"\n{'precision':9} {'GPUs':>4} {'step ms':>8} {'tokens/s':>10} {'scaling':>8} {'peak GB/GPU':>11}")
for prec in ("bf16", "fp8"):
    base = None
    for n in counts:
        path = os.path.join(outdir, f"{prec}_{n}gpu", "log", "train.jsonl")
        try:
            s = [json.loads(l) for l in open(path) if '"summary"' in l][-1]
        except (OSError, IndexError):
            print(f"{prec:9} {n:>4} {'failed':>8}")
            continue
        tps = s["tokens_per_s"]
        base = base or (tps if n == 1 else None)
        eff = f"{tps / (n * base):.3f}" if base else "-"
        print(f"{prec:9} {n:>4} {s['median_step_ms']:>8.1f} {tps:>10.0f} {eff:>8} {s['peak_mem_gb']:>11.1f}")
EOF
