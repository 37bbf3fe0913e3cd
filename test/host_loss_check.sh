#!/usr/bin/env bash
# scripts/runs/loss_check.sh with a stand-in trainer (part of `make test`): the verdict lines and the exit
# status from the B/A and A'/A ratios, the verdict file's row, the recipe flags of each size reaching the runs, a failed run and a bad
# SIZES and NOISE_RUNS, noise runs that perturb nothing, the floor from the farthest of three, with
# test/stand_in_trainer.sh (val loss 3 + $FP8_DELTA with
# --precision fp8 + $NOISE_DELTA with --no-deterministic at steps 100 and 200). One [PASS]/[FAIL] line per case.
set -u
source "$(dirname "$0")/lib_host.sh" loss_check python3  # ROOT, WORK, pass/fail/skip
cp "$ROOT/test/stand_in_trainer.sh" "$WORK/fake_train"
export STEPS="0 100 200" STAND_IN_ARGS="$WORK/args.txt"
lc() { (cd "$WORK" && A_BIN=./fake_train B_BIN=./fake_train bash "$ROOT/scripts/runs/loss_check.sh" "$@" 2>&1); }

rm -f "$WORK/args.txt"
out=$(FP8_DELTA=0.0015 NOISE_DELTA=0.006 lc "$WORK/ok" 'tr_*.bin' 'va_*.bin')
rc=$?
if [ $rc = 0 ] &&
   grep -q "^loss_check 124m: B/A end 1.0005, mean 1.0005 over the evaluations; A'/A end 1.0020, mean 1.0020: within 0.001: yes; within the noise floor: yes$" <<< "$out" &&
   grep -q "^loss_check 1.5b: B/A end 1.0005" <<< "$out" &&
   [ "$(sed -n 2p "$WORK/ok/124m.fp8.verdict.tsv")" = "$(printf '124m\tfp8\t1.0005\t1.0005\t1.0020\t1.0020\t0.001\tyes\tyes')" ] &&
   grep -q "^loss_check 124m: train loss over the last 1 steps: B/A 1.0004, A'/A 1.0015$" <<< "$out" &&
   [ "$(grep -c -- '--model 124m --batch 16 --steps 1000 --warmup 100 --lr 6e-4 --val-every 100 --val-batches 40 --vocab 50304 --train-data tr_\*.bin --val-data va_\*.bin' "$WORK/args.txt")" = 5 ] &&
   [ "$(grep -c -- '--model 1.5b --batch 12 --steps 300 --warmup 100 --lr 1.5e-4 --val-every 50 --val-batches 40 ' "$WORK/args.txt")" = 5 ] &&
   [ "$(grep -c -- '--no-deterministic' "$WORK/args.txt")" = 6 ]; then
  pass "within_tolerance (both sizes, 5 runs each with the recipe's flags: A, B, 3 noise runs; exit 0)"
else
  fail within_tolerance "status $rc: $(tail -c 600 <<< "$out") | args: $(head -c 300 "$WORK/args.txt")"
fi

# expect_verdict NAME WANT_STATUS REGEX NOTE: $out (a run of lc) has a line matching REGEX and status $rc.
expect_verdict() {
  if [ "$rc" = "$2" ] && grep -q "$3" <<< "$out"; then pass "$1 ($4)"; else fail "$1" "status $rc: $(tail -c 500 <<< "$out")"; fi
}

out=$(SIZES=124m FP8_DELTA=0.03 NOISE_DELTA=0.06 lc "$WORK/noisy" t v)
rc=$?
expect_verdict outside_tolerance_inside_noise 1 \
  "^loss_check 124m: B/A end 1.0100, mean 1.0100 over the evaluations; A'/A end 1.0200, mean 1.0200: within 0.001: no; within the noise floor: yes$" \
  "exit 1, the floor named"

out=$(SIZES=124m TOL=0.05 FP8_DELTA=0.3 NOISE_DELTA=0.006 lc "$WORK/off" t v)
rc=$?
expect_verdict outside_both 1 "^loss_check 124m: B/A end 1.1000, .*within 0.05: no; within the noise floor: no$" \
  "TOL=0.05, a 10% change: exit 1"

# A noise run whose losses repeat A's bitwise (NOISE_DELTA 0) measured no floor: said in a line, and the
# verdict's floor field is "unmeasured" (its ratios of 1 would otherwise pass any B as within the floor)
out=$(SIZES=124m FP8_DELTA=0.0015 lc "$WORK/flat" t v)
rc=$?
if [ $rc = 0 ] &&
   grep -q "^loss_check 124m: every noise run repeated A bitwise: NOISE (--no-deterministic) perturbed nothing, so the noise floor is unmeasured$" <<< "$out" &&
   grep -q "^loss_check 124m: B/A end 1.0005, .*: within 0.001: yes; within the noise floor: unmeasured$" <<< "$out" &&
   [ "$(sed -n 2p "$WORK/flat/124m.fp8.verdict.tsv" | cut -f9)" = unmeasured ]; then
  pass "noise_run_that_perturbs_nothing (the floor unmeasured, said)"
else
  fail noise_run_that_perturbs_nothing "status $rc: $(tail -c 600 <<< "$out")"
fi

# Three noise runs that differ (+0.0003, +0.009, -0.0015 on a loss of 3): the floor is the farthest (1.0030),
# under which B (1.0020) falls; the first alone (1.0001) would have put B outside. Each run's ratio is listed.
out=$(SIZES=124m FP8_DELTA=0.006 NOISE_SEQ="0.0003 0.009 -0.0015" NOISE_SEQ_FILE="$WORK/seq" lc "$WORK/seq3" t v)
rc=$?
if [ $rc = 1 ] &&
   grep -q "^loss_check 124m: the 3 noise runs' A'/A: end 1.0001 1.0030 0.9995, mean 1.0001 1.0030 0.9995$" <<< "$out" &&
   grep -q "^loss_check 124m: B/A end 1.0020, mean 1.0020 over the evaluations; A'/A end 1.0030, mean 1.0030: within 0.001: no; within the noise floor: yes$" <<< "$out"; then
  pass "farthest_of_three_noise_runs (the floor from the farthest, each listed)"
else
  fail farthest_of_three_noise_runs "status $rc: $(tail -c 600 <<< "$out")"
fi

out=$(SIZES=124m NOISE_RUNS=0 lc "$WORK/bad" t v)
rc=$?
if [ $rc = 2 ] && [ "$out" = "loss_check: NOISE_RUNS takes a positive count, got '0'" ]; then
  pass "bad_noise_runs_one_line"
else
  fail bad_noise_runs_one_line "status $rc: $out"
fi

# in the first case's folder: its verdict file must not outlive the failed check
out=$(SIZES=124m FAIL_FP8=1 lc "$WORK/ok" t v)
rc=$?
[ -e "$WORK/ok/124m.fp8.verdict.tsv" ] && rc="$rc, an earlier verdict file left"
expect_verdict failed_run_is_a_failure 1 "^loss_check 124m: no B/A or A'/A ratios (a run failed?" \
  "a failed run: exit 1, the earlier verdict file gone"

out=$(SIZES=350m lc "$WORK/bad" t v)
rc=$?
if [ $rc = 2 ] && [ "$out" = "loss_check: SIZES takes 124m and 1.5b, got '350m'" ]; then
  pass "bad_size_one_line"
else
  fail bad_size_one_line "status $rc: $out"
fi
