#!/usr/bin/env bash
# Trains the same model on the same data from the same seed in bf16 and fp8 and prints both loss curves.
# Usage: scripts/runs/compare_curves.sh OUTDIR [train_gpt flags...]   e.g.
#   scripts/runs/compare_curves.sh logs/kjv124m --model 124m --vocab 256 --batch 8 --seq 1024 --steps 600 \
#       --train-data 'data/kjv/kjv_train_*.bin' --val-data 'data/kjv/kjv_val_*.bin' --val-every 100
set -u
out=$1; shift
for p in bf16 fp8; do
  ./train_gpt "$@" --precision "$p" --log-dir "$out/$p" > "$out.$p.log" 2>&1 || { echo "$p failed:"; tail -3 "$out.$p.log"; }
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def load(p):
    try:
        return [json.loads(l) for l in open(f"{out}/{p}/train.jsonl")]
    except OSError:
        return []
b, f = load("bf16"), load("fp8")
vb = {r["step"]: r["val_loss"] for r in b if r["kind"] == "val"}
vf = {r["step"]: r["val_loss"] for r in f if r["kind"] == "val"}
tb = {r["step"]: r["loss"] for r in b if r["kind"] == "train"}
tf = {r["step"]: r["loss"] for r in f if r["kind"] == "train"}
print("| step | bf16 train | fp8 train | bf16 val | fp8 val | fp8/bf16 val |")
print("|---|---|---|---|---|---|")
for s in sorted(set(vb) | set(vf)):
    a, c = vb.get(s), vf.get(s)
    ratio = f"{c / a:.4f}" if a and c else "-"
    fmt = lambda x: f"{x:.4f}" if x is not None else "-"
    print(f"| {s} | {fmt(tb.get(s))} | {fmt(tf.get(s))} | {fmt(a)} | {fmt(c)} | {ratio} |")
for name, recs in (("bf16", b), ("fp8", f)):
    s = [r for r in recs if r["kind"] == "summary"]
    if s:
        print(f"{name}: median step {s[0]['median_step_ms']:.1f} ms, {s[0]['tokens_per_s']:.0f} tok/s")
PY
