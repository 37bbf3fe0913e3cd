#!/usr/bin/env bash
# Every kernel of one training step with its GPU time, grouped by kernel (Nsight Compute): where a step's time
# goes, and whether the kernels add up to the step (what is left is launch gaps and host time).
# Usage: scripts/bench/kernel_census.sh OUTDIR TRAIN_GPT_FLAGS...
#   e.g. scripts/bench/kernel_census.sh logs/census_124m --model 124m --batch 16 --precision fp8
# A plain 3-step run first tunes the GEMMs into OUTDIR/gemm_algos.tsv; then 2 steps under
#   ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv
# with --no-cuda-graph (the same kernels as the captured step: test/gpu_options.sh's graph_bitwise cases) and that
# cache (the same GEMM choices), and scripts/bench/kernel_census.py cuts out the last step. Kernels run one at a
# time there, with the GPU idle between them, so under a power cap each is a little faster than inside the step:
# the sum is a floor (compare it with the step of `make bench`). Needs ./train_gpt, ncu and python3; one
# micro-step a step (no --total-batch). Random tokens.
set -u
fail() { echo "kernel_census: $*"; exit 2; }
[ $# -ge 1 ] || fail "usage: kernel_census.sh OUTDIR TRAIN_GPT_FLAGS..."
out=$1
shift
for a in "$@"; do
  case $a in
    --steps* | -n | --no-cuda-graph | --cuda-graph | --gemm-cache* | --total-batch* | --log-dir* | --train-data*)
      fail "$a is set by the census itself (or would cut the step into micro-steps); leave it out" ;;
  esac
done
command -v ncu > /dev/null || fail "ncu (Nsight Compute) not found on PATH"
command -v python3 > /dev/null || fail "python3 not found"
[ -x ./train_gpt ] || fail "./train_gpt not found: run make first"
mkdir -p "$out" || fail "cannot create $out"
flags=(--seq 1024 --train-data random --log-every 1 --gemm-cache "$out/gemm_algos.tsv" "$@")
./train_gpt "${flags[@]}" --steps 3 --log-dir "$out/tune" > "$out/tune.txt" 2>&1 ||
  fail "the tuning run failed: $(tail -1 "$out/tune.txt")"
export NCCL_NVLS_ENABLE=0
ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --log-file "$out/ncu.csv" \
  ./train_gpt "${flags[@]}" --steps 2 --no-cuda-graph --log-dir "$out/census" > "$out/census.txt" 2>&1 ||
  fail "the run under ncu failed: $(tail -1 "$out/census.txt")"
python3 "$(dirname "$0")/kernel_census.py" "$out/ncu.csv" | tee "$out/census_table.txt"
exit "${PIPESTATUS[0]}"
