#!/usr/bin/env bash
# The loss check a numerics change passes before it becomes a default: GPT-2 124M x 1000 steps and GPT-1.5B x
# 300 steps on real text (token shards of scripts/data/prepare_data.py, GPT-2 BPE; local documents through
# scripts/data/cut_documents.py --dedup, whose docstring says why), run A (the current default)
# against run B (the change), and run A again perturbed, NOISE_RUNS times (NOISE, default --no-deterministic:
# cuDNN's attention backward with atomic adds, the same math in another summation order on every run), for the
# floor the data and model move by under a change of rounding alone. (The default was one --no-gemm-autotune run
# until the H200 showed it perturbs nothing: the tuned algorithms gave the same bits, that run repeated A's.)
# Runs scripts/runs/compare_curves.sh per size, then prints one verdict line per size:
#   loss_check SIZE: B/A end E, mean M over the evaluations; A'/A end e, mean m: within TOL: yes|no; within the
#   noise floor: yes|no|unmeasured
# ("unmeasured", with a line saying so, when every noise run repeated A's losses bitwise: ratios of 1 are no
# floor; with several noise runs, a line lists each one's A'/A before the verdict)
# and, for information, the same runs' training-loss ratios over the last fifth of the steps (compare_curves.sh).
# The verdict's fields also go to OUTDIR/SIZE.B_NAME.verdict.tsv (a header line and one row; absent when the
# check found no ratios), for scripts that collect verdicts (scripts/runs/lever_checks.sh).
# "within TOL": |E - 1| and |M - 1| <= TOL (default 0.001, 0.1%); "within the noise floor": both <= the larger
# of TOL and e, m's distance from 1, e and m the noise runs' ratios farthest from 1. A floor above TOL says single
# runs cannot resolve TOL (on the H200 four runs apart in rounding alone spread by up to 0.44%, one of them 0.03%
# from A: one noise run is a poor floor; docs/numerics.md).
# Usage: scripts/runs/loss_check.sh OUTDIR TRAIN_GLOB VAL_GLOB
#   A_NAME/B_NAME, A_FLAGS/B_FLAGS, A_ENV/B_ENV, A_BIN/B_BIN as in compare_curves.sh (default: bf16 against fp8;
#   a default change sets both FLAGS, e.g. A_FLAGS="--precision fp8" B_FLAGS="--precision fp8 --fuse-residual");
#   NOISE (default --no-deterministic); NOISE_RUNS (default 3); SIZES (default "124m 1.5b"); TOL (default
#   0.001); EXTRA: more flags for every run (e.g. --seed 2); REUSE=1: several B's, one call each with its own
#   B_NAME and the same OUTDIR, against one A and its noise runs (compare_curves.sh runs those once).
set -u
out=${1:?usage: scripts/runs/loss_check.sh OUTDIR TRAIN_GLOB VAL_GLOB}
train=${2:?usage: scripts/runs/loss_check.sh OUTDIR TRAIN_GLOB VAL_GLOB}
val=${3:?usage: scripts/runs/loss_check.sh OUTDIR TRAIN_GLOB VAL_GLOB}
tol=${TOL:-0.001}
export NOISE=${NOISE:---no-deterministic} NOISE_RUNS=${NOISE_RUNS:-3}
[[ "$NOISE_RUNS" =~ ^[1-9][0-9]*$ ]] ||
  { echo "loss_check: NOISE_RUNS takes a positive count, got '$NOISE_RUNS'" >&2; exit 2; }
here=$(dirname "$0")
a_name=${A_NAME:-bf16} b_name=${B_NAME:-fp8}
status=0
mkdir -p "$out"
for size in ${SIZES:-124m 1.5b}; do
  # The recipes of docs/numerics.md's loss checks. GPT-1.5B at lr 1.5e-4 after 100 warmup steps: at 3e-4 after 30
  # its first steps spike and two seeds end 1.5-1.8% apart, at 1.5e-4 within 0.2%. 40 validation batches (655K
  # tokens at 124M, 492K at 1.5B): the two runs' losses are compared on the same tokens, and more of them average
  # out where two nearby models differ by chance (each batch one forward pass, about a third of a step).
  case $size in
    124m) flags=(--model 124m --batch 16 --steps 1000 --warmup 100 --lr 6e-4 --val-every 100 --val-batches 40) ;;
    1.5b) flags=(--model 1.5b --batch 12 --steps 300 --warmup 100 --lr 1.5e-4 --val-every 50 --val-batches 40) ;;
    *) echo "loss_check: SIZES takes 124m and 1.5b, got '$size'" >&2; exit 2 ;;
  esac
  verdict_tsv="$out/$size.$b_name.verdict.tsv"
  rm -f "$verdict_tsv"  # an earlier call's verdict must not stand for this one
  # shellcheck disable=SC2086  # EXTRA is a word list
  bash "$here/compare_curves.sh" "$out/$size" "${flags[@]}" --vocab 50304 --train-data "$train" --val-data "$val" \
    ${EXTRA:-} | tee "$out/$size.table.txt"
  # shellcheck disable=SC2086  # NOISE is a word list
  python3 - "$out/$size.table.txt" "$size" "$a_name" "$b_name" "$tol" "$verdict_tsv" "$out/$size" "$NOISE_RUNS" \
    $NOISE <<'PY' || status=1
import json, re, sys
table, size, a, b, tol, tsv, runs, k = sys.argv[1:9]
tol, k, noise = float(tol), int(k), " ".join(sys.argv[9:])
found, trained = {}, {}
for line in open(table):
    m = re.match(r"^(\S+)/(\S+) val over \d+ evaluations after step 0: end ([0-9.]+), mean ([0-9.]+)", line)
    if m and m.group(2) == a:
        found[m.group(1)] = (float(m.group(3)), float(m.group(4)))
    m = re.match(r"^(\S+)/(\S+) train loss over the last (\d+) steps .*: mean ratio ([0-9.]+)", line)
    if m and m.group(2) == a:
        trained[m.group(1)] = (int(m.group(3)), float(m.group(4)))
noise_names = [f"{a}_noise"] + [f"{a}_noise{i}" for i in range(2, k + 1)]  # compare_curves.sh's names for them
if b not in found or any(n not in found for n in noise_names):
    print(f"loss_check {size}: no B/A or A'/A ratios (a run failed? see {table} and the logs next to it)")
    sys.exit(1)
e, m = found[b]
farthest = lambda xs: max(xs, key=lambda x: abs(x - 1))
# The floor: the noise runs' ratios farthest from 1, end and mean each (a single run can land near A by chance).
ne, nm = farthest(found[n][0] for n in noise_names), farthest(found[n][1] for n in noise_names)
if k > 1:
    print(f"loss_check {size}: the {k} noise runs' A'/A: end " + " ".join(f"{found[n][0]:.4f}" for n in noise_names)
          + ", mean " + " ".join(f"{found[n][1]:.4f}" for n in noise_names))


def losses(name):  # every training and validation loss of a run, in order
    with open(f"{runs}/{name}/train.jsonl") as f:
        return [(r["step"], r.get("loss"), r.get("val_loss")) for r in map(json.loads, f)
                if r.get("kind") in ("train", "val")]


# Noise runs that repeat A bitwise perturbed nothing: their ratios of 1 are no floor.
a_losses = losses(a)
unmeasured = all(losses(n) == a_losses for n in noise_names)
if unmeasured:
    print(f"loss_check {size}: every noise run repeated A bitwise: NOISE ({noise}) perturbed "
          "nothing, so the noise floor is unmeasured")
within_tol = abs(e - 1) <= tol and abs(m - 1) <= tol
floor = max(tol, abs(ne - 1), abs(nm - 1))
within_floor = abs(e - 1) <= floor and abs(m - 1) <= floor
yn = lambda v: "yes" if v else "no"
fields = {"size": size, "b": b, "b_a_end": f"{e:.4f}", "b_a_mean": f"{m:.4f}", "noise_end": f"{ne:.4f}",
          "noise_mean": f"{nm:.4f}", "tol": f"{tol:g}", "within_tol": yn(within_tol),
          "within_noise_floor": "unmeasured" if unmeasured else yn(within_floor)}
with open(tsv, "w") as f:
    f.write("\t".join(fields) + "\n" + "\t".join(fields.values()) + "\n")
print(f"loss_check {size}: B/A end {fields['b_a_end']}, mean {fields['b_a_mean']} over the evaluations; A'/A end "
      f"{fields['noise_end']}, mean {fields['noise_mean']}: within {tol:g}: {yn(within_tol)}; within the noise "
      f"floor: {fields['within_noise_floor']}")
noise_trained = [trained[n][1] for n in noise_names if n in trained]
if b in trained and noise_trained:  # informative, not part of the verdict
    print(f"loss_check {size}: train loss over the last {trained[b][0]} steps: B/A {trained[b][1]:.4f}, "
          f"A'/A {farthest(noise_trained):.4f}")
sys.exit(0 if within_tol else 1)
PY
done
exit $status
