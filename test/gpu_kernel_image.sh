#!/usr/bin/env bash
# create_gpu_context's check that the binary has machine code for the GPU (part of `make test` on a GPU): the
# probe built with the Makefile's GPU_ARCH makes its context; the same probe built for sm_80 only, which a
# GPU of another major version cannot run, stops before any kernel with the one line that says how to
# rebuild, exit 1 (before the check: cudart's "no kernel image is available" at the first launch).
set -u
source "$(dirname "$0")/lib_report.sh"  # pass, fail, skip
native=${ARCH_PROBE:-build/test/arch_probe} other=${ARCH_PROBE_OTHER:-build/test/arch_probe_other}

out=$("$native" 2>&1); rc=$?
if [ $rc = 0 ] && [[ "$out" == "arch_probe: context on "* ]]; then pass "native_arch_runs (${out#arch_probe: })"
else fail native_arch_runs "exit $rc: $(tail -1 <<< "$out")"; fi

cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -1)
if [ "${cap%%.*}" = 8 ]; then
  skip other_arch_refused "this GPU (compute capability $cap) runs the probe's sm_80 machine code"
  exit 0
fi
out=$("$other" 2>&1); rc=$?
want="error: this build has no machine code for GPU "
if [ $rc = 1 ] && [ "$(wc -l <<< "$out")" = 1 ] && [[ "$out" == "$want"*"make GPU_ARCH="* ]]; then
  pass "other_arch_refused (exit 1: ${out:0:120}...)"
else
  fail other_arch_refused "exit $rc, $(wc -l <<< "$out") lines, the last: $(tail -1 <<< "$out")"
fi
