#!/usr/bin/env bash
# scripts/runs/compare_curves.sh with a stand-in trainer (part of `make test`): the val ratios B / A per
# evaluation, their end / mean / largest deviation, the NOISE repeat of run A, each run's binary, environment and
# flags, REUSE=1's reuse of finished runs, the train-loss ratio over the last fifth of the steps, with
# test/stand_in_trainer.sh (its val loss: 3, + 0.01 with --precision fp8, + $SHIFT, + 0.001 with
# --no-deterministic). One [PASS]/[FAIL] line per case.
set -u
source "$(dirname "$0")/lib_host.sh" compare_curves python3  # ROOT, WORK, pass/fail/skip
cp "$ROOT/test/stand_in_trainer.sh" "$WORK/fake_train"
cp "$ROOT/test/stand_in_trainer.sh" "$WORK/other_train"
export FP8_DELTA=0.01 NOISE_DELTA=0.001
cc="$ROOT/scripts/runs/compare_curves.sh"

out=$(cd "$WORK" && A_BIN=./fake_train B_BIN=./fake_train bash "$cc" "$WORK/default" --steps 20 2>&1)
if grep -q '^| 10 | 4.0000 | 4.0100 | 3.0000 | 3.0100 | 1.0033 |$' <<< "$out" &&
   grep -q '^fp8/bf16 val over 2 evaluations after step 0: end 1.0033, mean 1.0033, largest |ratio - 1| 0.0033$' <<< "$out" &&
   grep -q '^fp8/bf16 train loss over the last 1 steps (20-20): mean ratio 1.0025$' <<< "$out" &&
   ! grep -q noise <<< "$out"; then
  pass "default_bf16_against_fp8"
else
  fail default_bf16_against_fp8 "$(head -c 800 <<< "$out")"
fi

out=$(cd "$WORK" && A_NAME=old B_NAME=new A_FLAGS="--precision fp8" B_FLAGS="--precision fp8" A_BIN=./fake_train \
      B_BIN=./other_train B_ENV="SHIFT=0.03 MEDIAN_MS=1.0" NOISE=--no-deterministic bash "$cc" "$WORK/ab" --steps 20 2>&1)
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

# REUSE=1: a second B against the same OUTDIR runs only that B (A and A' reused: their commands match and they
# finished); a changed flag of A, or a run that did not finish, runs again; without REUSE everything runs.
calls() { wc -l < "$WORK/args.txt"; }
rcc() { (cd "$WORK" && A_BIN=./fake_train B_BIN=./fake_train STAND_IN_ARGS="$WORK/args.txt" NOISE=--no-deterministic \
         bash "$cc" "$WORK/reuse" --steps 20 2>&1); }
rm -f "$WORK/args.txt"
REUSE=1 rcc > /dev/null
n1=$(calls)
out2=$(REUSE=1 B_NAME=fp8b B_FLAGS="--precision fp8 --x" rcc)
n2=$(calls) last2=$(tail -1 "$WORK/args.txt")
rm "$WORK/reuse/bf16_noise/train.jsonl"  # as if A' had been killed
out3=$(REUSE=1 B_NAME=fp8b B_FLAGS="--precision fp8 --x" rcc)
n3=$(calls)
out4=$(REUSE=1 B_NAME=fp8b B_FLAGS="--precision fp8 --x" A_FLAGS="--precision bf16 --y" rcc)
n4=$(calls)
B_NAME=fp8b B_FLAGS="--precision fp8 --x" rcc > /dev/null
n5=$(calls)
if [ "$n1" = 3 ] && [ "$n2" = 4 ] && grep -q "^compare_curves: bf16 reused" <<< "$out2" &&
   grep -q "^compare_curves: bf16_noise reused" <<< "$out2" && grep -q -- '--precision fp8 --x' <<< "$last2" &&
   grep -q '^fp8b/bf16 val over 2 evaluations after step 0: end 1.0033' <<< "$out2" &&
   [ "$n3" = 5 ] && grep -q "^compare_curves: fp8b reused" <<< "$out3" && ! grep -q "bf16_noise reused" <<< "$out3" &&
   [ "$n4" = 7 ] && [ "$(grep -c reused <<< "$out4")" = 1 ] && [ "$n5" = 10 ]; then
  pass "reuse_finished_runs (a second B pays for A and A' once; a changed or unfinished run runs again)"
else
  fail reuse_finished_runs "calls $n1 $n2 $n3 $n4 $n5 (want 3 4 5 7 10): $(head -c 400 <<< "$out2") | $(head -c 300 <<< "$out3")"
fi

# The train-loss line looks at the last fifth of the steps: 10 steps, the fp8 train loss 0.04 higher from step
# 80 on: the last 2 steps' mean ratio is 4.05 / 4.0 (over all steps it would be 1.0045).
out=$(cd "$WORK" && A_BIN=./fake_train B_BIN=./fake_train STEPS="0 10 20 30 40 50 60 70 80 90" LATE_STEP=80 \
      LATE_DELTA=0.04 bash "$cc" "$WORK/late" 2>&1)
if grep -q '^fp8/bf16 train loss over the last 2 steps (80-90): mean ratio 1.0125$' <<< "$out"; then
  pass "train_loss_last_fifth (the last 2 of 10 steps)"
else
  fail train_loss_last_fifth "$(grep 'train loss' <<< "$out" || tail -c 400 <<< "$out")"
fi

# A run that fails at once leaves nothing of an earlier call in the same folder to be read as its own, and a run
# cut short (records, no summary) gives no ratios: the table shows its curve, the summary lines say why.
(cd "$WORK" && A_BIN=./fake_train B_BIN=./fake_train bash "$cc" "$WORK/rerun" --steps 20 > /dev/null 2>&1)
out=$(cd "$WORK" && A_BIN=./fake_train B_BIN=./fake_train FAIL_FP8=1 bash "$cc" "$WORK/rerun" --steps 20 2>&1)
out_cut=$(cd "$WORK" && A_BIN=./fake_train B_BIN=./fake_train CUT_FP8=1 bash "$cc" "$WORK/cut" --steps 20 2>&1)
if grep -q '^fp8 failed:' <<< "$out" && grep -q '^compare_curves: fp8 did not finish' <<< "$out" &&
   ! grep -q '^fp8/bf16' <<< "$out" && grep -q '^| 10 | 4.0000 | 4.0100 | 3.0000 | 3.0100 | 1.0033 |$' <<< "$out_cut" &&
   grep -q "^compare_curves: fp8 did not finish (no summary in $WORK/cut/fp8/train.jsonl)" <<< "$out_cut" &&
   ! grep -q '^fp8/bf16' <<< "$out_cut"; then
  pass "failed_or_cut_run_gives_no_ratios (no earlier call's records; a cut run's curve, no ratio lines)"
else
  fail failed_or_cut_run_gives_no_ratios "$(tail -c 400 <<< "$out") | $(tail -c 400 <<< "$out_cut")"
fi
