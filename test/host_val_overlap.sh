#!/usr/bin/env bash
# scripts/data/val_overlap.py (part of `make test`; skipped without numpy) on made-up shards: a validation split
# of 12 windows copied from the training tokens at random offsets and 8 random ones gives 12 of 20 (random
# 16-token windows of a 50,000-id vocabulary do not meet by chance); --max-train-tokens before the copied region
# finds none; a shard of the wrong magic and a glob matching nothing are one-line errors. One [PASS]/[FAIL] line
# per case.
set -u
source "$(dirname "$0")/lib_host.sh" val_overlap python3  # ROOT, WORK, pass/fail/skip
python3 -c 'import numpy' 2> /dev/null || { skip val_overlap "numpy not installed"; exit 0; }
tool="$ROOT/scripts/data/val_overlap.py"

python3 - "$WORK" <<'PY'
import numpy as np, sys
r = np.random.default_rng(5)
def shard(path, t, magic=20240520):
    header = np.zeros(256, dtype="<i4")
    header[:3] = magic, 1, len(t)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(t.astype("<u2").tobytes())
train = r.integers(0, 50000, 100_000)
copied = [train[o:o + 16] for o in r.integers(60_000, 100_000 - 16, 12)]  # from the second part only
fresh = [r.integers(0, 50000, 16) for _ in range(8)]
val = np.concatenate([w for pair in zip(copied, fresh) for w in pair] + copied[8:])
shard(f"{sys.argv[1]}/t_train_000000.bin", train[:50_000])  # two shards, read in order
shard(f"{sys.argv[1]}/t_train_000001.bin", train[50_000:])
shard(f"{sys.argv[1]}/t_val_000000.bin", val)
shard(f"{sys.argv[1]}/bad_val.bin", val, magic=1234)
PY
run() { python3 "$tool" "$WORK/t_train_*.bin" "$@" 2>&1; }
out=$(run "$WORK/t_val_*.bin" --window 16)
want="val_overlap: 12 of 20 validation windows of 16 tokens occur in the first 100,000 training tokens: 60.0%"
[ "$out" = "$want" ] && pass "copied_windows_found (12 of 20)" || fail copied_windows_found "got '$out', want '$want'"

out=$(run "$WORK/t_val_*.bin" --window 16 --max-train-tokens 60000)
want="val_overlap: 0 of 20 validation windows of 16 tokens occur in the first 60,000 training tokens: 0.0%"
[ "$out" = "$want" ] && pass "max_train_tokens (the copies lie beyond it: 0 of 20)" || fail max_train_tokens "got '$out'"

why=""
out=$(run "$WORK/bad_val.bin"); rc=$?
[ $rc = 1 ] && [ "$out" = "val_overlap: $WORK/bad_val.bin: not a token shard (magic 20240520, version 1)" ] || why="$why [magic: $rc '$out']"
out=$(run "$WORK/none_*.bin"); rc=$?
[ $rc = 1 ] && [ "$out" = "val_overlap: no shard matches $WORK/none_*.bin" ] || why="$why [no match: $rc '$out']"
[ -z "$why" ] && pass "errors_one_line (wrong magic, no shard)" || fail errors_one_line "$why"
