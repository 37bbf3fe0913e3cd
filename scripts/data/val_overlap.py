#!/usr/bin/env python3
"""How much of a validation split the training split holds verbatim: the share of the validation tokens' windows
of W tokens (back to back, W apart) that also occur somewhere in the training tokens (at any offset). A loss
check compares runs by their validation loss; where the training text repeats the validation text verbatim
(license texts, boilerplate), that loss measures memorization as well as language. The first loss-check data
(local documents without --dedup) had 28-33% at W = 32; scripts/data/cut_documents.py --dedup brought it to 7%.

Usage: val_overlap.py TRAIN_GLOB VAL_GLOB [--window W] [--max-train-tokens N]
  Shards of scripts/data/prepare_data.py (llm.c format: a 256-int32 header, magic 20240520, version 1, then
  uint16 tokens), in sorted order; --max-train-tokens counts only the first N training tokens (the ones a
  run of N / (batch x seq) steps reads). Prints one line:
    val_overlap: K of M validation windows of W tokens occur in the first N training tokens: P%
Errors are one line on stderr, the last one, with exit status 1 (2 for bad flags). Needs numpy.
"""
import argparse
import glob
import sys

import numpy as np

MAGIC, VERSION, HEADER_INTS = 20240520, 1, 256


def die(msg):
    print(f"val_overlap: {msg}", file=sys.stderr)
    sys.exit(1)


def tokens(pattern, limit=None):
    paths = sorted(glob.glob(pattern))
    if not paths:
        die(f"no shard matches {pattern}")
    parts, total = [], 0
    for p in paths:
        header = np.fromfile(p, dtype="<i4", count=HEADER_INTS)
        if len(header) < HEADER_INTS or header[0] != MAGIC or header[1] != VERSION:
            die(f"{p}: not a token shard (magic {MAGIC}, version {VERSION})")
        t = np.fromfile(p, dtype="<u2", offset=4 * HEADER_INTS)
        if len(t) != header[2]:
            die(f"{p}: the header says {header[2]} tokens, the file holds {len(t)}")
        parts.append(t)
        total += len(t)
        if limit is not None and total >= limit:
            break
    t = np.concatenate(parts)
    return t[:limit] if limit is not None else t


def window_hashes(t, w, stride):
    """A 64-bit polynomial hash of every window t[i:i+w] for i = 0, stride, 2 stride, ..."""
    n = (len(t) - w) // stride + 1
    h = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):  # arithmetic modulo 2^64 is the point
        for j in range(w):
            h = h * np.uint64(0x100000001B3) + t[j:j + (n - 1) * stride + 1:stride].astype(np.uint64) + np.uint64(1)
    return h


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("train")
    p.add_argument("val")
    p.add_argument("--window", type=int, default=32, help="tokens a window (default 32)")
    p.add_argument("--max-train-tokens", type=int, default=None, help="only the first N training tokens")
    a = p.parse_args()
    if a.window < 1:
        die(f"--window must be at least 1, got {a.window}")
    if a.max_train_tokens is not None and a.max_train_tokens < a.window:
        die(f"--max-train-tokens must be at least the window ({a.window}), got {a.max_train_tokens}")
    train, val = tokens(a.train, a.max_train_tokens), tokens(a.val)
    if len(val) < a.window or len(train) < a.window:
        die(f"fewer tokens than one window of {a.window} (train {len(train)}, val {len(val)})")
    seen = np.isin(window_hashes(val, a.window, a.window), window_hashes(train, a.window, 1))
    print(f"val_overlap: {int(seen.sum()):,} of {len(seen):,} validation windows of {a.window} tokens occur in the "
          f"first {len(train):,} training tokens: {100 * seen.mean():.1f}%")


if __name__ == "__main__":
    main()
