#!/usr/bin/env python3
"""The fingerprint of one training run, as text that two runs can be diffed on:
  - every step of train.jsonl ("train" and "skipped" records): loss, grad norm and learning rate as float32
    bits (the logger prints %.9g, which round-trips a float32 exactly) with the decimal next to them;
  - the final checkpoint (a safetensors file; the header parsed with json + struct): its progress metadata
    (step, AdamW updates, data position, FP8 calibration, model and recipe signatures; not the config, which
    holds paths, nor the CRCs) and a SHA-256 of every tensor's bytes (master weights, AdamW m and v, the FP8
    histories and scales), sorted by name.
Usage: fingerprint.py TRAIN_JSONL CHECKPOINT  (standard library only)"""
import concurrent.futures
import hashlib
import json
import math
import mmap
import os
import struct
import sys


def f32_bits(x):
    if x is None or not math.isfinite(x):
        return "non-finite"
    return "0x%08x" % struct.unpack("<I", struct.pack("<f", x))[0]


def step_lines(jsonl_path):
    lines = []
    with open(jsonl_path) as f:
        for raw in f:
            rec = json.loads(raw)
            kind = rec.get("kind")
            if kind not in ("train", "skipped"):
                continue
            fields = ["%s %d" % (kind, int(rec["step"]))]
            for key in ("loss", "grad_norm", "lr"):
                if key in rec:
                    v = rec[key]
                    fields.append("%s %s (%s)" % (key, f32_bits(v), "%.9g" % v if v is not None else "null"))
            lines.append(" ".join(fields))
    if not lines:
        sys.exit("fingerprint.py: no step records in %s" % jsonl_path)
    return lines


def checkpoint_lines(path):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            sys.exit("fingerprint.py: %s: shorter than a safetensors header" % path)
        (n,) = struct.unpack("<Q", f.read(8))
        if 8 + n > size:
            sys.exit("fingerprint.py: %s: header length %d runs past the end of the file" % (path, n))
        header = json.loads(f.read(n))
        meta = header.pop("__metadata__", {})
        base = 8 + n
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(mm)
        names = sorted(header)
        for name in names:
            begin, end = header[name]["data_offsets"]
            if not 0 <= begin <= end <= size - base:
                sys.exit("fingerprint.py: %s: tensor %s lies outside the file" % (path, name))

        def digest(name):  # hashlib releases the GIL on large buffers: one thread per tensor
            begin, end = header[name]["data_offsets"]
            return hashlib.sha256(view[base + begin : base + end]).hexdigest()

        with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1)) as pool:
            digests = list(pool.map(digest, names))
        view.release()
        mm.close()
    lines = ["meta %s %s" % (k, meta[k]) for k in sorted(meta) if k != "config" and not k.startswith("crc32.")]
    for name, d in zip(names, digests):
        t = header[name]
        shape = "[" + ",".join(str(s) for s in t["shape"]) + "]"
        lines.append("tensor %s %s %s sha256 %s" % (name, t["dtype"], shape, d))
    return lines


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for line in step_lines(sys.argv[1]) + checkpoint_lines(sys.argv[2]):
        print(line)


if __name__ == "__main__":
    main()
