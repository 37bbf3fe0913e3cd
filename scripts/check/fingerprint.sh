#!/usr/bin/env bash
# Fingerprints of train_gpt for refactors: runs BINARY on random tokens (default batch, default seed) for
#   gpt2_124m_bf16, gpt2_124m_fp8   GPT-2 124M, 20 steps
#   gpt2_1p5b_bf16, gpt2_1p5b_fp8   GPT-2 1.5B, 10 steps
#   gpt2_124m_fp8_recompute0, gpt2_124m_fp8_recompute1   124M fp8, 20 steps, --recompute 0 / 1 (the FP8
#                                   Linears' other ways of keeping their inputs; the default is 2)
# with a checkpoint at the end, and writes OUTDIR/<run>.fp (scripts/check/fingerprint.py: every step's loss, grad
# norm and lr as float32 bits, and a SHA-256 of every tensor of the final training state) and the run's logs
# under OUTDIR/logs/<run>/. Two builds train identically iff their fingerprints are equal
# (scripts/check/fingerprint_compare.sh). Usage: fingerprint.sh BINARY OUTDIR
# Environment: FINGERPRINT_RUNS (a subset of the names above), FINGERPRINT_CKPT_DIR (where the checkpoints go;
# default /dev/shm when it has room for a 1.5B one, else OUTDIR/ckpt; each is deleted once hashed unless
# FINGERPRINT_KEEP_CKPT=1), FINGERPRINT_FLAGS (more flags for every run, e.g. --no-gemm-autotune to compare
# with a build whose default differs).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BINARY OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$bin" ] || { echo "fingerprint: $1 is not an executable" >&2; exit 2; }
out=$2
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)

# name model precision steps [flags]
runs_table="gpt2_124m_bf16 124m bf16 20
gpt2_124m_fp8 124m fp8 20
gpt2_124m_fp8_recompute0 124m fp8 20 --recompute 0
gpt2_124m_fp8_recompute1 124m fp8 20 --recompute 1
gpt2_1p5b_bf16 1.5b bf16 10
gpt2_1p5b_fp8 1.5b fp8 10"
want=${FINGERPRINT_RUNS:-gpt2_124m_bf16 gpt2_124m_fp8 gpt2_124m_fp8_recompute0 gpt2_124m_fp8_recompute1 gpt2_1p5b_bf16 gpt2_1p5b_fp8}

# A 1.5B checkpoint (FP32 master weights, m and v) is ~19 GB: in memory if /dev/shm has room for it.
ckpt_base=${FINGERPRINT_CKPT_DIR:-}
if [ -z "$ckpt_base" ]; then
  shm_free=$(df -P -B1G /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')
  if [ "${shm_free:-0}" -ge 24 ]; then ckpt_base=/dev/shm/fingerprint.$$; else ckpt_base=$out/ckpt; fi
fi

for name in $want; do
  read -r _ model precision steps run_flags < <(printf '%s\n' "$runs_table" | awk -v n="$name" '$1 == n') ||
    { echo "fingerprint: unknown run '$name'" >&2; exit 2; }
  log=$out/logs/$name ckpt=$ckpt_base/$name
  rm -rf "$log" "$ckpt"
  mkdir -p "$log"
  args=(--model "$model" --precision "$precision" --steps "$steps" --train-data random --log-dir "$log"
        --checkpoint-dir "$ckpt")
  read -r -a extra <<<"${run_flags:-} ${FINGERPRINT_FLAGS:-}"
  args+=("${extra[@]}")
  echo "fingerprint: $name: $bin ${args[*]}" >&2
  start=$SECONDS
  if ! "$bin" "${args[@]}" >"$log/stdout.txt" 2>&1; then
    echo "fingerprint: $name failed; the end of $log/stdout.txt:" >&2
    tail -5 "$log/stdout.txt" >&2
    exit 1
  fi
  last=$(ls "$ckpt"/ckpt_*.safetensors 2>/dev/null | sort | tail -1 || true)
  [ -n "$last" ] || { echo "fingerprint: $name wrote no checkpoint in $ckpt" >&2; exit 1; }
  {
    echo "run $name: --model $model --precision $precision --steps $steps --train-data random ${run_flags:-} ${FINGERPRINT_FLAGS:-}"
    python3 "$here/fingerprint.py" "$log/train.jsonl" "$last"
  } >"$out/$name.fp"
  [ "${FINGERPRINT_KEEP_CKPT:-0}" = 1 ] || rm -rf "$ckpt"
  echo "fingerprint: $name done in $((SECONDS - start)) s: $out/$name.fp" >&2
done
[ "${FINGERPRINT_KEEP_CKPT:-0}" = 1 ] || [ "$ckpt_base" = "$out/ckpt" ] || rmdir "$ckpt_base" 2>/dev/null || true
