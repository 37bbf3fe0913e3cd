#!/usr/bin/env bash
# HellaSwag evaluation of the train_gpt binary on a GPU (part of `make test` there). A tiny byte-level GPT
# (2 layers, 64 channels, T 64, batch 8) trains 150 steps on random sentences (test/hellaswag_fixture.py)
# and evaluates 41 made-up HellaSwag examples in the same words every 50 steps and at the end.
#   hellaswag_log: the stdout line and the train.jsonl records at steps 0, 50, 100 and 150.
#   hellaswag_matches_reference: scripts/check/hellaswag_reference.py scores the same file with the exported
#     weights in float64 (PyTorch) and checks the dump: every ending's summed and mean loss within the bf16
#     tolerance (derived in that script), the same choice wherever the trainer's margin exceeds it, labels,
#     and the reported accuracies against the dump.
#   hellaswag_does_not_change_training: the same run without the evaluation has bitwise the same losses.
#   hellaswag_eval_only: --init-from the export with --export and no training scores the same as the end
#     of training (same weights, same batch shape).
#   hellaswag_2gpu (2 GPUs): the same on 2 ranks: 21 + 20 examples, rank 1 pads its last batch; the part
#     files together are the one-GPU dump and the summed counts its accuracies.
# Needs python3 with torch and safetensors (skipped otherwise).
set -u
export NCCL_NVLS_ENABLE=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${TRAIN_GPT:-$ROOT/train_gpt}
source "$ROOT/test/lib_gpu.sh"  # pass, fail, skip, losses, free_port
if ! python3 -c "import torch, safetensors" 2>/dev/null; then
  for c in log matches_reference does_not_change_training eval_only 2gpu; do
    skip "hellaswag_$c" "needs python3 with torch and safetensors"
  done
  exit 0
fi
WORK=$(mktemp -d /tmp/gpu_hellaswag_XXXXXX)
trap 'rm -rf "$WORK"' EXIT

python3 "$ROOT/test/hellaswag_fixture.py" "$WORK/hs.jsonl" 41 11 "$WORK/text.txt" 300000 &&
  python3 "$ROOT/scripts/data/prepare_hellaswag.py" --tokenizer bytes --input "$WORK/hs.jsonl" --out "$WORK/hs.bin" > /dev/null &&
  python3 "$ROOT/scripts/data/prepare_data.py" --tokenizer bytes --out-dir "$WORK/data" "$WORK/text.txt" > /dev/null ||
  { fail hellaswag_setup "could not make the data"; exit 1; }
MODEL=(--vocab 256 --layers 2 --channels 64 --heads 2 --max-seq 64 --seq 64 --batch 8)
TRAIN=("${MODEL[@]}" --steps 150 --lr 3e-3 --warmup 10 --train-data "$WORK/data/*_train_*.bin")
EVAL=(--eval-hellaswag "$WORK/hs.bin")

# The last "hellaswag" record of a train.jsonl as "acc acc_norm examples".
last_record() { python3 -c '
import json, sys
r = [x for x in map(json.loads, open(sys.argv[1])) if x.get("kind") == "hellaswag"][-1]
print(repr(r["acc"]), repr(r["acc_norm"]), r["examples"])' "$1"; }

# Two dumps (or a dump and the part files of several ranks, joined) example by example: "OK ..." or why not.
same_dumps() {  # a b...
  python3 - "$@" <<'PY'
import sys
def fail(why):
    print(why)
    sys.exit(1)
def read(paths):
    out = {}
    for p in paths:
        try:
            lines = open(p).read().splitlines()
        except OSError as e:
            fail(f"cannot read {p}: {e.strerror}")
        for line in lines:
            if not line.startswith("#"):
                v = line.split()
                out[int(v[0])] = v[1:]
    return out
a, b = read(sys.argv[1:2]), read(sys.argv[2:])
if sorted(a) != sorted(b):
    fail(f"examples differ: {len(a)} vs {len(b)}")
worst, bitwise = 0.0, True
for i in a:
    x, y = a[i], b[i]
    if x[0] != y[0] or x[9:] != y[9:]:
        fail(f"example {i}: label or choices differ: {x} vs {y}")
    bitwise &= x == y
    worst = max(worst, max(abs(float(p) - float(q)) / max(abs(float(q)), 1e-30) for p, q in zip(x[1:9], y[1:9])))
if worst > 1e-5:
    fail(f"losses differ by up to {worst:.2g} relative (> 1e-5)")
print(f"{len(a)} examples, same labels and choices, losses {'bitwise equal' if bitwise else f'within {worst:.2g}'}")
PY
}

d=$WORK/train
"$BIN" "${TRAIN[@]}" "${EVAL[@]}" --eval-every 50 --eval-hellaswag-dump "$d.dump" --export "$d.safetensors" \
  --export-at-end --log-dir "$d" > "$d.out" 2>&1 || { fail hellaswag_log "training failed: $(tail -1 "$d.out")"; exit 1; }
steps=$(python3 -c '
import json, sys
print(" ".join("%d:%d" % (r["step"], r["examples"]) for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "hellaswag"))' "$d/train.jsonl")
line=$(grep -E '^step +150 \| hellaswag acc [0-9.]+ acc_norm [0-9.]+ \(41 examples\)$' "$d.out")
if [ "$steps" = "0:41 50:41 100:41 150:41" ] && [ -n "$line" ]; then pass "hellaswag_log ($line; records at steps $steps)"
else fail hellaswag_log "records '$steps', stdout: $(grep hellaswag "$d.out" | tr '\n' ' ')"; fi

read -r acc acc_norm examples <<< "$(last_record "$d/train.jsonl")"
ref=$(python3 "$ROOT/scripts/check/hellaswag_reference.py" --model "$d.safetensors" --data "$WORK/hs.bin" --dump "$d.dump" \
  --acc "$acc" --acc-norm "$acc_norm" --examples "$examples" 2>&1); rc=$?
if [ $rc = 0 ]; then pass "hellaswag_matches_reference ($(printf '%s\n' "$ref" | tail -1))"
else fail hellaswag_matches_reference "exit $rc: $(printf '%s\n' "$ref" | tail -6 | tr '\n' ' ')"; fi

# Evaluation reads the weights only: the same run without it trains bitwise the same.
"$BIN" "${TRAIN[@]}" --log-dir "$WORK/plain" > "$WORK/plain.out" 2>&1
losses "$d/train.jsonl" > "$WORK/a.txt"; losses "$WORK/plain/train.jsonl" > "$WORK/b.txt"
if [ -s "$WORK/a.txt" ] && cmp -s "$WORK/a.txt" "$WORK/b.txt"; then
  pass "hellaswag_does_not_change_training (losses and grad norms of $(wc -l < "$WORK/a.txt") steps identical)"
else fail hellaswag_does_not_change_training "$(diff "$WORK/a.txt" "$WORK/b.txt" | head -3 | tr '\n' ' ')"; fi

# No training: --init-from the export, --export to have something to do, the evaluation before it.
e=$WORK/eval_only
if ! "$BIN" "${MODEL[@]}" "${EVAL[@]}" --init-from "$d.safetensors" --export "$e.safetensors" \
     --eval-hellaswag-dump "$e.dump" --log-dir "$e" > "$e.out" 2>&1; then
  fail hellaswag_eval_only "failed: $(tail -1 "$e.out")"
elif r=$(same_dumps "$d.dump" "$e.dump"); then pass "hellaswag_eval_only ($r)"
else fail hellaswag_eval_only "$r"; fi

if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ]; then
  skip hellaswag_2gpu "needs 2 GPUs"
else
  m=$WORK/two; port=$(free_port)
  for rank in 1 0; do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=2 \
      "$BIN" "${MODEL[@]}" "${EVAL[@]}" --init-from "$d.safetensors" --export "$m.safetensors" \
      --eval-hellaswag-dump "$m.dump" --log-dir "$m" > "$m.out$rank" 2>&1 &
  done
  wait
  read -r acc2 acc_norm2 examples2 <<< "$(last_record "$m/train.jsonl" 2>/dev/null)"
  read -r acc1 acc_norm1 examples1 <<< "$(last_record "$e/train.jsonl" 2>/dev/null)"
  if r=$(same_dumps "$e.dump" "$m.dump.rank0" "$m.dump.rank1") && [ "$acc2 $acc_norm2 $examples2" = "$acc1 $acc_norm1 $examples1" ] &&
     [ "$(grep -vc '^#' "$m.dump.rank1")" = 20 ]; then
    pass "hellaswag_2gpu ($r; acc $acc2 acc_norm $acc_norm2 over $examples2 examples, as on one GPU)"
  else fail hellaswag_2gpu "${r:-} acc '$acc2 $acc_norm2 $examples2' vs '$acc1 $acc_norm1 $examples1'; $(tail -1 "$m.out0")"; fi
fi
