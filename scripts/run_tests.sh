#!/usr/bin/env bash
# Runs the host tests (test binaries, test/host_*.sh scripts, and check_format.sh), then (where a CUDA device
# is present) the GPU tests, and prints "N passed, N failed, N skipped"; each [PASS]/[FAIL]/[SKIP] line a
# test prints counts once. Usage: run_tests.sh HOST_TEST... -- GPU_TEST...
# A GPU test binary that runs past TEST_TIMEOUT seconds (default 300) is stopped and counted as a failure, so
# a kernel that never finishes does not hold up the rest.
# A GPU test named *_multi.sh (the multi-rank suite) starts first, in the background, beside the GPU test
# binaries: its two ranks spend most of their time waiting on each other (one GPU time-shared, ~0.36 s a
# step at 124M), so it takes ~6 minutes whatever else runs. The test binaries, then the other scripts, run
# beside it: none times anything against a fixed figure (the binaries compare kernels and the model against
# references with tolerances; profile_captured compares a run's phase times with the wall time of the same
# steps, which a shared GPU slows alike; the scripts compare runs of the binary with each other, sharing the
# tuned GEMM choices through --gemm-cache, the first writer's choice winning, so a GPU shared with another
# process does not make two runs choose differently).
set -u
host=(); gpu=(); seen_sep=0
for a in "$@"; do
  if [ "$a" = "--" ]; then seen_sep=1; elif [ $seen_sep = 0 ]; then host+=("$a"); else gpu+=("$a"); fi
done
passed=0; failed=0; skipped=0
test_timeout=${TEST_TIMEOUT:-300}
# run_one TEST [COMMAND...]: runs COMMAND (default: TEST itself) and counts TEST's verdict lines.
run_one() {
  local bin=$1 out rc
  shift
  [ $# -gt 0 ] || set -- "$bin"
  out=$("$@" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -E '^\[(PASS|FAIL|SKIP)\]|^error' || true
  local p f s
  p=$(printf '%s\n' "$out" | grep -c '^\[PASS\]'); f=$(printf '%s\n' "$out" | grep -c '^\[FAIL\]')
  s=$(printf '%s\n' "$out" | grep -c '^\[SKIP\]')
  if [ "$rc" = 124 ]; then  # timeout's status: a hung kernel fails its binary, not the whole run
    echo "[FAIL] $bin did not finish in $test_timeout s (TEST_TIMEOUT)"; printf '%s\n' "$out" | tail -5
    f=$((f + 1))
  elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then  # crashed or exited early: count it as a failure
    echo "[FAIL] $bin exited with status $rc"; printf '%s\n' "$out" | tail -5; f=1
  fi
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}
echo "== host tests"
for b in "${host[@]}"; do run_one "$b"; done
if nvidia-smi -L >/dev/null 2>&1; then
  echo "== GPU tests"
  bg=() bg_out=$(mktemp) bg_pid=""
  for b in "${gpu[@]}"; do [[ "$b" == *_multi.sh ]] && bg+=("$b"); done
  if [ ${#bg[@]} -gt 0 ]; then
    (for b in "${bg[@]}"; do echo "-- $b (beside the test binaries)"; "$b" 2>&1; echo "rc=$?"; done) > "$bg_out" &
    bg_pid=$!
  fi
  # each test binary within TEST_TIMEOUT seconds (default 300; the longest takes ~1-2 minutes on an H200)
  for b in "${gpu[@]}"; do
    [[ "$b" == *.sh ]] || { echo "-- $b"; run_one "$b" timeout --kill-after=10 "$test_timeout" "$b"; }
  done
  for b in "${gpu[@]}"; do [[ "$b" == *.sh && "$b" != *_multi.sh ]] && { echo "-- $b"; run_one "$b"; }; done
  if [ -n "$bg_pid" ]; then
    wait "$bg_pid"
    echo "-- ${bg[*]} (ran beside the others)"
    bg_result() { grep -v '^rc=' "$bg_out"; ! grep -q '^rc=[1-9]' "$bg_out"; }
    run_one bg_result  # its [PASS]/[FAIL]/[SKIP] lines; a non-zero exit without a [FAIL] line is one
  fi
  rm -f "$bg_out"
else
  for b in "${gpu[@]}"; do echo "[SKIP] $(basename "$b"): no CUDA device on this machine"; skipped=$((skipped + 1)); done
  [ ${#gpu[@]} -gt 0 ] && echo "GPU tests skipped: run 'make test' on a machine with an NVIDIA GPU (sm_90) to run them."
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
