#!/usr/bin/env bash
# scripts/runs/lever_checks.sh with a stand-in trainer (part of `make test`): one A and its noise runs per size
# shared by every lever, each lever's flag or library reaching its run B, the verdict table and the exit status, a second
# call that reuses every finished run, the cuDNN lever skipped without CUDNN_LIB, CUDNN_LIB=newest through
# scripts/find_cudnn.sh (found, none found, the binary's own), and bad usage. The stand-in
# (test/stand_in_trainer.sh) moves its loss by FLAG_DELTAS for a flag and by LIBPATH_DELTA for a library path.
# One [PASS]/[FAIL] line per case.
set -u
source "$(dirname "$0")/lib_host.sh" lever_checks python3  # ROOT, WORK, pass/fail/skip
cp "$ROOT/test/stand_in_trainer.sh" "$WORK/fake_train"
mkdir -p "$WORK/newcudnn"
export STEPS="0 100 200" STAND_IN_ARGS="$WORK/args.txt" A_BIN=./fake_train B_BIN=./fake_train
# v = 3: +0.0015 is a ratio of 1.0005 (within 0.1%), +0.03 one of 1.0100 (outside); the noise repeat (its flag
# --no-deterministic, the no_deterministic lever's too) 1.0005
export FLAG_DELTAS="--fuse-residual=0.03" NOISE_DELTA=0.0015
export LIBPATH_MATCH=newcudnn LIBPATH_DELTA=0
checks() { (cd "$WORK" && bash "$ROOT/scripts/runs/lever_checks.sh" "$@" 2>&1); }
runs() { if [ -f "$WORK/args.txt" ]; then wc -l < "$WORK/args.txt"; else echo 0; fi; }

out=$(CUDNN_LIB="$WORK/newcudnn" checks lc t v)
rc=$?
if [ $rc = 1 ] && [ "$(runs)" = 14 ] &&
   grep -q "^| 124m | cudnn_newest | 1.0000 | 1.0000 | 1.0005 | 1.0005 | yes | yes |$" <<< "$out" &&
   grep -q "^| 124m | fuse_residual | 1.0100 | 1.0100 | 1.0005 | 1.0005 | no | no |$" <<< "$out" &&
   grep -q "^| 1.5b | no_deterministic | 1.0005 | 1.0005 | 1.0005 | 1.0005 | yes | yes |$" <<< "$out" &&
   [ "$(grep -c '^| 1.5b | ' <<< "$out")" = 3 ] &&
   grep -q "^LD_LIBRARY_PATH=$WORK/newcudnn" "$WORK/lc/124m.cudnn_newest.cmd" &&
   [ "$(grep -c -- '--fuse-residual' "$WORK/args.txt")" = 2 ] &&
   [ "$(grep -c -- '--no-deterministic' "$WORK/args.txt")" = 8 ] &&
   [ "$(grep -c -- '--model 1.5b .*--precision fp8' "$WORK/args.txt")" = 7 ]; then
  pass "three_levers (A and its 3 noise runs once per size, 14 runs; each lever's flag or library in its run; exit 1 for the outlier)"
else
  fail three_levers "status $rc, $(runs) runs: $(tail -c 700 <<< "$out")"
fi

out=$(CUDNN_LIB="$WORK/newcudnn" LEVERS=fuse_residual TOL=0.02 checks lc t v)
rc=$?
if [ $rc = 0 ] && [ "$(runs)" = 14 ] && grep -q "^| 124m | fuse_residual | 1.0100 | .* | yes | yes |$" <<< "$out" &&
   grep -q "^| 1.5b | cudnn_newest | 1.0000 | 1.0000 | 1.0005 | 1.0005 | yes (of 0.001) | yes |$" <<< "$out"; then
  pass "second_call_reuses (no run again, the lever's verdict, exit 0; an earlier call's row names its TOL)"
else
  fail second_call_reuses "status $rc, $(runs) runs: $(tail -c 500 <<< "$out")"
fi

rm -f "$WORK/args.txt"
out=$(SIZES=124m LEVERS="cudnn_newest no_deterministic" checks lc2 t v)
rc=$?
if [ $rc = 0 ] && [ "$(runs)" = 5 ] &&
   grep -q "^lever_checks 124m cudnn_newest: skipped (CUDNN_LIB not set)$" <<< "$out" &&
   grep -q "^| 124m | cudnn_newest | - | - | - | - | skipped (CUDNN_LIB not set) | - |$" <<< "$out"; then
  pass "cudnn_lever_needs_its_library (skipped, said in the table)"
else
  fail cudnn_lever_needs_its_library "status $rc, $(runs) runs: $(tail -c 500 <<< "$out")"
fi

# one_line_error NAME WANT: $out (a call of checks, status $rc) is the one line WANT, exit 2, and no run started.
one_line_error() {
  if [ "$rc" = 2 ] && [ "$(runs)" = 0 ] && [ "$out" = "$2" ]; then
    pass "$1"
  else
    fail "$1" "status $rc, $(runs) runs: $out"
  fi
}

rm -f "$WORK/args.txt"
out=$(LEVERS="fuse_residual pdl" checks lc3 t v)
rc=$?
one_line_error "unknown_lever_one_line (before any run)" \
  "lever_checks: LEVERS takes cudnn_newest, fuse_residual and no_deterministic, got 'pdl'"
out=$(CUDNN_LIB="$WORK/nowhere" checks lc3 t v)
rc=$?
one_line_error missing_library_one_line "lever_checks: CUDNN_LIB=$WORK/nowhere is not a folder"

# CUDNN_LIB=newest: the library scripts/find_cudnn.sh picks (here a pip cuDNN 9.99 of a stand-in interpreter,
# no system one) reaches run B; with none found, one line before any run.
mkdir -p "$WORK/pip/nvidia/cudnn/include" "$WORK/pip/nvidia/cudnn/lib" "$WORK/bin"
printf '#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 99\n#define CUDNN_PATCHLEVEL 0\n' \
  > "$WORK/pip/nvidia/cudnn/include/cudnn_version.h"
touch "$WORK/pip/nvidia/cudnn/lib/libcudnn.so.9"
printf '#!/bin/sh\necho %s\n' "$WORK/pip/nvidia/cudnn" > "$WORK/bin/py" && chmod +x "$WORK/bin/py"
export CUDNN_INCS="$WORK/none" CUDNN_LIBS="$WORK/none"
rm -f "$WORK/args.txt"
out=$(SIZES=124m LEVERS=cudnn_newest CUDNN_LIB=newest CUDNN_PYTHONS="$WORK/bin/py" LIBPATH_MATCH=pip/nvidia \
      LIBPATH_DELTA=0.03 checks lc4 t v)
rc=$?
if [ $rc = 1 ] && [ "$(runs)" = 5 ] && grep -q "^lever_checks: cudnn_newest with $WORK/pip/nvidia/cudnn/lib$" <<< "$out" &&
   grep -q "^LD_LIBRARY_PATH=$WORK/pip/nvidia/cudnn/lib" "$WORK/lc4/124m.cudnn_newest.cmd" &&
   grep -q "^| 124m | cudnn_newest | 1.0100 | 1.0100 | 1.0005 | 1.0005 | no | no |$" <<< "$out"; then
  pass "cudnn_newest_found (find_cudnn.sh's pip library in run B, its verdict)"
else
  fail cudnn_newest_found "status $rc, $(runs) runs: $(tail -c 500 <<< "$out")"
fi
rm -f "$WORK/args.txt"
out=$(CUDNN_LIB=newest CUDNN_PYTHONS="$WORK/none/py" checks lc5 t v)
rc=$?
one_line_error cudnn_newest_none_one_line "lever_checks: CUDNN_LIB=newest: scripts/find_cudnn.sh found no cuDNN 9"
# A binary that loads that very library already: nothing to check, one line (a small ELF linked against a
# stand-in libcudnn.so.9 in the pip folder; ldd resolves it through the binary's rpath).
lib="$WORK/pip/nvidia/cudnn/lib"
if command -v cc > /dev/null 2>&1 &&
   echo 'int cudnn_stand_in(void) { return 0; }' > "$WORK/c.c" && cc -shared -fPIC -o "$lib/libcudnn.so.9" "$WORK/c.c" \
     -Wl,-soname,libcudnn.so.9 && echo 'int cudnn_stand_in(void); int main(void) { return cudnn_stand_in(); }' \
     > "$WORK/m.c" && cc -o "$WORK/loads_it" "$WORK/m.c" "$lib/libcudnn.so.9" -Wl,-rpath,"$lib"; then
  out=$(CUDNN_LIB=newest CUDNN_PYTHONS="$WORK/bin/py" B_BIN=./loads_it checks lc6 t v)
  rc=$?
  one_line_error cudnn_newest_already_loaded_one_line \
    "lever_checks: CUDNN_LIB=newest is $lib, the cuDNN ./loads_it loads already"
else
  skip cudnn_newest_already_loaded_one_line "no C compiler to build the stand-in binary"
fi
