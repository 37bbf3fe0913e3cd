#!/usr/bin/env bash
# Attention alone (make bench-attention; needs a GPU): builds build/dev/bench_attention (the pinned
# cudnn-frontend, CUDNN_FRONTEND_INCLUDE) and build/dev/bench_attention_fe_new (CUDNN_FRONTEND_NEW_INCLUDE,
# default third_party/cudnn-frontend-new/include; skipped when absent), runs each with every cuDNN of
# CUDNN_DIRS, and prints one table per shape, a row per (frontend, cuDNN), then the layout table.
# CUDNN_DIRS: space-separated; "default" runs with the environment as it is (the cuDNN the binary finds: its
# RUNPATH, or LD_LIBRARY_PATH), any other word is a folder holding libcudnn.so.9 that goes first in
# LD_LIBRARY_PATH (the binaries carry a DT_RUNPATH, which LD_LIBRARY_PATH overrides; libcudnn.so.9 then
# dlopens its sub-libraries from the same folder); a word ending in .tar.xz is an archive of
# scripts/bench/pack_cudnn_jit.sh, unpacked into LOG_DIR and run with CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY (so is
# any folder without libcudnn_heuristic.so.9). Default: "default" and the lib/ folder of the python3 package
# nvidia.cudnn (PyTorch's nvidia-cudnn-cu13) where there is one.
# The cuDNN that really ran is the one each run prints (cudnnGetVersion, and the libcudnn files mapped).
# Usage: bench_attention.sh [bench_attention flags, e.g. --flush or --shape gpt2_1p5b]
# Environment: JOBS (make -j, default: every core), LOG_DIR (each run's whole output; default a temp folder),
#              SKIP_BUILD=1 (use the binaries as built), BINS (space-separated binaries to run instead of
#              the two, e.g. one built against a newer cuDNN's headers: scripts/bench/pack_cudnn_jit.sh).
set -u
cd "$(dirname "$0")/../.." || exit 1
JOBS=${JOBS:-$(nproc)}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
fe_new_include=${CUDNN_FRONTEND_NEW_INCLUDE:-third_party/cudnn-frontend-new/include}

bins=(build/dev/bench_attention)
if [ -n "${BINS:-}" ]; then
  read -r -a bins <<<"$BINS"
elif [ -f "$fe_new_include/cudnn_frontend.h" ]; then
  bins+=(build/dev/bench_attention_fe_new)
else
  echo "bench_attention: no second cudnn-frontend at $fe_new_include: the pinned one only" >&2
fi
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  start=$(date +%s)
  if ! make -j"$JOBS" CUDNN_FRONTEND_NEW_INCLUDE="$fe_new_include" "${bins[@]}" >"$LOG_DIR/build.log" 2>&1; then
    tail -n 30 "$LOG_DIR/build.log" >&2
    echo "bench_attention: build failed (whole log: $LOG_DIR/build.log)" >&2
    exit 1
  fi
  echo "bench_attention: built ${bins[*]} in $(($(date +%s) - start)) s" >&2
fi

if [ -z "${CUDNN_DIRS:-}" ]; then
  CUDNN_DIRS=default
  pip_cudnn=$(python3 -c "import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null)
  [ -n "$pip_cudnn" ] && [ -f "$pip_cudnn/libcudnn.so.9" ] && CUDNN_DIRS="default $pip_cudnn"
fi
dirs=()  # an archive of scripts/bench/pack_cudnn_jit.sh becomes the folder it unpacks to
for entry in $CUDNN_DIRS; do
  case "$entry" in
    *.tar.xz)
      u="$LOG_DIR/unpacked/$(basename "$entry" .tar.xz)"
      mkdir -p "$u" && tar -xJf "$entry" -C "$u" && lib=$(find "$u" -name libcudnn.so.9 | head -n 1) && [ -n "$lib" ] ||
        { echo "bench_attention: no libcudnn.so.9 unpacked from $entry" >&2; exit 1; }
      dirs+=("$(dirname "$lib")") ;;
    *) dirs+=("$entry") ;;
  esac
done

rows="$LOG_DIR/rows.tsv"  # frontend, cuDNN, then the BENCH line's fields
: >"$rows"
status=0
loaded_seen=""
for bin in "${bins[@]}"; do
  for dir in "${dirs[@]}"; do
    log="$LOG_DIR/$(basename "$bin")_$(echo "$dir" | tr '/' '_').txt"
    start=$(date +%s)
    if [ "$dir" = default ]; then
      "$bin" "$@" >"$log" 2>&1
    elif [ -f "$dir/libcudnn_heuristic.so.9" ]; then
      LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" "$@" >"$log" 2>&1
    else  # the graph API and its runtime-compiled engines only (pack_cudnn_jit.sh)
      CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" "$@" >"$log" 2>&1
    fi
    rc=$?
    fe=$(sed -n 's/^bench_attention: .*cudnn-frontend \([0-9.]*\),.*/\1/p' "$log")
    dnn=$(sed -n 's/^bench_attention: cuDNN \([0-9.]*\),.*/\1/p' "$log")
    echo "bench_attention: $bin with cuDNN $dir: frontend ${fe:-?}, cuDNN ${dnn:-?} ran, $(($(date +%s) - start)) s, status $rc ($log)" >&2
    grep '^cuDNN libraries mapped' "$log" >&2
    grep -E '^layout .*: ' "$log" | sed 's/^/  /' >&2
    if [ "$rc" != 0 ]; then tail -n 5 "$log" >&2; status=1; fi
    case " $loaded_seen " in *" $bin:$dnn "*) echo "bench_attention: WARNING: $bin ran cuDNN $dnn twice: $dir did not change the cuDNN" >&2 ;; esac
    loaded_seen="$loaded_seen $bin:$dnn"
    grep -E $'^(BENCH|HASH)\t' "$log" | sed "s/^/${fe:-?}\t${dnn:-?}\t/" >>"$rows"
  done
done

# fields: 1 frontend, 2 cuDNN, 3 BENCH, 4 kernel, 5 shape, 6 ms, 7 TFLOP/s; or 3 HASH, 4 shape, 5 hash
awk -F'\t' '
  $3 == "HASH" { hash[$4 SUBSEP $1 SUBSEP $2] = substr($5, 1, 8); next }
  { key = $5 SUBSEP $1 SUBSEP $2
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    if (!($5 in shape_seen)) { shape_seen[$5] = 1; shapes[++ns] = $5 }
    ms[key, $4] = $6; tf[key, $4] = $7 }
  function cell(key, k) { return ((key, k) in ms) ? sprintf("%8.4f %6.1f", ms[key, k], tf[key, k]) : sprintf("%15s", "-") }
  function step(key, k) { return ((key, k) in ms) ? sprintf("%8.2f", ms[key, k]) : sprintf("%8s", "-") }
  END {
    for (s = 1; s <= ns; s++) {
      printf("\n%s (ms, TFLOP/s)\n", shapes[s])
      printf("%-9s %-7s %15s %15s %15s %9s %9s  %s\n", "frontend", "cuDNN", "forward", "bwd det", "bwd nondet",
             "step det", "nondet", "outputs")
      for (i = 1; i <= n; i++) {
        split(order[i], p, SUBSEP); if (p[1] != shapes[s]) continue
        printf("%-9s %-7s %s %s %s %s  %s  %s\n", p[2], p[3], cell(order[i], "attention_forward"),
               cell(order[i], "attention_backward_det"), cell(order[i], "attention_backward_nondet"),
               step(order[i], "attention_step_det"), step(order[i], "attention_step_nondet"),
               (order[i] in hash) ? hash[order[i]] : "-")
      }
      printf("layouts, same graph options (fwd / det bwd ms):\n%-9s %-7s %17s %17s %17s\n", "frontend", "cuDNN",
             "packed_qkv", "separate_bthd", "separate_bhtd")
      for (i = 1; i <= n; i++) {
        split(order[i], p, SUBSEP); if (p[1] != shapes[s]) continue
        line = sprintf("%-9s %-7s", p[2], p[3])
        split("packed_qkv separate_bthd separate_bhtd", lay, " ")
        for (l = 1; l <= 3; l++) {
          f = "sdpa_forward_" lay[l]; b = "sdpa_backward_det_" lay[l]
          line = line (((order[i], f) in ms) ? sprintf(" %8.4f/%8.4f", ms[order[i], f], ms[order[i], b]) : sprintf(" %17s", "-"))
        }
        print line
      }
    }
  }' "$rows"
echo "(FLOPs causal: forward 2*2*B*H*T*T*D/2, backward 2.5x; step: layers x (forward + backward), 12 at 124M,"
echo " 48 at 1.5B; outputs: hash of O, stats and the deterministic dQKV on the same inputs, equal = bitwise equal;"
echo " every run's whole output in $LOG_DIR)"
exit "$status"
