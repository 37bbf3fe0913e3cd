#!/usr/bin/env bash
# Train GPT-2 as llm.c's scripts/run_gpt2_{124M,350M,774M,1558M}.sh do, with train_gpt (FP8 by default), on every
# GPU of this machine. The walk-through (data, HellaSwag, what to expect) is scripts/recipes/README.md.
#
#   bash scripts/recipes/gpt2.sh SIZE [extra train_gpt flags...]       SIZE: 124m | 350m | 774m | 1558m
#
# llm.c's numbers per size (steps, peak lr, final lr, tokens per step, checkpoint interval, micro-batch); the
# same for all: GPT-2's tanh GELU (as llm.c; the Hugging Face export then computes the same function), 1024-token
# sequences, AdamW (0.9, 0.95) with weight decay 0.1, gradient clip 1.0, 700 warmup
# steps then a cosine decay, validation (20 batches) and HellaSwag every 250 steps, samples of 144 tokens.
#
# Restartable: checkpoints go to $OUT/checkpoints and the run is started with --resume-if-present, so the same
# command after a crash (or a stop with Ctrl-C / SIGTERM, which checkpoints) continues from the newest
# checkpoint; a finished run leaves $OUT/DONE and is not started again. RETRIES=N re-runs a run that failed up
# to N times (llm.c's loop).
#
# Before training it prints its plan: tokens, steps and the time projected from a short measured warm-up
# (WARMUP_STEPS steps of train_gpt with the same flags, step_ms from its train.jsonl; WARMUP_STEPS=0: none).
#
# Environment (defaults in brackets):
#   OUT           the run's folder: config.json, train.jsonl, checkpoints/ [runs/gpt2_SIZE]
#   DATA          folder of the shards from scripts/data/prepare_data.py --prefix fineweb [data/fineweb10B for 124m,
#                 data/fineweb100B for 350m and 774m, data/edu_fineweb100B for 1558m]
#   TRAIN_DATA, VAL_DATA   the shard globs [$DATA/fineweb_train_*.bin, $DATA/fineweb_val_*.bin]
#   HELLASWAG     from scripts/data/prepare_hellaswag.py [data/hellaswag/hellaswag_val_gpt2.bin]
#   PRECISION     fp8 | bf16 [fp8]
#   GPUS          processes, one per GPU [the GPUs nvidia-smi -L lists]; more than one: mpirun (else torchrun)
#   BATCH         micro-batch per GPU [llm.c's: 64, 64, 32, 16]; the tokens per step stay llm.c's
#   STEPS         optimizer steps [llm.c's]; the schedule follows (warmup: 700 steps, at most a tenth of them)
#   TRAIN_GPT     the binary [./train_gpt of this checkout]
#   WARMUP_STEPS  steps of the timing run before training [6]
#   RETRIES       re-runs after a failure [0], RETRY_DELAY seconds apart [10]
#   DRY_RUN=1     no GPU, no training: prepares a generated tiny corpus and HellaSwag file with the data scripts
#                 (byte tokenizer) and runs the recipe's flags on them through train_gpt --print-config (with
#                 GPUS > 1 as one of GPUS ranks), then prints the plan and the command it would run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
die() {
  echo "error: $*" >&2
  exit 2
}

SIZE=${1:-}
[ $# -gt 0 ] && shift
# size: steps, peak lr, final lr fraction, tokens per step, checkpoint every, micro-batch, model preset, data
case "$SIZE" in
  124m) DEFAULT_STEPS=18865 LR=0.0006 FINAL_LR_FRAC=0.0 TOTAL_BATCH=524288 CKPT_EVERY=5000 MICRO=64 MODEL=124m
    DEFAULT_DATA=data/fineweb10B ;;
  350m) DEFAULT_STEPS=60000 LR=0.0003 FINAL_LR_FRAC=0.0 TOTAL_BATCH=524288 CKPT_EVERY=2000 MICRO=64 MODEL=350m
    DEFAULT_DATA=data/fineweb100B ;;
  774m) DEFAULT_STEPS=286102 LR=0.00025 FINAL_LR_FRAC=0.0 TOTAL_BATCH=524288 CKPT_EVERY=4000 MICRO=32 MODEL=774m
    DEFAULT_DATA=data/fineweb100B ;;
  1558m | 1.5b) SIZE=1558m DEFAULT_STEPS=32000 LR=0.0006 FINAL_LR_FRAC=0.1 TOTAL_BATCH=1048576 CKPT_EVERY=2000 MICRO=16 MODEL=1.5b
    DEFAULT_DATA=data/edu_fineweb100B ;;
  *) die "usage: bash scripts/recipes/gpt2.sh 124m|350m|774m|1558m [extra train_gpt flags...] (got '${SIZE}')" ;;
esac

STEPS=${STEPS:-$DEFAULT_STEPS}
OUT=${OUT:-runs/gpt2_$SIZE}
DATA=${DATA:-$DEFAULT_DATA}
TRAIN_DATA=${TRAIN_DATA:-$DATA/fineweb_train_*.bin}
VAL_DATA=${VAL_DATA:-$DATA/fineweb_val_*.bin}
HELLASWAG=${HELLASWAG:-data/hellaswag/hellaswag_val_gpt2.bin}
PRECISION=${PRECISION:-fp8}
BATCH=${BATCH:-$MICRO}
TRAIN_GPT=${TRAIN_GPT:-$ROOT/train_gpt}
WARMUP_STEPS=${WARMUP_STEPS:-6}
RETRIES=${RETRIES:-0}
RETRY_DELAY=${RETRY_DELAY:-10}
DRY_RUN=${DRY_RUN:-0}
SEQ=1024

if [ -z "${GPUS:-}" ]; then
  GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [ "$GPUS" -ge 1 ] 2>/dev/null || GPUS=1
  [ "$DRY_RUN" = 1 ] || nvidia-smi -L >/dev/null 2>&1 ||
    die "no GPU found (nvidia-smi -L failed); DRY_RUN=1 checks the recipe without one"
fi
[[ "$STEPS" =~ ^[1-9][0-9]*$ ]] || die "STEPS must be a positive integer, got '$STEPS'"
[[ "$GPUS" =~ ^[1-9][0-9]*$ ]] || die "GPUS must be a positive integer, got '$GPUS'"
[[ "$WARMUP_STEPS" =~ ^[0-9]+$ ]] || die "WARMUP_STEPS must be an integer >= 0, got '$WARMUP_STEPS'"
[[ "$RETRIES" =~ ^[0-9]+$ ]] || die "RETRIES must be an integer >= 0, got '$RETRIES'"
[ -x "$TRAIN_GPT" ] || die "$TRAIN_GPT: not built (run make in $ROOT, or set TRAIN_GPT)"

CKPT="$OUT/checkpoints"
WARMUP=$((STEPS / 10 < 700 ? STEPS / 10 : 700))  # llm.c's 700; a tenth of a short trial's steps
printf -v LAST_CKPT '%s/ckpt_%08d.safetensors' "$CKPT" "$STEPS"

# The run's flags (llm.c's hyperparameters) into the array FLAGS; the data paths are arguments so that the dry
# run can swap them (globs stay unexpanded: train_gpt reads them).
recipe_flags() {  # train-glob val-glob hellaswag-file
  FLAGS=(--model "$MODEL" --gelu tanh --precision "$PRECISION" --train-data "$1" --val-data "$2" --val-every 250
    --val-batches 20 --eval-hellaswag "$3" --eval-every 250 --total-batch "$TOTAL_BATCH" --batch "$BATCH"
    --seq "$SEQ" --steps "$STEPS" --lr "$LR" --warmup "$WARMUP" --schedule cosine --final-lr-frac "$FINAL_LR_FRAC"
    --weight-decay 0.1 --grad-clip 1.0 --beta1 0.9 --beta2 0.95 --log-dir "$OUT" --log-every 10
    --resume-if-present "$CKPT" --checkpoint-every "$CKPT_EVERY" --keep-checkpoints 2 --sample-every 5000
    --sample-tokens 144)
}

# One process per GPU, into the array LAUNCH (empty for one GPU): mpirun, as test/gpu_multi.sh and README
# "Several GPUs" start ranks, else torchrun.
LAUNCH=()
if [ "$GPUS" -gt 1 ]; then
  if command -v mpirun >/dev/null 2>&1; then
    LAUNCH=(mpirun -np "$GPUS")
    [ "$(id -u)" = 0 ] && LAUNCH+=(--allow-run-as-root)
    for v in NCCL_NVLS_ENABLE PATH LD_LIBRARY_PATH; do [ -n "${!v:-}" ] && LAUNCH+=(-x "$v"); done
  elif command -v torchrun >/dev/null 2>&1; then
    LAUNCH=(torchrun --nproc-per-node "$GPUS" --no-python)
  elif [ "$DRY_RUN" = 1 ]; then
    LAUNCH=(mpirun -np "$GPUS")
  else
    die "GPUS=$GPUS needs mpirun or torchrun to start one process per GPU (neither found); GPUS=1 runs on one"
  fi
fi

human_time() {  # seconds -> "3 h 12 min"
  awk -v s="$1" 'BEGIN { h = int(s / 3600); m = int((s - 3600 * h) / 60 + 0.5);
    if (h >= 48) printf "%.1f days", s / 86400; else if (h > 0) printf "%d h %d min", h, m;
    else if (s >= 60) printf "%d min", m; else printf "%d s", s + 0.5 }'
}

# The plan from the resolved configuration (train_gpt --print-config of the recipe's flags and the user's
# extra ones, which win), so it says what will run.
print_plan() {  # ms-per-step ("" when not measured) first-step config.json
  local model precision steps total lr warmup schedule final wd every batch seq tokens
  read -r model precision steps total lr warmup schedule final wd every batch seq < <(python3 - "$3" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(*(c[k] for k in ("model", "precision", "steps", "total_batch", "lr", "warmup", "schedule", "final_lr_frac",
                       "weight_decay", "checkpoint_every", "batch", "seq")))
PY
)
  tokens=$(awk -v s="$steps" -v b="$total" 'BEGIN { printf "%.2fB", s * b / 1e9 }')
  local decay="constant"
  [ "$schedule" = cosine ] && decay="cosine to $final x lr"
  echo "plan: GPT-2 $SIZE ($model), $precision, $GPUS GPU(s), micro-batch $batch x $seq"
  echo "  tokens      $tokens = $steps steps x $total tokens$([ "$steps" = "$DEFAULT_STEPS" ] && [ "$total" = "$TOTAL_BATCH" ] && echo " (llm.c's)")"
  echo "  schedule    lr $lr, $warmup warmup steps, $decay, weight decay $wd"
  echo "  evaluation  validation and HellaSwag every 250 steps; checkpoints every $every steps in $CKPT"
  [ "$2" -gt 0 ] && echo "  resume      from step $2 (the newest checkpoint in $CKPT)"
  if [ -n "$1" ]; then
    local left=$((steps - $2))
    echo "  time        $(human_time "$(awk -v ms="$1" -v n="$left" 'BEGIN { print ms * n / 1000 }')") projected for" \
      "$left steps at the warm-up's $1 ms per step ($(awk -v ms="$1" -v b="$total" \
        'BEGIN { printf "%.0f", b / (ms / 1000) }') tokens/s), evaluations not included"
  else
    echo "  time        not measured (WARMUP_STEPS=0 or a dry run)"
  fi
}

# train_gpt --print-config of the recipe's flags and "$@" into $1 (as rank 0 of GPUS ranks, so the
# accumulation is checked for this many GPUs); the one-line error and exit 2 when train_gpt refuses them.
resolve_config() {  # out.json train-glob val-glob hellaswag-file [extra flags...]
  local out=$1 ranks=()
  shift
  recipe_flags "$1" "$2" "$3"
  shift 3
  [ "$GPUS" -gt 1 ] && ranks=(RANK=0 LOCAL_RANK=0 WORLD_SIZE="$GPUS" MASTER_ADDR=localhost MASTER_PORT=29500)
  env "${ranks[@]}" "$TRAIN_GPT" "${FLAGS[@]}" "$@" --print-config > "$out" 2> "$out.err" ||
    die "train_gpt --print-config refused the recipe's flags: $(tail -1 "$out.err")"
}

newest_step() {  # the step of the newest checkpoint in $CKPT, 0 without one
  local f
  f=$(ls "$CKPT"/ckpt_*.safetensors 2>/dev/null | sort | tail -1 || true)
  [ -n "$f" ] && basename "$f" .safetensors | sed 's/^ckpt_0*//; s/^$/0/' || echo 0
}

# The user's extra flags without those of evaluation, samples and checkpoints (the warm-up has none).
step_flags() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --val-data | --val-every | --val-batches | --eval-hellaswag | --eval-every | --eval-hellaswag-dump | \
        --checkpoint-dir | --checkpoint-every | --keep-checkpoints | --resume | --resume-if-present | \
        --sample-every | --sample-tokens | --prompt | --temperature | --top-k | --tokenizer | --log-dir) shift ;;
      --checkpoint-required | --val-* | --eval-* | --checkpoint-* | --keep-* | --resume* | --sample-* | \
        --prompt* | --temperature* | --top-k* | --tokenizer* | --log-dir*) ;;
      *) printf '%s\0' "$1" ;;
    esac
    shift
  done
}

# The warm-up: WARMUP_STEPS steps with the run's flags in $OUT/warmup (no evaluation, no checkpoint); prints
# the median step_ms of its steps after the first two (autotuning, graph capture).
measure_step_ms() {
  local dir="$OUT/warmup" extra=()
  rm -rf "$dir"
  mkdir -p "$dir"
  while IFS= read -r -d '' a; do extra+=("$a"); done < <(step_flags "$@")
  if ! "${LAUNCH[@]}" "$TRAIN_GPT" --model "$MODEL" --gelu tanh --precision "$PRECISION" --train-data \
    "$TRAIN_DATA" --total-batch "$TOTAL_BATCH" --batch "$BATCH" --seq "$SEQ" --steps "$WARMUP_STEPS" \
    --log-dir "$dir" --log-every 1 "${extra[@]}" > "$dir/stdout.txt" 2>&1; then
    tail -1 "$dir/stdout.txt" >&2
    die "the warm-up run failed (its output: $dir/stdout.txt)"
  fi
  python3 - "$dir/train.jsonl" <<'PY'
import json, statistics, sys
try:
    ms = [r["step_ms"] for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "train" and "step_ms" in r]
except (OSError, ValueError) as e:
    sys.exit(f"error: the warm-up's log {sys.argv[1]} does not read ({e})")
if not ms:
    sys.exit(f"error: the warm-up's log {sys.argv[1]} has no step times")
print(f"{statistics.median(ms[2:] or ms):.1f}")
PY
}

# DRY_RUN: the data scripts on a generated corpus, then the flags through --print-config (no GPU).
dry_run() {
  local dry="$OUT/dry_run"
  rm -rf "$dry"
  mkdir -p "$dry"
  python3 - "$dry" "$((TOTAL_BATCH + 1))" "$((BATCH * SEQ * GPUS + 1))" <<'PY'
import json, random, sys
dry, step_tokens, val_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(0)
words = "the a of to and in is was for on that with as by at from it he she they we you".split()
# one token per byte: a train shard of one optimizer step's tokens, a val shard (40%) of one batch per GPU
need = int(max(step_tokens / 0.6, val_tokens / 0.4) * 1.02)
with open(f"{dry}/corpus.jsonl", "w") as f:
    size = 0
    while size < need:
        doc = " ".join(rng.choice(words) for _ in range(rng.randrange(50, 400))) + "."
        f.write(json.dumps({"text": doc}) + "\n")
        size += len(doc)
with open(f"{dry}/hellaswag.jsonl", "w") as f:
    for i in range(8):
        ctx = " ".join(rng.choice(words) for _ in range(12))
        f.write(json.dumps({"ctx": ctx, "endings": [" ".join(rng.choice(words) for _ in range(5))
                                                     for _ in range(4)], "label": i % 4}) + "\n")
PY
  python3 "$ROOT/scripts/data/prepare_data.py" --tokenizer bytes --val-fraction 0.4 --prefix fineweb \
    --out-dir "$dry/data" "$dry/corpus.jsonl" > "$dry/prepare_data.txt" 2>&1 ||
    die "scripts/data/prepare_data.py failed: $(tail -1 "$dry/prepare_data.txt")"
  python3 "$ROOT/scripts/data/prepare_hellaswag.py" --tokenizer bytes --input "$dry/hellaswag.jsonl" \
    --out "$dry/hellaswag.bin" > "$dry/prepare_hellaswag.txt" 2>&1 ||
    die "scripts/data/prepare_hellaswag.py failed: $(tail -1 "$dry/prepare_hellaswag.txt")"
  resolve_config "$dry/config.json" "$dry/data/fineweb_train_*.bin" "$dry/data/fineweb_val_*.bin" "$dry/hellaswag.bin" "$@"
  print_plan "" 0 "$dry/config.json"
  echo "dry run: data and HellaSwag prepared in $dry, the flags checked (resolved: $dry/config.json)"
  # the real run's files: present, or what to prepare first
  local train_n val_n
  train_n=$({ compgen -G "$TRAIN_DATA" || true; } | wc -l) val_n=$({ compgen -G "$VAL_DATA" || true; } | wc -l)
  if [ "$train_n" -gt 0 ] && [ "$val_n" -gt 0 ] && [ -f "$HELLASWAG" ]; then
    echo "real data: $train_n train and $val_n val shards, HellaSwag $HELLASWAG"
  else
    echo "real data: missing ($train_n shards match TRAIN_DATA='$TRAIN_DATA', $val_n match VAL_DATA='$VAL_DATA'," \
      "HellaSwag '$HELLASWAG' $([ -f "$HELLASWAG" ] && echo present || echo absent)): prepare them first" \
      "(scripts/recipes/README.md), or set DATA / TRAIN_DATA / VAL_DATA / HELLASWAG"
  fi
  recipe_flags "$TRAIN_DATA" "$VAL_DATA" "$HELLASWAG"
  echo "would run: $(printf '%q ' "${LAUNCH[@]}" "$TRAIN_GPT" "${FLAGS[@]}" "$@")"
}

if [ "$DRY_RUN" = 1 ]; then
  dry_run "$@"
  exit 0
fi

if [ -f "$OUT/DONE" ]; then
  echo "gpt2 $SIZE: already done ($OUT/DONE; remove it, or choose another OUT, to train again)"
  exit 0
fi
mkdir -p "$OUT"
ms=""
if [ "$WARMUP_STEPS" -gt 0 ] && ! ms=$(measure_step_ms "$@"); then exit 2; fi
resolve_config "$OUT/plan_config.json" "$TRAIN_DATA" "$VAL_DATA" "$HELLASWAG" "$@"
print_plan "$ms" "$(newest_step)" "$OUT/plan_config.json"

attempt=0
while true; do
  set +e
  "${LAUNCH[@]}" "$TRAIN_GPT" "${FLAGS[@]}" "$@"
  rc=$?
  set -e
  if [ $rc = 0 ] && [ -f "$LAST_CKPT" ]; then
    date > "$OUT/DONE"
    echo "gpt2 $SIZE: done, $STEPS steps ($LAST_CKPT); logs in $OUT"
    exit 0
  elif [ $rc = 0 ]; then
    echo "gpt2 $SIZE: stopped at step $(newest_step) of $STEPS; the same command continues it"
    exit 0
  elif [ $rc = 2 ]; then  # a usage error, found before training: retrying would not help
    echo "gpt2 $SIZE: train_gpt refused the flags or files (status 2; its error line is above)" >&2
    exit 2
  elif [ "$attempt" -ge "$RETRIES" ]; then
    echo "gpt2 $SIZE: train_gpt failed (status $rc); the same command continues from the newest checkpoint" >&2
    exit $rc
  fi
  attempt=$((attempt + 1))
  echo "gpt2 $SIZE: train_gpt failed (status $rc); retry $attempt of $RETRIES in $RETRY_DELAY s" >&2
  sleep "$RETRY_DELAY"
done
