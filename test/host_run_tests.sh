#!/usr/bin/env bash
# scripts/run_tests.sh's counting and its per-binary time limit, with stand-ins (part of `make test`; no GPU:
# a stand-in nvidia-smi on PATH makes it take the GPU branch).
#   counts: host and GPU stand-ins printing [PASS]/[FAIL]/[SKIP] lines, one exiting non-zero without a [FAIL]
#     line: the summary adds them up (the silent non-zero exit is one failure) and the status is 1.
#   gpu_binary_time_limit: a GPU test binary that outlives TEST_TIMEOUT (2 s here; it would sleep 60) is
#     stopped, counted as one failure with a line that says so (the [PASS] it printed before still counts), and
#     the binaries after it still run; the whole run ends in well under the stand-in's sleep.
set -u
source "$(dirname "$0")/lib_host.sh" run_tests  # ROOT, WORK, pass/fail/skip
RUN="$ROOT/scripts/run_tests.sh"
mkdir -p "$WORK/bin"
printf '#!/bin/sh\nexit 0\n' > "$WORK/bin/nvidia-smi"
stand_in() {  # stand_in NAME BODY: an executable test stand-in
  printf '#!/bin/sh\n%s\n' "$2" > "$WORK/$1"
  chmod +x "$WORK/$1"
}
chmod +x "$WORK/bin/nvidia-smi"
p=$((RANDOM % 4 + 1))
body=""
for ((i = 0; i < p; i++)); do body="$body echo '[PASS] case_$i';"; done
stand_in host_a "$body echo '[SKIP] not_here: reason'"
stand_in host_b "echo '[PASS] one'; exit 3"  # a non-zero exit without a [FAIL] line
stand_in gpu_a "echo '[PASS] kernel'; echo '[FAIL] other: numbers'; exit 1"

out=$(PATH="$WORK/bin:$PATH" bash "$RUN" "$WORK/host_a" "$WORK/host_b" -- "$WORK/gpu_a" 2>&1)
rc=$?
want="$((p + 2)) passed, 2 failed, 1 skipped"
if [ $rc = 1 ] && [ "$(printf '%s\n' "$out" | tail -1)" = "$want" ] &&
  printf '%s\n' "$out" | grep -q "host_b exited with status 3"; then
  pass counts
else
  fail counts "status $rc, last line '$(printf '%s\n' "$out" | tail -1)' (want '$want')"
fi

stand_in gpu_hang "echo '[PASS] before the hang'; sleep 60"
stand_in gpu_after "echo '[PASS] after'"
t0=$(date +%s)
out=$(PATH="$WORK/bin:$PATH" TEST_TIMEOUT=2 bash "$RUN" -- "$WORK/gpu_hang" "$WORK/gpu_after" 2>&1)
rc=$?
took=$(($(date +%s) - t0))
if [ $rc = 1 ] && [ $took -lt 30 ] && [ "$(printf '%s\n' "$out" | tail -1)" = "2 passed, 1 failed, 0 skipped" ] &&
  printf '%s\n' "$out" | grep -q "gpu_hang did not finish in 2 s" && printf '%s\n' "$out" | grep -q "after"; then
  pass gpu_binary_time_limit
else
  fail gpu_binary_time_limit "status $rc after $took s: $(printf '%s\n' "$out" | tail -4 | tr '\n' '|')"
fi
