#!/usr/bin/env bash
# Runs each dev/ kernel binary with --bench (benchmarks only, no tests) and prints all their BENCH lines
# (BENCH <kernel> <shape> <ms> <throughput> <unit> <fraction of ceiling>, tab-separated; see dev/bench.h,
# where the ceilings are defined) as one table, then the byte budget of GPT-1.5B's fp8 step from the BUDGET lines
# (dev/byte_budget.h): each of our kernels the step runs, its bandwidth against a copy of the same bytes timed
# in the same run, and the milliseconds per step it takes beyond that copy, largest first. Needs a CUDA device.
# Usage: bench_kernels.sh BIN...   (make bench-kernels)
set -u
rows=$(mktemp)
out=$(mktemp)
budget=$(mktemp)
trap 'rm -f "$rows" "$out" "$budget"' EXIT
status=0
for b in "$@"; do
  echo "-- $b --bench" >&2
  "$b" --bench >"$out"  # progress ("bench: <name>") and errors go to stderr
  rc=$?
  grep $'^BENCH\t' "$out" >>"$rows"
  grep $'^BUDGET\t' "$out" >>"$budget"
  if [ "$rc" != 0 ]; then
    echo "bench_kernels: $b --bench exited with status $rc" >&2
    status=1
  fi
done
awk -F'\t' '
  { n++; k[n] = $2; s[n] = $3; ms[n] = $4; v[n] = $5; u[n] = $6; f[n] = $7
    if (length($2) > wk) wk = length($2); if (length($3) > ws) ws = length($3) }
  END {
    if (wk < 6) wk = 6; if (ws < 5) ws = 5
    printf("%-" wk "s  %-" ws "s  %10s  %12s  %-7s  %12s\n", "kernel", "shape", "time ms", "throughput", "unit",
           "% of ceiling")
    for (i = 1; i <= n; i++)
      printf("%-" wk "s  %-" ws "s  %10.4f  %12.1f  %-7s  %11.1f%%\n", k[i], s[i], ms[i], v[i], u[i], 100 * f[i])
  }' "$rows"
echo "(% of ceiling: throughput over the H200 ceiling of its kind in dev/bench.h: copy bandwidth, BF16 or FP8 GEMM peak)"
echo
echo "Byte budget of the GPT-1.5B fp8 step (B=12, T=1024, default flags, steady step), largest first:"
awk -F'\t' '$4 > 0 {
    n = $4; ms = $5; bytes = $6; c1 = $7; cg = $8
    left = n * (ms > c1 ? ms - c1 : 0)
    printf("%.3f\t%s\t%s\t%d\t%.4f\t%.0f\t%.0f\t%.0f\t%.0f%%\t%.2f\n", left, $2, $3, n, ms, bytes / ms / 1e6,
           bytes / c1 / 1e6, bytes / cg / 1e6, 100 * c1 / ms, n * ms)
  }' "$budget" | sort -t$'\t' -k1,1 -gr | awk -F'\t' '
  BEGIN { printf("%-38s %-32s %5s %9s %7s %7s %7s %6s %8s %8s\n", "kernel", "shape", "calls", "ms", "GB/s",
                 "copy1", "copyG", "%copy1", "step ms", "left ms") }
  { printf("%-38s %-32s %5d %9.4f %7d %7d %7d %6s %8.2f %8.2f\n", $2, $3, $4, $5, $6, $7, $8, $9, $10, $1)
    step += $10; left += $1 }
  END { printf("%-38s %-32s %5s %9s %7s %7s %7s %6s %8.2f %8.2f\n", "total", "", "", "", "", "", "", "", step, left) }'
echo "(calls: per step; GB/s: bytes read + written per ms; copy1 / copyG: a cudaMemcpyAsync of the same bytes, one"
echo " launch after an L2 flush as the kernel is timed / per copy of 48 in one CUDA graph; %copy1: the kernel's"
echo " bandwidth as a share of copy1's; left ms: calls x (kernel ms - copy1 ms), what the step could gain at copy speed)"
exit "$status"
