#!/usr/bin/env bash
# One device session: build, kernel benchmarks, tests, sanitizers, bad-input checks, training benchmark;
# logs under $OUT (or logs/gpu_session), packed into $OUT/logs.tgz; a summary is printed last.
# Usage: scripts/runs/gpu_session.sh [what...]
#   what: build benchk test sanitize limits bench (default: build benchk test limits)
set -u
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-logs/gpu_session}; mkdir -p "$OUT"
LOGS="$OUT/logs"; mkdir -p "$LOGS"
what=("$@"); [ ${#what[@]} -eq 0 ] && what=(build benchk test limits)
has() { for w in "${what[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }
summary=()
if has build; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
  make deps > "$LOGS/deps.log" 2>&1
  if make -j16 all > "$LOGS/build.log" 2>&1; then summary+=("build: ok"); else
    grep -E "error|Error" "$LOGS/build.log" | head -20; summary+=("build: FAILED"); fi
fi
if has benchk; then
  timeout 300 make bench-kernels > "$LOGS/bench_kernels.txt" 2>&1
  summary+=("bench-kernels (rc $?):" "$(cat "$LOGS/bench_kernels.txt" | grep -v '^make')")
fi
if has test; then
  timeout 500 make test > "$LOGS/test.txt" 2>&1
  summary+=("make test: rc=$? $(grep -E '^[0-9]+ passed' "$LOGS/test.txt" | tail -1)")
  summary+=("$(grep -E '^\[FAIL\]' "$LOGS/test.txt" | head -20)")
fi
if has limits; then  # bad inputs that need the GPU machine: out of memory at start
  ./train_gpt --vocab 8192 --batch 64 --steps 1 --log-dir "$LOGS/oom" > "$LOGS/oom.txt" 2>&1
  summary+=("oom check: rc=$? $(grep '^error' "$LOGS/oom.txt")")
fi
if has sanitize; then
  timeout 560 bash scripts/check/sanitize.sh "$LOGS/sanitize" > "$LOGS/sanitize.txt" 2>&1
  summary+=("sanitize (rc $?):" "$(cat "$LOGS/sanitize.txt")")
fi
if has bench; then
  bash scripts/bench/bench.sh "${BENCH_STEPS:-25}" "$LOGS/bench" ${BENCH_PRECISIONS:-bf16 fp8} > "$LOGS/bench.txt" 2>&1
  summary+=("$(cat "$LOGS/bench.txt")")
fi
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
echo "================ summary"
for s in "${summary[@]}"; do echo "$s"; done
