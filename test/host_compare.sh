#!/usr/bin/env bash
# scripts/compare.py on two made-up train.jsonl logs (part of `make test`; python3 only). One [PASS]/[FAIL]/
# [SKIP] line per case.
#   table: medians over the steps after the 3 warm-up steps (a 10x slower step 0 does not count), the ratio
#     to the first run.
#   png_by_default: with matplotlib, compare.png in the current directory, its path printed; --no-png writes
#     none. Without matplotlib: a one-line note on stderr, exit 0, no PNG (skipped).
#   throughput_without_warmup: the TFLOP/s and tokens/s curves start after the warm-up steps (the plotted
#     data, read back from the figure).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CMP="$ROOT/scripts/compare.py"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/host_compare_XXXXXX")
trap 'rm -rf "$WORK"' EXIT
source "$ROOT/test/lib_report.sh"  # pass, fail, skip
if ! command -v python3 >/dev/null 2>&1; then skip compare "python3 not found"; exit 0; fi

python3 - "$WORK" <<'PY'
import json, os, sys
for run, speed in (("bf16", 1.0), ("fp8", 1.25)):
    os.makedirs(f"{sys.argv[1]}/{run}")
    with open(f"{sys.argv[1]}/{run}/train.jsonl", "w") as f:
        for s in range(10):
            warm = s == 0
            f.write(json.dumps({"kind": "train", "step": s, "loss": 5 - 0.1 * s, "step_ms": 1000 if warm else 100 / speed,
                                "tokens_per_s": 1000 if warm else 10000 * speed, "tflops": 3 if warm else 300 * speed,
                                "mfu": 0.3, "peak_mem_gb": 10}) + "\n")
        f.write(json.dumps({"kind": "val", "step": 9, "val_loss": 4.2}) + "\n")
PY

cd "$WORK" || exit 1
if python3 "$CMP" bf16 fp8 --no-png > table.txt 2>&1 && grep -q '| 10 | 4.1000 | 4.2000 | 100.00 | 10,000 | 300.0 | 30.0% | 10.0 | 0 | 1.00x |' table.txt &&
   grep -q '| 80.00 | 12,500 | 375.0 | .* | 1.25x |' table.txt && [ ! -e compare.png ]; then
  pass "table (medians after the warm-up steps, 1.25x for the faster run; --no-png wrote no PNG)"
else
  fail table "$(tr '\n' ' ' < table.txt | head -c 400)"
fi

# --curves: the validation table (ratio to the first run) and the character plot, with every run's mark.
if python3 "$CMP" bf16 fp8 --no-png --curves > curves.txt 2>&1 && grep -q '^| 9 | 4.2000 | 4.2000 | 1.0000 |$' curves.txt &&
   grep -q '^loss (b = bf16, f = fp8; + where runs overlap; \* validation)$' curves.txt &&
   [ "$(grep -c '^ *[0-9.]* |' curves.txt)" = 18 ] && grep -q '^  5.000 |+' curves.txt; then
  pass "curves (validation table with ratios, an 18-row plot starting at the first loss)"
else
  fail curves "$(tr '\n' ' ' < curves.txt | head -c 600)"
fi

if ! python3 -c "import matplotlib" 2>/dev/null; then
  python3 "$CMP" bf16 fp8 > out.txt 2> err.txt
  rc=$?
  if [ $rc = 0 ] && [ ! -e compare.png ] && [ "$(wc -l < err.txt)" = 1 ] && grep -q "matplotlib is not installed" err.txt; then
    skip png_by_default "matplotlib is not installed (the note and exit 0 checked; pip install matplotlib)"
  else
    fail png_by_default "without matplotlib: status $rc, $(tr '\n' ' ' < err.txt)"
  fi
  skip throughput_without_warmup "matplotlib is not installed"
  exit 0
fi

if python3 "$CMP" bf16 fp8 > out.txt 2>&1 && grep -qx "wrote $WORK/compare.png" out.txt &&
   [ "$(head -c 8 compare.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
  pass "png_by_default (wrote compare.png, path printed)"
else
  fail png_by_default "$(tr '\n' ' ' < out.txt | head -c 300)"
fi

# The plotted data, read back: compare.plot() with savefig replaced by a look at the throughput axes' lines.
if python3 - "$ROOT/scripts" <<'PY' > lines.txt 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import matplotlib
matplotlib.use("Agg")
import matplotlib.figure
import compare
seen = []
def check(fig, *a, **k):
    for ax in fig.axes[1:]:
        for line in ax.get_lines():
            xs, ys = [int(x) for x in line.get_xdata()], [float(y) for y in line.get_ydata()]
            seen.append(ax.get_ylabel())
            if xs != list(range(3, 10)) or min(ys) < 300:
                sys.exit(f"{ax.get_ylabel()}: steps {xs}, values {ys}")
matplotlib.figure.Figure.savefig = check
compare.plot([compare.load(p) for p in ("bf16", "fp8")], "unused.png", 3)
if len(seen) != 4:
    sys.exit(f"expected 4 throughput lines, got {seen}")
PY
then
  pass "throughput_without_warmup (TFLOP/s and tokens/s from step 3 on, both runs)"
else
  fail throughput_without_warmup "$(tail -1 lines.txt)"
fi
