#!/usr/bin/env bash
# One device session: build, kernel tests, model test, benchmark; logs under $OUT (or logs/gpu_session).
# Usage: scripts/gpu_session.sh [what...]  (what: build dev model bench train124m; default: all)
set -u
OUT=${OUT:-logs/gpu_session}; mkdir -p "$OUT"
LOGS="$OUT/logs"; mkdir -p "$LOGS"  # packed into $OUT/logs.tgz at the end (the device tool returns few files)
what=("$@"); [ ${#what[@]} -eq 0 ] && what=(build dev model bench)
has() { for w in "${what[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }
summary=()
if has build; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
  if make -j16 all > "$LOGS/build.log" 2>&1; then summary+=("build: ok"); else
    grep -E "error|Error" "$LOGS/build.log" | head -20; summary+=("build: FAILED"); fi
fi
if has dev; then
  for t in build/dev/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t"); timeout 300 "$t" > "$LOGS/$n.log" 2>&1; rc=$?
    summary+=("$n: rc=$rc $(grep -c '^\[PASS\]' "$LOGS/$n.log") pass $(grep -c '^\[FAIL\]' "$LOGS/$n.log") fail $(grep -c '^\[SKIP\]' "$LOGS/$n.log") skip")
  done
fi
if has model; then
  timeout 400 build/test/gpu_model_reference > "$LOGS/model.log" 2>&1; rc=$?
  summary+=("model test: rc=$rc $(grep -c '^\[PASS\]' "$LOGS/model.log") pass $(grep -c '^\[FAIL\]' "$LOGS/model.log") fail")
fi
if has bench; then
  bash scripts/bench.sh "${BENCH_STEPS:-25}" "$LOGS/bench" ${BENCH_PRECISIONS:-bf16 fp8} > "$LOGS/bench.txt" 2>&1
  summary+=("$(cat "$LOGS/bench.txt")")
  summary+=("$(grep -h '^profile' "$LOGS"/bench/*.log)")
  summary+=("$(grep -h 'fp8 health\|error\|step    20' "$LOGS"/bench/*.log | tail -6)")
fi
echo "================ summary"
for s in "${summary[@]}"; do echo "$s"; done
grep -h '^\[FAIL\]' "$LOGS"/*.log 2>/dev/null | head -20
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
