#!/usr/bin/env bash
# The Makefile's GPU and clang targets on a machine without them, and its rebuild when the flags change (part of
# `make test`). One [PASS]/[SKIP]/[FAIL] line per case.
#   bench_without_gpu: `make bench`, `make bench-kernels` and `make bench-attention` stop within seconds, before
#     building anything, with one line naming the target and the missing GPU (skipped where a GPU is present:
#     they would run).
#   fuzz_without_clang: `make fuzz` with CLANGXX naming no compiler says how to get clang, in one line.
#   flags_change_rebuilds: objects built in a scratch BUILD folder are up to date for a make with the same flags
#     and out of date for one with another GPU_ARCH; with another CUDNN_INCLUDE (as CUDNN=newest gives) only the
#     one that includes a cuDNN header (llmc/run/version.cpp) is out of date, not one that does not.
#   cudnn_include_wins: with CUDNN_INCLUDE naming a folder (as CUDNN=newest does), the compilers' flags find its
#     cudnn_version.h, not the one of CUDA's include/ (where a cuDNN installed into the toolkit lives).
set -u
source "$(dirname "$0")/lib_host.sh" make_targets  # ROOT, WORK, pass/fail/skip
mk() { env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS timeout 60 make --no-print-directory -C "$ROOT" "$@"; }

if nvidia-smi -L >/dev/null 2>&1; then
  skip bench_without_gpu "this machine has a GPU (make bench would run the benchmarks)"
else
  why=""
  for goal in bench bench-kernels bench-attention; do
    start=$(date +%s)
    mk "$goal" > "$WORK/$goal.out" 2> "$WORK/$goal.err"
    rc=$? secs=$(($(date +%s) - start))
    [ $rc != 0 ] && [ $secs -lt 10 ] && [ ! -s "$WORK/$goal.out" ] && [ "$(wc -l < "$WORK/$goal.err")" = 1 ] &&
      grep -q "make $goal: no CUDA device on this machine (nvidia-smi -L failed); the benchmarks need a GPU" "$WORK/$goal.err" ||
      why="$why $goal (status $rc, ${secs}s): $(head -c 300 "$WORK/$goal.out" "$WORK/$goal.err" | tr '\n' ' ');"
  done
  if [ -z "$why" ]; then pass "bench_without_gpu (make bench, make bench-kernels, make bench-attention: one line, at once)"; else fail bench_without_gpu "$why"; fi
fi

mk fuzz CLANGXX=/nonexistent/clang++ > "$WORK/fuzz.out" 2> "$WORK/fuzz.err"
rc=$?
if [ $rc != 0 ] && grep -q "^fuzz: /nonexistent/clang++ not found: libFuzzer needs clang (Debian/Ubuntu: apt-get install clang" "$WORK/fuzz.err" &&
   [ "$(grep -c '^fuzz' "$WORK/fuzz.err")" = 1 ] && [ ! -s "$WORK/fuzz.out" ]; then
  pass "fuzz_without_clang (one line: apt-get install clang, or CLANGXX)"
else
  fail fuzz_without_clang "status $rc: $(head -c 300 "$WORK/fuzz.out" "$WORK/fuzz.err" | tr '\n' ' ')"
fi

plain=$WORK/b/llmc/host/lr_schedule.o dnn=$WORK/b/llmc/run/version.o
mk -s BUILD="$WORK/b" "$plain" "$dnn" > "$WORK/flags.out" 2>&1
built=$?
mk -q BUILD="$WORK/b" "$plain" "$dnn" 2>> "$WORK/flags.out"
same=$?
mk -q BUILD="$WORK/b" CUDNN_INCLUDE=/nonexistent/cudnn "$plain" 2>> "$WORK/flags.out"
cudnn_plain=$?
mk -q BUILD="$WORK/b" CUDNN_INCLUDE=/nonexistent/cudnn "$dnn" 2>> "$WORK/flags.out"
cudnn_dnn=$?
mk -q BUILD="$WORK/b" GPU_ARCH="-gencode arch=compute_80,code=sm_80" "$plain" 2>> "$WORK/flags.out"
arch=$?
if [ $built = 0 ] && [ $same = 0 ] && [ $cudnn_plain = 0 ] && [ $cudnn_dnn = 1 ] && [ $arch = 1 ]; then
  pass "flags_change_rebuilds (same flags: up to date; another CUDNN_INCLUDE: only the cuDNN user; another GPU_ARCH: all)"
else
  fail flags_change_rebuilds "build $built, same flags $same (want 0), other cuDNN: plain $cudnn_plain (want 0), cuDNN user $cudnn_dnn (want 1), other arch $arch (want 1): $(head -c 300 "$WORK/flags.out" | tr '\n' ' ')"
fi

# A stand-in cuDNN folder whose cudnn_version.h says minor 77; both compilers preprocess with the Makefile's flags.
mkdir -p "$WORK/cudnn77"
printf '#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 77\n#define CUDNN_PATCHLEVEL 0\n' > "$WORK/cudnn77/cudnn_version.h"
printf '#include <cudnn_version.h>\nminor CUDNN_MINOR\n' > "$WORK/cudnn77/probe.cpp"
flags_of() { mk -s CUDNN_INCLUDE="$WORK/cudnn77" --eval='print-%: ; @echo $($*)' "print-$1"; }
cxx=$(flags_of CXXFLAGS) nvcc_flags=$(flags_of NVCCFLAGS) why=""
# shellcheck disable=SC2086
got=$(cd "$ROOT" && ${CXX:-g++} $cxx -E -P -x c++ "$WORK/cudnn77/probe.cpp" 2>&1 | grep '^minor' | tail -1)
[ "$got" = "minor 77" ] || why="g++: '$got';"
nvcc=$(mk -s --eval='print-%: ; @echo $($*)' print-NVCC)
if [ -x "$nvcc" ]; then
  # shellcheck disable=SC2086
  got=$(cd "$ROOT" && "$nvcc" $nvcc_flags -E -x cu "$WORK/cudnn77/probe.cpp" 2>&1 | grep '^minor' | tail -1)
  [ "$got" = "minor 77" ] || why="$why nvcc: '$got'"
fi
if [ -z "$why" ]; then
  pass "cudnn_include_wins (the chosen cuDNN's headers come before CUDA's include/)"
else
  fail cudnn_include_wins "$why"
fi
