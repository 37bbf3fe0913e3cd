#!/usr/bin/env bash
# `make bench`: the benchmark workloads in ONE invocation on ONE machine, random tokens, one GPU:
#   GPT-1.5B, batch 12 x 1024 (the report's): train_gpt bf16 and fp8 (with --profile), the PyTorch model of the
#     report (BF16 autocast + torch.compile; torchao.float8 + compile when torchao is installed);
#   GPT-2 124M, batch 16 x 1024 (llm.c's home size): train_gpt bf16 and fp8;
#   llm.c (BF16) at both sizes when LLMC points to its train_gpt2cu binary (skipped with a message otherwise).
# Prints one table per model (median step ms over the steady steps, tokens/s, honest TFLOP/s, the report's
# formula, MFU, peak GB as the driver reports it, speed ratios), writes bench.json and, with matplotlib,
# bench.png.
# Usage: scripts/bench.sh [STEPS] [OUTDIR]
#   MODEL=1.5b|124m|both (default both); LLMC=path/to/train_gpt2cu; BENCH_ARGS: extra train_gpt flags;
#   BENCH_PYTORCH=0 skips PyTorch.
set -u
export NCCL_NVLS_ENABLE=0
steps=${1:-30}
out=${2:-${OUT:-logs}/bench}
model=${MODEL:-both}
case $model in
  1.5b) sizes="1.5b" ;;
  124m) sizes="124m" ;;
  both) sizes="1.5b 124m" ;;
  *) echo "bench: MODEL must be 1.5b, 124m or both, got '$model'" >&2; exit 2 ;;
esac
mkdir -p "$out"
rm -f "$out/pytorch.jsonl" "$out/llmc.jsonl"
batch_of() { [ "$1" = 124m ] && echo 16 || echo 12; }

# llm.c reads token shards: one of random GPT-2 ids (its header: magic 20240520, version 1, token count).
llmc_ok=""
if [ -n "${LLMC:-}" ]; then
  if [ -x "$LLMC" ]; then
    llmc_ok=1
    python3 - "$out/llmc_data.bin" <<'EOF'
import random, struct, sys
n = 4 << 20
random.seed(0)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
    f.write(struct.pack(f"<{n}H", *(random.randrange(50257) for _ in range(n))))
EOF
  else
    echo "bench: LLMC=$LLMC is not an executable: llm.c rows skipped"
  fi
else
  echo "bench: llm.c rows skipped (set LLMC=path/to/llm.c/train_gpt2cu to compare with llm.c)"
fi

# llm.c at size $1: its step times from its log, its peak memory from nvidia-smi sampled meanwhile.
run_llmc() {
  local size=$1 depth b log
  b=$(batch_of "$size")
  [ "$size" = 124m ] && depth=d12 || depth=d48
  log="$out/llmc_$size.log"
  (nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$out/llmc_$size.mem" 2>/dev/null &
   echo $! > "$out/llmc_$size.smi")
  "$LLMC" -e "$depth" -i "$out/llmc_data.bin" -j "$out/llmc_data.bin" -b "$b" -t 1024 -d $((b * 1024)) \
    -x "$steps" -v 1000000 -m 1 -s 1000000 -h 0 -y 0 > "$log" 2>&1 ||
    { echo "bench: llm.c $size failed:"; tail -3 "$log"; }
  kill "$(cat "$out/llmc_$size.smi")" 2>/dev/null
  python3 - "$log" "$out/llmc_$size.mem" "$size" "$b" "$out/llmc.jsonl" <<'EOF'
import json, re, statistics, sys
log, mem, size, b, out = sys.argv[1:]
ms = [float(m.group(1)) for m in re.finditer(r"\|\s*([0-9.]+) ms\s*\|", open(log).read())]
if len(ms) < 5:
    sys.exit(f"bench: llm.c {size}: fewer than 5 step times in {log}")
try:
    peak = max(int(l) for l in open(mem) if l.strip().isdigit()) * 2**20 / 1e9
except ValueError:
    peak = float("nan")
med = statistics.median(ms[3:])
json.dump({"model": size, "name": "llm.c bf16", "median_step_ms": med, "tokens_per_s": int(b) * 1024 / (med / 1e3),
           "peak_mem_gb": peak}, open(out, "a"))
open(out, "a").write("\n")
EOF
}

for size in $sizes; do
  for p in bf16 fp8; do
    ./train_gpt --model "$size" --batch "$(batch_of "$size")" --seq 1024 --train-data random --steps "$steps" \
      --precision "$p" --log-every 5 --profile ${BENCH_ARGS:-} --log-dir "$out/$size/$p" > "$out/${size}_$p.log" 2>&1 ||
      { echo "bench: train_gpt $size $p failed:"; tail -5 "$out/${size}_$p.log"; }
    grep -E "^profile" "$out/${size}_$p.log" | sed "s/^/$size /"
  done
  [ -n "$llmc_ok" ] && run_llmc "$size"
done
# The tables (and bench.json, bench.png) from every result written so far under $out.
report() {
python3 - "$out" "$sizes" <<'EOF'
import json, os, sys
out, sizes = sys.argv[1], sys.argv[2].split()
rows = []
def read_jsonl(name):
    try:
        return [json.loads(l) for l in open(os.path.join(out, name)) if l.strip()]
    except OSError:
        return []
for size in sizes:
    for p in ("bf16", "fp8"):
        try:
            s = [json.loads(l) for l in open(os.path.join(out, size, p, "train.jsonl")) if '"summary"' in l][-1]
            cfg = json.load(open(os.path.join(out, size, p, "config.json")))
        except (OSError, IndexError):
            continue
        rows.append({"model": size, "name": f"train_gpt {p}", "median_step_ms": s["median_step_ms"],
                     "tokens_per_s": s["tokens_per_s"], "tflops": s["tflops"], "parameters": cfg["parameters"],
                     "peak_mem_gb": s["peak_mem_gb"]})
rows += read_jsonl("llmc.jsonl")
rows += [dict(r, model="1.5b") for r in read_jsonl("pytorch.jsonl")]
if not rows:
    sys.exit("bench: no results")
# Rows without their own FLOP count (peers) take ours for the same model: the same work per token.
for r in rows:
    ours = next((o for o in rows if o["model"] == r["model"] and "tflops" in o and "parameters" in o), None)
    if "tflops" not in r and ours:
        r["tflops"] = ours["tflops"] * ours["median_step_ms"] / r["median_step_ms"]
    if ours:
        r["seed_formula_tflops"] = 6 * ours["parameters"] * r["tokens_per_s"] / 1e12
titles = {"1.5b": "GPT-1.5B, batch 12 x 1024", "124m": "GPT-2 124M, batch 16 x 1024"}
print()
print("Random tokens, one GPU; median step over the steady steps. TFLOP/s honest: (6N + 12LTC) x tokens / time;")
print("report formula: 6N x tokens / time; MFU of 989 dense BF16.")
for size in sizes:
    sel = [r for r in rows if r["model"] == size]
    if not sel:
        continue
    base = {k: next((r for r in sel if r["name"].startswith(k)), None) for k in ("train_gpt bf16", "llm.c", "pytorch bf16")}
    print(f"\n{titles[size]}")
    hdr = (f"| {'run':40} | step ms | tokens/s | TFLOP/s | report formula | MFU | peak GB | vs train_gpt bf16 |"
           f" vs llm.c | vs PyTorch bf16 |")
    print(hdr)
    print("|" + "|".join("-" * (len(c)) for c in hdr.split("|")[1:-1]) + "|")
    for r in sel:
        vs = [f"{b['median_step_ms'] / r['median_step_ms']:.2f}x" if b else "-" for b in base.values()]
        tf = r.get("tflops", float("nan"))
        print(f"| {r['name']:40} | {r['median_step_ms']:7.1f} | {r['tokens_per_s']:8.0f} | {tf:7.1f} | "
              f"{r.get('seed_formula_tflops', float('nan')):14.1f} | {100 * tf / 989:4.1f}% | {r['peak_mem_gb']:7.1f} | "
              f"{vs[0]:>17} | {vs[1]:>8} | {vs[2]:>15} |")
json.dump(rows, open(os.path.join(out, "bench.json"), "w"), indent=1)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(len(sizes), 2, figsize=(11, 4 * len(sizes)), squeeze=False)
    for i, size in enumerate(sizes):
        sel = [r for r in rows if r["model"] == size]
        names = [r["name"].replace(" + compile", "\n+ compile") for r in sel]
        ax[i][0].barh(names, [r["median_step_ms"] for r in sel]); ax[i][0].set_xlabel("step ms (lower is better)")
        ax[i][1].barh(names, [r["peak_mem_gb"] for r in sel]); ax[i][1].set_xlabel("peak GB (driver)")
        ax[i][1].set_yticklabels([])
        ax[i][0].set_title(titles[size] + ", one GPU")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench.png"), dpi=100)
    print(f"wrote {out}/bench.json and {out}/bench.png")
except ImportError:
    print(f"wrote {out}/bench.json (no matplotlib: no PNG)")
EOF
}

if [ "${BENCH_PYTORCH:-1}" != 0 ] && [[ " $sizes " == *" 1.5b "* ]]; then
  # The PyTorch runs compile for minutes: the rows so far first, so a run cut short still has its table.
  echo "bench: train_gpt and llm.c rows (the PyTorch runs follow; the full table after them):"
  report
  for v in bf16 fp8; do  # one process each: the first one's memory must not count in the second's peak
    python3 scripts/bench_pytorch.py --steps "$steps" --variants "$v" --out "$out/pytorch.jsonl" 2>&1 |
      grep -E "^pytorch|Error|error" | tail -3
  done
fi
report
