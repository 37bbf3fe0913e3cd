#!/usr/bin/env bash
# scripts/bench/kernel_census.py and kernel_census.sh's argument checks on made-up Nsight Compute logs (part of
# `make test`; python3 only; no GPU, no ncu).
#   last_step_grouped: a log as `ncu --csv --log-file` writes it (==PROF== and warning lines, initialization
#     kernels, two steps, durations drawn fresh each run in ns with thousands separators): the census holds only
#     the second step's launches (from its embedding kernel on), cuBLASLt's GEMMs (nvjet_*, cutlass, split-K
#     reduce) in one group, cuDNN's under "cuDNN: ", ours by name without arguments, and each group's sum
#     equals the one this test adds up itself, within 1e-9 relative (sums of at most ~100 doubles).
#   units: the same log in usecond gives the same census.
#   bad_logs_one_line: no such file, a log without duration rows, a log without an embedding kernel: one line
#     each, last, status 1.
#   script_arguments: kernel_census.sh without arguments, and with a flag the census sets itself (--steps,
#     --no-cuda-graph, --gemm-cache, --total-batch): one line, status 2, before anything runs.
#   script_plumbing: kernel_census.sh with a stand-in ./train_gpt and ncu (scripts that record their arguments;
#     the ncu one writes the made-up log): the tuning run gets --steps 3 and the cache in OUTDIR, ncu gets the
#     fixed clocks off, caches off and the one metric, its run --steps 2 --no-cuda-graph with the same cache and
#     the user's flags; the table is printed and kept, status 0. A tuning run that fails: one line, status 2.
set -u
source "$(dirname "$0")/lib_host.sh" kernel_census python3  # ROOT, WORK, pass/fail/skip; python3 or skip
CENSUS="$ROOT/scripts/bench/kernel_census.py"

# The made-up log and, beside it, the census this test expects (expected.json), computed here without the
# script's grouping code: each made-up kernel carries its group with it.
python3 - "$WORK" <<'PY'
import csv, io, json, random, sys
work = sys.argv[1]
rng = random.Random()
GEMM, DNN = "cuBLASLt GEMMs", "cuDNN: "
init = [("fill_normal_kernel(float *, unsigned long, float, unsigned long)", None)] * 3
step = [("<unnamed>::encoder_forward_kernel(__nv_bfloat16 *, const int *, const __nv_bfloat16 *, int)",
         "encoder_forward_kernel")]
for layer in range(rng.randint(2, 6)):
    step += [("void <unnamed>::fp8_layernorm_kernel<3, 1, 1, 0, 3, 3>(__nv_bfloat16 *, unsigned char *)",
              "fp8_layernorm_kernel<3, 1, 1, 0, 3, 3>"),
             ("nvjet_sm90_qqtst_128x208_128x5_2x1_v_bz_coopA_bias_TNT", GEMM),
             ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_32_64x256x64_kernel0_0",
              DNN + "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_32_64x256x64_kernel0_0"),
             ("void cudnn::matmul_dq<1, 64>(const void *, const void *, void *)", DNN + "cudnn::matmul_dq<1, 64>"),
             ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x1_nn_align8>(T1::Params)",
              GEMM),
             ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float>(cublasLt::cublasSplitKParams<float>)",
              GEMM),
             ("void (anonymous namespace)::adamw_kernel<float>(float *, __nv_bfloat16 *, float *, float *)",
              "adamw_kernel<float>")]
steps = [[(n, None) for n, _ in step], step]  # only the last step counts
launches = init + steps[0] + steps[1]
ns = [rng.uniform(1e3, 5e6) for _ in launches]
def log(unit, scale):
    s = io.StringIO()
    s.write("==WARNING== Note: Running with uncontrolled GPU caches.\n==PROF== Connected to process 643\n")
    w = csv.writer(s, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["ID", "Process ID", "Process Name", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"])
    for i, ((name, _), t) in enumerate(zip(launches, ns)):
        v = f"{t * scale:,.3f}" if unit == "ns" else f"{t * scale:.6f}"
        w.writerow([i, 643, "train_gpt", name, "gpu__time_duration.sum", unit, v])
        if i == 1:
            s.write("==PROF== Disconnected from process 643\n")
    return s.getvalue()
open(f"{work}/ns.csv", "w").write(log("ns", 1.0))
open(f"{work}/us.csv", "w").write(log("usecond", 1e-3))
groups = {}
last = ns[len(init) + len(steps[0]):]
for (_, g), t in zip(step, last):
    e = groups.setdefault(g, {"ms": 0.0, "launches": 0})
    e["ms"] += round(t, 3) * 1e-6  # the log keeps 3 decimals of ns
    e["launches"] += 1
json.dump({"kernels": len(step), "total_ms": sum(e["ms"] for e in groups.values()), "groups": groups},
          open(f"{work}/expected.json", "w"))
open(f"{work}/no_rows.csv", "w").write("==PROF== Connected to process 1\n==ERROR== the application returned 1\n")
open(f"{work}/no_step.csv", "w").write("\n".join(l for l in log("ns", 1.0).splitlines()
                                                  if "encoder_forward" not in l) + "\n")
PY

# compare GOT.json EXPECTED.json: "" when equal (groups, launches, ms within 1e-9 relative), else what differs
compare() {
  python3 - "$1" "$2" <<'PY'
import json, math, sys
got, want = (json.load(open(p)) for p in sys.argv[1:])
diff = []
if got["kernels"] != want["kernels"]:
    diff.append(f"kernels {got['kernels']} != {want['kernels']}")
if set(got["groups"]) != set(want["groups"]):
    diff.append(f"groups {sorted(got['groups'])} != {sorted(want['groups'])}")
for g, w in want["groups"].items():
    x = got["groups"].get(g)
    if x and (x["launches"] != w["launches"] or not math.isclose(x["ms"], w["ms"], rel_tol=1e-9)):
        diff.append(f"{g}: {x} != {w}")
if not math.isclose(got["total_ms"], want["total_ms"], rel_tol=1e-9):
    diff.append(f"total {got['total_ms']} != {want['total_ms']}")
print("; ".join(diff)[:600])
PY
}

if python3 "$CENSUS" "$WORK/ns.csv" --json > "$WORK/ns.json" 2> "$WORK/ns.err"; then
  d=$(compare "$WORK/ns.json" "$WORK/expected.json")
  if [ -z "$d" ] && python3 "$CENSUS" "$WORK/ns.csv" | grep -q "^last step: [0-9]* kernels"; then
    pass "last_step_grouped ($(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print(e["kernels"], "launches,", len(e["groups"]), "groups")' "$WORK/expected.json"), each group's sum as added up here)"
  else
    fail last_step_grouped "${d:-the table has no 'last step' line}"
  fi
else
  fail last_step_grouped "status $?: $(tail -1 "$WORK/ns.json") $(tail -1 "$WORK/ns.err")"
fi

if python3 "$CENSUS" "$WORK/us.csv" --json > "$WORK/us.json" 2>&1 && [ -z "$(compare "$WORK/us.json" "$WORK/expected.json")" ]; then
  pass "units (usecond: the same census)"
else
  fail units "$(tail -1 "$WORK/us.json") $(compare "$WORK/us.json" "$WORK/expected.json" 2>&1)"
fi

why=""
for f in missing.csv no_rows.csv no_step.csv; do
  python3 "$CENSUS" "$WORK/$f" > "$WORK/bad.txt" 2>&1
  rc=$?
  { [ "$rc" = 1 ] && [ "$(wc -l < "$WORK/bad.txt")" = 1 ] && grep -q "^kernel_census: " "$WORK/bad.txt"; } ||
    why="$why; $f: status $rc, $(head -c 200 "$WORK/bad.txt")"
done
if [ -z "$why" ]; then
  pass "bad_logs_one_line (no file, no duration rows, no embedding kernel: one line, status 1)"
else
  fail bad_logs_one_line "${why#; }"
fi

why=""
cd "$WORK" || exit 1  # no ./train_gpt here: a check that let an argument through would stop at that instead
for args in "" "out --steps 5" "out --model 124m --no-cuda-graph" "out --gemm-cache=x.tsv" "out --total-batch 32768"; do
  # shellcheck disable=SC2086
  bash "$ROOT/scripts/bench/kernel_census.sh" $args > bad.txt 2>&1
  rc=$?
  { [ "$rc" = 2 ] && [ "$(wc -l < bad.txt)" = 1 ] && { [ -z "$args" ] || grep -q "set by the census" bad.txt; }; } ||
    why="$why; '$args': status $rc, $(head -c 200 bad.txt)"
done
if [ -z "$why" ] && ! [ -e out ]; then
  pass "script_arguments (no arguments, --steps, --no-cuda-graph, --gemm-cache=, --total-batch: one line, status 2, nothing made)"
else
  fail script_arguments "${why#; }$([ -e out ] && echo '; the output folder was made')"
fi

# Stand-ins for train_gpt and ncu in a folder of their own (PATH first for ncu).
mkdir -p "$WORK/plumb/bin" && cd "$WORK/plumb" || exit 1
cat > train_gpt <<'SH'
#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/train_gpt_args.txt"
[ -z "${FAKE_TRAIN_FAIL:-}" ] || { echo "error: made-up failure"; exit 1; }
SH
cat > bin/ncu <<SH
#!/usr/bin/env bash
echo "\$*" > "$WORK/plumb/ncu_args.txt"
while [ "\$1" != ./train_gpt ]; do [ "\$1" = --log-file ] && cp "$WORK/ns.csv" "\$2"; shift; done
"\$@"
SH
chmod +x train_gpt bin/ncu
PATH="$WORK/plumb/bin:$PATH" bash "$ROOT/scripts/bench/kernel_census.sh" out --model 124m --precision fp8 > run.txt 2>&1
rc=$?
tune=$(sed -n 1p train_gpt_args.txt 2>/dev/null) under=$(sed -n 2p train_gpt_args.txt 2>/dev/null)
ncu_args=$(cat ncu_args.txt 2>/dev/null)
why=""
[ "$rc" = 0 ] || why="status $rc: $(tail -1 run.txt)"
[[ "$tune" == *"--gemm-cache out/gemm_algos.tsv"*"--model 124m --precision fp8 --steps 3"* ]] || why="$why; tuning run: '$tune'"
[[ "$under" == *"--gemm-cache out/gemm_algos.tsv"*"--model 124m --precision fp8 --steps 2 --no-cuda-graph"* ]] ||
  why="$why; run under ncu: '$under'"
[[ "$ncu_args" == "--clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --log-file out/ncu.csv ./train_gpt "* ]] ||
  why="$why; ncu: '$ncu_args'"
grep -q "^last step: " out/census_table.txt 2>/dev/null && grep -q "^last step: " run.txt || why="$why; no table"
rm -rf out train_gpt_args.txt
FAKE_TRAIN_FAIL=1 PATH="$WORK/plumb/bin:$PATH" bash "$ROOT/scripts/bench/kernel_census.sh" out --model 124m > fail.txt 2>&1
rc=$?
{ [ "$rc" = 2 ] && [ "$(wc -l < fail.txt)" = 1 ] && grep -q "tuning run failed: error: made-up failure" fail.txt; } ||
  why="$why; failing tuning run: status $rc, $(head -c 200 fail.txt)"
if [ -z "$why" ]; then
  pass "script_plumbing (tuning run, then ncu with the fixed flags over --steps 2 --no-cuda-graph, same cache; table kept; a failing run: one line, status 2)"
else
  fail script_plumbing "${why#; }"
fi
