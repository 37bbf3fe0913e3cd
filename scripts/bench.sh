#!/usr/bin/env bash
# `make bench`: the report's workload (GPT-1.5B, batch 12 x 1024, random tokens, one GPU) in ONE invocation on ONE
# machine: train_gpt bf16 and fp8 (with --profile), then the PyTorch model of the report (BF16 autocast +
# torch.compile; torchao.float8 + compile when torchao is installed; each skipped with a message where missing).
# Prints one table (median step ms over the steady steps, tokens/s, honest TFLOP/s, the report's formula, MFU,
# driver-measured peak GB, speed ratios), writes bench.json and, with matplotlib, bench.png.
# Usage: scripts/bench.sh [STEPS] [OUTDIR]   (BENCH_ARGS: extra train_gpt flags; BENCH_PYTORCH=0 skips PyTorch)
set -u
export NCCL_NVLS_ENABLE=0
steps=${1:-30}
out=${2:-${OUT:-logs}/bench}
mkdir -p "$out"
rm -f "$out/pytorch.jsonl"
for p in bf16 fp8; do
  ./train_gpt --model 1.5b --batch 12 --seq 1024 --train-data random --steps "$steps" --precision "$p" \
    --log-every 5 --profile ${BENCH_ARGS:-} --log-dir "$out/$p" > "$out/$p.log" 2>&1 ||
    { echo "bench: train_gpt $p failed:"; tail -5 "$out/$p.log"; }
  grep -E "^profile" "$out/$p.log"
done
if [ "${BENCH_PYTORCH:-1}" != 0 ]; then
  for v in bf16 fp8; do  # one process each: the first one's memory must not count in the second's peak
    python3 scripts/bench_pytorch.py --steps "$steps" --variants "$v" --out "$out/pytorch.jsonl" 2>&1 |
      grep -E "^pytorch|Error|error" | tail -3
  done
fi
python3 - "$out" <<'EOF'
import json, os, sys
out = sys.argv[1]
rows = []
for p in ("bf16", "fp8"):
    try:
        s = [json.loads(l) for l in open(os.path.join(out, p, "train.jsonl")) if '"summary"' in l][-1]
        cfg = json.load(open(os.path.join(out, p, "config.json")))
    except (OSError, IndexError):
        continue
    seed = 6 * cfg["parameters"] * 16 * 1024 / (s["median_step_ms"] / 1e3) / 1e12
    rows.append({"name": f"train_gpt {p}", "median_step_ms": s["median_step_ms"], "tokens_per_s": s["tokens_per_s"],
                 "tflops": s["tflops"], "seed_formula_tflops": seed, "peak_mem_gb": s["peak_mem_gb"]})
try:
    rows += [json.loads(l) for l in open(os.path.join(out, "pytorch.jsonl"))]
except OSError:
    pass
if not rows:
    sys.exit("bench: no results")
ref = next((r for r in rows if r["name"].startswith("pytorch bf16")), None)
ours = next((r for r in rows if r["name"] == "train_gpt bf16"), None)
print()
print("GPT-1.5B, batch 12 x 1024, random tokens, one GPU; median step over the steady steps. TFLOP/s honest:")
print("(6N + 12LTC) x tokens / time; report formula: 6N x 16 x 1024 / time (overstates 4/3); MFU of 989 dense BF16.")
hdr = f"| {'run':42} | step ms | tokens/s | TFLOP/s | report formula | MFU | peak GB | vs train_gpt bf16 | vs PyTorch bf16 |"
print(hdr)
print("|" + "|".join("-" * (len(c)) for c in hdr.split("|")[1:-1]) + "|")
for r in rows:
    v_ours = f"{ours['median_step_ms'] / r['median_step_ms']:.2f}x" if ours else "-"
    v_ref = f"{ref['median_step_ms'] / r['median_step_ms']:.2f}x" if ref else "-"
    print(f"| {r['name']:42} | {r['median_step_ms']:7.1f} | {r['tokens_per_s']:8.0f} | {r['tflops']:7.1f} | "
          f"{r['seed_formula_tflops']:14.1f} | {100 * r['tflops'] / 989:4.1f}% | {r['peak_mem_gb']:7.1f} | "
          f"{v_ours:>17} | {v_ref:>15} |")
json.dump(rows, open(os.path.join(out, "bench.json"), "w"), indent=1)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    names = [r["name"].replace(" + compile", "\n+ compile") for r in rows]
    ax[0].barh(names, [r["median_step_ms"] for r in rows]); ax[0].set_xlabel("step ms (lower is better)")
    ax[1].barh(names, [r["peak_mem_gb"] for r in rows]); ax[1].set_xlabel("peak GB (driver)")
    ax[1].set_yticklabels([])
    fig.suptitle("GPT-1.5B, batch 12 x 1024, one GPU")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench.png"), dpi=100)
    print(f"wrote {out}/bench.json and {out}/bench.png")
except ImportError:
    print(f"wrote {out}/bench.json (no matplotlib: no PNG)")
EOF
