#!/usr/bin/env bash
# A stand-in for train_gpt in the host tests of the run scripts (compare_curves.sh, loss_check.sh); not a test
# itself. It writes --log-dir/train.jsonl: at each step of $STEPS (default "0 10 20") a train record (loss v + 1)
# and a val record (10.0 at step 0, else v), then a summary (median step $MEDIAN_MS, default 2.0), where
# v = 3 + $FP8_DELTA (with --precision fp8) + $SHIFT + $NOISE_DELTA (with --no-deterministic, the noise flag of
# loss_check.sh), deltas default 0.
# $STAND_IN_ARGS: a file each call appends its arguments to; $FAIL_FP8: exit 1 at once with --precision fp8;
# $CUT_FP8: with --precision fp8, the records of the first two steps only, no summary, exit 1 (a killed run);
# $LATE_STEP and $LATE_DELTA: with --precision fp8, the train loss of steps >= LATE_STEP is LATE_DELTA higher.
# $FLAG_DELTAS ("--flag=delta ..."): v is delta higher in a call given that flag; $LIBPATH_DELTA: v is that much
# higher when $LD_LIBRARY_PATH contains $LIBPATH_MATCH (a library picked through the environment).
# $NOISE_SEQ ("d1 d2 ..."), with $NOISE_SEQ_FILE (a counter): the k-th call with --no-deterministic takes dk
# instead of $NOISE_DELTA (noise runs that differ, as real ones do).
[ -n "${STAND_IN_ARGS:-}" ] && echo "$*" >> "$STAND_IN_ARGS"
[ -n "${FAIL_FP8:-}" ] && [[ " $* " == *" --precision fp8 "* ]] && exit 1
dir="" p=bf16 noise=0 args=" $* "
while [ $# -gt 0 ]; do
  case $1 in
    --log-dir) dir=$2; shift ;;
    --precision) p=$2; shift ;;
    --no-deterministic) noise=1 ;;
  esac
  shift
done
mkdir -p "$dir"
python3 - "$dir" "$p" "$noise" "$args" <<'PY'
import json, os, sys
d, p, noise, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
env = lambda k, default="0": float(os.environ.get(k) or default)
pairs = [pair.split("=", 1) for pair in os.environ.get("FLAG_DELTAS", "").split()]
shift_by = sum(float(delta) for flag, delta in pairs if f" {flag} " in args)
match = os.environ.get("LIBPATH_MATCH")
if match and match in os.environ.get("LD_LIBRARY_PATH", ""):
    shift_by += env("LIBPATH_DELTA")
noise_delta = env("NOISE_DELTA")
if noise and os.environ.get("NOISE_SEQ"):
    counter = os.environ["NOISE_SEQ_FILE"]
    k = len(open(counter).readlines()) if os.path.exists(counter) else 0
    open(counter, "a").write("call\n")
    noise_delta = float(os.environ["NOISE_SEQ"].split()[k])
v = 3 + (env("FP8_DELTA") if p == "fp8" else 0) + env("SHIFT") + noise * noise_delta + shift_by
cut = p == "fp8" and os.environ.get("CUT_FP8")
with open(f"{d}/train.jsonl", "w") as f:
    for s in map(int, os.environ.get("STEPS", "0 10 20").split()[: 2 if cut else None]):
        late = env("LATE_DELTA") if p == "fp8" and s >= env("LATE_STEP", "1e9") else 0
        f.write(json.dumps({"kind": "train", "step": s, "loss": v + 1 + late}) + "\n")
        f.write(json.dumps({"kind": "val", "step": s, "val_loss": 10.0 if s == 0 else v}) + "\n")
    if cut:
        sys.exit(1)
    f.write(json.dumps({"kind": "summary", "median_step_ms": env("MEDIAN_MS", "2.0"), "tokens_per_s": 5}) + "\n")
PY
