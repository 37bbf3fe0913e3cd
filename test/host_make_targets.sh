#!/usr/bin/env bash
# The Makefile's GPU and clang targets on a machine without them (part of `make test`). One [PASS]/[SKIP]/[FAIL]
# line per case.
#   bench_without_gpu: `make bench`, `make bench-kernels` and `make bench-attention` stop within seconds, before
#     building anything, with one line naming the target and the missing GPU (skipped where a GPU is present:
#     they would run).
#   fuzz_without_clang: `make fuzz` with CLANGXX naming no compiler says how to get clang, in one line.
set -u
source "$(dirname "$0")/lib_host.sh" make_targets  # ROOT, WORK, pass/fail/skip
mk() { env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS timeout 60 make --no-print-directory -C "$ROOT" "$@"; }

if nvidia-smi -L >/dev/null 2>&1; then
  skip bench_without_gpu "this machine has a GPU (make bench would run the benchmarks)"
else
  why=""
  for goal in bench bench-kernels bench-attention; do
    start=$(date +%s)
    mk "$goal" > "$WORK/$goal.out" 2> "$WORK/$goal.err"
    rc=$? secs=$(($(date +%s) - start))
    [ $rc != 0 ] && [ $secs -lt 10 ] && [ ! -s "$WORK/$goal.out" ] && [ "$(wc -l < "$WORK/$goal.err")" = 1 ] &&
      grep -q "make $goal: no CUDA device on this machine (nvidia-smi -L failed); the benchmarks need a GPU" "$WORK/$goal.err" ||
      why="$why $goal (status $rc, ${secs}s): $(head -c 300 "$WORK/$goal.out" "$WORK/$goal.err" | tr '\n' ' ');"
  done
  if [ -z "$why" ]; then pass "bench_without_gpu (make bench, make bench-kernels, make bench-attention: one line, at once)"; else fail bench_without_gpu "$why"; fi
fi

mk fuzz CLANGXX=/nonexistent/clang++ > "$WORK/fuzz.out" 2> "$WORK/fuzz.err"
rc=$?
if [ $rc != 0 ] && grep -q "^fuzz: /nonexistent/clang++ not found: libFuzzer needs clang (Debian/Ubuntu: apt-get install clang" "$WORK/fuzz.err" &&
   [ "$(grep -c '^fuzz' "$WORK/fuzz.err")" = 1 ] && [ ! -s "$WORK/fuzz.out" ]; then
  pass "fuzz_without_clang (one line: apt-get install clang, or CLANGXX)"
else
  fail fuzz_without_clang "status $rc: $(head -c 300 "$WORK/fuzz.out" "$WORK/fuzz.err" | tr '\n' ' ')"
fi
