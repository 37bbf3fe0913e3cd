#!/usr/bin/env bash
# Data-parallel tests of the train_gpt binary (part of `make test` on a machine with 2 or more GPUs; skipped
# otherwise). GPT-2 124M, random tokens, constant learning rate (so a run can be continued with other flags).
#   equivalence_{bf16,fp8}: 2 GPUs x batch 6, 1 GPU x batch 12 and 1 GPU x batch 6 x 2 micro-steps train on the
#     same 12 rows per step; their losses agree within LOSS_TOL per step, and in fp8 every rank holds
#     bitwise the same scale state after every step (train_gpt checks a hash across ranks and says so).
#   graph_bitwise_2gpu: on 2 GPUs (fp8, 2 micro-steps per step) the step captured as one CUDA graph, NCCL calls
#     included, gives bitwise the losses and grad norms of --no-cuda-graph.
#   launcher_{mpirun,srun_env,torchrun,file}: each launch path trains 3 steps on 2 GPUs.
#   rank_death: kill -9 of rank 1 mid-run stops rank 0 with a message naming it, within 60 s.
#   resume_{2to1,1to2}: a checkpoint written by 2 GPUs continues on 1 (and the reverse) with the losses of
#     the uninterrupted run, within LOSS_TOL.
# Tolerances (losses are about 11 on random tokens):
#   bf16 2e-3: the runs differ only in how the BF16 gradients are summed (a bf16 sum of two halves, a
#     reduce-scatter, or one GEMM over 12 rows): rounding at bf16's 2^-9 relative step in the gradients,
#     which 10 AdamW steps at lr 6e-4 turn into loss differences of about 1e-3.
#   fp8 5e-3: on top of that, each GPU (or micro-step) calibrates the step-0 scales from its own rows (one
#     GPU from all 12), so step 0 quantizes differently, and E4M3/E5M2 round at 2^-4 / 2^-3 relative steps:
#     the runs differ by FP8's own quantization noise. The test prints the fp8-vs-bf16 gap of the same
#     configuration next to it, for scale.
set -u
export NCCL_NVLS_ENABLE=0
BIN=${TRAIN_GPT:-./train_gpt}
FAULTS_BIN=${TRAIN_GPT_FAULTS:-build/test/train_gpt_faults}  # the driver with its test hooks linked in
BF16_TOL=${BF16_TOL:-2e-3}
FP8_TOL=${FP8_TOL:-5e-3}
LOSS_TOL=$BF16_TOL
ONLY=${MULTI_ONLY:-}
want() { [ -z "$ONLY" ] || [[ "$1" == *"$ONLY"* ]]; }
source "$(dirname "$0")/lib_gpu.sh"  # pass, fail, losses, free_port
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 2 ]; then
  for c in equivalence_bf16 equivalence_fp8 graph_bitwise_2gpu init_export launcher_mpirun launcher_srun_env launcher_torchrun launcher_file \
           rank_death resume_2to1 resume_1to2; do
    echo "[SKIP] multi_gpu_$c: needs 2 GPUs, this machine has $gpus"
  done
  exit 0
fi
WORK=$(mktemp -d /tmp/gpu_multi_XXXXXX)
trap 'rm -rf "$WORK"' EXIT
COMMON=(--model 124m --seq 1024 --schedule constant --train-data random --log-every 1)

# Two ranks started with torchrun's variables (what `torchrun --nproc-per-node 2` would set); stdout of
# rank 0 in $1/out.txt, rank 1 in $1/out1.txt. Waits for both; returns the worse exit status.
run2() {  # dir args...
  local dir=$1; shift
  mkdir -p "$dir"
  local port; port=$(free_port)
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 \
    "$BIN" "${COMMON[@]}" --log-dir "$dir/log" "$@" > "$dir/out1.txt" 2>&1 &
  local p1=$!
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 \
    "$BIN" "${COMMON[@]}" --log-dir "$dir/log" "$@" > "$dir/out.txt" 2>&1
  local r0=$? r1=0
  wait $p1 || r1=$?
  [ $r0 != 0 ] && return $r0
  return $r1
}
run1() {  # dir args...
  local dir=$1; shift
  mkdir -p "$dir"
  "$BIN" "${COMMON[@]}" --log-dir "$dir/log" "$@" > "$dir/out.txt" 2>&1
}
# Compares the losses of two logs over the steps both have: prints the largest difference; fails above tol.
compare() {  # name log_a log_b
  python3 - "$2" "$3" "$LOSS_TOL" <<'EOF'
import json, sys
def read(p):
    return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if r.get("kind") == "train"}
a, b, tol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
common = sorted(set(a) & set(b))
if not common: print("no common steps"); sys.exit(1)
diff = max(abs(a[s] - b[s]) for s in common)
print(f"{len(common)} steps, max |loss difference| {diff:.3g} (tolerance {tol:g})")
sys.exit(0 if diff <= tol else 1)
EOF
}
tail_of() { tail -3 "$1" | tr '\n' ' '; }

for prec in bf16 fp8; do
  name=equivalence_$prec
  want "$name" || continue
  d=$WORK/$name
  if [ $prec = fp8 ]; then LOSS_TOL=$FP8_TOL; else LOSS_TOL=$BF16_TOL; fi
  args=(--precision "$prec" --steps 10)
  [ $prec = fp8 ] && args+=(--fp8-health-every 1)  # an FP8 flag with bf16 is a usage error
  if ! run1 "$d/one12" "${args[@]}" --batch 12; then fail "$name" "1 GPU x 12: $(tail_of "$d/one12/out.txt")"; continue; fi
  if ! run1 "$d/accum" "${args[@]}" --batch 6 --total-batch 12288; then
    fail "$name" "1 GPU x 6 x 2: $(tail_of "$d/accum/out.txt")"; continue
  fi
  if ! run2 "$d/two" "${args[@]}" --batch 6; then
    fail "$name" "2 GPUs x 6: $(tail_of "$d/two/out.txt") | rank 1: $(tail_of "$d/two/out1.txt")"; continue
  fi
  m1=$(compare "$name" "$d/one12/log/train.jsonl" "$d/accum/log/train.jsonl") ok1=$?
  m2=$(compare "$name" "$d/one12/log/train.jsonl" "$d/two/log/train.jsonl") ok2=$?
  identical=$(grep -c "fp8 scales identical on all 2 ranks" "$d/two/out.txt")
  if [ $ok1 != 0 ] || [ $ok2 != 0 ]; then
    fail "$name" "1x12 vs 1x6x2: $m1; 1x12 vs 2x6: $m2"
  elif [ "$prec" = fp8 ] && [ "$identical" != 10 ]; then
    fail "$name" "fp8 scales reported identical after $identical of 10 steps"
  else
    gap=""
    if [ "$prec" = fp8 ] && [ -f "$WORK/equivalence_bf16/one12/log/train.jsonl" ]; then
      gap="; for scale, fp8 vs bf16 at 1x12: $(LOSS_TOL=1 compare gap "$WORK/equivalence_bf16/one12/log/train.jsonl" "$d/one12/log/train.jsonl")"
      gap="${gap% (tolerance 1)}"
    fi
    pass "$name ($prec, 1x12 vs 1x6x2: $m1; 1x12 vs 2x6: $m2$([ "$prec" = fp8 ] && echo "; scales identical on both ranks after all 10 steps")$gap)"
  fi
done

if want graph_bitwise_2gpu; then
  d=$WORK/graph
  args=(--precision fp8 --steps 8 --batch 4 --total-batch 16384)
  if run2 "$d/g1" "${args[@]}" && run2 "$d/g0" "${args[@]}" --no-cuda-graph; then
    if ! grep -q "training step captured" "$d/g1/out.txt" || grep -q "training step captured" "$d/g0/out.txt"; then
      fail graph_bitwise_2gpu "the CUDA graph was not used (or used with --no-cuda-graph)"
    elif [ "$(losses "$d/g1/log/train.jsonl")" = "$(losses "$d/g0/log/train.jsonl")" ] &&
       [ "$(losses "$d/g1/log/train.jsonl" | wc -l)" = 8 ]; then
      pass "graph_bitwise_2gpu (fp8, 2 GPUs x 2 micro-steps, 8 steps: losses and grad norms identical with and without the CUDA graph)"
    else
      fail graph_bitwise_2gpu "losses differ: $(diff <(losses "$d/g1/log/train.jsonl") <(losses "$d/g0/log/train.jsonl") | head -3 | tr '\n' ' ')"
    fi
  else
    fail graph_bitwise_2gpu "a run failed: $(tail_of "$d/g1/out.txt") | $(tail_of "$d/g0/out.txt")"
  fi
fi

# Sharded initialization and the gather: the weights exported before any step are bitwise those of one GPU.
if want init_export; then
  d=$WORK/init_export
  # exporting the initial weights is a mistake for users; the test hook allows it
  TRAIN_GPT_TEST_EXPORT_INIT=1 BIN=$FAULTS_BIN run1 "$d/one" --batch 4 --export "$d/one.safetensors" &&
    TRAIN_GPT_TEST_EXPORT_INIT=1 BIN=$FAULTS_BIN run2 "$d/two" --batch 4 --export "$d/two.safetensors"
  r=$?
  if [ $r = 0 ] && cmp -s "$d/one.safetensors" "$d/two.safetensors"; then
    pass "init_export (2-GPU export of the initial weights is bitwise the 1-GPU one)"
  else
    fail init_export "status $r; files differ or missing: $(tail_of "$d/two/out.txt")"
  fi
fi

# Launch paths, 3 steps each on 2 GPUs.
check_launch() {  # name dir status expected_launcher
  if [ "$3" = 0 ] && grep -q "x 2 GPUs ($4) = " "$2/out.txt" && grep -q "^summary:" "$2/out.txt"; then
    pass "$1"
  else
    # the first error line names the cause (torchrun's own traceback follows it)
    fail "$1" "status $3: $(grep -m2 -E 'error|Error' "$2/out.txt" | tr '\n' ' ') | $(tail_of "$2/out.txt")"
  fi
}
if want launcher_mpirun; then
  d=$WORK/mpirun; mkdir -p "$d"
  if ! command -v mpirun > /dev/null; then
    echo "[SKIP] launcher_mpirun: no mpirun on this machine"
  else
    root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    timeout 300 mpirun "${root[@]}" -np 2 -x NCCL_NVLS_ENABLE -x PATH -x LD_LIBRARY_PATH \
      "$BIN" "${COMMON[@]}" --log-dir "$d/log" --batch 4 --steps 3 > "$d/out.txt" 2>&1
    check_launch launcher_mpirun "$d" $? mpirun
  fi
fi
if want launcher_srun_env; then
  d=$WORK/srun; mkdir -p "$d"; port=$(free_port)
  SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$BIN" "${COMMON[@]}" --log-dir "$d/log" --batch 4 --steps 3 > "$d/out1.txt" 2>&1 &
  p1=$!
  SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_LOCALID=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$BIN" "${COMMON[@]}" --log-dir "$d/log" --batch 4 --steps 3 > "$d/out.txt" 2>&1
  r=$?; wait $p1 || r=$?
  check_launch launcher_srun_env "$d" $r srun
fi
if want launcher_torchrun; then
  d=$WORK/torchrun; mkdir -p "$d"
  if python3 -c 'import torch.distributed.run' 2> /dev/null; then
    # the real torchrun: its own store listens on MASTER_PORT, train_gpt's rendezvous on MASTER_PORT+1
    timeout 300 python3 -m torch.distributed.run --nproc-per-node 2 --master-port "$(free_port)" --no-python \
      "$BIN" "${COMMON[@]}" --log-dir "$d/log" --batch 4 --steps 3 > "$d/out.txt" 2>&1
    r=$?
    # torchrun interleaves both ranks' output; rank 1's stdout is silenced by train_gpt
    check_launch launcher_torchrun "$d" $r torchrun
  else
    echo "[SKIP] launcher_torchrun: no torch.distributed.run on this machine (the environment is tested by equivalence_*)"
  fi
fi
if want launcher_file; then
  d=$WORK/file
  run2 "$d" --batch 4 --steps 3 --rendezvous "file:$WORK/file_rendezvous"
  r=$?
  if [ -e "$WORK/file_rendezvous" ]; then
    fail launcher_file "the rendezvous file was not removed"
  else
    check_launch launcher_file "$d" $r torchrun
  fi
fi

if want rank_death; then
  d=$WORK/death; mkdir -p "$d"; port=$(free_port)
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 \
    "$BIN" "${COMMON[@]}" --log-dir "$d/log" --batch 4 --steps 100000 > "$d/out1.txt" 2>&1 &
  p1=$!
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 \
    "$BIN" "${COMMON[@]}" --log-dir "$d/log" --batch 4 --steps 100000 > "$d/out.txt" 2>&1 &
  p0=$!
  for _ in $(seq 1 1200); do grep -q "^step *5/" "$d/out.txt" 2> /dev/null && break; sleep 0.1; done
  kill -9 $p1
  t0=$(date +%s)
  while kill -0 $p0 2> /dev/null && [ $(($(date +%s) - t0)) -lt 90 ]; do sleep 0.5; done
  elapsed=$(($(date +%s) - t0))
  if kill -0 $p0 2> /dev/null; then
    kill -9 $p0; fail rank_death "rank 0 still running ${elapsed} s after rank 1 was killed"
  else
    wait $p0; r=$?
    msg=$(grep "rank 0 of 2" "$d/out.txt" | head -1)
    if [ $r != 0 ] && [ -n "$msg" ] && [ $elapsed -le 60 ]; then
      pass "rank_death (rank 0 stopped ${elapsed} s after kill -9 of rank 1: $msg)"
    else
      fail rank_death "status $r after ${elapsed} s: $(tail_of "$d/out.txt")"
    fi
  fi
fi

# Resume across world sizes: 5 steps and a checkpoint on one side, 5 more on the other; the reference is the
# uninterrupted 10-step run of equivalence_fp8 (same flags), or a fresh one.
for dir in 2to1 1to2; do
  name=resume_$dir
  want "$name" || continue
  d=$WORK/$name; mkdir -p "$d"
  LOSS_TOL=$FP8_TOL
  args=(--precision fp8 --fp8-health-every 1)
  ref=$d/ref
  run2 "$ref" "${args[@]}" --batch 6 --steps 10 || { fail "$name" "reference: $(tail_of "$ref/out.txt")"; continue; }
  if [ $dir = 2to1 ]; then
    run2 "$d/first" "${args[@]}" --batch 6 --steps 5 --checkpoint-dir "$d/ckpt" &&
      run1 "$d/second" "${args[@]}" --batch 12 --steps 10 --resume "$d/ckpt"
  else
    run1 "$d/first" "${args[@]}" --batch 12 --steps 5 --checkpoint-dir "$d/ckpt" &&
      run2 "$d/second" "${args[@]}" --batch 6 --steps 10 --resume "$d/ckpt"
  fi
  r=$?
  if [ $r != 0 ]; then
    fail "$name" "status $r: $(tail_of "$d/second/out.txt")"; continue
  fi
  steps=$(losses "$d/second/log/train.jsonl" | awk '{print $1}' | tr '\n' ' ')
  m=$(compare "$name" "$ref/log/train.jsonl" "$d/second/log/train.jsonl") ok=$?
  if [ $ok = 0 ] && [ "$steps" = "5 6 7 8 9 " ]; then
    pass "$name (steps $steps: $m)"
  else
    fail "$name" "steps '$steps': $m"
  fi
done
