#!/usr/bin/env bash
# The README's scaling table: train_gpt on ONE GPU, models 124m 350m 774m 1.5b x batch 4 8 12 16 24 (T=1024,
# random tokens), bf16 and fp8, one process per cell. A cell that does not fit is recorded as OOM (train_gpt's
# "out of GPU memory" error), any other failure as failed (the error line stays in its run.log); the grid goes
# on either way. Prints one markdown table, a row per (model, batch): median step ms over the steady steps, fp8
# speedup (bf16 ms / fp8 ms), honest TFLOP/s, peak GB; writes grid.json (one record per run).
# Logs: ${OUT:-logs}/grid/<model>_b<B>_<prec>/ (run.log = train_gpt's output, train.jsonl, config.json).
# Usage: bash scripts/bench/bench_grid.sh [STEPS]   (default 8; GRID_MODELS, GRID_BATCHES, TRAIN_GPT=./train_gpt)
# Exits 1 when a cell failed other than by OOM.
set -u
export NCCL_NVLS_ENABLE=0
STEPS=${1:-8}
BIN=${TRAIN_GPT:-./train_gpt}
MODELS=${GRID_MODELS:-124m 350m 774m 1.5b}
BATCHES=${GRID_BATCHES:-4 8 12 16 24}
OUTDIR=${OUT:-logs}/grid
mkdir -p "$OUTDIR"

run() {  # model batch precision; writes <dir>/status: ok, OOM or failed
  local dir=$OUTDIR/$1_b$2_$3 rc
  mkdir -p "$dir"
  rm -f "$dir/train.jsonl" "$dir/run.log" "$dir/status"  # no stale summary from an earlier grid
  "$BIN" --model "$1" --batch "$2" --seq 1024 --train-data random --steps "$STEPS" --precision "$3" \
    --log-every 5 --log-dir "$dir" > "$dir/run.log" 2>&1
  rc=$?
  if [ "$rc" = 0 ] && grep -q '"kind": "summary"' "$dir/train.jsonl" 2>/dev/null; then
    echo ok > "$dir/status"
    echo "$1 b$2 $3: $(grep -m1 '^summary:' "$dir/run.log")"
  elif grep -q "out of GPU memory" "$dir/run.log"; then
    echo OOM > "$dir/status"
    echo "$1 b$2 $3: OOM"
  else
    echo failed > "$dir/status"
    echo "$1 b$2 $3: failed (status $rc): $(grep -m1 'error:' "$dir/run.log" || tail -1 "$dir/run.log")"
  fi
}
for model in $MODELS; do
  for batch in $BATCHES; do
    for prec in bf16 fp8; do run "$model" "$batch" "$prec"; done
  done
done

python3 - "$OUTDIR" "$MODELS" "$BATCHES" <<'EOF'
import json, os, sys
outdir, models, batches = sys.argv[1], sys.argv[2].split(), [int(b) for b in sys.argv[3].split()]
FIELDS = ("median_step_ms", "tokens_per_s", "tflops", "mfu", "peak_mem_gb")

def cell(model, batch, prec):
    d = os.path.join(outdir, f"{model}_b{batch}_{prec}")
    rec = {"model": model, "batch": batch, "seq": 1024, "precision": prec}
    try:
        rec["status"] = open(os.path.join(d, "status")).read().strip()
        s = [r for r in map(json.loads, open(os.path.join(d, "train.jsonl"))) if r.get("kind") == "summary"][-1]
        rec.update({k: s.get(k) for k in FIELDS})
    except (OSError, IndexError, ValueError):
        rec.setdefault("status", "failed")
    if rec["status"] == "ok" and rec.get("median_step_ms") is None:
        rec["status"] = "failed"  # ran, but no steady step was timed
    if rec["status"] != "ok":  # keep train_gpt's error line, if it printed one
        try:
            err = next((l.strip() for l in open(os.path.join(d, "run.log")) if "error:" in l), None)
        except OSError:
            err = None
        if err:
            rec["error"] = err
    return rec

ok = lambda r: r["status"] == "ok"
num = lambda r, k, fmt: format(r[k], fmt) if ok(r) and r.get(k) is not None else r["status"]
records, rows = [], []
for m in models:
    for b in batches:
        bf, f8 = cell(m, b, "bf16"), cell(m, b, "fp8")
        records += [bf, f8]
        speedup = f"{bf['median_step_ms'] / f8['median_step_ms']:.2f}x" if ok(bf) and ok(f8) else "-"
        rows.append([m, str(b), num(bf, "median_step_ms", ".1f"), num(f8, "median_step_ms", ".1f"), speedup,
                     num(bf, "tflops", ".1f"), num(f8, "tflops", ".1f"), num(bf, "peak_mem_gb", ".1f"),
                     num(f8, "peak_mem_gb", ".1f")])
hdr = ["model", "batch", "bf16 ms", "fp8 ms", "fp8 speedup", "bf16 TFLOP/s", "fp8 TFLOP/s", "bf16 peak GB",
       "fp8 peak GB"]
w = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(hdr)]
line = lambda cols: "| " + " | ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(cols)) + " |"
print()
print("One GPU, T=1024, random tokens, bf16 vs fp8. ms: median step time over the steady steps; TFLOP/s: the "
      "honest count (6N + 12LTC per token) / step time.")
print(line(hdr))
print("|" + "|".join("-" * (n + 2) for n in w) + "|")
for r in rows:
    print(line(r))
json.dump(records, open(os.path.join(outdir, "grid.json"), "w"), indent=1)
print(f"wrote {outdir}/grid.json")
sys.exit(1 if any(r["status"] == "failed" for r in records) else 0)
EOF
