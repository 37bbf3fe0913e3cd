#!/usr/bin/env bash
# scripts/recipes/README.md's table of measured tokens/s and projected wall times against their sources (part of
# `make test`; python3 only). One [PASS]/[FAIL]/[SKIP] line.
#   recipe_times_from_the_results: each row's step ms and tokens/s are README.md's Results rows (train_gpt at
#     that model and precision), and its projections are the recipe's tokens (steps x tokens per step, from
#     scripts/recipes/gpt2.sh) over those tokens/s, on one GPU and on eight (8x): a new `make bench` in the README
#     without the recipe's table following it fails here.
set -u
source "$(dirname "$0")/lib_host.sh" recipe_numbers python3  # ROOT, WORK, pass/fail/skip; python3 or skip

if python3 - "$ROOT/README.md" "$ROOT/scripts/recipes/README.md" "$ROOT/scripts/recipes/gpt2.sh" > "$WORK/out.txt" 2>&1 <<'PY'
import re, sys
readme, recipes, script = (open(p).read() for p in sys.argv[1:4])

def results(heading):
    """{precision: (step ms, tokens/s)} of train_gpt's rows in the README table under `heading`."""
    table = readme[readme.index(heading):].split("\n\n")[1]
    rows = {}
    for m in re.finditer(r"^\| train_gpt (bf16|fp8) \| ([\d.]+) \| ([\d,]+) \|", table, re.M):
        rows[m.group(1)] = (float(m.group(2)), int(m.group(3).replace(",", "")))
    return rows

measured = {"124m": results("GPT-2 124M, batch 16:"), "1558m": results("GPT-2 1.5B, batch 12:")}
tokens = {}
for size in measured:
    line = re.search(rf"^\s*{size}\b.*$", script, re.M).group(0)
    steps = int(re.search(r"DEFAULT_STEPS=(\d+)", line).group(1))
    tokens[size] = steps * int(re.search(r"TOTAL_BATCH=(\d+)", line).group(1))

def one_gpu(s):
    return f"{s / 86400:.1f} days" if s >= 48 * 3600 else f"{s / 3600:.1f} h"

def eight_gpus(s):
    h = s / 8 / 3600
    return f"~{h:.1f} h" if h < 1 else f"~{h:.0f} h"

wrong, seen = [], 0
for m in re.finditer(r"^\| (124m|1558m) \| (bf16|fp8) \| ([\d,]+) \(([\d.]+) ms[^)]*\) \| ([^|]+) \| ([^|]+) \|$",
                     recipes, re.M):
    size, precision, tok_s, ms, t1, t8 = m.groups()
    seen += 1
    want_ms, want_tok_s = measured[size][precision]
    secs = tokens[size] / want_tok_s
    got, want = (int(tok_s.replace(",", "")), float(ms), t1.strip(), t8.strip()), \
        (want_tok_s, want_ms, one_gpu(secs), eight_gpus(secs))
    if got != want:
        wrong.append(f"{size} {precision}: {got} (want {want})")
if seen != 4 or wrong:
    sys.exit(f"{seen} rows; {'; '.join(wrong)}")
print(f"124m fp8 {one_gpu(tokens['124m'] / measured['124m']['fp8'][1])}, 1558m fp8 "
      f"{one_gpu(tokens['1558m'] / measured['1558m']['fp8'][1])} on one H200")
PY
then
  pass "recipe_times_from_the_results ($(tail -1 "$WORK/out.txt"))"
else
  fail recipe_times_from_the_results "$(tail -1 "$WORK/out.txt")"
fi
