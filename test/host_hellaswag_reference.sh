#!/usr/bin/env bash
# scripts/check/hellaswag_reference.py (the GPU test's reference, test/gpu_hellaswag.sh) against the trainer's own
# scorer, without a GPU or torch: both score the same HellaSwag file with the same made-up model (a token's
# loss from its input, its target and its position: host_hellaswag_eval.cpp's fake_loss), the trainer's
# side through llmc/run/hellaswag_eval and the dump it writes (build/test/host_hellaswag_eval --fake-dump),
# the script's through its own rows. Then the comparison must fail for each bug it exists to catch.
# One [PASS]/[FAIL]/[SKIP] line per case (part of `make test`; needs python3).
set -u
source "$(dirname "$0")/lib_host.sh" hellaswag_reference python3  # ROOT, WORK, pass/fail/skip; python3 or skip
EVAL=${HELLASWAG_EVAL:-$ROOT/build/test/host_hellaswag_eval}
if [ ! -x "$EVAL" ]; then skip hellaswag_reference "$EVAL not built (make all)"; exit 0; fi

python3 "$ROOT/test/hellaswag_fixture.py" "$WORK/hs.jsonl" 40 7 &&
  python3 "$ROOT/scripts/data/prepare_hellaswag.py" --tokenizer bytes --input "$WORK/hs.jsonl" --out "$WORK/hs.bin" >/dev/null &&
  "$EVAL" --fake-dump "$WORK/hs.bin" 8 64 "$WORK/dump.txt" > "$WORK/eval.txt" ||
  { fail hellaswag_reference_setup "$(tail -1 "$WORK/eval.txt" 2>/dev/null)"; exit 1; }

PYTHONPATH="$ROOT/scripts/check" python3 - "$WORK" <<'PY'
import copy
import sys

import hellaswag_reference as hr

work = sys.argv[1]
examples = hr.read_set(f"{work}/hs.bin")
dump = hr.read_dump(f"{work}/dump.txt")
words = open(f"{work}/eval.txt").read().split()  # "40 examples, acc A acc_norm B"
acc, acc_norm = float(words[words.index("acc") + 1]), float(words[words.index("acc_norm") + 1])


def fake_loss(inp, tgt, t):  # host_hellaswag_eval.cpp's fake_loss, exactly (multiples of 1/8)
    return ((inp * 31 + tgt * 17 + t * 7) % 97) / 8.0 + 0.125


def fake_model(inputs, targets):
    return [fake_loss(i, g, t) for t, (i, g) in enumerate(zip(inputs, targets))]


def check(name, failures, expect_fail, needle=""):
    hit = [f for f in failures if needle in f]
    if expect_fail and hit:
        print(f"[PASS] {name} ({len(hit)} failures, e.g. '{hit[0][:100]}')")
    elif not expect_fail and not failures:
        print(f"[PASS] {name}")
    else:
        print(f"[FAIL] {name}: " + (f"{failures[:2]}" if failures else "no failure reported"))


ref = hr.reference_scores(examples, fake_model)
reported = dict(acc=acc, acc_norm=acc_norm, examples=len(examples))
# Sums of multiples of 1/8 are exact on both sides; means differ by the dump's %.9g only.
exact = dict(rel=1e-9, abs_tok=0.0, reported=reported)
f, s = hr.compare(examples, dump, ref, **exact)
check("reference_matches_the_trainer_scorer", f, False)
print(f"  ({s['decided_sum']} and {s['decided_mean']} of {len(examples)} choices decided; acc {acc}, "
      f"acc_norm {acc_norm})")
f, _ = hr.compare(examples, dump, ref, reported=reported)  # the GPU test's bf16 tolerance
check("reference_matches_with_the_bf16_tolerance", f, False)

bad = copy.deepcopy(dump)
bad[3] = ((bad[3][0] + 1) % 4,) + bad[3][1:]
check("detects_a_wrong_label", hr.compare(examples, bad, ref, **exact)[0], True, "label")

bad = copy.deepcopy(dump)
label, sums, means, cs, cm = bad[5]
bad[5] = (label, sums, means, (cs + 1) % 4, cm)
check("detects_a_choice_that_is_not_the_lowest", hr.compare(examples, bad, ref, **exact)[0], True, "not the dump's lowest")

# A scored range shifted by one position, or one token short, on one side: the losses disagree, with the
# GPU test's tolerance too.
rows_of = hr.rows_of
for name, shift in (("detects_a_range_shifted_by_one", lambda r: range(r.start - 1, r.stop - 1)),
                    ("detects_a_range_one_short", lambda r: range(r.start, r.stop - 1))):
    hr.rows_of = lambda c, e: (lambda i, t, r: (i, t, shift(r)))(*rows_of(c, e))
    shifted = hr.reference_scores(examples, fake_model)
    hr.rows_of = rows_of
    check(name, hr.compare(examples, dump, shifted)[0], True, "reference")

# Every loss a little off: within the tolerance passes, past it fails.
for name, factor, fails in (("losses_off_by_half_the_tolerance_pass", 1 + hr.REL_TOL / 2, False),
                            ("losses_off_by_twice_the_tolerance_fail", 1 + 2 * hr.REL_TOL, True)):
    scaled = {i: (v[0], [x * factor for x in v[1]], [x * factor for x in v[2]], v[3], v[4]) for i, v in dump.items()}
    check(name, hr.compare(examples, scaled, ref)[0], fails, "tolerance")

f, _ = hr.compare(examples, dump, ref, rel=100.0)
check("too_few_decided_examples_fail", f, True, "cannot tell choices apart")
f, _ = hr.compare(examples, dump, ref, reported=dict(acc=acc + 1 / 40, acc_norm=None, examples=None))
check("a_reported_acc_not_the_dumps_fails", f, True, "the trainer reports acc")
missing = dict(dump)
del missing[7]
check("a_missing_example_fails", hr.compare(examples, missing, ref)[0], True, "lacks examples [7]")
PY

# usage errors: one line, exit 2
out=$(python3 "$ROOT/scripts/check/hellaswag_reference.py" --model x --data "$WORK/nope.bin" --dump "$WORK/dump.txt" 2>&1); rc=$?
if [ $rc = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && [[ "$out" == "error: cannot read"* ]]; then
  pass reference_usage_error_is_one_line
else fail reference_usage_error_is_one_line "exit $rc: $out"; fi
