#!/usr/bin/env bash
# Runs each dev/ kernel binary with --bench (benchmarks only, no tests) and prints all their BENCH lines
# (BENCH <kernel> <shape> <ms> <throughput> <unit> <fraction of ceiling>, tab-separated; see dev/bench.h,
# where the ceilings are defined) as one table. Needs a CUDA device.
# Usage: bench_kernels.sh BIN...   (make bench-kernels)
set -u
rows=$(mktemp)
out=$(mktemp)
trap 'rm -f "$rows" "$out"' EXIT
status=0
for b in "$@"; do
  echo "-- $b --bench" >&2
  "$b" --bench >"$out"  # progress ("bench: <name>") and errors go to stderr
  rc=$?
  grep $'^BENCH\t' "$out" >>"$rows"
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
exit "$status"
