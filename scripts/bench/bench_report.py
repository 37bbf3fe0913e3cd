#!/usr/bin/env python3
"""The tables of `make bench` (scripts/bench/bench.sh) from the results under its output folder: train_gpt's runs
(SIZE/{bf16,fp8}/train.jsonl + config.json), llm.c's (llmc.jsonl) and PyTorch's (pytorch.jsonl, GPT-1.5B), as
far as they got. Prints one table per model (median step ms, tokens/s, honest TFLOP/s, the report's formula,
MFU, peak GB, speed ratios to our bf16, llm.c and PyTorch bf16, and from the GPU samples bench.sh took while
each row ran (gpu_ROW.csv) the median SM clock and the share of the time the power cap held the clock down),
writes bench.json and, with matplotlib, bench.png. Peers' TFLOP/s are ours scaled by the step time (the same
work per token).
Usage: bench_report.py OUTDIR [SIZE ...]   (SIZE: 1.5b, 124m; default both)"""
import datetime, json, os, statistics, sys
if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0)
if len(sys.argv) < 2:
    print("usage: bench_report.py OUTDIR [SIZE ...]   (SIZE: 1.5b, 124m)", file=sys.stderr)
    sys.exit(2)
out, sizes = sys.argv[1], sys.argv[2:] or ["1.5b", "124m"]
for size in sizes:
    if size not in ("1.5b", "124m"):
        print(f"bench_report: a SIZE must be 1.5b or 124m, got '{size}'", file=sys.stderr)
        sys.exit(2)
if not os.path.isdir(out):
    print(f"bench_report: {out} is not a folder (the OUTDIR of scripts/bench/bench.sh)", file=sys.stderr)
    sys.exit(2)
rows = []

# nvidia-smi's clock-event reasons (a bit mask): the software power cap.
SW_POWER_CAP = 0x4
STEADY_STEPS = 20  # the steps whose time gpu_state looks at, at the end of a run
MIN_WINDOW_S = 0.5


def samples(row):
    """The fields of each line of gpu_ROW.csv, bench.sh's samples while the row ran (timestamp, utilization, SM
    clock, power draw, power limit, memory used, reasons); [] without the file."""
    try:
        return [[x.strip() for x in line.split(",")] for line in open(os.path.join(out, f"gpu_{row}.csv"))]
    except OSError:
        return []


def peak_memory_gb(row):
    """The most memory in use on the GPU in any sample of the row (MiB as nvidia-smi reports them), in GB:
    the peak of a run that does not report its own (llm.c); NaN without samples."""
    used = [int(f[5]) for f in samples(row) if len(f) == 7 and f[5].isdigit()]
    return max(used) * 2**20 / 1e9 if used else float("nan")


def gpu_state(row, step_ms):
    """Median SM clock (MHz) and power (W), and the share of samples clocked down by the power cap, over the
    samples of the row that show the GPU at least 90% busy within the last STEADY_STEPS steps' time (at least
    MIN_WINDOW_S) before the last busy one: the steady steps at the end of a run, not the first step's GEMM
    tuning or compilation, which are busy too but run at other clocks. {} without at least 3 such samples."""
    busy = []  # (seconds, SM MHz, W, reasons)
    for f in samples(row):
        try:
            if len(f) == 7 and int(f[1]) >= 90:
                t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                busy.append((t, float(f[2]), float(f[3]), int(f[6], 16)))
        except ValueError:  # [N/A] fields, a line cut when the sampler stopped
            continue
    if not busy:
        return {}
    window_s = max(STEADY_STEPS * step_ms / 1e3, MIN_WINDOW_S)
    steady = [b for b in busy if b[0] >= busy[-1][0] - window_s]
    if len(steady) < 3:
        return {}
    return {"sm_clock_mhz": statistics.median(b[1] for b in steady),
            "power_w": statistics.median(b[2] for b in steady),
            "power_capped": sum(1 for b in steady if b[3] & SW_POWER_CAP) / len(steady)}


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
                     "peak_mem_gb": s["peak_mem_gb"], **gpu_state(f"{size}_{p}", s["median_step_ms"])})
rows += [dict(r, peak_mem_gb=peak_memory_gb(f"llmc_{r['model']}"),
              **gpu_state(f"llmc_{r['model']}", r["median_step_ms"])) for r in read_jsonl("llmc.jsonl")]
# PyTorch's rows are named "pytorch VARIANT ..." (scripts/bench/bench_pytorch.py), sampled as pytorch_VARIANT
rows += [dict(r, model="1.5b", **gpu_state(f"pytorch_{r['name'].split()[1]}", r["median_step_ms"]))
         for r in read_jsonl("pytorch.jsonl")]
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
print("report formula: 6N x tokens / time; MFU of 989 dense BF16. SM MHz: median over the last steps (nvidia-smi);")
print("capped: the share of that time the power cap held the clock down.")
for size in sizes:
    sel = [r for r in rows if r["model"] == size]
    if not sel:
        continue
    base = {k: next((r for r in sel if r["name"].startswith(k)), None) for k in ("train_gpt bf16", "llm.c", "pytorch bf16")}
    print(f"\n{titles[size]}")
    hdr = (f"| {'run':40} | step ms | tokens/s | TFLOP/s | report formula | MFU | peak GB | vs train_gpt bf16 |"
           f" vs llm.c | vs PyTorch bf16 | SM MHz | capped |")
    print(hdr)
    print("|" + "|".join("-" * (len(c)) for c in hdr.split("|")[1:-1]) + "|")
    for r in sel:
        vs = [f"{b['median_step_ms'] / r['median_step_ms']:.2f}x" if b else "-" for b in base.values()]
        tf = r.get("tflops", float("nan"))
        clock = f"{r['sm_clock_mhz']:.0f}" if "sm_clock_mhz" in r else "-"
        capped = f"{100 * r['power_capped']:.0f}%" if "power_capped" in r else "-"
        print(f"| {r['name']:40} | {r['median_step_ms']:7.1f} | {r['tokens_per_s']:8.0f} | {tf:7.1f} | "
              f"{r.get('seed_formula_tflops', float('nan')):14.1f} | {100 * tf / 989:4.1f}% | {r['peak_mem_gb']:7.1f} | "
              f"{vs[0]:>17} | {vs[1]:>8} | {vs[2]:>15} | {clock:>6} | {capped:>6} |")
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
