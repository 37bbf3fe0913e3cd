#!/usr/bin/env bash
# Trains the same model on the same data from the same seed twice, run A and run B (by default bf16 and fp8),
# and prints both loss curves with the validation loss ratio B / A at every evaluation, its mean and its largest
# deviation from 1, and the mean ratio of the training losses over the last fifth of the steps. With NOISE set,
# run A is repeated with those extra flags (a change that moves bits but not the math, e.g. --no-deterministic:
# the attention backward's atomic adds, another summation order), and the same figures for A' / A tell how far
# this data and model move under such a perturbation: the floor a B / A can be judged against.
# Usage: scripts/runs/compare_curves.sh OUTDIR [train_gpt flags...]   e.g.
#   scripts/runs/compare_curves.sh logs/kjv124m --model 124m --vocab 256 --batch 8 --seq 1024 --steps 600 \
#       --train-data 'data/kjv/kjv_train_*.bin' --val-data 'data/kjv/kjv_val_*.bin' --val-every 100
# Environment (each run is "ENV BIN flags... EXTRA"):
#   A_NAME, B_NAME  names in the table and the log folders (default bf16, fp8)
#   A_FLAGS, B_FLAGS  extra flags (default --precision bf16, --precision fp8)
#   A_ENV, B_ENV  environment assignments, e.g. B_ENV="LD_LIBRARY_PATH=/path/to/cudnn/lib" (default none)
#   A_BIN, B_BIN  binaries (default ./train_gpt), e.g. the previous commit's build as A_BIN
#   NOISE  flags for the repeat of run A (default: no repeat)
#   NOISE_RUNS  how many such repeats (default 1): A_noise, A_noise2, ...; with a perturbation that differs from
#     run to run (--no-deterministic) each is another sample of the floor
#   REUSE=1  a run whose command (environment, binary, flags; kept in OUTDIR.NAME.cmd) is the one of a run already
#     finished under OUTDIR (its train.jsonl has the summary) is not run again: several B's judged against one A
#     and its noise repeat, each call with its own B_NAME and the same OUTDIR, pay for A and A' once
# e.g. a default change against the previous default, fp8, with the noise floor:
#   A_NAME=old B_NAME=new A_FLAGS="--precision fp8" B_FLAGS="--precision fp8" A_BIN=old/train_gpt \
#   NOISE=--no-deterministic scripts/runs/compare_curves.sh logs/check --model 124m ...
set -u
out=${1:?usage: scripts/runs/compare_curves.sh OUTDIR [train_gpt flags...]}
shift
a_name=${A_NAME:-bf16} b_name=${B_NAME:-fp8}
[ "$a_name" != "$b_name" ] || { echo "compare_curves: A_NAME and B_NAME must differ (both '$a_name')" >&2; exit 2; }
names=("$a_name" "$b_name")
if [ -n "${NOISE:-}" ]; then
  noise_runs=${NOISE_RUNS:-1}
  [[ "$noise_runs" =~ ^[1-9][0-9]*$ ]] ||
    { echo "compare_curves: NOISE_RUNS takes a positive count, got '$noise_runs'" >&2; exit 2; }
  names+=("${a_name}_noise")
  for ((i = 2; i <= noise_runs; i++)); do names+=("${a_name}_noise$i"); done
fi
mkdir -p "$(dirname "$out")"
for name in "${names[@]}"; do
  case $name in
    "$a_name") env=${A_ENV:-} bin=${A_BIN:-./train_gpt} extra=${A_FLAGS:---precision bf16} ;;
    "$b_name") env=${B_ENV:-} bin=${B_BIN:-./train_gpt} extra=${B_FLAGS:---precision fp8} ;;
    *) env=${A_ENV:-} bin=${A_BIN:-./train_gpt} extra="${A_FLAGS:---precision bf16} $NOISE" ;;
  esac
  cmd="$env $bin $* $extra"
  if [ "${REUSE:-}" = 1 ] && [ "$(cat "$out.$name.cmd" 2>/dev/null)" = "$cmd" ] &&
     grep -q '"kind": *"summary"' "$out/$name/train.jsonl" 2>/dev/null; then
    echo "compare_curves: $name reused (the same command finished in $out/$name)"
    continue
  fi
  # a run that fails before its logger starts must not leave an earlier call's records to be read as its own
  rm -f "$out.$name.cmd" "$out/$name/train.jsonl"
  # shellcheck disable=SC2086  # ENV and the extra flags are word lists
  if env $env "$bin" "$@" $extra --log-dir "$out/$name" > "$out.$name.log" 2>&1; then
    echo "$cmd" > "$out.$name.cmd"
  else
    echo "$name failed:"; tail -3 "$out.$name.log"
  fi
done
python3 - "$out" "${names[@]}" <<'PY'
import json, sys
out, names = sys.argv[1], sys.argv[2:]
def load(name):
    try:
        return [json.loads(l) for l in open(f"{out}/{name}/train.jsonl")]
    except OSError:
        return []
runs = {n: load(n) for n in names}
# Ratios only between runs that finished (their summary record written): a run cut short compares fewer
# evaluations, and its end ratio is not the end of training.
finished = {n: any(r["kind"] == "summary" for r in rs) for n, rs in runs.items()}
for n in names:
    if not finished[n]:
        print(f"compare_curves: {n} did not finish (no summary in {out}/{n}/train.jsonl): no ratios with it")
val = {n: {r["step"]: r["val_loss"] for r in rs if r["kind"] == "val"} for n, rs in runs.items()}
train = {n: {r["step"]: r["loss"] for r in rs if r["kind"] == "train"} for n, rs in runs.items()}
a, b = names[0], names[1]
fmt = lambda x: f"{x:.4f}" if x is not None else "-"
hdr = f"| step | {a} train | {b} train | {a} val | {b} val |" + "".join(f" {n}/{a} val |" for n in names[1:])
print(hdr)
print("|---" * (hdr.count("|") - 1) + "|")
ratios = {n: [] for n in names[1:]}
for s in sorted(set(val[a]) | set(val[b])):
    va = val[a].get(s)
    row = f"| {s} | {fmt(train[a].get(s))} | {fmt(train[b].get(s))} | {fmt(va)} | {fmt(val[b].get(s))} |"
    for n in names[1:]:
        v = val[n].get(s)
        r = v / va if va and v else None
        if r is not None and s > 0:
            ratios[n].append(r)
        row += f" {r:.4f} |" if r is not None else " - |"
    print(row)
compared = [n for n in names[1:] if finished[a] and finished[n]]
for n in compared:
    rs = ratios[n]
    if rs:
        print(f"{n}/{a} val over {len(rs)} evaluations after step 0: end {rs[-1]:.4f}, mean {sum(rs) / len(rs):.4f}, "
              f"largest |ratio - 1| {max(abs(r - 1) for r in rs):.4f}")
# The training loss of a step is measured before the model trains on that batch: in a run that reads each token
# once it is a loss on unseen text too, on far more tokens than an evaluation (both runs read the same batches,
# so the ratio is paired step by step). Over the last fifth of the steps, beside the validation figures.
for n in compared:
    common = sorted(set(train[a]) & set(train[n]))
    last = common[-max(1, len(common) // 5):]
    rs = [train[n][s] / train[a][s] for s in last if train[a][s]]
    if rs:
        print(f"{n}/{a} train loss over the last {len(rs)} steps ({last[0]}-{last[-1]}): mean ratio "
              f"{sum(rs) / len(rs):.4f}")
for n in names:
    s = [r for r in runs[n] if r["kind"] == "summary"]
    if s:
        print(f"{n}: median step {s[0]['median_step_ms']:.1f} ms, {s[0]['tokens_per_s']:.0f} tok/s")
PY
