#!/usr/bin/env python3
"""Compares train_gpt runs from their logs: a table and, when matplotlib is installed, a PNG.

  python3 scripts/compare.py logs/bf16/train.jsonl logs/fp8/train.jsonl [--png compare.png] [--skip 3]

Each LOG is a train.jsonl (or a log directory holding one). The table has, per run: steps, final train loss,
last val loss, median step ms over the steps after --skip warm-up steps, tokens/s, honest TFLOP/s, MFU, peak GB,
skipped steps, and the step-time ratio to the first run. The PNG has the loss per step (val loss as markers) and
TFLOP/s per step. Standard library only, except matplotlib for the PNG.
"""
import argparse
import json
import os
import statistics
import sys


def load(path):
    if os.path.isdir(path):
        path = os.path.join(path, "train.jsonl")
    train, val, skipped = [], [], 0
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"compare: error: {path}:{n}: not JSON ({e.msg})")
                kind = r.get("kind")
                if kind == "train":
                    train.append(r)
                elif kind == "val":
                    val.append(r)
                elif kind == "skipped":
                    skipped += 1
    except OSError as e:
        sys.exit(f"compare: error: {path}: {e.strerror}")
    if not train:
        sys.exit(f"compare: error: {path}: no training records")
    return path, train, val, skipped


def summarize(run, skip):
    path, train, val, skipped = run
    steady = train[skip:] if len(train) > skip else train
    med = lambda key: statistics.median(r[key] for r in steady if r.get(key) is not None)
    return {
        "run": path,
        "steps": len(train),
        "loss": train[-1]["loss"],
        "val": val[-1]["val_loss"] if val else None,
        "ms": med("step_ms"),
        "tok_s": med("tokens_per_s"),
        "tflops": med("tflops"),
        "mfu": med("mfu"),
        "peak": max(r.get("peak_mem_gb") or 0 for r in train),
        "skipped": skipped,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", help="train.jsonl files or log directories")
    ap.add_argument("--png", default="", help="write the plot here (needs matplotlib)")
    ap.add_argument("--skip", type=int, default=3, help="warm-up steps left out of the medians")
    a = ap.parse_args()
    runs = [load(p) for p in a.logs]
    rows = [summarize(r, a.skip) for r in runs]
    base = rows[0]["ms"]
    fmt = lambda v, spec: "-" if v is None else format(v, spec)
    print("| run | steps | loss | val loss | step ms | tokens/s | TFLOP/s | MFU | peak GB | skipped | vs first |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['run']} | {r['steps']} | {fmt(r['loss'], '.4f')} | {fmt(r['val'], '.4f')} | {r['ms']:.2f} | "
              f"{r['tok_s']:,.0f} | {r['tflops']:.1f} | {100 * r['mfu']:.1f}% | {r['peak']:.1f} | {r['skipped']} | "
              f"{base / r['ms']:.2f}x |")
    if a.png:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("compare: matplotlib is not installed: no PNG written", file=sys.stderr)
            return
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
        for (path, train, val, _), r in zip(runs, rows):
            label = os.path.basename(os.path.dirname(os.path.abspath(path))) or path
            line, = ax1.plot([t["step"] for t in train], [t["loss"] for t in train], label=label, lw=1)
            if val:
                ax1.plot([v["step"] for v in val], [v["val_loss"] for v in val], "o", color=line.get_color(), ms=4)
            ax2.plot([t["step"] for t in train], [t["tflops"] for t in train], label=label, lw=1)
        ax1.set(xlabel="step", ylabel="loss (dots: validation)", title="loss")
        ax2.set(xlabel="step", ylabel="TFLOP/s (honest)", title="throughput")
        for ax in (ax1, ax2):
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        fig.savefig(a.png, dpi=120)
        print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
