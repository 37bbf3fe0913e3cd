#!/usr/bin/env bash
# A second run into the same --log-dir keeps the first one's log (part of `make test`; needs the built
# ./train_gpt: a tiny model, one step, which trains on a GPU and stops at "no CUDA device" without one, after
# the log folder is prepared either way).
#   earlier_log_kept: a fresh run moves an earlier train.jsonl and config.json to train.jsonl.1 / config.json.1
#     (then .2), says so in a warning line, and never touches them again. (--resume appends to its log: the
#     lifecycle tests on the GPU read the resumed logs whole.)
set -u
source "$(dirname "$0")/lib_host.sh" log_rotation  # ROOT, WORK, pass/fail/skip
BIN=${TRAIN_GPT:-$ROOT/train_gpt}
if [ ! -x "$BIN" ]; then skip log_rotation "./train_gpt is not built (make train_gpt)"; exit 0; fi
TINY=(--model 124m --layers 1 --channels 64 --heads 4 --vocab 256 --max-seq 64 --seq 64 --batch 1 --steps 1)
d=$WORK/logs
mkdir -p "$d"
echo '{"kind": "train", "step": 0, "loss": 1.5}' > "$d/train.jsonl"
echo '{"first": true}' > "$d/config.json"
"$BIN" "${TINY[@]}" --log-dir "$d" > "$WORK/run1.txt" 2>&1
"$BIN" "${TINY[@]}" --log-dir "$d" > "$WORK/run2.txt" 2>&1
why=""
[ "$(cat "$d/train.jsonl.1" 2>/dev/null)" = '{"kind": "train", "step": 0, "loss": 1.5}' ] &&
  [ "$(cat "$d/config.json.1" 2>/dev/null)" = '{"first": true}' ] || why="$why the first log was not kept as .1;"
grep -q "^warning: $d held an earlier run's log: moved to train.jsonl.1 " "$WORK/run1.txt" || why="$why no warning: $(head -3 "$WORK/run1.txt" | tr '\n' ' ');"
# the second run found the first's train.jsonl (written on a GPU; empty without one: nothing to keep)
if [ -s "$d/train.jsonl.2" ] || ! nvidia-smi -L > /dev/null 2>&1; then :; else why="$why the second log was not kept as .2;"; fi
[ "$(cat "$d/train.jsonl.1")" = '{"kind": "train", "step": 0, "loss": 1.5}' ] || why="$why .1 was touched again;"
if [ -z "$why" ]; then pass "earlier_log_kept (moved to train.jsonl.1 with a warning, kept through a second run)"; else fail earlier_log_kept "$why"; fi
