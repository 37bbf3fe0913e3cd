#!/usr/bin/env bash
# `make bench`: the benchmark workloads in ONE invocation on ONE machine, random tokens, one GPU:
#   GPT-1.5B, batch 12 x 1024 (the report's): train_gpt bf16 and fp8 (with --profile), the PyTorch model of the
#     report (BF16 autocast + torch.compile; torchao.float8 + compile when torchao is installed);
#   GPT-2 124M, batch 16 x 1024 (llm.c's home size): train_gpt bf16 and fp8;
#   llm.c (BF16) at both sizes when LLMC points to its train_gpt2cu binary (skipped with a message otherwise).
# Prints one table per model (median step ms over the steady steps, tokens/s, honest TFLOP/s, the report's
# formula, MFU, peak GB as the driver reports it, speed ratios, and the SM clock each row ran at with how much of
# its time the power cap held the clock down), writes bench.json and, with matplotlib, bench.png.
# Usage: scripts/bench/bench.sh [STEPS] [OUTDIR]
#   MODEL=1.5b|124m|both (default both); LLMC=path/to/train_gpt2cu; BENCH_ARGS: extra train_gpt flags;
#   BENCH_PYTORCH=0 skips PyTorch.
set -u
export NCCL_NVLS_ENABLE=0
steps=${1:-30}
out=${2:-${OUT:-logs}/bench}
model=${MODEL:-both}
case $model in
  1.5b) sizes="1.5b" ;;
  124m) sizes="124m" ;;
  both) sizes="1.5b 124m" ;;
  *) echo "bench: MODEL must be 1.5b, 124m or both, got '$model'" >&2; exit 2 ;;
esac
mkdir -p "$out"
rm -f "$out/pytorch.jsonl" "$out/llmc.jsonl" "$out"/gpu_*.csv "$out/bench.json" "$out/bench.png"
batch_of() { [ "$1" = 124m ] && echo 16 || echo 12; }

# llm.c reads token shards: one of random GPT-2 ids (its header: magic 20240520, version 1, token count).
llmc_ok=""
if [ -n "${LLMC:-}" ]; then
  if [ -x "$LLMC" ]; then
    llmc_ok=1
    python3 - "$out/llmc_data.bin" <<'EOF'
import random, struct, sys
n = 4 << 20
random.seed(0)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
    f.write(struct.pack(f"<{n}H", *(random.randrange(50257) for _ in range(n))))
EOF
  else
    echo "bench: LLMC=$LLMC is not an executable: llm.c rows skipped"
  fi
else
  echo "bench: llm.c rows skipped (set LLMC=path/to/llm.c/train_gpt2cu to compare with llm.c)"
fi

# llm.c runs with the cuDNN train_gpt loads (the Makefile's choice, e.g. a pip cuDNN newer than the system's):
# both sides' attention from the same library.
llmc_cudnn=$(bash scripts/find_cudnn.sh --loaded ./train_gpt)
llmc_ld=${LD_LIBRARY_PATH:-}; [ -n "$llmc_cudnn" ] && llmc_ld="$llmc_cudnn${llmc_ld:+:$llmc_ld}"
[ -n "$llmc_ok" ] && echo "bench: llm.c with train_gpt's cuDNN: ${llmc_cudnn:-the default search path}"
# The GPU's state while each row runs, for the report: nvidia-smi every 100 ms into $out/gpu_ROW.csv
# (timestamp, utilization, SM clock, power draw and limit, memory used, the clock-event reasons). An H200 training these
# models runs at its 700 W power cap, at SM clocks well below its maximum, so the same binary's step differs
# between cards by a few percent (docs/performance.md, 2026-12-04 seventh session): the table says at what
# clock each row ran. Older drivers name the reasons field clocks_throttle_reasons.
smi_reasons=clocks_event_reasons.active
nvidia-smi --query-gpu=$smi_reasons --format=csv > /dev/null 2>&1 || smi_reasons=clocks_throttle_reasons.active
smi_gpu=${CUDA_VISIBLE_DEVICES:-0}; smi_gpu=${smi_gpu%%,*}
sampled() {  # ROW COMMAND...: runs COMMAND while nvidia-smi samples the GPU into $out/gpu_ROW.csv
  local row=$1 smi rc
  shift
  local fields=timestamp,utilization.gpu,clocks.sm,power.draw,power.limit,memory.used,$smi_reasons
  nvidia-smi -i "$smi_gpu" --query-gpu=$fields --format=csv,noheader,nounits -lms 100 > "$out/gpu_$row.csv" 2>/dev/null &
  smi=$!
  "$@"
  rc=$?
  kill "$smi" 2>/dev/null
  wait "$smi" 2>/dev/null
  return $rc
}

# llm.c at size $1: its step times from its log (its peak memory: bench_report.py, from the samples).
run_llmc() {
  local size=$1 depth b log
  b=$(batch_of "$size")
  [ "$size" = 124m ] && depth=d12 || depth=d48
  log="$out/llmc_$size.log"
  sampled "llmc_$size" env LD_LIBRARY_PATH="$llmc_ld" "$LLMC" -e "$depth" -i "$out/llmc_data.bin" \
    -j "$out/llmc_data.bin" -b "$b" -t 1024 -d $((b * 1024)) -x "$steps" -v 1000000 -m 1 -s 1000000 -h 0 -y 0 \
    > "$log" 2>&1 || { echo "bench: llm.c $size failed:"; tail -3 "$log"; }
  python3 - "$log" "$size" "$b" "$out/llmc.jsonl" <<'EOF'
import json, re, statistics, sys
log, size, b, out = sys.argv[1:]
ms = [float(m.group(1)) for m in re.finditer(r"\|\s*([0-9.]+) ms\s*\|", open(log).read())]
if len(ms) < 5:
    sys.exit(f"bench: llm.c {size}: fewer than 5 step times in {log}")
med = statistics.median(ms[3:])
json.dump({"model": size, "name": "llm.c bf16", "median_step_ms": med, "tokens_per_s": int(b) * 1024 / (med / 1e3)},
          open(out, "a"))
open(out, "a").write("\n")
EOF
}

for size in $sizes; do
  for p in bf16 fp8; do
    rm -f "$out/$size/$p/train.jsonl"  # a run that fails at once must not leave an earlier bench's row standing
    sampled "${size}_$p" ./train_gpt --model "$size" --batch "$(batch_of "$size")" --seq 1024 --train-data random --steps "$steps" \
      --precision "$p" --log-every 5 --profile ${BENCH_ARGS:-} --log-dir "$out/$size/$p" > "$out/${size}_$p.log" 2>&1 ||
      { echo "bench: train_gpt $size $p failed:"; tail -5 "$out/${size}_$p.log"; }
    grep -E "^profile" "$out/${size}_$p.log" | sed "s/^/$size /"
  done
  [ -n "$llmc_ok" ] && run_llmc "$size"
done
# The tables (and bench.json, bench.png) from every result written so far under $out (scripts/bench/bench_report.py;
# it can also be run by hand on the folder of a run that was cut short).
report() { python3 scripts/bench/bench_report.py "$out" $sizes; }

if [ "${BENCH_PYTORCH:-1}" != 0 ] && [[ " $sizes " == *" 1.5b "* ]]; then
  # The PyTorch runs compile for minutes: the rows so far first, so a run cut short still has its table.
  echo "bench: train_gpt and llm.c rows (the PyTorch runs follow; the full table after them):"
  report
  for v in bf16 fp8; do  # one process each: the first one's memory must not count in the second's peak
    sampled "pytorch_$v" python3 scripts/bench/bench_pytorch.py --steps "$steps" --variants "$v" --out "$out/pytorch.jsonl" 2>&1 |
      grep -E "^pytorch|Error|error" | tail -3
  done
fi
report
