#!/usr/bin/env python3
"""Compares train_gpt runs from their logs: a table and, when matplotlib is installed, a PNG.

  python3 scripts/compare.py logs/bf16/train.jsonl logs/fp8/train.jsonl [--png compare.png | --no-png] [--skip 3]
                             [--smooth 20] [--curves] [--watch SECONDS]

Each LOG is a train.jsonl (or a log directory holding one). A run is labelled by its config.json (next to the
log): model and precision, plus the settings that tell runs of the same model and precision apart; without a
config.json, or where that does not separate them, by the shortest end of its folder's path that does.

The table has, per run: steps, final train loss, last val loss, median step ms over the steps after --skip
warm-up steps, tokens/s, honest TFLOP/s, MFU, peak GB, skipped steps, and the speed relative to the first run.
--curves adds the loss curves as text (for a README or a terminal): the validation loss of every run at each
evaluated step with its ratio to the first run's, and a character plot of the training loss (mean per column of
steps) with the validation points.

The PNG (by default when matplotlib is installed, to --png, compare.png in the current directory unless given;
--no-png: none) shows what runs are compared on: the loss per step (log scale, validation as markers); each run's
loss divided by the first run's, both smoothed over --smooth steps, so a gap of a few tenths of a percent shows
(validation ratios as markers; not drawn for one run); and tokens/s per step after the --skip warm-up steps, with
the speedup over the first run in the title (titles wrap to their panel's width). A diverged run's non-finite losses (null in the log) are left out of the curves.

--watch SECONDS looks at runs while they train: every SECONDS it reads the logs again and redraws the table (and
--curves, and the PNG), until Ctrl-C. A log that does not exist yet or has no step yet is waited for, and a last
line still being written (no newline yet) is left for the next look.

Every bad log is one line "compare: error: ..." on stderr and exit status 2. Standard library only, except
matplotlib for the PNG.
"""
import argparse
import json
import math
import os
import statistics
import sys
import textwrap


class LogError(Exception):
    """A log that cannot be compared: one line naming the file (and the line)."""


class NotYetWritten(LogError):
    """A log that does not exist yet or holds no step yet: --watch waits for it."""


def number(r, key, where, required=True):
    """r[key] as a float: NaN for null (a non-finite value, e.g. a diverged run's loss)."""
    if key not in r:
        if required:
            raise LogError(f"{where}: a {r.get('kind')} record without '{key}'")
        return None
    v = r[key]
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise LogError(f"{where}: '{key}' is {json.dumps(v)[:40]}, not a number")
    return float(v)


def load(path, growing=False):
    """(log path, train records, val records, skipped steps) with the numbers checked. growing: the log of a
    run in progress, whose last line may be half written (no newline yet): left out."""
    if os.path.isdir(path):
        path = os.path.join(path, "train.jsonl")
    train, val, skipped = [], [], 0
    try:
        with open(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                where = f"{path}:{n}"
                if growing and not raw.endswith(b"\n"):
                    break
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise LogError(f"{where}: not UTF-8 (byte {e.start + 1} of the line); is it a train.jsonl?")
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    raise LogError(f"{where}: not JSON ({e.msg} at column {e.pos + 1})")
                if not isinstance(r, dict):
                    raise LogError(f"{where}: not a JSON object")
                kind = r.get("kind")
                if kind == "train":
                    rec = {"step": number(r, "step", where), "loss": number(r, "loss", where)}
                    for key in ("step_ms", "tokens_per_s", "tflops", "mfu", "peak_mem_gb"):
                        rec[key] = number(r, key, where, required=False)
                    train.append(rec)
                elif kind == "val":
                    val.append({"step": number(r, "step", where), "val_loss": number(r, "val_loss", where)})
                elif kind == "skipped":
                    skipped += 1
    except FileNotFoundError as e:
        raise NotYetWritten(f"{path}: {e.strerror}")
    except OSError as e:
        raise LogError(f"{path}: {e.strerror}")
    if not train:
        raise NotYetWritten(f"{path}: no training records")
    return path, train, val, skipped


# Settings that name files, not what was trained: left out of the labels.
NOT_A_SETTING = {"log_dir", "checkpoint_dir", "resume", "resume_if_present", "init_from", "export",
                 "eval_hellaswag_dump", "gemm_cache", "tokenizer", "train_data", "val_data", "eval_hellaswag",
                 "parameters"}


def read_config(log_path):
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(log_path)), "config.json")) as f:
            c = json.load(f)
        return c if isinstance(c, dict) else None
    except (OSError, ValueError):
        return None


def path_labels(paths):
    """The shortest ends of the log folders' paths that tell them apart ("a/fp8" and "b/fp8")."""
    parts = [os.path.dirname(os.path.abspath(p)).strip(os.sep).split(os.sep) for p in paths]
    for k in range(1, max(len(p) for p in parts) + 1):
        labels = [os.sep.join(p[-k:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [os.sep.join(p) for p in parts]


def run_labels(paths):
    """One distinct label per run: config.json's model and precision (and the settings in which runs of the
    same model and precision differ), else the shortest distinct end of the folder's path."""
    configs = [read_config(p) for p in paths]
    labels = path_labels(paths)
    if all(configs):
        base = [f"{c.get('model', '?')} {c.get('precision', '?')}" for c in configs]
        names = []
        for i, name in enumerate(base):
            same = [configs[j] for j in range(len(base)) if base[j] == name]
            differ = sorted(k for k in configs[i] if k not in NOT_A_SETTING and
                            any(c.get(k) != configs[i].get(k) for c in same))
            names.append(" ".join([name] + [f"{k}={configs[i][k]}" for k in differ[:3]]))
        if len(set(names)) == len(names):
            labels = names
        else:  # the same settings (e.g. one run twice): the folder tells them apart
            labels = [f"{n} ({p})" for n, p in zip(names, labels)]
    seen = {}
    for i, label in enumerate(labels):  # the same log given twice
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[i] = f"{label} #{seen[label]}"
    return labels


def steady(train, skip):
    """The records after the warm-up steps, as in the table's medians (all of them for a short run)."""
    return train[skip:] if len(train) > skip else train


def median_of(records, key):
    values = [r[key] for r in records if r.get(key) is not None and math.isfinite(r[key])]
    return statistics.median(values) if values else math.nan


def summarize(run, skip):
    path, train, val, skipped = run
    rest = steady(train, skip)
    peaks = [r["peak_mem_gb"] for r in train if r.get("peak_mem_gb") is not None]
    return {
        "steps": len(train),
        "loss": train[-1]["loss"],
        "val": val[-1]["val_loss"] if val else None,
        "ms": median_of(rest, "step_ms"),
        "tok_s": median_of(rest, "tokens_per_s"),
        "tflops": median_of(rest, "tflops"),
        "mfu": median_of(rest, "mfu"),
        "peak": max(peaks) if peaks else math.nan,
        "skipped": skipped,
    }


def fmt(v, spec):
    return "-" if v is None else "nan" if isinstance(v, float) and math.isnan(v) else format(v, spec)


def print_table(labels, rows):
    base = rows[0]["ms"]
    print("| run | steps | loss | val loss | step ms | tokens/s | TFLOP/s | MFU | peak GB | skipped | vs first |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, r in zip(labels, rows):
        speed = base / r["ms"] if r["ms"] > 0 else math.nan
        print(f"| {label} | {r['steps']} | {fmt(r['loss'], '.4f')} | {fmt(r['val'], '.4f')} | {fmt(r['ms'], '.2f')} | "
              f"{fmt(r['tok_s'], ',.0f')} | {fmt(r['tflops'], '.1f')} | {fmt(100 * r['mfu'], '.1f')}% | "
              f"{fmt(r['peak'], '.1f')} | {r['skipped']} | {fmt(speed, '.2f')}x |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", help="train.jsonl files or log directories")
    ap.add_argument("--png", default="compare.png", help="where the figure goes (needs matplotlib)")
    ap.add_argument("--no-png", action="store_true", help="print the table only")
    ap.add_argument("--skip", type=int, default=3, help="warm-up steps left out of the medians")
    ap.add_argument("--smooth", type=int, default=20, help="steps averaged in the figure's loss ratio")
    ap.add_argument("--curves", action="store_true", help="also print the loss curves as text")
    ap.add_argument("--watch", type=float, metavar="SECONDS", help="redraw every SECONDS until Ctrl-C")
    ap.add_argument("--watch-renders", type=int, default=0, help=argparse.SUPPRESS)  # tests: stop after N
    a = ap.parse_args()
    if a.skip < 0 or a.smooth < 1:
        raise LogError("--skip must be >= 0 and --smooth >= 1")
    if a.watch is None:
        render(a, [load(p) for p in a.logs])
        return
    if not a.watch > 0:
        raise LogError("--watch must be a positive number of seconds")
    watch(a)


def render(a, runs):
    labels = run_labels([r[0] for r in runs])
    print_table(labels, [summarize(r, a.skip) for r in runs])
    if a.curves:
        print_curves(runs, labels)
    if not a.no_png:
        plot(runs, labels, a.png, a.skip, a.smooth)


def watch(a):
    """render() every a.watch seconds over the logs as they grow; logs not there yet are waited for."""
    import time
    renders = 0
    try:
        while True:
            runs, waiting = [], []
            for p in a.logs:
                try:
                    runs.append(load(p, growing=True))
                except NotYetWritten:  # look again later
                    waiting.append(p)
            if sys.stdout.isatty():
                print("\033[H\033[2J", end="")
            if runs:
                render(a, runs)
            note = f"; waiting for {', '.join(waiting)}" if waiting else ""
            print(f"compare: {time.strftime('%H:%M:%S')}, every {a.watch:g} s, Ctrl-C stops{note}", flush=True)
            renders += 1
            if a.watch_renders and renders >= a.watch_renders:
                return
            time.sleep(a.watch)
    except KeyboardInterrupt:
        print()


def finite(v):
    return v is not None and math.isfinite(v)


def print_curves(runs, labels, width=72, height=18):
    """Validation loss per evaluated step (ratio to the first run) and a character plot of the losses."""
    vals = [{v["step"]: v["val_loss"] for v in r[2] if finite(v["val_loss"])} for r in runs]
    steps = sorted(set().union(*vals))
    if steps:
        print()
        print("| step | " + " | ".join(f"{l} val" for l in labels) +
              "".join(f" | {l} / {labels[0]}" for l in labels[1:]) + " |")
        print("|---" * (1 + 2 * len(labels) - 1) + "|")
        for s in steps:
            cells = [f"{v[s]:.4f}" if s in v else "-" for v in vals]
            ratios = [f"{v[s] / vals[0][s]:.4f}" if s in v and s in vals[0] else "-" for v in vals[1:]]
            print(f"| {s:g} | " + " | ".join(cells + ratios) + " |")
    # The plot: one character per run (its label's first letter, then digits if taken); training loss as the
    # mean of the steps in each column, validation points as '*' where a run has one.
    marks = []
    for l in labels:
        m = next((c for c in l if c.isalnum() and c not in marks), None) or str(len(marks))
        marks.append(m)
    last = int(max(r[1][-1]["step"] for r in runs))
    cols = []
    for _, train, _, _ in runs:
        buckets = [[] for _ in range(width)]
        for t in train:
            if finite(t["loss"]):
                buckets[min(width - 1, int(t["step"]) * width // (last + 1))].append(t["loss"])
        cols.append([sum(b) / len(b) if b else None for b in buckets])
    ys = [y for c in cols for y in c if y is not None] + [v for d in vals for v in d.values()]
    if not ys:
        return
    lo, hi = min(ys), max(ys)
    hi = hi if hi > lo else lo + 1
    grid = [[" "] * width for _ in range(height)]
    row = lambda y: min(height - 1, int((hi - y) / (hi - lo) * (height - 1) + 0.5))
    for i, c in enumerate(cols):
        for x, y in enumerate(c):
            if y is not None:
                grid[row(y)][x] = marks[i] if grid[row(y)][x] in (" ", marks[i]) else "+"
        for s, v in vals[i].items():
            grid[row(v)][min(width - 1, int(s) * width // (last + 1))] = "*"
    print()
    print("loss (" + ", ".join(f"{m} = {l}" for m, l in zip(marks, labels)) +
          "; + where runs overlap; * validation)")
    for r, line in enumerate(grid):
        y = hi - r * (hi - lo) / (height - 1)
        print(f"{y:7.3f} |" + "".join(line))
    print(" " * 8 + "+" + "-" * width)
    print(" " * 8 + f"0{'step':^{width - 2 * len(str(last))}}{last}")


def smoothed(points, window):
    """{step: mean of the finite values of the last `window` points up to it} (a trailing moving average)."""
    out, recent = {}, []
    for step, v in points:
        if finite(v):
            recent = (recent + [v])[-window:]
            out[step] = sum(recent) / len(recent)
    return out


def figure_data(runs, labels, skip, smooth):
    """What the figure draws, per panel: {"loss": [(label, steps, losses, val steps, val losses)],
    "ratio": [(label, steps, ratios, val steps, val ratios)] for the runs after the first, "speed":
    [(label, steps, tokens/s)], "speedups": [median tokens/s over the first run's]}."""
    data = {"loss": [], "ratio": [], "speed": [], "speedups": []}
    first_smooth = smoothed([(t["step"], t["loss"]) for t in runs[0][1]], smooth)
    first_val = {v["step"]: v["val_loss"] for v in runs[0][2] if finite(v["val_loss"])}
    base = median_of(steady(runs[0][1], skip), "tokens_per_s")
    for i, (label, (_, train, val, _)) in enumerate(zip(labels, runs)):
        pts = [(t["step"], t["loss"]) for t in train if finite(t["loss"])]
        vpts = [(v["step"], v["val_loss"]) for v in val if finite(v["val_loss"])]
        data["loss"].append((label, [p[0] for p in pts], [p[1] for p in pts], [p[0] for p in vpts],
                             [p[1] for p in vpts]))
        if i > 0:
            mine = smoothed(pts, smooth)
            common = sorted(s for s in mine if s in first_smooth and first_smooth[s] > 0)
            vcommon = [(s, v / first_val[s]) for s, v in vpts if first_val.get(s, 0) > 0]
            data["ratio"].append((label, common, [mine[s] / first_smooth[s] for s in common],
                                  [p[0] for p in vcommon], [p[1] for p in vcommon]))
        speed = [(t["step"], t["tokens_per_s"]) for t in steady(train, skip) if finite(t.get("tokens_per_s"))]
        data["speed"].append((label, [p[0] for p in speed], [p[1] for p in speed]))
        data["speedups"].append(median_of(steady(train, skip), "tokens_per_s") / base if base > 0 else math.nan)
    return data


PANEL_INCHES = 6.0  # each panel's share of the figure's width
# Characters of a title (12 points, about 0.1 inch each) that fit over one panel's axes (~4.6 of its 6 inches
# once the tick labels are placed): longer titles wrap instead of running into the next panel or off the figure.
TITLE_CHARS = 44


def wrap_title(text):
    return textwrap.fill(text, TITLE_CHARS)


def speed_title(labels, speedups, skip):
    if len(labels) == 1:
        return f"throughput (after {skip} warm-up steps)"
    parts = [f"{l} {s:.2f}x" for l, s in zip(labels[1:], speedups[1:])]
    return f"tokens/s: {', '.join(parts)} {labels[0]} (median after {skip} warm-up steps)"


def plot(runs, labels, png, skip, smooth):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import LogFormatter, PercentFormatter
    except ImportError:
        print("compare: matplotlib is not installed: no PNG written (pip install matplotlib)", file=sys.stderr)
        return
    data = figure_data(runs, labels, skip, smooth)
    panels = 3 if len(runs) > 1 else 2  # one run: no ratio panel
    fig, axes = plt.subplots(1, panels, figsize=(PANEL_INCHES * panels, 4.8))
    ax1, ax3 = axes[0], axes[-1]
    colors = {}
    for label, steps, losses, vsteps, vlosses in data["loss"]:
        line, = ax1.plot(steps, losses, label=label, lw=1)
        colors[label] = line.get_color()
        ax1.plot(vsteps, vlosses, "o", color=line.get_color(), ms=4)
    ax1.set_yscale("log")
    ax1.yaxis.set_major_formatter(LogFormatter())  # 6, 8, 10 rather than 6 x 10^0
    ax1.yaxis.set_minor_formatter(LogFormatter(minor_thresholds=(2, 0.5)))
    ax1.set(xlabel="step", ylabel="loss (dots: validation)", title="loss")
    if panels == 3:
        ax2 = axes[1]
        ax2.axhline(1.0, color=colors[labels[0]], lw=1, label=f"{labels[0]} (= 1)")
        for label, steps, ratios, vsteps, vratios in data["ratio"]:
            ax2.plot(steps, ratios, color=colors[label], lw=1, label=label)
            ax2.plot(vsteps, vratios, "o", color=colors[label], ms=4)
        ax2.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
        ax2.set(xlabel="step", ylabel=f"loss / {labels[0]}'s",
                title=wrap_title(f"loss relative to {labels[0]} (mean of {smooth} steps; dots: validation)"))
    for label, steps, tok_s in data["speed"]:
        ax3.plot(steps, tok_s, color=colors[label], lw=1, label=label)
    ax3.set(xlabel="step", ylabel="tokens/s", title=wrap_title(speed_title(labels, data["speedups"], skip)))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(png, dpi=120)
    except OSError as e:
        raise LogError(f"{png}: {e.strerror}")
    print(f"wrote {os.path.abspath(png)}")


if __name__ == "__main__":
    try:
        main()
    except LogError as e:
        sys.stdout.flush()
        print(f"compare: error: {e}", file=sys.stderr)
        sys.exit(2)
