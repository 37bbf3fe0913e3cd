#!/usr/bin/env bash
# Data-parallel tests of the train_gpt binary: two ranks, on two GPUs, or sharing the one GPU of this machine
# (--ranks-per-gpu 2, which needs NCCL >= 2.30: the one in $TRAIN_GPT_NCCL_LIB or third_party/nccl/lib, from
# scripts/build_nccl.sh, is put first in LD_LIBRARY_PATH). Part of `make test`; skipped, with the reason, where
# neither is possible. Random tokens, constant learning rate, GEMM autotuning off (two ranks on one GPU would
# time each other's kernels and could choose differently from run to run).
#   equivalence_{bf16,fp8}_{124m,1p5b_2layer}: from a common first step (one rank; in fp8 the calibration),
#     2 ranks x batch B against 1 rank x batch B x 2 micro-steps (the same rows in the same micro-batches):
#     losses and grad norms of every step, and the change of the state since the common step (master
#     weights, AdamW m and v, FP8 amax history and scales) within the tolerances below; the first loss
#     bitwise equal; fp8: both ranks hold the same scales and log the same health after every step (train_gpt
#     checks a hash over the ranks).
#   graph_bitwise_2ranks: fp8, 2 micro-steps per step: the captured CUDA graph (NCCL calls inside) gives
#     bitwise the losses and grad norms of --no-cuda-graph.
#   init_export: the initial weights exported by 2 ranks are bitwise those of 1 rank.
#   launcher_{mpirun,srun_env,torchrun,file}: each launch path trains 3 steps on 2 ranks.
#   fp8_calibration_2ranks: fp8 from the first step: the calibration step's scales come from the largest amax
#     over both ranks, so no slot saturates at step 0, and both ranks log the same health after every step.
#   sigterm_one_rank / kill9_one_rank: SIGTERM of rank 1 stops both ranks after the step with a checkpoint;
#     kill -9 of rank 1 stops rank 0 within --comm-timeout with one line naming it (killed after step 5, whose
#     periodic checkpoint rank 0 then gathers: a gather waits --comm-timeout, not the 30 minutes rank 0's own
#     disk write may take); either run, resumed with the same command, ends with bitwise the losses and the
#     final state of the uninterrupted run.
#   resume_2to1 / resume_2to2 / resume_1to2: a checkpoint of one world size, resumed by the other (and by the
#     same): loaded and written again it is bitwise the same file's state; training on continues within the
#     tolerances of the uninterrupted run.
#   recipe_2ranks: scripts/recipes/gpt2.sh 124m with GPUS=2 on a tiny generated corpus, stopped by SIGTERM
#     after its first checkpoint and continued by the same command to the end.
# Why not bitwise across world sizes, and the tolerances. One rank adds a micro-step's weight gradient into
# the BF16 gradient inside the wgrad GEMM (FP32 product + BF16 sum, rounded once); two ranks each round their
# own to BF16 and the reduce-scatter adds the two BF16 values (rounded again): BF16's 2^-9 relative step in the
# gradients from the first backward on. The first forward is the same arithmetic on the same rows, so its
# loss is bitwise equal, in fp8 too: every rank quantizes its rows of the FP8 weights from its FP32 master
# shard, the values one rank quantizes (until 2026-12-04 several ranks cast the gathered BF16 weights, FP32 ->
# BF16 -> E4M3, and the fp8 first loss differed). E4M3/E5M2 round at 2^-4/2^-3, so the gradients' BF16
# differences become whole FP8 steps later on; random tokens at lr 6e-4 and 8 rows a step sit where small
# differences grow, which is why the fp8 margins are wider. Measured on the H200 (2 ranks on 1 GPU; 124M and
# 1.5B x 2 layers; the largest of each; fp8 with cuDNN 9.14, and 9.19 in brackets where larger):
#   bf16: loss 1.4e-4, grad norm 0.7%, change of master 0.75%, m 0.38%, v 0.67%
#   fp8:  loss 3.1e-3 [3.2e-3], grad norm 9.6% [16%], change of master 2.9% [3.1%], m 4.2% [12%], v 4.6% [13%],
#         FP8 state 1.0% [1.4%]
#   a wrong shard offset (every rank at rank 0's offset), bf16: loss 3.2e-2, grad norm 77%, change of master
#     100%, m 144%, v 253%; the amax all-reduce of the scale update skipped: the ranks' scales differ and
#     train_gpt stops at the first step's check.
# Tolerances: losses (absolute, ~11 on random tokens) bf16 2e-3, fp8 5e-3; grad norms (relative) bf16 2%,
# fp8 25%; state (relative L2 of the change, each group as one vector) bf16 2% master and 5% m and v, fp8 20%
# for master, m and v and 10% for the FP8 state: 2.5-3x the measured noise, 5x below what a wrong offset does.
set -u
export NCCL_NVLS_ENABLE=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${TRAIN_GPT:-./train_gpt}
FAULTS_BIN=${TRAIN_GPT_FAULTS:-build/test/train_gpt_faults}  # the driver with its test hooks linked in
BF16_TOL=${BF16_TOL:-2e-3}
FP8_TOL=${FP8_TOL:-5e-3}
STATE_TOL_BF16=${STATE_TOL_BF16:-master=2e-2,adam_m=5e-2,adam_v=5e-2}
STATE_TOL_FP8=${STATE_TOL_FP8:-master=2e-1,adam_m=2e-1,adam_v=2e-1,fp8=1e-1}
ONLY=${MULTI_ONLY:-}  # a regular expression: only the cases it matches
want() { [ -z "$ONLY" ] || [[ "$1" =~ $ONLY ]]; }
source "$ROOT/test/lib_gpu.sh"  # pass, fail, losses, free_port
ALL_CASES="equivalence_bf16_124m equivalence_fp8_124m equivalence_bf16_1p5b_2layer equivalence_fp8_1p5b_2layer
  graph_bitwise_2ranks init_export launcher_mpirun launcher_srun_env launcher_torchrun launcher_file
  fp8_calibration_2ranks sigterm_one_rank kill9_one_rank resume_2to1 resume_2to2 resume_1to2 recipe_2ranks"
skip_all() {
  for c in $ALL_CASES; do want "$c" && skip "multi_$c" "$1"; done
  exit 0
}

# Where the two ranks run: two GPUs, or one GPU shared with a NCCL that allows it.
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
SHARE=()  # flags of every 2-rank run
if [ "${gpus:-0}" -ge 2 ]; then
  WHERE="2 GPUs"
elif [ "${gpus:-0}" = 1 ]; then
  nccl_dir=${TRAIN_GPT_NCCL_LIB:-$ROOT/third_party/nccl/lib}
  loaded=""
  [ -e "$nccl_dir/libnccl.so.2" ] &&
    loaded=$(LD_LIBRARY_PATH="$nccl_dir:${LD_LIBRARY_PATH:-}" "$BIN" --version 2> /dev/null | awk '$1 == "NCCL" {print $NF}')
  if [ -z "$loaded" ] || [ "$(printf '%s\n' 2.30.0 "$loaded" | sort -V | head -1)" != 2.30.0 ]; then
    skip_all "needs 2 GPUs, or 1 GPU and NCCL >= 2.30 for two ranks on it (none in ${nccl_dir}${loaded:+: NCCL $loaded}; bash scripts/build_nccl.sh builds one)"
  fi
  export LD_LIBRARY_PATH="$nccl_dir:${LD_LIBRARY_PATH:-}"
  SHARE=(--ranks-per-gpu 2)
  WHERE="2 ranks on 1 GPU, NCCL $loaded"
else
  skip_all "needs a GPU (nvidia-smi lists none)"
fi
echo "gpu_multi: $WHERE"
# in memory where it has room (the runs write 1.5 GB checkpoints, fsynced)
shm=$(df -P -B1G /dev/shm 2> /dev/null | awk 'NR == 2 {print $4}')
WORK=$(mktemp -d "$([ "${shm:-0}" -ge 32 ] && echo /dev/shm || echo /tmp)/gpu_multi_XXXXXX")
# MULTI_LOGS=FILE.tgz keeps the runs' text output (logs, stdout) for a look afterwards
trap '[ -n "${MULTI_LOGS:-}" ] && tar czf "$MULTI_LOGS" --exclude="*.safetensors" --exclude="*.bin" -C "$WORK" .; rm -rf "$WORK"' EXIT
COMMON=(--seq 1024 --schedule constant --train-data random --log-every 1 --no-gemm-autotune)
M124=(--model 124m --batch 4)
M1P5B2=(--model 1.5b --layers 2 --batch 2)

# Rank r of two with torchrun's variables (what `torchrun --nproc-per-node 2` sets), in the background;
# stdout in $dir/out.txt (rank 0) or $dir/out1.txt; its pid in PID_r.
start_rank() {  # r port dir args...
  local r=$1 port=$2 dir=$3; shift 3
  local out=$dir/out.txt; [ "$r" = 1 ] && out=$dir/out1.txt
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 \
    "$BIN" "${COMMON[@]}" --log-dir "$dir/log" "${SHARE[@]}" "$@" > "$out" 2>&1 &
  eval "PID_$r=$!"
}
start2() {  # dir args...: both ranks in the background (PID_0, PID_1)
  local dir=$1; shift
  mkdir -p "$dir"
  local port; port=$(free_port)
  start_rank 1 "$port" "$dir" "$@"
  start_rank 0 "$port" "$dir" "$@"
}
run2() {  # dir args...: both ranks; returns the worse exit status
  start2 "$@"
  local r0=0 r1=0
  wait "$PID_0" || r0=$?
  wait "$PID_1" || r1=$?
  [ $r0 != 0 ] && return $r0
  return $r1
}
run1() {  # dir args...
  local dir=$1; shift
  mkdir -p "$dir"
  "$BIN" "${COMMON[@]}" --log-dir "$dir/log" "$@" > "$dir/out.txt" 2>&1
}
# The largest per-step difference of two logs over the steps both have, of the loss (absolute) or the grad
# norm (relative): prints it; fails above tol.
compare() {  # log_a log_b tol [loss|grad_norm]
  python3 - "$1" "$2" "$3" "${4:-loss}" << 'EOF'
import json, sys
def read(p, key):
    return {r["step"]: r[key] for r in map(json.loads, open(p)) if r.get("kind") == "train"}
key = sys.argv[4]
a, b, tol = read(sys.argv[1], key), read(sys.argv[2], key), float(sys.argv[3])
common = sorted(set(a) & set(b))
if not common: print("no common steps"); sys.exit(1)
if key == "loss":
    diff = max(abs(a[s] - b[s]) for s in common)
    print(f"{len(common)} steps, max |loss difference| {diff:.3g} (tolerance {tol:g})")
else:
    diff = max(abs(a[s] - b[s]) / max(abs(a[s]), 1e-30) for s in common)
    print(f"max relative grad-norm difference {diff:.3g} (tolerance {tol:g})")
sys.exit(0 if diff <= tol else 1)
EOF
}
state() { python3 "$ROOT/scripts/check/compare_state.py" "$@" | tr '\n' ';' | sed 's/;$//'; return "${PIPESTATUS[0]}"; }
last_ckpt() { ls "$1"/ckpt_*.safetensors 2> /dev/null | sort | tail -1; }
tail_of() { tail -3 "$1" | tr '\n' ' '; }
# the "x/N slots saturated" count of a step's fp8 health line
saturated_at() { grep -E "^step +$2 \| fp8 health" "$1" | sed -E 's/.*\| ([0-9]+)\/[0-9]+ slots saturated.*/\1/'; }

for model in 124m 1p5b_2layer; do
  for prec in bf16 fp8; do
    name=equivalence_${prec}_$model
    want "$name" || continue
    d=$WORK/$name
    if [ $model = 124m ]; then margs=("${M124[@]}") steps=8; else margs=("${M1P5B2[@]}") steps=6; fi
    tokens=$(("${margs[-1]}" * 2048))  # 2 x batch x 1024
    args=("${margs[@]}" --precision "$prec" --steps "$steps")
    [ $prec = fp8 ] && args+=(--fp8-health-every 1)  # an FP8 flag with bf16 is a usage error
    if [ $prec = fp8 ]; then tol=$FP8_TOL stol=$STATE_TOL_FP8 ntol=2.5e-1; else tol=$BF16_TOL stol=$STATE_TOL_BF16 ntol=2e-2; fi
    # the common start: the first step (in fp8 the calibration) on one rank, then both continue from it
    if ! run1 "$d/start" "${args[@]}" --steps 1 --total-batch "$tokens" --checkpoint-dir "$d/start/ckpt"; then
      fail "$name" "the first step: $(tail_of "$d/start/out.txt")"; continue
    fi
    if ! run1 "$d/one" "${args[@]}" --total-batch "$tokens" --resume "$d/start/ckpt" --checkpoint-dir "$d/one/ckpt"; then
      fail "$name" "1 rank x 2 micro-steps: $(tail_of "$d/one/out.txt")"; continue
    fi
    if ! run2 "$d/two" "${args[@]}" --resume "$d/start/ckpt" --checkpoint-dir "$d/two/ckpt"; then
      fail "$name" "2 ranks: $(tail_of "$d/two/out.txt") | rank 1: $(tail_of "$d/two/out1.txt")"; continue
    fi
    why=()
    m_loss=$(compare "$d/one/log/train.jsonl" "$d/two/log/train.jsonl" "$tol") || why+=("losses: $m_loss")
    m_norm=$(compare "$d/one/log/train.jsonl" "$d/two/log/train.jsonl" "$ntol" grad_norm) || why+=("$m_norm")
    m_state=$(state "$(last_ckpt "$d/one/ckpt")" "$(last_ckpt "$d/two/ckpt")" --base "$(last_ckpt "$d/start/ckpt")" \
      --tol "$stol") || why+=("state: $m_state")
    l1=$(losses "$d/one/log/train.jsonl" | awk '$1 == 1 {print $2}') l2=$(losses "$d/two/log/train.jsonl" | awk '$1 == 1 {print $2}')
    # the same weights (in fp8 the same W bytes: each rank quantizes its rows of the FP32 master, as one rank
    # does the whole) give the same first loss, bit for bit
    [ -n "$l1" ] && [ "$l1" = "$l2" ] || why+=("the first loss is not bitwise equal: $l1 vs $l2")
    extra="the first loss bitwise equal ($l1)"
    if [ $prec = fp8 ]; then
      identical=$(grep -c "fp8 scales and health identical on all 2 ranks" "$d/two/out.txt")
      [ "$identical" = $((steps - 1)) ] || why+=("fp8 scales and health identical after $identical of $((steps - 1)) steps")
      extra="$extra; scales and health identical on both ranks after all $identical steps"
    fi
    if [ ${#why[@]} = 0 ]; then
      pass "$name ($WHERE; $m_loss; $m_norm; state $m_state; $extra)"
    else
      fail "$name" "$(IFS='|'; echo "${why[*]}")"
    fi
  done
done

if want graph_bitwise_2ranks; then
  d=$WORK/graph
  args=("${M124[@]}" --precision fp8 --steps 6 --total-batch 16384)
  if run2 "$d/g1" "${args[@]}" && run2 "$d/g0" "${args[@]}" --no-cuda-graph; then
    if ! grep -q "training step captured" "$d/g1/out.txt" || grep -q "training step captured" "$d/g0/out.txt"; then
      fail graph_bitwise_2ranks "the CUDA graph was not used (or used with --no-cuda-graph)"
    elif [ "$(losses "$d/g1/log/train.jsonl")" = "$(losses "$d/g0/log/train.jsonl")" ] &&
      [ "$(losses "$d/g1/log/train.jsonl" | wc -l)" = 6 ]; then
      pass "graph_bitwise_2ranks (fp8, 2 ranks x 2 micro-steps, 6 steps: losses and grad norms identical with and without the CUDA graph)"
    else
      fail graph_bitwise_2ranks "losses differ: $(diff <(losses "$d/g1/log/train.jsonl") <(losses "$d/g0/log/train.jsonl") | head -3 | tr '\n' ' ')"
    fi
  else
    fail graph_bitwise_2ranks "a run failed: $(tail_of "$d/g1/out.txt") | $(tail_of "$d/g0/out.txt")"
  fi
fi

# Sharded initialization and the gather: the weights exported before any step are bitwise those of one rank.
if want init_export; then
  d=$WORK/init_export
  # exporting the initial weights is a mistake for users; the test hook allows it. Without the training
  # flags of COMMON: an export-only run refuses them.
  saved=("${COMMON[@]}"); COMMON=(--seq 1024 --no-gemm-autotune)
  TRAIN_GPT_TEST_EXPORT_INIT=1 BIN=$FAULTS_BIN run1 "$d/one" "${M124[@]}" --export "$d/one.safetensors" &&
    TRAIN_GPT_TEST_EXPORT_INIT=1 BIN=$FAULTS_BIN run2 "$d/two" "${M124[@]}" --export "$d/two.safetensors"
  r=$?
  COMMON=("${saved[@]}")
  if [ $r = 0 ] && cmp -s "$d/one.safetensors" "$d/two.safetensors"; then
    pass "init_export (2-rank export of the initial weights is bitwise the 1-rank one)"
  else
    fail init_export "status $r; files differ or missing: $(tail_of "$d/two/out.txt")"
  fi
fi

# Launch paths, 3 steps each on 2 ranks.
check_launch() {  # name dir status expected_launcher
  if [ "$3" = 0 ] && grep -qE "x 2 (GPUs \($4\)|ranks \($4, 2 per GPU\)) = " "$2/out.txt" && grep -q "^summary:" "$2/out.txt"; then
    pass "$1 ($WHERE)"
  else
    # the first error line names the cause (torchrun's own traceback follows it)
    fail "$1" "status $3: $(grep -m2 -E 'error|Error' "$2/out.txt" | tr '\n' ' ') | $(tail_of "$2/out.txt")"
  fi
}
LAUNCH_ARGS=("${M124[@]}" --steps 3 "${SHARE[@]}")
if want launcher_mpirun; then
  d=$WORK/mpirun; mkdir -p "$d"
  if ! command -v mpirun > /dev/null; then
    skip launcher_mpirun "no mpirun on this machine"
  else
    root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    timeout 300 mpirun "${root[@]}" -np 2 -x NCCL_NVLS_ENABLE -x PATH -x LD_LIBRARY_PATH \
      "$BIN" "${COMMON[@]}" --log-dir "$d/log" "${LAUNCH_ARGS[@]}" > "$d/out.txt" 2>&1
    check_launch launcher_mpirun "$d" $? mpirun
  fi
fi
if want launcher_srun_env; then
  d=$WORK/srun; mkdir -p "$d"; port=$(free_port)
  SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$BIN" "${COMMON[@]}" --log-dir "$d/log" "${LAUNCH_ARGS[@]}" > "$d/out1.txt" 2>&1 &
  p1=$!
  SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_LOCALID=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$BIN" "${COMMON[@]}" --log-dir "$d/log" "${LAUNCH_ARGS[@]}" > "$d/out.txt" 2>&1
  r=$?; wait $p1 || r=$?
  check_launch launcher_srun_env "$d" $r srun
fi
if want launcher_torchrun; then
  d=$WORK/torchrun; mkdir -p "$d"
  if python3 -c 'import torch.distributed.run' 2> /dev/null; then
    # the real torchrun: its own store listens on MASTER_PORT, train_gpt's rendezvous on MASTER_PORT+1
    timeout 300 python3 -m torch.distributed.run --nproc-per-node 2 --master-port "$(free_port)" --no-python \
      "$BIN" "${COMMON[@]}" --log-dir "$d/log" "${LAUNCH_ARGS[@]}" > "$d/out.txt" 2>&1
    r=$?
    # torchrun interleaves both ranks' output; rank 1's stdout is silenced by train_gpt
    check_launch launcher_torchrun "$d" $r torchrun
  else
    skip launcher_torchrun "no torch.distributed.run on this machine (the environment is tested by the other cases)"
  fi
fi
if want launcher_file; then
  d=$WORK/file
  run2 "$d" "${M124[@]}" --steps 3 --rendezvous "file:$WORK/file_rendezvous"
  r=$?
  if [ -e "$WORK/file_rendezvous" ]; then
    fail launcher_file "the rendezvous file was not removed"
  else
    check_launch launcher_file "$d" $r torchrun
  fi
fi

# The reference of the stop and resume cases: 8 uninterrupted fp8 steps on 2 ranks, a checkpoint every 2.
RUN=("${M124[@]}" --precision fp8 --steps 8 --checkpoint-every 2 --keep-checkpoints 8 --comm-timeout 10
  --fp8-health-every 1)
REF=$WORK/ref
ref_ok=""
need_ref() {
  if [ -z "$ref_ok" ]; then
    if run2 "$REF" "${RUN[@]}" --checkpoint-dir "$REF/ckpt"; then ref_ok=1; else ref_ok=0; fi
  fi
  [ "$ref_ok" = 1 ]
}
# Bitwise: the resumed run's losses and grad norms (the last record of each step it logged, up to the last
# step) are the reference's, and its final checkpoint holds the reference's state.
bitwise_vs_ref() {  # dir
  local mine ref
  mine=$(losses "$1/log/train.jsonl" | awk '{last[$1] = $0} END {for (s in last) print last[s]}' | sort -n)
  ref=$(awk 'NR == FNR {want[$1]; next} $1 in want' <(printf '%s\n' "$mine") <(losses "$REF/log/train.jsonl"))
  [ -n "$mine" ] && [ "$mine" = "$ref" ] && [ "$(tail -1 <<< "$mine" | cut -d' ' -f1)" = 7 ] ||
    { echo "losses differ: $(diff <(echo "$ref") <(echo "$mine") | head -2 | tr '\n' ' ')"; return 1; }
  state "$(last_ckpt "$REF/ckpt")" "$(last_ckpt "$1/ckpt")" --exact
}
# Starts RUN on 2 ranks, waits for rank 0's step line $2, sends signal $3 to rank 1 only; waits for both
# (rank 0 at most 60 s, then it is killed: R0=hung). Sets R0 and R1 (exit statuses) and SECS (from the signal
# to rank 0's exit).
stop_rank1() {  # dir step signal
  start2 "$1" "${RUN[@]}" --checkpoint-dir "$1/ckpt"
  for _ in $(seq 1 1800); do grep -qE "^step +$2/" "$1/out.txt" 2> /dev/null && break; sleep 0.1; done
  kill -"$3" "$PID_1"
  local t0; t0=$(date +%s)
  R0=0 R1=0
  while kill -0 "$PID_0" 2> /dev/null && [ $(($(date +%s) - t0)) -lt 60 ]; do sleep 0.2; done
  SECS=$(($(date +%s) - t0))
  if kill -0 "$PID_0" 2> /dev/null; then
    kill -9 "$PID_0"; R0=hung
  fi
  { wait "$PID_0" || [ "$R0" = hung ] || R0=$?; } 2> /dev/null
  { wait "$PID_1" || R1=$?; } 2> /dev/null  # bash's "Killed" notice of kill -9 silenced
}
# FP8 from the first step on 2 ranks (the reference run): each scale of the calibration step comes from the
# largest amax over both ranks, so no slot saturates (rank 0's health used to count the other rank's larger
# amaxes against its own scales), and both ranks hold the same scales and log the same health every step.
if want fp8_calibration_2ranks; then
  if ! need_ref; then
    fail fp8_calibration_2ranks "reference run: $(tail_of "$REF/out.txt")"
  else
    s0=$(saturated_at "$REF/out.txt" 0)
    identical=$(grep -c "fp8 scales and health identical on all 2 ranks" "$REF/out.txt")
    line=$(grep -m1 -oE "^step +0 \| fp8 health: scales [^|]*\| [0-9]+/[0-9]+ slots saturated" "$REF/out.txt")
    if [ "$s0" = 0 ] && [ "$identical" = 8 ]; then
      pass "fp8_calibration_2ranks ($WHERE: '$line'; scales and health identical on both ranks after all 8 steps)"
    else
      fail fp8_calibration_2ranks "'$line'; identical after $identical of 8 steps"
    fi
  fi
fi
if want sigterm_one_rank; then
  d=$WORK/sigterm
  if ! need_ref; then
    fail sigterm_one_rank "reference run: $(tail_of "$REF/out.txt")"
  else
    stop_rank1 "$d" 3 TERM
    stopped=$(grep -o "stopped by SIGTERM after step [0-9]*" "$d/out.txt")
    if [ $R0 != 0 ] || [ $R1 != 0 ] || [ -z "$stopped" ]; then
      fail sigterm_one_rank "exit $R0/$R1, rank 0: $(tail_of "$d/out.txt")"
    elif ! run2 "$d" "${RUN[@]}" --checkpoint-dir "$d/ckpt" --resume "$d/ckpt"; then
      fail sigterm_one_rank "resume: $(tail_of "$d/out.txt")"
    elif m=$(bitwise_vs_ref "$d"); then
      pass "sigterm_one_rank (SIGTERM to rank 1: both ranks $stopped, checkpointed, exit 0 after ${SECS} s; resumed: losses, grad norms and final state bitwise the uninterrupted run's: $m)"
    else
      fail sigterm_one_rank "after the resume: $m"
    fi
  fi
fi
if want kill9_one_rank; then
  d=$WORK/kill9
  if ! need_ref; then
    fail kill9_one_rank "reference run: $(tail_of "$REF/out.txt")"
  else
    stop_rank1 "$d" 5 9
    msg=$(grep "rank 0 of 2" "$d/out.txt" | head -1)
    if [ $R0 = 0 ] || [ $R0 = hung ] || [ -z "$msg" ] || [ "$SECS" -gt 15 ]; then
      fail kill9_one_rank "rank 0 exit $R0 after ${SECS} s (--comm-timeout 10): $(tail_of "$d/out.txt")"
    elif ! run2 "$d" "${RUN[@]}" --checkpoint-dir "$d/ckpt" --resume "$d/ckpt"; then
      fail kill9_one_rank "resume: $(tail_of "$d/out.txt")"
    elif m=$(bitwise_vs_ref "$d"); then
      pass "kill9_one_rank (kill -9 of rank 1: rank 0 stopped ${SECS} s later: '$msg'; resumed from $(grep -o 'resumed from [^:]*' "$d/out.txt" | tail -1 | sed 's#.*/##'): bitwise the uninterrupted run: $m)"
    else
      fail kill9_one_rank "after the resume: $m"
    fi
  fi
fi

# Across world sizes: the step-4 checkpoint of one world size, loaded by the other and written again at once
# (--steps 4: nothing to train), is bitwise the same state; trained on to step 8 it stays within the
# tolerances of the uninterrupted run.
resume_across() {  # name from-dir(with ckpt_4) reference-dir resume-world
  local name=$1 src=$2 ref=$3 world=$4 d=$WORK/$1
  mkdir -p "$d/from4"
  cp "$src/ckpt_00000004.safetensors" "$d/from4/" || { fail "$name" "no step-4 checkpoint in $src"; return; }
  local runner=run1 wargs=(--total-batch 8192)
  [ "$world" = 2 ] && runner=run2 wargs=()
  local m1 m2 r
  if ! $runner "$d/resave" "${RUN[@]}" "${wargs[@]}" --steps 4 --resume "$d/from4" --checkpoint-dir "$d/resave/ckpt"; then
    fail "$name" "re-save: $(tail_of "$d/resave/out.txt")"; return
  fi
  m1=$(state "$d/from4/ckpt_00000004.safetensors" "$(last_ckpt "$d/resave/ckpt")" --exact) ||
    { fail "$name" "loaded and written again, the state differs: $m1"; return; }
  if ! $runner "$d/on" "${RUN[@]}" "${wargs[@]}" --resume "$d/from4" --checkpoint-dir "$d/on/ckpt"; then
    fail "$name" "training on: $(tail_of "$d/on/out.txt")"; return
  fi
  local steps; steps=$(losses "$d/on/log/train.jsonl" | awk '{print $1}' | tr '\n' ' ')
  r=0
  if [ "$world" = 2 ] && [ "$src" = "$REF/ckpt" ]; then  # the same world size: bitwise the uninterrupted run
    m2=$(bitwise_vs_ref "$d/on") || r=1
    m3="bitwise"
  else
    m2=$(compare "$ref/log/train.jsonl" "$d/on/log/train.jsonl" "$FP8_TOL") || r=1
    m3=$(state "$(last_ckpt "$ref/ckpt")" "$(last_ckpt "$d/on/ckpt")" --base "$d/from4/ckpt_00000004.safetensors" \
      --tol "$STATE_TOL_FP8") || r=1
  fi
  if [ $r = 0 ] && [ "$steps" = "4 5 6 7 " ]; then
    pass "$name (written again: $m1; steps $steps: $m2; final state $m3)"
  else
    fail "$name" "steps '$steps': $m2 | $m3"
  fi
}
if want resume_2to1 || want resume_2to2; then
  if ! need_ref; then
    fail resume_2to1 "reference run: $(tail_of "$REF/out.txt")"
  else
    want resume_2to1 && resume_across resume_2to1 "$REF/ckpt" "$REF" 1
    want resume_2to2 && resume_across resume_2to2 "$REF/ckpt" "$REF" 2
  fi
fi
if want resume_1to2; then
  one=$WORK/ref1
  if run1 "$one" "${RUN[@]}" --total-batch 8192 --checkpoint-dir "$one/ckpt"; then
    resume_across resume_1to2 "$one/ckpt" "$one" 2
  else
    fail resume_1to2 "1-rank reference: $(tail_of "$one/out.txt")"
  fi
fi

# The recipe with GPUS=2 (ranks sharing the GPU where there is one): a tiny byte-token corpus, 6 steps of 8192
# tokens, a checkpoint every 2; SIGTERM to the launcher once the first checkpoint is written, then the same
# command again continues to the end (DONE).
if want recipe_2ranks; then
  d=$WORK/recipe; mkdir -p "$d"
  python3 - "$d" << 'EOF'
import json, random, sys
rng = random.Random(0)
words = "the a of to and in is was for on that with as by at from it he she they we you".split()
with open(f"{sys.argv[1]}/corpus.jsonl", "w") as f:
    for _ in range(400):
        f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(rng.randrange(50, 400))) + "."}) + "\n")
with open(f"{sys.argv[1]}/hellaswag.jsonl", "w") as f:
    for i in range(8):
        f.write(json.dumps({"ctx": " ".join(rng.choice(words) for _ in range(12)),
                            "endings": [" ".join(rng.choice(words) for _ in range(5)) for _ in range(4)],
                            "label": i % 4}) + "\n")
EOF
  python3 "$ROOT/scripts/data/prepare_data.py" --tokenizer bytes --val-fraction 0.2 --prefix fineweb --out-dir "$d/data" \
    "$d/corpus.jsonl" > "$d/prep.txt" 2>&1 &&
    python3 "$ROOT/scripts/data/prepare_hellaswag.py" --tokenizer bytes --input "$d/hellaswag.jsonl" --out "$d/hs.bin" >> "$d/prep.txt" 2>&1
  # the user's command, as a script of its own (started in a process group of its own, to be signalled whole)
  printf 'GPUS=2 STEPS=6 WARMUP_STEPS=0 BATCH=4 OUT=%q DATA=%q HELLASWAG=%q TRAIN_GPT=%q bash %q 124m %s\n' \
    "$d/run" "$d/data" "$d/hs.bin" "$(realpath "$BIN")" "$ROOT/scripts/recipes/gpt2.sh" \
    "--total-batch 8192 --checkpoint-every 2 --val-batches 2 --no-gemm-autotune ${SHARE[*]}" > "$d/recipe.sh"
  if [ ! -s "$d/hs.bin" ]; then
    fail recipe_2ranks "data preparation: $(tail_of "$d/prep.txt")"
  else
    setsid bash "$d/recipe.sh" > "$d/first.txt" 2>&1 &
    pid=$!
    for _ in $(seq 1 3000); do ls "$d/run/checkpoints"/ckpt_*.safetensors > /dev/null 2>&1 && break; kill -0 $pid 2> /dev/null || break; sleep 0.1; done
    kill -TERM -- -$pid 2> /dev/null  # the recipe's process group: the script, the launcher and the ranks
    wait $pid
    bash "$d/recipe.sh" > "$d/second.txt" 2>&1
    r=$?
    if [ $r = 0 ] && [ -f "$d/run/DONE" ] && grep -q "resumed from" "$d/second.txt" &&
      [ "$(grep -c '"kind": "train"' "$d/run/train.jsonl")" -ge 6 ]; then
      pass "recipe_2ranks (GPUS=2, $WHERE: SIGTERM after '$(grep -m1 -o 'checkpoint (periodic): [^ ]*' "$d/first.txt" | sed 's#/.*/##')', the same command again: $(grep -m1 -o 'resumed from [^:]*: step [0-9]*' "$d/second.txt" | sed 's#from .*/#from #'), $(grep -m1 -o 'done, [0-9]* steps' "$d/second.txt"))"
    else
      fail recipe_2ranks "status $r, DONE $([ -f "$d/run/DONE" ] && echo present || echo missing): $(tail_of "$d/first.txt") | $(tail_of "$d/second.txt")"
    fi
  fi
fi
