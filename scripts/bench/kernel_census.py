#!/usr/bin/env python3
"""The GPU time of every kernel in the last training step of an Nsight Compute log, grouped by kernel.

Usage: kernel_census.py NCU_CSV [--json]   (scripts/bench/kernel_census.sh writes NCU_CSV)

NCU_CSV is what `ncu --metrics gpu__time_duration.sum --csv --log-file NCU_CSV` writes for a train_gpt run; its
"==PROF==" and warning lines are skipped. The last step is every kernel from the last launch of the embedding
kernel (encoder_forward_kernel, the first kernel of each step; so one micro-step a step) to the end of the log.
Kernels group by name without their arguments; cuBLASLt's GEMMs (nvjet_*, cutlass*, the split-K reduce) as one
group, cuDNN's kernels as "cuDNN: <name>". Prints a table, largest first, and the sum; --json prints
{"kernels": launches, "total_ms": ..., "groups": {group: {"ms": ..., "launches": ...}}} instead.
"""
import csv
import json
import re
import sys

STEP_MARKER = "encoder_forward_kernel"
TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "s": 1e3,
         "second": 1e3}


def group_of(name):
    """The group a kernel's demangled name belongs to."""
    base = re.sub(r"^void ", "", name).replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    base = base.split("(")[0]
    if base.startswith(("nvjet_", "cutlass")) or base.startswith("cublasLt::"):
        return "cuBLASLt GEMMs"
    if "cudnn" in base or "sdpa" in base:
        return "cuDNN: " + base
    return base


def fail(msg):
    print(f"kernel_census: {msg}")
    sys.exit(1)


def read_rows(path):
    """(kernel name, ms) per launch, in launch order."""
    try:
        lines = [line for line in open(path, errors="replace") if line.startswith('"')]
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    rows = []
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = r.get("Metric Unit", "")
        if unit not in TO_MS:
            fail(f"{path}: unknown time unit '{unit}' of {r.get('Kernel Name', '?')[:60]}")
        try:
            rows.append((r["Kernel Name"], float(r["Metric Value"].replace(",", "")) * TO_MS[unit]))
        except (KeyError, ValueError):
            fail(f"{path}: a gpu__time_duration.sum row without a kernel name or a number")
    return rows


def main(argv):
    args = [a for a in argv if a != "--json"]
    if len(args) != 1:
        print("usage: kernel_census.py NCU_CSV [--json]")
        sys.exit(2)
    rows = read_rows(args[0])
    if not rows:
        fail(f"{args[0]} has no gpu__time_duration.sum rows (an `ncu --csv` log of that metric expected)")
    starts = [i for i, (name, _) in enumerate(rows) if STEP_MARKER in name]
    if not starts:
        fail(f"{args[0]} has no {STEP_MARKER}: no training step to cut out")
    step = rows[starts[-1]:]
    groups = {}
    for name, ms in step:
        g = groups.setdefault(group_of(name), {"ms": 0.0, "launches": 0})
        g["ms"] += ms
        g["launches"] += 1
    total = sum(g["ms"] for g in groups.values())
    if "--json" in argv:
        print(json.dumps({"kernels": len(step), "total_ms": total, "groups": groups}))
        return
    print(f"last step: {len(step)} kernels, {total:.3f} ms of GPU time (one at a time, as Nsight Compute runs them)")
    print(f"{'ms':>9} {'share':>6} {'launches':>8}  kernel")
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["ms"]):
        print(f"{g['ms']:9.3f} {100 * g['ms'] / total:5.1f}% {g['launches']:8d}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
