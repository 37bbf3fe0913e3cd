#!/usr/bin/env bash
# scripts/bench/bench.sh with a stand-in train_gpt (part of `make test`; no GPU, no nvidia-smi needed): the rows of
# a bench come from its own runs, so a run that fails at once in the folder of an earlier bench shows no row
# rather than the earlier bench's, and the earlier bench.json does not stay. The stand-in writes the log
# folder's config.json and a train.jsonl summary with the step time $MS, or exits 1 before writing anything when
# $FAIL is set. One [PASS]/[FAIL] line per case.
set -u
source "$(dirname "$0")/lib_host.sh" bench python3  # ROOT, WORK, pass/fail/skip
ln -s "$ROOT/scripts" "$WORK/scripts"  # bench.sh runs ./train_gpt and scripts/bench/ from the working folder
cat > "$WORK/train_gpt" <<'SH'
#!/usr/bin/env bash
[ -n "${FAIL:-}" ] && { echo "error: --no-such-flag: unknown flag"; exit 1; }
dir="" p=bf16
while [ $# -gt 0 ]; do
  case $1 in --log-dir) dir=$2; shift ;; --precision) p=$2; shift ;; esac
  shift
done
mkdir -p "$dir"
echo '{"parameters": 124475904}' > "$dir/config.json"
echo "{\"kind\": \"summary\", \"median_step_ms\": $MS, \"tokens_per_s\": 700000, \"tflops\": 400," \
  "\"peak_mem_gb\": 10.0}" > "$dir/train.jsonl"
SH
chmod +x "$WORK/train_gpt"
bench() { (cd "$WORK" && MODEL=124m BENCH_PYTORCH=0 bash scripts/bench/bench.sh 5 out 2>&1); }

first=$(MS=21.5 bench)
[ -f "$WORK/out/bench.json" ] || first+=" (no bench.json)"
second=$(FAIL=1 MS=99 bench)
if grep -q "train_gpt fp8 .*21.5" <<< "$first" && ! grep -q "no bench.json" <<< "$first" &&
   grep -q "^bench: train_gpt 124m fp8 failed:" <<< "$second" && ! grep -q "21.5" <<< "$second" &&
   [ ! -e "$WORK/out/bench.json" ]; then
  pass "failed_run_has_no_row (a second bench in the same folder shows none of the first one's step times, no old bench.json)"
else
  fail failed_run_has_no_row "first: $(tail -c 400 <<< "$first") | second: $(tail -c 400 <<< "$second")"
fi
