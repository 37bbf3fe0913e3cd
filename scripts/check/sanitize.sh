#!/usr/bin/env bash
# compute-sanitizer memcheck and initcheck over a small model (both precisions, 3 training steps with
# validation) and over every dev/ kernel test. Prints one line per run and ends with a summary; exit status 1
# if any run reported an error. Races that racecheck finds inside cuDNN's own kernels are not ours, so
# racecheck is not part of this gate by default. Usage: scripts/check/sanitize.sh [log_dir]   (make sanitize)
# SANITIZE_MODEL_ONLY=1: the small model only; SANITIZE_TIMEOUT: seconds per run (default 600).
# SANITIZE_RACES=1: racecheck (shared-memory hazards) and synccheck (barrier use) instead, over our kernels only
# (every one is named *_kernel; cuDNN's, cuBLASLt's and NCCL's excluded by name): the small model in both
# precisions, then the dev/ tests but test_matmul and test_attention (library kernels only).
set -u
SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
LOG=${1:-build/sanitize}
mkdir -p "$LOG"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "sanitize: no CUDA device on this machine"; exit 1; fi
small=(--model 124m --layers 2 --channels 256 --heads 4 --vocab 512 --max-seq 256 --seq 256 --batch 2 --steps 3
       --log-dir "$LOG/run")
# a tiny validation set so the evaluation pass is checked too
python3 - "$LOG/data" <<'PY'
import sys, os, struct, random
d = sys.argv[1]; os.makedirs(d, exist_ok=True)
for name, n in (("tiny_val_000000.bin", 4096),):
    hdr = [20240520, 1, n] + [0] * 253
    random.seed(1)
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack("<256i", *hdr)); f.write(struct.pack("<%dH" % n, *[random.randrange(512) for _ in range(n)]))
PY
small+=(--val-data "$LOG/data/tiny_val_*.bin" --val-every 2 --val-batches 1)
fails=0; runs=0
tools=(memcheck initcheck) own_kernels=()
if [ -n "${SANITIZE_RACES:-}" ]; then
  tools=(racecheck synccheck)
  # only our kernels (library kernel names: cuDNN's cudnn_*, cuBLASLt's *xmma*, nvjet_*, cutlass*,
  # splitKreduce_kernel; NCCL's nccl*)
  own_kernels=(--kernel-name kns=_kernel)
  for lib in cudnn xmma nvjet cutlass splitK nccl; do own_kernels+=(--kernel-name-exclude "kns=$lib"); done
fi
check() {  # name, tool, command...
  local name=$1 tool=$2; shift 2
  local log="$LOG/$tool.$name.log"
  timeout "${SANITIZE_TIMEOUT:-600}" "$SAN" --tool "$tool" --nvtx yes --print-limit 20 --error-exitcode 99 \
    "${own_kernels[@]}" "$@" > "$log" 2>&1
  local rc=$? summary
  summary=$(grep -E "ERROR SUMMARY" "$log" | tail -1 | sed 's/^========= //')
  runs=$((runs + 1))
  # 99: the tool found errors; 124: timed out; anything else: the program itself failed under the tool
  case "$rc" in
    0) echo "ok   $tool $name: ${summary:-no summary}" ;;
    99) fails=$((fails + 1)); echo "FAIL $tool $name: ${summary:-no summary}, see $log" ;;
    124) fails=$((fails + 1)); echo "FAIL $tool $name: timed out (${summary:-no summary so far}), see $log" ;;
    *) fails=$((fails + 1))
       echo "FAIL $tool $name: the program exited $rc under the tool (${summary:-no summary}): $(grep -m1 '^\[FAIL\]\|^error' "$log")" ;;
  esac
}
for tool in "${tools[@]}"; do
  for p in bf16 fp8; do check "train_gpt_$p" "$tool" ./train_gpt "${small[@]}" --precision "$p"; done
done
[ -n "${SANITIZE_MODEL_ONLY:-}" ] && { echo "sanitize: $runs runs, $fails with errors (model only)"; [ "$fails" = 0 ]; exit; }
for tool in "${tools[@]}"; do
  for t in build/dev/test_*; do
    [ -n "${SANITIZE_RACES:-}" ] && [[ "$t" == */test_matmul || "$t" == */test_attention ]] && continue
    [ -x "$t" ] && check "$(basename "$t")" "$tool" "$t"
  done
done
echo "sanitize: $runs runs, $fails with errors"
[ "$fails" = 0 ]
