#!/usr/bin/env bash
# Run-lifecycle tests of the train_gpt binary on a GPU (part of `make test` there): kill-and-resume is
# bit-exact in bf16 and fp8 (its default has the FP8 LM head), each also with --adam-moments bf16, kill -9 during a checkpoint write leaves the previous one loadable, SIGINT
# checkpoints and exits 0 (a second signal exits at once), a poisoned step is skipped and --max-bad-steps
# stops with a checkpoint. Prints one [PASS]/[FAIL] line per case. Model: GPT-2 124M, random tokens.
# LIFECYCLE_ARGS overrides the model/batch flags (e.g. for GPT-1.5B).
set -u
export NCCL_NVLS_ENABLE=0
BIN=${TRAIN_GPT:-./train_gpt}
FAULTS_BIN=${TRAIN_GPT_FAULTS:-build/test/train_gpt_faults}  # the driver with its fault hooks linked in
WORK=$(mktemp -d /tmp/gpu_lifecycle_XXXXXX)
trap 'rm -rf "$WORK"' EXIT
read -r -a MODEL <<< "${LIFECYCLE_ARGS:---model 124m --batch 8 --seq 1024}"
STEPS=${LIFECYCLE_STEPS:-40}
STOP_AT=${LIFECYCLE_STOP_AT:-15}
ONLY=${LIFECYCLE_ONLY:-}  # run only the cases whose name contains this
want() { [ -z "$ONLY" ] || [[ "$1" == *"$ONLY"* ]]; }
source "$(dirname "$0")/lib_gpu.sh"  # pass, fail, losses

# Starts train_gpt in the background, waits until its stdout shows step $2, sends signal $3; waits for exit.
run_and_signal() {  # dir stop_step signal extra_args...
  local dir=$1 stop=$2 sig=$3; shift 3
  "$BIN" "${MODEL[@]}" --steps "$STEPS" --log-dir "$dir/log" --checkpoint-dir "$dir/ckpt" "$@" > "$dir/out1.txt" 2>&1 &
  local pid=$!
  for _ in $(seq 1 3000); do
    grep -q "^step *$stop/" "$dir/out1.txt" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  kill -"$sig" $pid 2>/dev/null
  wait $pid
}

# Each variant: name, then its flags (the options whose state a checkpoint must carry).
for variant in "bf16:--precision bf16" "fp8:--precision fp8" "bf16_options:--precision bf16 --adam-moments bf16" \
               "fp8_options:--precision fp8 --fp8-lm-head --adam-moments bf16"; do
  p=${variant%%:*}; read -r -a VARGS <<< "${variant#*:}"
  want "resume_bitexact_$p" || continue
  d=$WORK/resume_$p; mkdir -p "$d"
  "$BIN" "${MODEL[@]}" "${VARGS[@]}" --steps "$STEPS" --log-dir "$d/full" > "$d/full.txt" 2>&1 || { fail "resume_bitexact_$p" "uninterrupted run failed: $(tail -1 "$d/full.txt")"; continue; }
  run_and_signal "$d" "$STOP_AT" TERM "${VARGS[@]}"; rc=$?
  if [ $rc != 0 ] || ! grep -q "stopped by SIGTERM" "$d/out1.txt"; then fail "resume_bitexact_$p" "SIGTERM run exited $rc: $(tail -1 "$d/out1.txt")"; continue; fi
  "$BIN" "${MODEL[@]}" "${VARGS[@]}" --steps "$STEPS" --log-dir "$d/log" --resume "$d/ckpt" > "$d/out2.txt" 2>&1 || { fail "resume_bitexact_$p" "resume failed: $(tail -1 "$d/out2.txt")"; continue; }
  losses "$d/full/train.jsonl" > "$d/a.txt"; losses "$d/log/train.jsonl" > "$d/b.txt"
  resumed_at=$(grep -o "resumed from .*: step [0-9]*" "$d/out2.txt" | grep -o "[0-9]*$")
  if [ "$(wc -l < "$d/b.txt")" -ne "$STEPS" ]; then fail "resume_bitexact_$p" "train.jsonl has $(wc -l < "$d/b.txt") steps, expected $STEPS (appended)"
  elif cmp -s "$d/a.txt" "$d/b.txt"; then pass "resume_bitexact_$p (stopped after step $((resumed_at - 1)), losses and grad norms of all $STEPS steps identical)"
  else fail "resume_bitexact_$p" "differs from the uninterrupted run: $(diff "$d/a.txt" "$d/b.txt" | head -3 | tr '\n' ' ')"; fi
done

# kill -9 while a checkpoint is being written: the previous checkpoint still loads.
if want kill9; then
d=$WORK/kill9; mkdir -p "$d"
"$BIN" "${MODEL[@]}" --steps 1000 --checkpoint-every 3 --keep-checkpoints 1 --log-dir "$d/log" --checkpoint-dir "$d/ckpt" > "$d/out.txt" 2>&1 &
pid=$!; killed=0
for _ in $(seq 1 20000); do
  if compgen -G "$d/ckpt/ckpt_*safetensors" > /dev/null && compgen -G "$d/ckpt/*.tmp.*" > /dev/null; then
    kill -9 $pid; killed=1; break; fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.005
done
wait $pid 2>/dev/null
before=$(ls "$d/ckpt" | tr '\n' ' ')
if [ $killed = 0 ]; then fail kill9_during_checkpoint_write "never saw a checkpoint write in progress"
elif "$BIN" "${MODEL[@]}" --steps 12 --log-dir "$d/log2" --resume "$d/ckpt" > "$d/resume.txt" 2>&1 && grep -q "resumed from" "$d/resume.txt"; then
  pass "kill9_during_checkpoint_write (directory at the kill: $before; $(grep -o 'resumed from [^:]*' "$d/resume.txt"))"
else fail kill9_during_checkpoint_write "resume failed: $(tail -1 "$d/resume.txt")"; fi
fi

# SIGINT: checkpoint and exit 0 with one line; two signals: immediate exit.
if want sigint; then
d=$WORK/sigint; mkdir -p "$d"
run_and_signal "$d" 3 INT; rc=$?
if [ $rc = 0 ] && grep -q "stopped by SIGINT" "$d/out1.txt" && [ -n "$(ls "$d/ckpt")" ]; then pass "sigint_checkpoints_and_exits_0 ($(grep 'stopped by' "$d/out1.txt"))"
else fail sigint_checkpoints_and_exits_0 "exit $rc: $(tail -1 "$d/out1.txt")"; fi
d=$WORK/sigint2; mkdir -p "$d"
"$BIN" "${MODEL[@]}" --steps 1000 --log-dir "$d/log" > "$d/out.txt" 2>&1 &
pid=$!
for _ in $(seq 1 3000); do grep -q "^step *2/" "$d/out.txt" 2>/dev/null && break; sleep 0.05; done
kill -INT $pid; sleep 0.01; kill -INT $pid; wait $pid; rc=$?
if [ $rc = 130 ]; then pass "second_sigint_exits_at_once"; else fail second_sigint_exits_at_once "exit $rc"; fi
fi

# A poisoned gradient: the step is skipped and logged, training continues; with --max-bad-steps 1 the run
# stops (non-zero) with a checkpoint of the last good state.
for p in bf16 fp8; do
  want "poison_$p" || continue
  d=$WORK/poison_$p; mkdir -p "$d"
  TRAIN_GPT_TEST_POISON_STEP=5 "$FAULTS_BIN" "${MODEL[@]}" --precision $p --steps 10 --log-dir "$d/log" > "$d/out.txt" 2>&1; rc=$?
  if [ $rc = 0 ] && grep -q "^step     5/10 | skipped" "$d/out.txt" && grep -q "^step     9/10 | loss [0-9]" "$d/out.txt"; then pass "poisoned_step_skipped_$p"
  else fail "poisoned_step_skipped_$p" "exit $rc: $(grep -m1 'step     5' "$d/out.txt")"; fi
  TRAIN_GPT_TEST_POISON_STEP=5 "$FAULTS_BIN" "${MODEL[@]}" --precision $p --steps 10 --max-bad-steps 1 --log-dir "$d/log2" --checkpoint-dir "$d/ckpt" > "$d/out2.txt" 2>&1; rc=$?
  if [ $rc != 0 ] && grep -q "max-bad-steps 1" "$d/out2.txt" && [ -f "$d/ckpt/ckpt_00000006.safetensors" ]; then pass "max_bad_steps_stops_with_checkpoint_$p"
  else fail "max_bad_steps_stops_with_checkpoint_$p" "exit $rc, checkpoints: $(ls "$d/ckpt" 2>/dev/null | tr '\n' ' ') $(tail -1 "$d/out2.txt")"; fi
done
