#!/usr/bin/env python3
"""Compares train_gpt runs from their logs: a table and, when matplotlib is installed, a PNG.

  python3 scripts/compare.py logs/bf16/train.jsonl logs/fp8/train.jsonl [--png compare.png | --no-png] [--skip 3]
                             [--curves]

Each LOG is a train.jsonl (or a log directory holding one). The table has, per run: steps, final train loss,
last val loss, median step ms over the steps after --skip warm-up steps, tokens/s, honest TFLOP/s, MFU, peak GB,
skipped steps, and the step-time ratio to the first run. --curves adds the loss curves as text (for a README or a
terminal): the validation loss of every run at each evaluated step with its ratio to the first run's, and a
character plot of the training loss (mean per column of steps) with the validation points. The PNG (written by default when matplotlib is installed,
to --png, compare.png in the current directory unless given; --no-png: none) has the loss per step (val loss as
markers), and TFLOP/s and tokens/s per step after the same --skip warm-up steps as the medians. Standard library
only, except matplotlib for the PNG.
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


def steady(train, skip):
    """The records after the warm-up steps, as in the table's medians (all of them for a short run)."""
    return train[skip:] if len(train) > skip else train


def summarize(run, skip):
    path, train, val, skipped = run
    rest = steady(train, skip)
    med = lambda key: statistics.median(r[key] for r in rest if r.get(key) is not None)
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
    ap.add_argument("--png", default="compare.png", help="where the plot goes (needs matplotlib)")
    ap.add_argument("--no-png", action="store_true", help="print the table only")
    ap.add_argument("--skip", type=int, default=3, help="warm-up steps left out of the medians")
    ap.add_argument("--curves", action="store_true", help="also print the loss curves as text")
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
    if a.curves:
        print_curves(runs)
    if not a.no_png:
        plot(runs, a.png, a.skip)


def run_label(path):
    return os.path.basename(os.path.dirname(os.path.abspath(path))) or path


def print_curves(runs, width=72, height=18):
    """Validation loss per evaluated step (ratio to the first run) and a character plot of the losses."""
    labels = [run_label(r[0]) for r in runs]
    vals = [{v["step"]: v["val_loss"] for v in r[2]} for r in runs]
    steps = sorted(set().union(*vals))
    if steps:
        print()
        print("| step | " + " | ".join(f"{l} val" for l in labels) +
              "".join(f" | {l} / {labels[0]}" for l in labels[1:]) + " |")
        print("|---" * (1 + 2 * len(labels) - 1) + "|")
        for s in steps:
            cells = [f"{v[s]:.4f}" if s in v else "-" for v in vals]
            ratios = [f"{v[s] / vals[0][s]:.4f}" if s in v and s in vals[0] else "-" for v in vals[1:]]
            print(f"| {s} | " + " | ".join(cells + ratios) + " |")
    # The plot: one character per run (its label's first letter, then digits if taken); training loss as the
    # mean of the steps in each column, validation points as '*' where a run has one.
    marks = []
    for l in labels:
        m = next((c for c in l if c.isalnum() and c not in marks), None) or str(len(marks))
        marks.append(m)
    last = max(r[1][-1]["step"] for r in runs)
    cols = [[None] * width for _ in runs]
    for i, (_, train, val, _) in enumerate(runs):
        buckets = [[] for _ in range(width)]
        for t in train:
            buckets[min(width - 1, t["step"] * width // (last + 1))].append(t["loss"])
        cols[i] = [sum(b) / len(b) if b else None for b in buckets]
    ys = [y for c in cols for y in c if y is not None] + [v for d in vals for v in d.values()]
    lo, hi = min(ys), max(ys)
    hi = hi if hi > lo else lo + 1
    grid = [[" "] * width for _ in range(height)]
    row = lambda y: min(height - 1, int((hi - y) / (hi - lo) * (height - 1) + 0.5))
    for i, c in enumerate(cols):
        for x, y in enumerate(c):
            if y is not None:
                grid[row(y)][x] = marks[i] if grid[row(y)][x] in (" ", marks[i]) else "+"
        for s, v in vals[i].items():
            grid[row(v)][min(width - 1, s * width // (last + 1))] = "*"
    print()
    print("loss (" + ", ".join(f"{m} = {l}" for m, l in zip(marks, labels)) +
          "; + where runs overlap; * validation)")
    for r, line in enumerate(grid):
        y = hi - r * (hi - lo) / (height - 1)
        print(f"{y:7.3f} |" + "".join(line))
    print(" " * 8 + "+" + "-" * width)
    print(" " * 8 + f"0{'step':^{width - 2 * len(str(last))}}{last}")


def plot(runs, png, skip):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare: matplotlib is not installed: no PNG written (pip install matplotlib)", file=sys.stderr)
        return
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.5))
    for path, train, val, _ in runs:
        label = run_label(path)
        line, = ax1.plot([t["step"] for t in train], [t["loss"] for t in train], label=label, lw=1)
        if val:
            ax1.plot([v["step"] for v in val], [v["val_loss"] for v in val], "o", color=line.get_color(), ms=4)
        # Throughput without the warm-up steps: step 0 (compilation, graph capture) would squash the axis.
        for ax, key in ((ax2, "tflops"), (ax3, "tokens_per_s")):
            pts = [(t["step"], t[key]) for t in steady(train, skip) if t.get(key) is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, lw=1)
    ax1.set(xlabel="step", ylabel="loss (dots: validation)", title="loss")
    ax2.set(xlabel="step", ylabel="TFLOP/s (honest)", title=f"throughput (after {skip} warm-up steps)")
    ax3.set(xlabel="step", ylabel="tokens/s", title=f"tokens/s (after {skip} warm-up steps)")
    for ax in (ax1, ax2, ax3):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(png, dpi=120)
    except OSError as e:
        sys.exit(f"compare: error: {png}: {e.strerror}")
    print(f"wrote {os.path.abspath(png)}")

if __name__ == "__main__":
    main()
