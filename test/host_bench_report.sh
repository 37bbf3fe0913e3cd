#!/usr/bin/env bash
# scripts/bench/bench_report.py (the tables of `make bench`) on made-up results (part of `make test`; python3 only).
#   full_table: our bf16/fp8 runs, llm.c and PyTorch bf16 at GPT-1.5B: the step, the ratios to our bf16, llm.c
#     and PyTorch (172.31 ms against 241.07 / 260.73 / 261.3: 1.40x, 1.51x, 1.52x), llm.c's TFLOP/s from ours
#     scaled by the step time (524.5 x 241.07 / 260.73 = 485.0) and its peak memory from its samples (50.6 GB),
#     MFU of 989, and bench.json with the 4 rows.
#   (in full_table and cut_short) the SM MHz and capped columns from gpu_1.5b_fp8.csv, bench.sh's samples of
#     that row: the median clock and the share of the power-capped (reason bit 0x4) samples among those with
#     the GPU >= 90% busy in the last 20 steps' time (8 of 11 there: 3 idle; the first step's tuning earlier
#     and an unreadable line left out), here 1665 MHz and 6 of 8 = 75%; rows without samples show "-".
#   cut_short: without llm.c's and PyTorch's files (a run stopped during torch.compile) our rows still print,
#     with "-" for the missing references, and the status is 0.
#   no_results_one_line: an empty folder: "bench: no results" last, status 1; bad arguments (no folder, a size
#     that is not a benchmark's, a folder that does not exist): one line each, status 2.
set -u
source "$(dirname "$0")/lib_host.sh" bench_report python3  # ROOT, WORK, pass/fail/skip; python3 or skip
REPORT="$ROOT/scripts/bench/bench_report.py"

python3 - "$WORK/full" <<'PY'
import json, os, sys
out = sys.argv[1]
for p, ms, tok, tf, peak in (("bf16", 241.07, 50974, 524.5, 50.7), ("fp8", 172.31, 71314, 733.8, 49.7)):
    os.makedirs(f"{out}/1.5b/{p}")
    with open(f"{out}/1.5b/{p}/train.jsonl", "w") as f:
        f.write(json.dumps({"kind": "train", "step": 0, "loss": 11.0}) + "\n")
        f.write(json.dumps({"kind": "summary", "median_step_ms": ms, "tokens_per_s": tok, "tflops": tf,
                            "peak_mem_gb": peak}) + "\n")
    json.dump({"parameters": 1557686400}, open(f"{out}/1.5b/{p}/config.json", "w"))
with open(f"{out}/llmc.jsonl", "w") as f:
    f.write(json.dumps({"model": "1.5b", "name": "llm.c bf16", "median_step_ms": 260.73, "tokens_per_s": 47129}) + "\n")
with open(f"{out}/pytorch.jsonl", "w") as f:
    f.write(json.dumps({"name": "pytorch bf16 (autocast) + compile", "median_step_ms": 261.3, "tokens_per_s": 47026,
                        "tflops": 483.8, "peak_mem_gb": 66.7}) + "\n")
# gpu_ROW.csv as nvidia-smi writes it (time, utilization, SM MHz, W, W limit, MiB used, reasons). The fp8 row
# (172.31 ms a step: the report looks at the last 20 steps' 3.45 s before the last busy sample): first 10 s of
# GEMM tuning, busy and capped at 1400 MHz, which must not count; then 8 busy samples 0.4 s apart, 6 of them
# power-capped (0x4; one with another bit beside it), clocks 1500..1815 (median: the mean of 1650 and 1680,
# 1665), with 3 idle ones at full clock and a line with [N/A] fields among them, which must not count either.
def sample(t, util, mhz, reasons):
    stamp = f"2026/12/04 21:{int(t) // 60:02d}:{t % 60:06.3f}"
    return f"{stamp}, {util}, {mhz}, 690.50, 700.00, 48000, 0x{reasons:016x}\n"
with open(f"{out}/gpu_1.5b_fp8.csv", "w") as f:
    for i in range(50):
        f.write(sample(0.2 * i, 100, 1400, 4))
    f.write("2026/12/04 21:00:10.100, [N/A], [N/A], [N/A], 700.00, 48000, [N/A]\n")
    for i, (util, mhz, reasons) in enumerate(((100, 1500, 4), (5, 1980, 0), (99, 1815, 0), (100, 1650, 4),
                                              (97, 1590, 4), (0, 1980, 0), (100, 1710, 0x44), (100, 1605, 4),
                                              (91, 1755, 0), (40, 1980, 0), (100, 1680, 4))):
        f.write(sample(11.0 + 0.3 * i, util, mhz, reasons))
# llm.c reports no peak memory: the largest memory.used of its samples, 48256 MiB = 50.6 GB (idle samples: no
# clock columns for it)
with open(f"{out}/gpu_llmc_1.5b.csv", "w") as f:
    for mib in (30000, 48256, 48000):
        f.write(sample(1.0, 0, 1980, 0).replace(", 48000, ", f", {mib}, "))
PY
mkdir -p "$WORK/cut" && cp -r "$WORK/full/1.5b" "$WORK/full/gpu_1.5b_fp8.csv" "$WORK/cut/"
mkdir -p "$WORK/empty"

# name regex file: the line must be in the file
has() { grep -Eq "$1" "$2"; }
if python3 "$REPORT" "$WORK/full" 1.5b > "$WORK/full.txt" 2>&1 &&
   has '^\| train_gpt fp8 +\| +172\.3 \| +71314 \| +733\.8 \| .* \| 74\.2% \| +49\.7 \| +1\.40x \| +1\.51x \| +1\.52x \| +1665 \| +75% \|$' "$WORK/full.txt" &&
   has '^\| llm\.c bf16 +\| +260\.7 \| +47129 \| +485\.0 \| .* \| 49\.0% \| +50\.6 \| +0\.92x \| +1\.00x \| +1\.00x \| +- \| +- \|$' "$WORK/full.txt" &&
   has '^\| train_gpt bf16 +\| +241\.1 \| .* \| +1\.00x \| +1\.08x \| +1\.08x \| +- \| +- \|$' "$WORK/full.txt" &&
   ! has '124M' "$WORK/full.txt" &&
   [ "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$WORK/full/bench.json")" = 4 ]; then
  pass "full_table (GPT-1.5B: fp8 1.40x our bf16, 1.51x llm.c, 1.52x PyTorch; llm.c 485.0 TFLOP/s from ours; fp8 at 1665 MHz, 75% power-capped)"
else
  fail full_table "$(grep -E "^\| (train_gpt|llm|pytorch)" "$WORK/full.txt" | tr -s " \n" " " | head -c 700)"
fi

if python3 "$REPORT" "$WORK/cut" > "$WORK/cut.txt" 2>&1 &&
   has '^\| train_gpt fp8 +\| +172\.3 \| .* \| +1\.40x \| +- \| +- \| +1665 \| +75% \|$' "$WORK/cut.txt"; then
  pass "cut_short (no llm.c or PyTorch results: our rows, '-' for the missing references, status 0)"
else
  fail cut_short "$(grep -E "^\| train_gpt" "$WORK/cut.txt" | tr -s " \n" " " | head -c 700)"
fi

why=""
python3 "$REPORT" "$WORK/empty" > "$WORK/empty.txt" 2>&1
rc=$?
[ "$rc" = 1 ] && [ "$(tail -1 "$WORK/empty.txt")" = "bench: no results" ] || why="empty folder: status $rc, '$(tail -1 "$WORK/empty.txt")'"
for args in "" "$WORK/full 7b" "$WORK/missing"; do
  # shellcheck disable=SC2086
  python3 "$REPORT" $args > "$WORK/bad.txt" 2>&1
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l < "$WORK/bad.txt")" = 1 ] || why="$why; args '$args': status $rc, $(wc -l < "$WORK/bad.txt") lines"
done
if [ -z "$why" ]; then
  pass "no_results_one_line (empty folder: status 1; no folder, a bad size, a missing folder: one line, status 2)"
else
  fail no_results_one_line "$why"
fi
