#!/usr/bin/env bash
# One device session: build, kernel tests, model test, benchmark; logs under $OUT (or logs/gpu_session).
# Usage: scripts/gpu_session.sh [what...]  (what: build dev model bench train124m; default: all)
set -u
OUT=${OUT:-logs/gpu_session}; mkdir -p "$OUT"
what=("$@"); [ ${#what[@]} -eq 0 ] && what=(build dev model bench)
has() { for w in "${what[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }
summary=()
if has build; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
  if make -j16 all > "$OUT/build.log" 2>&1; then summary+=("build: ok"); else
    grep -E "error|Error" "$OUT/build.log" | head -20; summary+=("build: FAILED"); fi
fi
if has dev; then
  for t in build/dev/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t"); timeout 300 "$t" > "$OUT/$n.log" 2>&1; rc=$?
    summary+=("$n: rc=$rc $(grep -c '^\[PASS\]' "$OUT/$n.log") pass $(grep -c '^\[FAIL\]' "$OUT/$n.log") fail $(grep -c '^\[SKIP\]' "$OUT/$n.log") skip")
  done
fi
if has model; then
  timeout 400 build/test/gpu_model_reference > "$OUT/model.log" 2>&1; rc=$?
  summary+=("model test: rc=$rc $(grep -c '^\[PASS\]' "$OUT/model.log") pass $(grep -c '^\[FAIL\]' "$OUT/model.log") fail")
fi
if has bench; then
  bash scripts/bench.sh "${BENCH_STEPS:-25}" "$OUT/bench" ${BENCH_PRECISIONS:-bf16 fp8} > "$OUT/bench.txt" 2>&1
  summary+=("$(cat "$OUT/bench.txt")")
fi
echo "================ summary"
for s in "${summary[@]}"; do echo "$s"; done
grep -h '^\[FAIL\]' "$OUT"/*.log 2>/dev/null | head -20
