#!/usr/bin/env bash
# scripts/compare.py on two made-up train.jsonl logs (part of `make test`; python3 only). One [PASS]/[FAIL]/
# [SKIP] line per case.
#   table: medians over the steps after the 3 warm-up steps (a 10x slower step 0 does not count), the ratio
#     to the first run.
#   unique_labels: runs in folders of the same name get the shortest distinct path; with config.json, model
#     and precision, plus the settings that differ between runs of the same model and precision.
#   bad_logs_one_line: a non-UTF-8 log, a train record without loss, bad JSON (with its column), a missing
#     file: one line "compare: error: ..." and status 2; a diverged run (null val_loss) is compared (nan).
#   figure_data: what the figure draws, without matplotlib: the loss ratio to the first run, smoothed (a 0.3%
#     gap reads 1.003 through per-step noise 3x larger), validation ratios, tokens/s after the warm-up steps, the
#     speedup for the title, and no TFLOP/s panel.
#   png_by_default: with matplotlib, compare.png in the current directory, its path printed; --no-png writes
#     none. Without matplotlib: a one-line note on stderr, exit 0, no PNG (skipped).
#   figure_panels: with matplotlib, the drawn figure: log-scale loss, the ratio panel, tokens/s from step 3
#     on with the speedup in the title.
#   watch: --watch over a growing log and one not there yet (below).
#   titles_inside_the_figure: with matplotlib, every panel's title (long labels from config.json) is drawn inside
#     the figure and clear of the next one's (the third used to run off the right edge); one run: two panels.
set -u
source "$(dirname "$0")/lib_host.sh" compare python3  # ROOT, WORK, pass/fail/skip; python3 or skip
CMP="$ROOT/scripts/compare.py"

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

# Labels: folders of the same name (the default --log-dir logs in two places), then config.json.
mkdir -p a/logs b/logs
cp bf16/train.jsonl a/logs/ && cp fp8/train.jsonl b/logs/
python3 "$CMP" a/logs b/logs --no-png --curves > same.txt 2>&1
printf '{"model": "124m", "precision": "bf16", "recompute": 0, "log_dir": "bf16"}\n' > bf16/config.json
printf '{"model": "124m", "precision": "fp8", "recompute": 2, "log_dir": "fp8"}\n' > fp8/config.json
mkdir -p fp8r0 && cp fp8/train.jsonl fp8r0/ &&
  printf '{"model": "124m", "precision": "fp8", "recompute": 0, "log_dir": "fp8r0"}\n' > fp8r0/config.json
python3 "$CMP" bf16 fp8 fp8r0 --no-png > configs.txt 2>&1
if grep -q '^| a/logs | 10 |' same.txt && grep -q '^| b/logs | 10 |' same.txt && grep -q '^loss (a = a/logs, b = b/logs;' same.txt &&
   grep -q '^| 124m bf16 | 10 |' configs.txt && grep -q '^| 124m fp8 recompute=2 | 10 |' configs.txt &&
   grep -q '^| 124m fp8 recompute=0 | 10 |' configs.txt; then
  pass "unique_labels (a/logs and b/logs; 124m bf16, 124m fp8 recompute=2 / recompute=0 from config.json)"
else
  fail unique_labels "$(cut -c1-30 same.txt configs.txt | tr '\n' ' ' | head -c 500)"
fi
rm bf16/config.json fp8/config.json

# Bad logs: one line each, status 2; a diverged run compares.
printf '{"kind": "train", "step": 0, "loss": 5}\n\xff\xfe\n' > latin.jsonl
printf '{"kind": "train", "step": 0, "step_ms": 5}\n' > noloss.jsonl
printf '{"kind": "train", "step": 0, "loss": 5,}\n' > badjson.jsonl
why=""
bad() {  # file want
  python3 "$CMP" bf16 "$1" --no-png > bad.out 2> bad.err
  local rc=$?
  [ $rc = 2 ] && [ "$(wc -l < bad.err)" = 1 ] && grep -qF "compare: error: $2" bad.err || why="$why $1 (status $rc): $(head -c 200 bad.err);"
}
bad latin.jsonl "latin.jsonl:2: not UTF-8 (byte 1 of the line); is it a train.jsonl?"
bad noloss.jsonl "noloss.jsonl:1: a train record without 'loss'"
bad badjson.jsonl "badjson.jsonl:1: not JSON (Expecting property name enclosed in double quotes at column 40)"
bad missing.jsonl "missing.jsonl: No such file or directory"
mkdir -p diverged && { head -5 fp8/train.jsonl; printf '{"kind": "val", "step": 4, "val_loss": null}\n'; } > diverged/train.jsonl
python3 "$CMP" bf16 diverged --no-png --curves > div.txt 2>&1 && grep -q '^| diverged | 5 | 4.6000 | nan |' div.txt || why="$why diverged: $(tail -2 div.txt);"
if [ -z "$why" ]; then pass "bad_logs_one_line (non-UTF-8, no loss, bad JSON with its column, missing file; a diverged run compares)"; else fail bad_logs_one_line "$why"; fi

# The figure's data: run b's loss is run a's x 1.003 with +-1% noise per step (smoothed away), 1.25x faster.
if python3 - "$ROOT/scripts" <<'PY' > data.txt 2>&1
import random, sys
sys.path.insert(0, sys.argv[1])
import compare
rng = random.Random(1)
def run(scale, speed, noise):
    train = [{"step": float(s), "loss": (10 - s / 50) * scale * (1 + noise * rng.uniform(-1, 1)), "step_ms": 1.0,
              "tokens_per_s": (100.0 if s == 0 else 1000.0 * speed), "tflops": 1.0, "mfu": 0.1, "peak_mem_gb": 1.0}
             for s in range(400)]
    val = [{"step": float(s), "val_loss": (10 - s / 50) * scale} for s in (0, 200, 399)]
    return "x", train, val, 0
d = compare.figure_data([run(1.0, 1.0, 0.0), run(1.003, 1.25, 0.01)], ["bf16", "fp8"], 3, 200)
(label, steps, ratios, vsteps, vratios), = d["ratio"]
tail = ratios[len(ratios) // 2:]  # once the moving average is full
checks = {
    "panels": sorted(d) == ["loss", "ratio", "speed", "speedups"],
    "smoothed ratio ~1.003": label == "fp8" and all(abs(r - 1.003) < 0.0015 for r in tail),
    "validation ratios": vsteps == [0.0, 200.0, 399.0] and all(abs(r - 1.003) < 1e-9 for r in vratios),
    "tokens/s after the warm-up": d["speed"][1][1][0] == 3.0 and min(d["speed"][1][2]) == 1250.0,
    "speedup": abs(d["speedups"][1] - 1.25) < 1e-9,
    "title": compare.speed_title(["bf16", "fp8"], d["speedups"], 3) ==
        "tokens/s: fp8 1.25x bf16 (median after 3 warm-up steps)",
}
bad = [k for k, ok in checks.items() if not ok]
print(f"ratio over the second half {min(tail):.5f}..{max(tail):.5f}")
sys.exit(f"wrong: {bad}" if bad else 0)
PY
then
  pass "figure_data (loss ratio smoothed: $(tail -1 data.txt); validation ratios, tokens/s, 1.25x in the title)"
else
  fail figure_data "$(tail -2 data.txt | tr '\n' ' ')"
fi

if ! python3 -c "import matplotlib" 2>/dev/null; then
  python3 "$CMP" bf16 fp8 > out.txt 2> err.txt
  rc=$?
  if [ $rc = 0 ] && [ ! -e compare.png ] && [ "$(wc -l < err.txt)" = 1 ] && grep -q "matplotlib is not installed" err.txt; then
    skip png_by_default "matplotlib is not installed (the note and exit 0 checked; pip install matplotlib)"
  else
    fail png_by_default "without matplotlib: status $rc, $(tr '\n' ' ' < err.txt)"
  fi
  skip figure_panels "matplotlib is not installed"
  skip titles_inside_the_figure "matplotlib is not installed"
  exit 0
fi

if python3 "$CMP" bf16 fp8 > out.txt 2>&1 && grep -qx "wrote $WORK/compare.png" out.txt &&
   [ "$(head -c 8 compare.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
  pass "png_by_default (wrote compare.png, path printed)"
else
  fail png_by_default "$(tr '\n' ' ' < out.txt | head -c 300)"
fi

# The drawn figure, read back: compare.plot() with savefig replaced by a look at the axes.
if python3 - "$ROOT/scripts" <<'PY' > lines.txt 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import matplotlib
matplotlib.use("Agg")
import matplotlib.figure
import compare
def check(fig, *a, **k):
    loss, ratio, speed = fig.axes
    assert loss.get_yscale() == "log", loss.get_yscale()
    assert "relative to bf16" in ratio.get_title(), ratio.get_title()
    assert speed.get_title().startswith("tokens/s: fp8 1.25x bf16"), speed.get_title()
    for line in speed.get_lines():
        xs, ys = [int(x) for x in line.get_xdata()], [float(y) for y in line.get_ydata()]
        if xs != list(range(3, 10)) or min(ys) < 10000:
            sys.exit(f"tokens/s: steps {xs}, values {ys}")
    assert len(speed.get_lines()) == 2
matplotlib.figure.Figure.savefig = check
runs = [compare.load(p) for p in ("bf16", "fp8")]
compare.plot(runs, compare.run_labels([r[0] for r in runs]), "unused.png", 3, 2)
PY
then
  pass "figure_panels (log-scale loss, ratio to bf16, tokens/s from step 3 on, 1.25x in the title)"
else
  fail figure_panels "$(tail -1 lines.txt)"
fi

# watch: --watch on a run in progress: a log folder that does not exist yet is waited for, the half-written last
# line of a growing log is left for the next look, and steps appended between looks show in the next table.
mkdir -p live
python3 - live/train.jsonl <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for s in range(4):
        f.write(json.dumps({"kind": "train", "step": s, "loss": 5.0, "step_ms": 100}) + "\n")
    f.write('{"kind": "train", "st')  # the writer is mid-line
PY
python3 "$CMP" live later --watch 0.5 --watch-renders 6 --no-png > watch.txt 2>&1 &
watcher=$!
sleep 1
python3 - live/train.jsonl <<'PY'
import json, sys
with open(sys.argv[1], "a") as f:
    f.write('ep": 4, "loss": 5.0, "step_ms": 100}\n')
    for s in range(5, 9):
        f.write(json.dumps({"kind": "train", "step": s, "loss": 5.0, "step_ms": 100}) + "\n")
PY
wait $watcher
status=$?
if [ $status = 0 ] && grep -q '^| live | 4 |' watch.txt && grep -q '^| live | 9 |' watch.txt &&
   grep -q 'waiting for later' watch.txt && ! grep -q 'error' watch.txt; then
  pass "watch (4 steps while the fifth was half written, then 9; the missing log waited for)"
else
  fail watch "status $status: $(tr '\n' ' ' < watch.txt | head -c 400)"
fi

# The titles as drawn (labels as long as config.json makes them): each inside the figure, none running into the
# next panel's; the figure of one run has no ratio panel.
printf '{"model": "124m", "precision": "bf16", "recompute": 0, "log_dir": "bf16"}\n' > bf16/config.json
printf '{"model": "124m", "precision": "fp8", "recompute": 2, "log_dir": "fp8"}\n' > fp8/config.json
if python3 - "$ROOT/scripts" <<'PY' > titles.txt 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import matplotlib
matplotlib.use("Agg")
import matplotlib.figure
import compare
def check(fig, *a, **k):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    spans = [ax.title.get_window_extent(renderer) for ax in fig.axes]
    for ax, box in zip(fig.axes, spans):
        if box.x0 < 0 or box.x1 > width:
            sys.exit(f"'{ax.get_title()}' spans x {box.x0:.0f}..{box.x1:.0f} of a {width:.0f}-pixel figure")
    for left, right in zip(spans, spans[1:]):
        if left.x1 > right.x0:
            sys.exit(f"titles overlap: {left.x1:.0f} > {right.x0:.0f}")
    print(len(fig.axes), "panels:", " | ".join(ax.get_title().replace("\n", " ") for ax in fig.axes))
matplotlib.figure.Figure.savefig = check
for logs in (("bf16", "fp8"), ("bf16",)):
    runs = [compare.load(p) for p in logs]
    compare.plot(runs, compare.run_labels([r[0] for r in runs]), "unused.png", 3, 2)
PY
then
  if [ "$(grep -c '^3 panels:' titles.txt)" = 1 ] && [ "$(grep -c '^2 panels: loss | throughput' titles.txt)" = 1 ]; then
    pass "titles_inside_the_figure (two runs: 3 panels, titles wrapped inside; one run: loss and throughput)"
  else
    fail titles_inside_the_figure "$(tr '\n' ' ' < titles.txt | head -c 400)"
  fi
else
  fail titles_inside_the_figure "$(tail -1 titles.txt)"
fi
