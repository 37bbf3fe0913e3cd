#!/usr/bin/env bash
# Did a refactor change training, or its speed? For a GPU machine (one H200, about 8 minutes):
#  1. builds OLD_SRC_DIR (a plain copy of an older commit; its third_party/ is linked to this repository's
#     when it has none) and this tree, `make -j$JOBS train_gpt` each, in parallel;
#  2. fingerprints both binaries (scripts/check/fingerprint.sh: GPT-2 124M x 20 and 1.5B x 10 steps in bf16 and
#     fp8; every step's loss and grad norm and the final training state, bit for bit) and compares them
#     (scripts/check/fingerprint_compare.sh);
#  3. times GPT-1.5B bf16 and fp8 with the old and the new binary alternately (--steps $TIMING_STEPS, the
#     median step_ms of train.jsonl over the steady steps: the first 3 build plans, calibrate FP8 and capture
#     the CUDA graph) and prints one table: run, old ms, new ms, ratio.
# Logs go under $OUT when it is set (else a fresh temporary directory). Exit status: 0 when the fingerprints
# are identical, 1 when they differ, 2 when something could not run.
# Usage: refactor_check.sh OLD_SRC_DIR
# Environment: JOBS (make jobs, 16), TIMING_STEPS (20), NEW_BIN (use this binary as the new one instead of
# building this tree), FINGERPRINT_RUNS / FINGERPRINT_CKPT_DIR / FINGERPRINT_FLAGS (passed to
# scripts/check/fingerprint.sh; the timing runs use each binary's defaults).
set -uo pipefail
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: $0 OLD_SRC_DIR" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
old=$(cd "$1" && pwd)
jobs=${JOBS:-16}
timing_steps=${TIMING_STEPS:-20}
out=${OUT:-$(mktemp -d /tmp/refactor_check.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
t0=$SECONDS
say() { echo "refactor_check [$((SECONDS - t0)) s]: $*"; }
die() { say "$*"; exit 2; }

# 1. Builds.
[ -e "$old/third_party" ] || ln -s "$repo/third_party" "$old/third_party"
say "building $old (log: $out/build_old.log)"
(cd "$old" && make -j"$jobs" train_gpt) >"$out/build_old.log" 2>&1 &
old_build=$!
if [ -n "${NEW_BIN:-}" ]; then
  new_bin=$NEW_BIN
else
  say "building $repo (log: $out/build_new.log)"
  (cd "$repo" && make -j"$jobs" train_gpt) >"$out/build_new.log" 2>&1 ||
    { tail -5 "$out/build_new.log"; die "the build of $repo failed"; }
  new_bin=$repo/train_gpt
fi

# 2. Fingerprints: the new binary's while the old tree may still be building.
say "fingerprinting the new binary"
bash "$repo/scripts/check/fingerprint.sh" "$new_bin" "$out/fp_new" 2>"$out/fingerprint_new.log" ||
  { tail -5 "$out/fingerprint_new.log"; die "fingerprinting $new_bin failed"; }
wait "$old_build" || { tail -5 "$out/build_old.log"; die "the build of $old failed"; }
old_bin=$old/train_gpt
say "fingerprinting the old binary"
bash "$repo/scripts/check/fingerprint.sh" "$old_bin" "$out/fp_old" 2>"$out/fingerprint_old.log" ||
  { tail -5 "$out/fingerprint_old.log"; die "fingerprinting $old_bin failed"; }
bash "$repo/scripts/check/fingerprint_compare.sh" "$out/fp_old" "$out/fp_new" >"$out/compare.txt"
same=$?
[ $same -le 1 ] || die "comparing the fingerprints failed"

# 3. Timing, old and new alternately.
median_ms() {  # the median step_ms of the steady steps (>= 3) of a train.jsonl
  python3 - "$1" <<'PY'
import json, statistics, sys
ms = [r["step_ms"] for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "train" and r["step"] >= 3]
print("%.2f" % statistics.median(ms) if ms else "nan")
PY
}
declare -A ms
for precision in bf16 fp8; do
  for side in old new; do
    bin=$old_bin
    [ $side = new ] && bin=$new_bin
    log=$out/timing/${side}_1p5b_$precision
    rm -rf "$log" && mkdir -p "$log"
    say "timing $side GPT-1.5B $precision"
    "$bin" --model 1.5b --precision "$precision" --steps "$timing_steps" --train-data random --log-dir "$log" \
      >"$log/stdout.txt" 2>&1 || { tail -5 "$log/stdout.txt"; die "the $side $precision timing run failed"; }
    ms[$side,$precision]=$(median_ms "$log/train.jsonl")
  done
done

say "done; logs under $out"
echo
echo "fingerprints (old $old_bin vs new $new_bin):"
sed 's/^/  /' "$out/compare.txt"
echo
printf '%-16s %10s %10s %9s\n' run "old ms" "new ms" ratio
for precision in bf16 fp8; do
  o=${ms[old,$precision]} n=${ms[new,$precision]}
  printf '%-16s %10s %10s %9s\n' "gpt2_1p5b_$precision" "$o" "$n" "$(python3 -c "print('%.3f' % ($n / $o))" 2>/dev/null || echo nan)"
done
echo "(ratio: new / old median step time; GPT-1.5B, batch 12 x 1024, $timing_steps steps, steady steps >= 3)"
exit $same
