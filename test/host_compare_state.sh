#!/usr/bin/env bash
# scripts/check/compare_state.py (the state comparison of the data-parallel tests) on made-up checkpoints (part of
# `make test`; python3 only, numpy where installed). One [PASS]/[FAIL]/[SKIP] line per case.
#   exact: the same tensors and progress compare equal; one float changed by one ulp, or another step in the
#     metadata, do not, and the line names the tensor.
#   tolerance_of_the_change: with --base, a run whose change from the base is 1% off its twin's passes at 2%
#     and fails at 0.5%.
#   mismatched_files: a missing tensor or another shape is a failure (status 1), an unknown group a usage error.
set -u
source "$(dirname "$0")/lib_host.sh" compare_state python3  # ROOT, WORK, pass/fail/skip; python3 or skip
CMP="$ROOT/scripts/check/compare_state.py"

# base, b = base + change, a = base + 1.01 x change, c = b with one float one ulp up, d = b at another step,
# e = b without one tensor
python3 - "$WORK" << 'PY'
import json, random, struct, sys
def write(path, tensors, step=4):
    header, blob = {"__metadata__": {"step": str(step), "opt_step": str(step)}}, b""
    for name, vals in tensors.items():
        raw = struct.pack("<%df" % len(vals), *vals)
        header[name] = {"dtype": "F32", "shape": [len(vals)], "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    h = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + blob)
rng = random.Random(1)
base = {"master.w": [rng.gauss(0, 0.02) for _ in range(4000)], "master.b": [0.0] * 64,
        "adam_m.w": [0.0] * 4000}
change = {k: [rng.gauss(0, 1e-3) for _ in v] for k, v in base.items()}
b = {k: [x + d for x, d in zip(base[k], change[k])] for k in base}
a = {k: [x + 1.01 * d for x, d in zip(base[k], change[k])] for k in base}
c = {k: list(v) for k, v in b.items()}
c["adam_m.w"][7] = struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", c["adam_m.w"][7]))[0] + 1))[0]
e = {k: v for k, v in b.items() if k != "master.b"}
d = sys.argv[1]
write(f"{d}/base", base); write(f"{d}/a", a); write(f"{d}/b", b); write(f"{d}/c", c); write(f"{d}/d", b, step=5)
write(f"{d}/e", e)
PY

out_eq=$(python3 "$CMP" "$WORK/b" "$WORK/b" --exact) r_eq=$?
out_ulp=$(python3 "$CMP" "$WORK/b" "$WORK/c" --exact) r_ulp=$?
out_step=$(python3 "$CMP" "$WORK/b" "$WORK/d" --exact) r_step=$?
if [ $r_eq = 0 ] && [ $r_ulp = 1 ] && [[ "$out_ulp" == *"adam_m.w"* ]] && [ $r_step = 1 ] && [[ "$out_step" == *"step"* ]]; then
  pass "exact (equal: $out_eq; one ulp: $out_ulp; another step: $out_step)"
else
  fail exact "statuses $r_eq/$r_ulp/$r_step: $out_eq | $out_ulp | $out_step"
fi

out_loose=$(python3 "$CMP" "$WORK/a" "$WORK/b" --base "$WORK/base" --tol master=2e-2,adam_m=2e-2) r_loose=$?
out_tight=$(python3 "$CMP" "$WORK/a" "$WORK/b" --base "$WORK/base" --tol master=5e-3,adam_m=2e-2) r_tight=$?
if [ $r_loose = 0 ] && [ $r_tight = 1 ] && [[ "$out_tight" == *"master"*"<-- off"* ]]; then
  pass "tolerance_of_the_change (1% off passes at 2%: $(tr '\n' ' ' <<< "$out_loose"); fails at 0.5%)"
else
  fail tolerance_of_the_change "statuses $r_loose/$r_tight: $out_loose | $out_tight"
fi

out_missing=$(python3 "$CMP" "$WORK/b" "$WORK/e" --exact) r_missing=$?
python3 "$CMP" "$WORK/b" "$WORK/b" --tol weights=1 > /dev/null 2>&1
r_group=$?
if [ $r_missing = 1 ] && [[ "$out_missing" == *"master.b"* ]] && [ $r_group != 0 ] && [ $r_group != 1 ]; then
  pass "mismatched_files ($out_missing; an unknown group: status $r_group)"
else
  fail mismatched_files "statuses $r_missing/$r_group: $out_missing"
fi
