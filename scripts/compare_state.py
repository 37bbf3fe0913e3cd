#!/usr/bin/env python3
"""Compares the training state of two train_gpt checkpoints (llmc/formats/checkpoint.h), tensor by tensor.

  compare_state.py A.safetensors B.safetensors --exact
      every tensor bitwise equal (and the progress metadata: step, optimizer updates, data position)
  compare_state.py A.safetensors B.safetensors --tol master=2e-3,adam_m=2e-2,adam_v=2e-2,fp8=1e-2
      per group (master weights, AdamW m, AdamW v, the FP8 amax history and scales), the largest relative L2
      difference over its tensors, ||a - b|| / max(||a||, ||b||), within the group's tolerance

Prints one line per group (largest difference and the tensor it is in) and exits 1 when a group is off (or a
tensor is missing, or shapes differ), 2 on bad usage. Needs numpy for --tol."""
import argparse
import json
import struct
import sys

GROUPS = ("master", "adam_m", "adam_v", "fp8")
NUMPY_DTYPES = {"F32": "<f4", "BF16": "<u2", "F16": "<f2", "I32": "<i4", "I64": "<i8", "U8": "u1"}
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
            sys.exit("compare_state.py: --tol: unknown group '%s' (groups: %s)" % (key, ", ".join(GROUPS)))
        tol[key] = float(value)
    return tol


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--exact", action="store_true", help="every tensor bitwise equal")
    mode.add_argument("--tol", help="GROUP=REL,... relative L2 tolerance per group")
    args = ap.parse_args()
    meta_a, a = read(args.a)
    meta_b, b = read(args.b)
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
    import numpy as np

    tol = parse_tol(args.tol)
    worst = {}
    for name in sorted(a):
        g = group_of(name)
        if g not in tol:
            continue
        dtype, _, bytes_a = a[name]
        x = np.frombuffer(bytes_a, dtype=NUMPY_DTYPES[dtype]).astype(np.float64)
        y = np.frombuffer(b[name][2], dtype=NUMPY_DTYPES[dtype]).astype(np.float64)
        scale = max(np.linalg.norm(x), np.linalg.norm(y))
        rel = float(np.linalg.norm(x - y) / scale) if scale > 0 else 0.0
        if not np.isfinite(rel):
            rel = float("inf")
        if g not in worst or rel > worst[g][0]:
            worst[g] = (rel, name)
    for g in GROUPS:
        if g not in tol:
            continue
        if g not in worst:
            print("%-7s no tensors" % g)
            continue
        rel, name = worst[g]
        good = rel <= tol[g]
        ok &= good
        print("%-7s max rel diff %.3g in %s (tolerance %g)%s" % (g, rel, name, tol[g], "" if good else "  <-- off"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
