#!/usr/bin/env bash
# scripts/find_cudnn.sh and the Makefile's use of it (part of `make test`), on fake cuDNN trees: a system one
# (cudnn_version.h + libcudnn.so.9) and pip packages whose interpreter is a stand-in printing the package's
# folder. One [PASS]/[FAIL] line per case.
set -u
source "$(dirname "$0")/lib_host.sh" find_cudnn  # ROOT, WORK, pass/fail/skip
find_cudnn="$ROOT/scripts/find_cudnn.sh"

fake_cudnn() {  # include_dir lib_dir major minor patch
  mkdir -p "$1" "$2"
  printf '#define CUDNN_MAJOR %s\n#define CUDNN_MINOR %s\n#define CUDNN_PATCHLEVEL %s\n' "$3" "$4" "$5" > "$1/cudnn_version.h"
  : > "$2/libcudnn.so.9"
}
fake_pip() {  # name major minor patch: a package folder and an "interpreter" $WORK/py_NAME that names it
  fake_cudnn "$WORK/pip_$1/nvidia/cudnn/include" "$WORK/pip_$1/nvidia/cudnn/lib" "$2" "$3" "$4"
  printf '#!/bin/sh\necho %s\n' "$WORK/pip_$1/nvidia/cudnn" > "$WORK/py_$1"
  chmod +x "$WORK/py_$1"
}
fake_cudnn "$WORK/sys/include" "$WORK/sys/lib" 9 14 0
fake_pip new 9 19 1
fake_pip old 9 10 2
fake_pip same 9 14 0
fake_pip v8 8 9 7
mkdir -p "$WORK/pip_nolib/nvidia/cudnn/include" && cp "$WORK/pip_new/nvidia/cudnn/include/cudnn_version.h" "$WORK/pip_nolib/nvidia/cudnn/include"
printf '#!/bin/sh\necho %s\n' "$WORK/pip_nolib/nvidia/cudnn" > "$WORK/py_nolib" && chmod +x "$WORK/py_nolib"

found() {  # pythons -> what find_cudnn.sh prints with the fake system tree
  CUDNN_INCS="$WORK/nowhere $WORK/sys/include" CUDNN_LIBS="$WORK/sys/lib" CUDNN_PYTHONS="$1" bash "$find_cudnn"
}
expect() {  # name pythons expected-line
  local got
  got=$(found "$2")
  if [ "$got" = "$3" ]; then pass "$1"; else fail "$1" "expected '$3', got '$got'"; fi
}
sys="$WORK/sys/include $WORK/sys/lib"
pip_new="91901 $WORK/pip_new/nvidia/cudnn/include $WORK/pip_new/nvidia/cudnn/lib"
expect system_only "$WORK/no_such_python" "91400 $sys"
expect pip_newer_wins "$WORK/py_old $WORK/py_new" "$pip_new"
expect pip_older_loses "$WORK/py_old" "91400 $sys"
expect tie_keeps_system "$WORK/py_same" "91400 $sys"
expect not_cudnn9_or_no_library_skipped "$WORK/py_v8 $WORK/py_nolib" "91400 $sys"
got=$(CUDNN_INCS="$WORK/nowhere" CUDNN_LIBS="$WORK/nowhere" CUDNN_PYTHONS="$WORK/py_v8" bash "$find_cudnn")
if [ -z "$got" ]; then pass "none_found_prints_nothing"; else fail none_found_prints_nothing "printed '$got'"; fi
list=$(CUDNN_INCS="$WORK/sys/include" CUDNN_LIBS="$WORK/sys/lib" CUDNN_PYTHONS="$WORK/py_new" bash "$find_cudnn" --list)
if [ "$(printf '%s\n' "$list" | grep -c '^\* cuDNN 9.19.1 (pip(')" = 1 ] && printf '%s\n' "$list" | grep -q '^  cuDNN 9.14.0 (system)'; then
  pass "list_marks_the_chosen"
else
  fail list_marks_the_chosen "$list"
fi

# The Makefile: by default the system's cuDNN, whatever pip has; with CUDNN=newest a pip cuDNN newer than any
# real one (9.99) becomes the build's, its folder first in the library path and the run path; CUDNN_INCLUDE /
# CUDNN_LIB given by hand win over it; any other CUDNN is a one-line error.
fake_pip newest 9 99 0
mk() { env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS CUDNN_PYTHONS="$WORK/py_newest" make --no-print-directory -C "$ROOT" -n -p "$@" train_gpt 2>&1; }
lib="$WORK/pip_newest/nvidia/cudnn/lib"
vars=$(mk | grep -E '^(CUDNN_INCLUDE|LDLIBS) :?= ')
if [[ "$vars" != *pip_newest* ]] && printf '%s\n' "$vars" | grep -q '^LDLIBS := .*-l:libcudnn.so.9 '; then
  pass "makefile_default_is_the_system"
else
  fail makefile_default_is_the_system "$(head -c 600 <<< "$vars")"
fi
vars=$(mk CUDNN=newest | grep -E '^(CUDNN_INCLUDE|LDLIBS) :?= ')
if printf '%s\n' "$vars" | grep -q "^CUDNN_INCLUDE := $WORK/pip_newest/nvidia/cudnn/include$" &&
   printf '%s\n' "$vars" | grep -q "^LDLIBS := -L$lib .*-l:libcudnn.so.9 .*-Xlinker -rpath=$lib -Xlinker"; then
  pass "makefile_newest_takes_pip"
else
  fail makefile_newest_takes_pip "$(printf '%s\n' "$vars" | head -c 600)"
fi
vars=$(mk CUDNN=newest CUDNN_INCLUDE="$WORK/sys/include" CUDNN_LIB="$WORK/sys/lib" | grep -E '^LDLIBS :?= ')
if [[ "$vars" == *"-L$WORK/sys/lib "* ]] && [[ "$vars" != *pip_newest* ]]; then
  pass "makefile_override_wins"
else
  fail makefile_override_wins "$(head -c 600 <<< "$vars")"
fi
out=$(mk CUDNN=latest)
if [ "$(printf '%s\n' "$out" | grep -c "CUDNN must be system or newest, got 'latest'")" = 1 ]; then
  pass "makefile_bad_cudnn_is_one_line"
else
  fail makefile_bad_cudnn_is_one_line "$(head -c 400 <<< "$out")"
fi
