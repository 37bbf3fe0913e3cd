#!/usr/bin/env python3
"""Compares the training state of two train_gpt checkpoints (llmc/formats/checkpoint.h), tensor by tensor.

  compare_state.py A.safetensors B.safetensors --exact
      every tensor bitwise equal (and the progress metadata: step, optimizer updates, data position)
  compare_state.py A.safetensors B.safetensors --tol master=2e-3,adam_m=2e-2 [--base START.safetensors]
      per group (master weights, AdamW m, AdamW v, the FP8 amax history and scales: all the group's tensors as
      one vector), the relative L2 difference ||a - b|| / ||b||, or with --base (the state both runs started
      from) the difference of what the two runs changed, ||a - b|| / ||b - base||, within the group's tolerance

The group as a whole, not tensor by tensor: a tensor that training barely moves (the attention's key bias,
whose gradient is zero up to rounding) differs between two runs by as much as it moved. Prints one line per
group (the difference, and the tensor holding most of it) and exits 1 when a group is off (or a tensor is
missing, or shapes differ), 2 on bad usage. Needs numpy for --tol."""
import argparse
import array
import json
import math
import struct
import sys

GROUPS = ("master", "adam_m", "adam_v", "fp8")
NUMPY_DTYPES = {"F32": "<f4"}  # what checkpoints hold
PROGRESS = ("step", "opt_step", "train_data.a", "train_data.b", "fp8.calibrating")


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        sys.exit("compare_state.py: %s: shorter than a safetensors header" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        tensors[name] = (t["dtype"], tuple(t["shape"]), blob[8 + n + begin : 8 + n + end])
    return meta, tensors


def group_of(name):
    head = name.split(".", 1)[0]
    return head if head in GROUPS else "other"


def parse_tol(spec):
    tol = {}
    for item in spec.split(","):
        key, _, value = item.partition("=")
        if key not in GROUPS:
            print("compare_state.py: --tol: unknown group '%s' (groups: %s)" % (key, ", ".join(GROUPS)), file=sys.stderr)
            sys.exit(2)
        tol[key] = float(value)
    return tol


def sums_of_squares(ta, tb, tbase):
    """sum((a - b)^2) and sum((b - base)^2) (sum(b^2) without a base) of one tensor, in float64: numpy where
    it is installed, else the standard library (F32 tensors only; slow, for small files)."""
    try:
        import numpy as np
    except ImportError:
        np = None
    if ta[0] not in NUMPY_DTYPES:
        sys.exit("compare_state.py: %s tensors are not compared numerically (F32 only)" % ta[0])
    if np is not None:
        x, y = (np.frombuffer(t[2], dtype=NUMPY_DTYPES[t[0]]) for t in (ta, tb))
        r = y - np.frombuffer(tbase[2], dtype=NUMPY_DTYPES[tbase[0]]) if tbase else y
        d = (x - y).astype(np.float64)  # the differences in float64; F32 tensors subtract exactly enough
        r = r.astype(np.float64)
        return float(np.dot(d, d)), float(np.dot(r, r))
    x, y = array.array("f", ta[2]), array.array("f", tb[2])
    z = array.array("f", tbase[2]) if tbase else None
    d2 = math.fsum((p - q) ** 2 for p, q in zip(x, y))
    r2 = math.fsum((q - w) ** 2 for q, w in zip(y, z)) if z else math.fsum(q * q for q in y)
    return d2, r2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--exact", action="store_true", help="every tensor bitwise equal")
    mode.add_argument("--tol", help="GROUP=REL,... relative L2 tolerance per group")
    ap.add_argument("--base", help="the checkpoint both runs started from (with --tol)")
    args = ap.parse_args()
    meta_a, a = read(args.a)
    meta_b, b = read(args.b)
    base = read(args.base)[1] if args.base else None
    ok = True
    if sorted(a) != sorted(b):
        print("tensors differ: only in A %s, only in B %s" % (sorted(set(a) - set(b))[:5], sorted(set(b) - set(a))[:5]))
        return 1
    for name in a:
        if a[name][:2] != b[name][:2]:
            print("%s: dtype/shape %s vs %s" % (name, a[name][:2], b[name][:2]))
            ok = False
    if not ok:
        return 1
    if args.exact:
        differ = sorted(n for n in a if a[n][2] != b[n][2])
        meta_differ = [k for k in PROGRESS if meta_a.get(k) != meta_b.get(k)]
        print("%d tensors, %d differ%s; progress metadata %s" % (
            len(a), len(differ), (" (first: %s)" % ", ".join(differ[:3])) if differ else "",
            "equal" if not meta_differ else "differs in " + ", ".join(meta_differ)))
        return 0 if not differ and not meta_differ else 1
    tol = parse_tol(args.tol)
    diff2, ref2, largest = {}, {}, {}  # per group: sum of squares of a - b and of the reference; top tensor
    for name in sorted(a):
        g = group_of(name)
        if g not in tol:
            continue
        d2, r2 = sums_of_squares(a[name], b[name], base.get(name) if base is not None else None)
        diff2[g] = diff2.get(g, 0.0) + d2
        ref2[g] = ref2.get(g, 0.0) + r2
        if d2 > largest.get(g, (-1.0, ""))[0]:
            largest[g] = (d2, name)
    for g in GROUPS:
        if g not in tol:
            continue
        if g not in diff2:
            print("%-7s no tensors" % g)
            continue
        rel = (diff2[g] / ref2[g]) ** 0.5 if ref2[g] > 0 else (0.0 if diff2[g] == 0 else float("inf"))
        if not math.isfinite(rel):
            rel = float("inf")
        good = rel <= tol[g]
        ok &= good
        share = diff2[g] and largest[g][0] / diff2[g]
        print("%-7s rel diff %.3g%s (tolerance %g; %.0f%% of it in %s)%s" % (
            g, rel, " of the change" if base is not None else "", tol[g], 100 * share, largest[g][1],
            "" if good else "  <-- off"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
