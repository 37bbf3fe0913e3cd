#!/usr/bin/env bash
# scripts/recipes/gpt2.sh without a GPU (part of `make test`; needs python3 and the built ./train_gpt). One
# [PASS]/[FAIL]/[SKIP] line per case.
#   dry_run_SIZE: DRY_RUN=1 prepares a generated corpus and HellaSwag file with the data scripts and checks the
#     recipe's flags through train_gpt --print-config: llm.c's steps, lr, final lr, tokens per step and
#     checkpoint interval, FP8, validation and HellaSwag every 250 steps, --resume-if-present.
#   dry_run_overrides: PRECISION=bf16; GPUS=8 checks the accumulation as one of 8 ranks and launches 8
#     processes; a micro-batch that does not divide the step for 8 GPUs and an unknown size are one-line errors.
#   resume_if_present: train_gpt --resume-if-present on a folder without a checkpoint starts fresh (resume
#     empty, checkpoints there); on one with a checkpoint file it resumes (a damaged one is refused).
#   lifecycle_with_a_stand_in: the recipe with a stand-in train_gpt (a script): the plan's time projected from
#     the warm-up's step_ms, a failed run retried (RETRIES=1), DONE after the last step's checkpoint, and the
#     same command afterwards does not train again.
set -u
source "$(dirname "$0")/lib_host.sh" recipes python3  # ROOT, WORK, pass/fail/skip; python3 or skip
RECIPE="$ROOT/scripts/recipes/gpt2.sh"
if [ ! -x "$ROOT/train_gpt" ]; then skip recipes "./train_gpt is not built (make train_gpt)"; exit 0; fi

# json KEY FILE: the value of a top-level member of config.json (as Python prints it)
json() { python3 -c 'import json, sys; print(json.load(open(sys.argv[2]))[sys.argv[1]])' "$1" "$2"; }

# size steps lr final-lr-frac tokens-per-step checkpoint-every model
while read -r size steps lr final total every model; do
  out="$WORK/$size"
  if ! DRY_RUN=1 OUT="$out" timeout 300 bash "$RECIPE" "$size" > "$WORK/$size.log" 2>&1; then
    fail "dry_run_$size" "$(tail -1 "$WORK/$size.log")"
    continue
  fi
  cfg="$out/dry_run/config.json" got=""
  for kv in "model=$model" "gelu=tanh" "precision=fp8" "steps=$steps" "lr=$lr" "final_lr_frac=$final" "total_batch=$total" \
    "checkpoint_every=$every" "warmup=700" "weight_decay=0.1" "val_every=250" "eval_every=250" "seq=1024" \
    "resume_if_present=$out/checkpoints" "resume=" "log_dir=$out"; do
    [ "$(json "${kv%%=*}" "$cfg")" = "${kv#*=}" ] || got="$got ${kv%%=*}=$(json "${kv%%=*}" "$cfg") (want ${kv#*=});"
  done
  tokens=$(python3 -c "print(f'{$steps * $total / 1e9:.2f}B = $steps steps x $total tokens')")
  grep -q "tokens      $tokens" "$WORK/$size.log" || got="$got plan without '$tokens';"
  grep -q "^would run: .*train_gpt --model $model --gelu tanh --precision fp8 " "$WORK/$size.log" || got="$got no command;"
  [ -n "$(ls "$out"/dry_run/data/fineweb_train_*.bin 2>/dev/null)" ] && [ -s "$out/dry_run/hellaswag.bin" ] ||
    got="$got no shards or HellaSwag file;"
  if [ -z "$got" ]; then pass "dry_run_$size ($tokens, lr $lr)"; else fail "dry_run_$size" "$got"; fi
done <<'EOF'
124m 18865 0.0006 0.0 524288 5000 124m
350m 60000 0.0003 0.0 524288 2000 350m
774m 286102 0.00025 0.0 524288 4000 774m
1558m 32000 0.0006 0.1 1048576 2000 1.5b
EOF

why=""
PRECISION=bf16 DRY_RUN=1 OUT="$WORK/bf16" bash "$RECIPE" 124m > "$WORK/bf16.log" 2>&1 &&
  [ "$(json precision "$WORK/bf16/dry_run/config.json")" = bf16 ] || why="$why bf16: $(tail -1 "$WORK/bf16.log");"
GPUS=8 DRY_RUN=1 OUT="$WORK/gpus8" bash "$RECIPE" 1558m > "$WORK/gpus8.log" 2>&1 &&
  grep -qE "^would run: (mpirun -np 8|torchrun --nproc-per-node 8) " "$WORK/gpus8.log" ||
  why="$why GPUS=8: $(tail -1 "$WORK/gpus8.log" | cut -c1-200);"
GPUS=8 BATCH=48 DRY_RUN=1 OUT="$WORK/b48" bash "$RECIPE" 124m > "$WORK/b48.out" 2> "$WORK/b48.err"
[ $? = 2 ] && [ "$(wc -l < "$WORK/b48.err")" = 1 ] &&
  grep -q "^error: train_gpt --print-config refused the recipe's flags: error: --total-batch 524288 is not a multiple of --batch x --seq x GPUs = 48 x 1024 x 8" "$WORK/b48.err" ||
  why="$why BATCH=48 on 8 GPUs: $(cat "$WORK/b48.err");"
bash "$RECIPE" 7b > "$WORK/7b.out" 2> "$WORK/7b.err"
[ $? = 2 ] && [ "$(cat "$WORK/7b.err")" = "error: usage: bash scripts/recipes/gpt2.sh 124m|350m|774m|1558m [extra train_gpt flags...] (got '7b')" ] ||
  why="$why unknown size: $(cat "$WORK/7b.err");"
# the real data: named missing (with the trainer's name of the size, 1.5b), counted where it is (the dry run's own)
DRY_RUN=1 OUT="$WORK/alias" DATA="$WORK/nodata" bash "$RECIPE" 1.5b > "$WORK/alias.log" 2>&1 &&
  grep -q "^real data: missing (0 shards match TRAIN_DATA='$WORK/nodata/fineweb_train_\*.bin'" "$WORK/alias.log" &&
  grep -q "^would run: .*--model 1.5b " "$WORK/alias.log" || why="$why 1.5b without data: $(tail -2 "$WORK/alias.log" | head -1);"
DRY_RUN=1 OUT="$WORK/withdata" DATA="$WORK/124m/dry_run/data" HELLASWAG="$WORK/124m/dry_run/hellaswag.bin" \
  bash "$RECIPE" 124m > "$WORK/withdata.log" 2>&1 &&
  grep -qE "^real data: [1-9][0-9]* train and [1-9][0-9]* val shards, HellaSwag " "$WORK/withdata.log" ||
  why="$why with data: $(grep '^real data' "$WORK/withdata.log");"
# the plan from the final flags: the user's extra flags win, and the plan says so
DRY_RUN=1 OUT="$WORK/extra" bash "$RECIPE" 124m --precision bf16 --lr 1e-3 --checkpoint-every 10 > "$WORK/extra.log" 2>&1 &&
  grep -q "^plan: GPT-2 124m (124m), bf16, " "$WORK/extra.log" && grep -q "^  schedule    lr 0.001, " "$WORK/extra.log" &&
  grep -q "checkpoints every 10 steps" "$WORK/extra.log" || why="$why extra flags: $(grep -E '^plan|lr|checkpoints' "$WORK/extra.log" | tr '\n' ' ');"
if [ -z "$why" ]; then pass "dry_run_overrides (bf16, 8 GPUs, a batch that does not divide, an unknown size, 1.5b for 1558m, the real data missing and present, the plan from the extra flags)"; else fail dry_run_overrides "$why"; fi

# --resume-if-present, through the binary's checks before the GPU.
why=""
small=(--model 124m --layers 2 --channels 64 --heads 4 --vocab 256 --max-seq 64 --seq 64 --batch 4 --print-config)
mkdir -p "$WORK/ck_empty" "$WORK/ck_damaged"
"$ROOT/train_gpt" "${small[@]}" --resume-if-present "$WORK/ck_empty" > "$WORK/fresh.json" 2> "$WORK/fresh.err" &&
  [ "$(json resume "$WORK/fresh.json")" = "" ] && [ "$(json resume_if_present "$WORK/fresh.json")" = "$WORK/ck_empty" ] ||
  why="$why an empty folder: $(tail -1 "$WORK/fresh.err");"
"$ROOT/train_gpt" "${small[@]}" --resume-if-present "$WORK/ck_missing" > "$WORK/missing.json" 2> "$WORK/missing.err" &&
  [ "$(json resume "$WORK/missing.json")" = "" ] || why="$why a missing folder: $(tail -1 "$WORK/missing.err");"
echo "not a checkpoint" > "$WORK/ck_damaged/ckpt_00000010.safetensors"
"$ROOT/train_gpt" "${small[@]}" --resume-if-present "$WORK/ck_damaged" > "$WORK/damaged.json" 2> "$WORK/damaged.err"
[ $? = 2 ] && grep -q "^error: --resume: no valid checkpoint in '$WORK/ck_damaged'" "$WORK/damaged.err" ||
  why="$why a damaged checkpoint: $(tail -1 "$WORK/damaged.err");"
if [ -z "$why" ]; then pass "resume_if_present (fresh without a checkpoint, resumes with one)"; else fail resume_if_present "$why"; fi

# The recipe's lifecycle with a stand-in for train_gpt: the warm-up writes train.jsonl records of 200 ms; the
# run fails once (the file 'crashed' remembers it), then writes the last step's checkpoint.
cat > "$WORK/stand_in.sh" <<'SH'
#!/usr/bin/env bash
for a in "$@"; do  # the recipe's plan reads the resolved configuration: the 124m recipe's
  [ "$a" = --print-config ] && { echo '{"model": "124m", "precision": "fp8", "steps": 18865, "total_batch": 524288,
    "lr": 0.0006, "warmup": 700, "schedule": "cosine", "final_lr_frac": 0, "weight_decay": 0.1,
    "checkpoint_every": 5000, "batch": 64, "seq": 1024}'; exit 0; }
done
log="" steps="" ckpt=""
while [ $# -gt 0 ]; do
  case "$1" in --log-dir) log=$2 ;; --steps) steps=$2 ;; --resume-if-present) ckpt=$2 ;; esac
  shift
done
mkdir -p "$log"
if [ -z "$ckpt" ]; then  # the warm-up
  for i in $(seq 0 $((steps - 1))); do echo "{\"kind\": \"train\", \"step\": $i, \"step_ms\": $((i < 2 ? 5000 : 200))}"; done > "$log/train.jsonl"
  exit 0
fi
echo "run $*" >> "$log/../calls.txt"
[ -f "$log/crashed" ] || { touch "$log/crashed"; exit 1; }
mkdir -p "$ckpt" && printf -v f '%s/ckpt_%08d.safetensors' "$ckpt" "$steps" && touch "$f"
SH
chmod +x "$WORK/stand_in.sh"
run_recipe() { GPUS=1 RETRIES=1 RETRY_DELAY=0 TRAIN_GPT="$WORK/stand_in.sh" OUT="$WORK/life/run" timeout 120 bash "$RECIPE" 124m > "$1" 2>&1; }
mkdir -p "$WORK/life"
run_recipe "$WORK/life1.log"; rc1=$?
run_recipe "$WORK/life2.log"; rc2=$?
why=""
# 18865 steps x 200 ms = 3773 s
grep -q "time        1 h 3 min projected for 18865 steps at the warm-up's 200.0 ms per step (2621440 tokens/s)" "$WORK/life1.log" ||
  why="$why plan: $(grep time "$WORK/life1.log");"
[ $rc1 = 0 ] && grep -q "retry 1 of 1" "$WORK/life1.log" && grep -q "done, 18865 steps" "$WORK/life1.log" &&
  [ -f "$WORK/life/run/DONE" ] || why="$why first run (status $rc1): $(tail -1 "$WORK/life1.log");"
[ $rc2 = 0 ] && grep -q "already done" "$WORK/life2.log" && [ "$(grep -c '^run ' "$WORK/life/calls.txt")" = 2 ] ||
  why="$why second run (status $rc2): $(tail -1 "$WORK/life2.log");"
if [ -z "$why" ]; then
  pass "lifecycle_with_a_stand_in (plan from the warm-up, a failure retried, DONE, not trained again)"
else
  fail lifecycle_with_a_stand_in "$why"
fi
