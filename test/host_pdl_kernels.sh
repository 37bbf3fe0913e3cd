#!/usr/bin/env bash
# Every kernel in llmc/ begins with pdl_wait() and is launched through launch_kernel() (llmc/gpu/launch.cuh:
# with --pdl a kernel may start before the one before it has finished, so one that touched memory before
# waiting would read stale data). Part of `make test`; python3 only. One [PASS]/[FAIL]/[SKIP] line per case.
#   checker_catches: a kernel without the wait, one whose wait comes second and a <<<>>> launch are flagged, a
#     kernel that waits first (a comment before it) passes: the tree case can fail.
#   tree: llmc/.
set -u
source "$(dirname "$0")/lib_host.sh" pdl_kernels python3  # ROOT, WORK, pass/fail/skip; python3 or skip
CHECK="$ROOT/scripts/check/check_pdl_kernels.py"

cat >"$WORK/sample.cu" <<'CU'
__global__ void no_wait(float* x) { x[0] = 1; }
template <int N>
__global__ void __launch_bounds__(256) late_wait(float* x) {
    x[0] = 1;
    pdl_wait();
}
__global__ void good(float* x) {
    // the wait comes first
    pdl_wait();
    x[0] = 1;
}
void host(float* x) { no_wait<<<1, 1>>>(x); }  // a kernel<<<>>> in a comment is fine
CU
out=$(python3 "$CHECK" "$WORK/sample.cu")
rc=$?
if [ $rc = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 3 ] && printf '%s\n' "$out" | grep -q 'no_wait does not' &&
  printf '%s\n' "$out" | grep -q 'late_wait does not' && printf '%s\n' "$out" | grep -q ':12: a <<<'; then
  pass checker_catches
else
  fail checker_catches "expected no_wait, late_wait and the launch on line 12, status 1; got status $rc: $out"
fi

if out=$(python3 "$CHECK" "$ROOT/llmc"); then
  pass "tree ($(grep -rl __global__ "$ROOT/llmc" | wc -l) files with kernels)"
else
  fail tree "$(printf '%s\n' "$out" | head -3 | tr '\n' ' ')"
fi
