#!/usr/bin/env bash
# The loss check (scripts/runs/loss_check.sh) of each opt-in lever that was measured faster but changes the
# numbers, against the current default in one precision: one run A of the default and its noise runs (NOISE_RUNS
# of them, loss_check.sh's) per size, shared by every lever (REUSE=1), then one run B per lever. The table's A'/A
# columns are the noise runs' ratios farthest from 1. A lever within TOL at both sizes may become the
# default (docs/performance.md says which are waiting). Ends with one table, a row per size and lever.
# The levers (LEVERS picks some, in this order):
#   cudnn_newest      the same binary with a newer cuDNN first on LD_LIBRARY_PATH (CUDNN_LIB=that library's
#                     folder, e.g. the lib/ of a pip nvidia-cudnn-cu13, or CUDNN_LIB=newest: the newest cuDNN 9
#                     scripts/find_cudnn.sh finds, system or pip, `make CUDNN=newest`'s; without CUDNN_LIB this
#                     lever is skipped)
#   fuse_residual     --fuse-residual (the residual adds in the projection GEMMs' epilogue)
#   no_deterministic  --no-deterministic (cuDNN's non-deterministic attention backward)
# Run again with the same OUTDIR, it goes on where it stopped (a run that finished is not run again), so the
# check can be spread over calls with a time limit; SIZES=124m then SIZES=1.5b is the natural split.
# Usage: scripts/runs/lever_checks.sh OUTDIR TRAIN_GLOB VAL_GLOB
#   PRECISION (default fp8), SIZES (default "124m 1.5b"), LEVERS (default all three), TOL, NOISE, NOISE_RUNS,
#   EXTRA, A_BIN and B_BIN as in loss_check.sh. Exit status 0 when every lever checked is within TOL, else 1
#   (2: bad usage).
set -u
usage="usage: scripts/runs/lever_checks.sh OUTDIR TRAIN_GLOB VAL_GLOB"
out=${1:?$usage} train=${2:?$usage} val=${3:?$usage}
here=$(dirname "$0")
precision=${PRECISION:-fp8}
levers=${LEVERS:-cudnn_newest fuse_residual no_deterministic}
for lever in $levers; do
  case $lever in
    cudnn_newest | fuse_residual | no_deterministic) ;;
    *) echo "lever_checks: LEVERS takes cudnn_newest, fuse_residual and no_deterministic, got '$lever'" >&2
       exit 2 ;;
  esac
done
if [ "${CUDNN_LIB:-}" = newest ]; then
  read -r _ _ CUDNN_LIB _ <<< "$(bash "$here/../find_cudnn.sh")"
  if [ -z "$CUDNN_LIB" ]; then
    echo "lever_checks: CUDNN_LIB=newest: scripts/find_cudnn.sh found no cuDNN 9" >&2
    exit 2
  fi
  # the binary's own cuDNN (where the dynamic linker finds it now): the same folder would check nothing
  loaded=$(bash "$here/../find_cudnn.sh" --loaded "${B_BIN:-./train_gpt}")
  if [ -n "$loaded" ] && [ "$(cd "$loaded" && pwd -P)" = "$(cd "$CUDNN_LIB" && pwd -P)" ]; then
    echo "lever_checks: CUDNN_LIB=newest is $CUDNN_LIB, the cuDNN ${B_BIN:-./train_gpt} loads already" >&2
    exit 2
  fi
  echo "lever_checks: cudnn_newest with $CUDNN_LIB"
fi
if [ -n "${CUDNN_LIB:-}" ] && [ ! -d "$CUDNN_LIB" ]; then
  echo "lever_checks: CUDNN_LIB=$CUDNN_LIB is not a folder" >&2
  exit 2
fi
mkdir -p "$out"
status=0
for size in ${SIZES:-124m 1.5b}; do
  for lever in $levers; do
    # what the table says of this size and lever: "checked" (its verdict file) or why there is no verdict
    note="$out/$size.$lever.status"
    rm -f "$note"
    b_env="" b_flags="--precision $precision"
    case $lever in
      cudnn_newest)
        if [ -z "${CUDNN_LIB:-}" ]; then
          echo "skipped (CUDNN_LIB not set)" > "$note"
          echo "lever_checks $size $lever: skipped (CUDNN_LIB not set)"
          continue
        fi
        b_env="LD_LIBRARY_PATH=$CUDNN_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
      fuse_residual) b_flags+=" --fuse-residual" ;;
      no_deterministic) b_flags+=" --no-deterministic" ;;
    esac
    REUSE=1 SIZES=$size A_NAME=default B_NAME=$lever A_FLAGS="--precision $precision" B_FLAGS="$b_flags" \
      A_ENV="" B_ENV="$b_env" bash "$here/loss_check.sh" "$out" "$train" "$val" > "$out/$size.$lever.txt" 2>&1
    rc=$?
    [ $rc = 2 ] && { cat "$out/$size.$lever.txt" >&2; exit 2; }
    [ $rc = 0 ] || status=1
    cp "$out/$size.table.txt" "$out/$size.$lever.table.txt" 2>/dev/null
    grep "^loss_check $size: " "$out/$size.$lever.txt" | sed "s/^loss_check $size: /lever_checks $size $lever: /"
    if [ -f "$out/$size.$lever.verdict.tsv" ]; then
      echo checked > "$note"
    else
      echo "no verdict (see $out/$size.$lever.txt)" > "$note"
      echo "lever_checks $size $lever: no verdict (see $out/$size.$lever.txt)"
    fi
  done
done
# One row per size and lever checked in this OUTDIR, this call's and earlier calls' (a check run again replaces
# its row): the fields of loss_check.sh's verdict file, or why there is none.
python3 - "$out" "${TOL:-0.001}" <<'PY'
import csv, glob, os, sys
out, tol = sys.argv[1], float(sys.argv[2])
sizes, levers = ["124m", "1.5b"], ["cudnn_newest", "fuse_residual", "no_deterministic"]
rows = {}
for path in glob.glob(os.path.join(out, "*.status")):
    size, lever = os.path.basename(path)[: -len(".status")].rsplit(".", 1)
    note = open(path).read().strip()
    row = ["-"] * 4 + [note, "-"]
    if note == "checked":
        with open(os.path.join(out, f"{size}.{lever}.verdict.tsv")) as f:
            v = next(csv.DictReader(f, delimiter="\t"))
        within = v["within_tol"] if float(v["tol"]) == tol else f"{v['within_tol']} (of {v['tol']})"  # an earlier TOL
        row = [v["b_a_end"], v["b_a_mean"], v["noise_end"], v["noise_mean"], within, v["within_noise_floor"]]
    rows[(sizes.index(size), levers.index(lever))] = [size, lever] + row
print(f"| size | lever | B/A end | B/A mean | A'/A end | A'/A mean | within {tol:g} | within the noise floor |")
print("|---|---|---|---|---|---|---|---|")
for key in sorted(rows):
    print("| " + " | ".join(rows[key]) + " |")
PY
exit $status
