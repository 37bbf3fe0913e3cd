#!/usr/bin/env bash
# Text generation of the train_gpt binary (--generate) on a GPU, against a CPU reference (part of `make test`
# there). A tiny byte-level GPT (2 layers, 64 channels, 4 heads, tanh GELU, window --seq 64) trains 300 steps
# on a few sentences repeated, until it has them by heart (so its next-token choices are decided by wide
# margins, not by rounding), then writes a checkpoint and a Hugging Face export; every case generates from
# those. scripts/check/generate_reference.py reads the export with numpy, rounds the weights to bf16 as the
# trainer's forward does, and follows the trainer's output token by token in float64: where the top-1/top-2
# margin exceeds the bound of the precision's rounding (derived in that script, and checked there against an
# emulation of the rounding on every token) the trainer's token must be the argmax.
#   generate_greedy_matches_reference: --init-from the export, --temperature 0, 96 tokens after a 17-byte
#     prompt (the window slides for the last 49): every token decided, and the trainer's each time
#     (--require-decisive: a near tie fails and says where; then the comparison could not be exact).
#   generate_control_fails: the same text against a reference that reads the logits one position early (an
#     off-by-one in the row the next token comes from) must fail: the comparison tells them apart. (The
#     window's bounds are host-tested against a made-up model, test/host_generation_loop.cpp.)
#   generate_stdout_is_the_text: stdout is the prompt, the tokens and a newline, nothing else; the summary
#     is on stderr; no folder is created (no logs, no checkpoints).
#   generate_resume_same_text: --resume of the checkpoint prints the same text, byte for byte.
#   generate_resume_adopts_model: the same without any model flag: the model (and --seq) come from the
#     checkpoint's configuration, said on stderr, and the text is again the same.
#   generate_top_k_1_is_greedy: --top-k 1 --temperature 0.8 --seed 5 prints the greedy text.
#   generate_seed_repeats: --temperature 1 --seed 7 twice prints the same text (another seed is reported).
#   generate_fp8_matches_reference: --precision fp8 from the same export: each token the reference's argmax
#     where the margin exceeds the fp8 bound, within that bound of the maximum elsewhere (counted).
# Needs python3 with numpy (skipped otherwise).
set -u
export NCCL_NVLS_ENABLE=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${TRAIN_GPT:-$ROOT/train_gpt}
REF=$ROOT/scripts/check/generate_reference.py
source "$ROOT/test/lib_gpu.sh"  # pass, fail, skip
CASES="greedy_matches_reference control_fails stdout_is_the_text resume_same_text resume_adopts_model
  top_k_1_is_greedy seed_repeats fp8_matches_reference"
if ! python3 -c "import numpy" 2> /dev/null; then
  for c in $CASES; do skip "generate_$c" "needs python3 with numpy"; done
  exit 0
fi
WORK=$(mktemp -d /tmp/gpu_generate_XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The text: four sentences, repeated to 200 KB (the model learns them by heart in 300 steps).
python3 - "$WORK/text.txt" << 'PY'
import sys
block = ("the quick brown fox jumps over the lazy dog.\n"
         "a stitch in time saves nine, said the tailor.\n"
         "pack my box with five dozen liquor jugs!\n"
         "how vexingly quick daft zebras jump.\n")
open(sys.argv[1], "w").write(block * (200000 // len(block)))
PY
python3 "$ROOT/scripts/data/prepare_data.py" --tokenizer bytes --out-dir "$WORK/data" "$WORK/text.txt" > /dev/null ||
  { fail generate_setup "could not make the data"; exit 1; }
MODEL=(--model 124m --layers 2 --channels 64 --heads 4 --vocab 256 --max-seq 64 --seq 64 --gelu tanh)
if ! "$BIN" "${MODEL[@]}" --batch 8 --steps 300 --lr 3e-3 --warmup 10 --train-data "$WORK/data/*_train_*.bin" \
     --checkpoint-dir "$WORK/ck" --export "$WORK/hf" --export-format hf --export-at-end --log-dir "$WORK/log" \
     > "$WORK/train.txt" 2>&1; then
  fail generate_setup "training failed: $(tail -1 "$WORK/train.txt")"; exit 1
fi
echo "gpu_generate: $(grep '^step  *299/' "$WORK/train.txt" | cut -d'|' -f1-2)"

PROMPT="the quick brown f"
N=96
# gen NAME ARGS...: generates in a folder of its own (the current directory, to see that nothing is created
# there); stdout in $WORK/NAME.out, stderr in $WORK/NAME.err.
gen() {
  local name=$1; shift
  mkdir -p "$WORK/cwd_$name"
  (cd "$WORK/cwd_$name" && "$BIN" "${MODEL[@]}" --generate $N --prompt "$PROMPT" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err")
}
check() {  # name args...: the reference's check of $WORK/name.out
  local name=$1; shift
  python3 "$REF" --model "$WORK/hf" --prompt "$PROMPT" --text "$WORK/$name.out" --tokens $N --seq 64 "$@" 2>&1
}

if gen greedy --init-from "$WORK/hf" --temperature 0; then
  if r=$(check greedy --require-decisive); then pass "generate_greedy_matches_reference ($(printf '%s\n' "$r" | tail -1))"
  else fail generate_greedy_matches_reference "$(printf '%s\n' "$r" | tail -4 | tr '\n' ' ')"; fi
  r=$(check greedy --mutate row); rc=$?
  if [ $rc = 1 ]; then pass "generate_control_fails ($(printf '%s\n' "$r" | head -1))"
  else fail generate_control_fails "exit $rc (a reference reading the row before the last must fail): $(printf '%s\n' "$r" | tail -1)"; fi
  why=""
  [ "$(head -c ${#PROMPT} "$WORK/greedy.out")" = "$PROMPT" ] || why="$why stdout does not start with the prompt;"
  [ "$(wc -c < "$WORK/greedy.out")" = $((${#PROMPT} + N + 1)) ] || why="$why stdout is $(wc -c < "$WORK/greedy.out") bytes, not the prompt + $N + a newline;"
  grep -q "^  generate     $N tokens after the prompt on stdout" "$WORK/greedy.err" || why="$why no summary on stderr;"
  [ -z "$(ls -A "$WORK/cwd_greedy")" ] || why="$why it created $(ls -A "$WORK/cwd_greedy" | tr '\n' ' ');"
  if [ -z "$why" ]; then pass "generate_stdout_is_the_text ($(head -c 60 "$WORK/greedy.out" | tr '\n' '|')...)"
  else fail generate_stdout_is_the_text "$why"; fi
else
  for c in greedy_matches_reference control_fails stdout_is_the_text; do fail "generate_$c" "the run failed: $(tail -1 "$WORK/greedy.err")"; done
fi

same() {  # case name args...: generate, then compare with the greedy text byte for byte
  local c=$1 name=$2; shift 2
  if ! gen "$name" "$@"; then fail "generate_$c" "the run failed: $(tail -1 "$WORK/$name.err")"
  elif cmp -s "$WORK/greedy.out" "$WORK/$name.out"; then pass "generate_$c (the greedy text, byte for byte)"
  else fail "generate_$c" "differs from the greedy text: $(head -c 80 "$WORK/$name.out" | tr '\n' '|')"; fi
}
same resume_same_text resume --resume "$WORK/ck" --temperature 0
same top_k_1_is_greedy top1 --init-from "$WORK/hf" --top-k 1 --temperature 0.8 --seed 5

mkdir -p "$WORK/cwd_adopt"
if (cd "$WORK/cwd_adopt" && "$BIN" --generate $N --prompt "$PROMPT" --resume "$WORK/ck" --temperature 0 \
      > "$WORK/adopt.out" 2> "$WORK/adopt.err"); then
  said=$(grep -m1 "the model and recipe of its checkpoint:" "$WORK/adopt.err")
  if [ -n "$said" ] && [[ "$said" == *"--layers 2 --channels 64"*"--seq 64"* ]] && cmp -s "$WORK/greedy.out" "$WORK/adopt.out"; then
    pass "generate_resume_adopts_model (no model flag: the greedy text, byte for byte; ${said#*: })"
  else
    fail generate_resume_adopts_model "stderr: '${said:-no adoption line}'; text $(cmp -s "$WORK/greedy.out" "$WORK/adopt.out" && echo same || echo differs)"
  fi
else
  fail generate_resume_adopts_model "the run failed: $(tail -1 "$WORK/adopt.err")"
fi

if gen s7a --init-from "$WORK/hf" --temperature 1 --seed 7 && gen s7b --init-from "$WORK/hf" --temperature 1 --seed 7 &&
   gen s8 --init-from "$WORK/hf" --temperature 1 --seed 8; then
  other=$(cmp -s "$WORK/s7a.out" "$WORK/s8.out" && echo "the same text" || echo "another text")
  if cmp -s "$WORK/s7a.out" "$WORK/s7b.out"; then pass "generate_seed_repeats (--seed 7 twice: the same text; --seed 8: $other)"
  else fail generate_seed_repeats "--seed 7 gave two texts"; fi
else
  fail generate_seed_repeats "a run failed: $(tail -1 "$WORK/s7a.err" "$WORK/s7b.err" "$WORK/s8.err" | tr '\n' ' ')"
fi

if gen fp8 --precision fp8 --init-from "$WORK/hf" --temperature 0; then
  if r=$(check fp8 --precision fp8); then pass "generate_fp8_matches_reference ($(printf '%s\n' "$r" | tail -1))"
  else fail generate_fp8_matches_reference "$(printf '%s\n' "$r" | tail -4 | tr '\n' ' ')"; fi
else
  fail generate_fp8_matches_reference "the run failed: $(tail -1 "$WORK/fp8.err")"
fi
