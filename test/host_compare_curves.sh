#!/usr/bin/env bash
# scripts/runs/compare_curves.sh with a stand-in trainer (part of `make test`): the val ratios B / A per
# evaluation, their end / mean / largest deviation, the NOISE repeat of run A, each run's binary, environment and
# flags, with test/stand_in_trainer.sh (its val loss: 3, + 0.01 with --precision fp8, + $SHIFT, + 0.001 with
# --no-gemm-autotune). One [PASS]/[FAIL] line per case.
set -u
source "$(dirname "$0")/lib_host.sh" compare_curves python3  # ROOT, WORK, pass/fail/skip
cp "$ROOT/test/stand_in_trainer.sh" "$WORK/fake_train"
cp "$ROOT/test/stand_in_trainer.sh" "$WORK/other_train"
export FP8_DELTA=0.01 NOISE_DELTA=0.001
cc="$ROOT/scripts/runs/compare_curves.sh"

out=$(cd "$WORK" && A_BIN=./fake_train B_BIN=./fake_train bash "$cc" "$WORK/default" --steps 20 2>&1)
if grep -q '^| 10 | 4.0000 | 4.0100 | 3.0000 | 3.0100 | 1.0033 |$' <<< "$out" &&
   grep -q '^fp8/bf16 val over 2 evaluations after step 0: end 1.0033, mean 1.0033, largest |ratio - 1| 0.0033$' <<< "$out" &&
   ! grep -q noise <<< "$out"; then
  pass "default_bf16_against_fp8"
else
  fail default_bf16_against_fp8 "$(head -c 800 <<< "$out")"
fi

out=$(cd "$WORK" && A_NAME=old B_NAME=new A_FLAGS="--precision fp8" B_FLAGS="--precision fp8" A_BIN=./fake_train \
      B_BIN=./other_train B_ENV="SHIFT=0.03 MEDIAN_MS=1.0" NOISE=--no-gemm-autotune bash "$cc" "$WORK/ab" --steps 20 2>&1)
if grep -q '^| 20 | 4.0100 | 4.0400 | 3.0100 | 3.0400 | 1.0100 | 1.0003 |$' <<< "$out" &&
   grep -q '^new/old val over 2 evaluations after step 0: end 1.0100, mean 1.0100, largest |ratio - 1| 0.0100$' <<< "$out" &&
   grep -q '^old_noise/old val over 2 evaluations after step 0: end 1.0003, mean 1.0003, largest |ratio - 1| 0.0003$' <<< "$out" &&
   grep -q '^old: median step 2.0 ms' <<< "$out" && grep -q '^new: median step 1.0 ms' <<< "$out" &&
   [ -f "$WORK/ab/old_noise/train.jsonl" ] && [ -f "$WORK/ab.new.log" ]; then
  pass "a_b_with_env_binaries_and_noise_floor"
else
  fail a_b_with_env_binaries_and_noise_floor "$(head -c 900 <<< "$out")"
fi

out=$(cd "$WORK" && A_NAME=x B_NAME=x bash "$cc" "$WORK/same" 2>&1)
rc=$?
if [ $rc = 2 ] && [ "$out" = "compare_curves: A_NAME and B_NAME must differ (both 'x')" ]; then
  pass "same_names_refused"
else
  fail same_names_refused "status $rc: $out"
fi
