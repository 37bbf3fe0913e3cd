#!/usr/bin/env bash
# scripts/build_nccl.sh with a stand-in NCCL source tree and a stand-in toolkit (part of `make test`): the view
# of the toolkit NCCL's build sees (every entry of CUDA_HOME under its own name, lib64 -> lib included, the
# headers without nccl*.h), the library and headers in DEST, the cache by version, and an NCCL older than 2.30
# refused in one line. The stand-in's `make src.build` records what it saw instead of compiling NCCL.
# One [PASS]/[FAIL] line per case.
set -u
source "$(dirname "$0")/lib_host.sh" build_nccl  # ROOT, WORK, pass/fail/skip

# A toolkit laid out as CUDA 13.0's: lib/ a folder, lib64 a link to it, NCCL's own headers beside cuda.h.
cuda=$WORK/cuda
mkdir -p "$cuda/bin" "$cuda/lib" "$cuda/include"
ln -s lib "$cuda/lib64"
touch "$cuda/lib/libcudart.so" "$cuda/include/cuda.h" "$cuda/include/nccl.h" "$cuda/include/nccl_device.h"

# stand_in_source VERSION_MINOR: an NCCL tree whose src.build writes what the build saw into BUILDDIR
stand_in_source() {
  local src=$WORK/nccl_2_$1
  mkdir -p "$src/makefiles"
  printf 'NCCL_MAJOR   := 2\nNCCL_MINOR   := %s\nNCCL_PATCH   := 7\n' "$1" > "$src/makefiles/version.mk"
  cat > "$src/Makefile" <<'MK'
src.build:
	mkdir -p $(BUILDDIR)/lib $(BUILDDIR)/include
	ls $(CUDA_HOME) > $(BUILDDIR)/include/toolkit_entries.txt
	ls $(CUDA_HOME)/include > $(BUILDDIR)/include/toolkit_headers.txt
	ls $(CUDA_HOME)/lib64/ > $(BUILDDIR)/include/lib64_files.txt
	echo "$(ONLY_FUNCS)" > $(BUILDDIR)/include/only_funcs.txt
	touch $(BUILDDIR)/include/nccl.h $(BUILDDIR)/lib/libnccl.so.2.$(VERSION_MINOR).7
	ln -s libnccl.so.2.$(VERSION_MINOR).7 $(BUILDDIR)/lib/libnccl.so.2
MK
  sed -i "1i VERSION_MINOR := $1" "$src/Makefile"
  echo "$src"
}

src=$(stand_in_source 30)
dest=$WORK/dest
out=$(CUDA_HOME=$cuda JOBS=1 bash "$ROOT/scripts/build_nccl.sh" "$src" "$dest" 2>&1)
rc=$?
seen=$dest/include
if [ $rc = 0 ] && [ -e "$dest/lib/libnccl.so.2" ] && [ -f "$dest/include/nccl.h" ] &&
   [ "$(cat "$dest/VERSION" 2> /dev/null)" = 2.30.7 ] &&
   [ "$(tr '\n' ' ' < "$seen/toolkit_entries.txt")" = "bin include lib lib64 " ] &&
   [ "$(tr '\n' ' ' < "$seen/toolkit_headers.txt")" = "cuda.h " ] &&
   [ "$(cat "$seen/lib64_files.txt")" = libcudart.so ] &&
   grep -q "AllReduce" "$seen/only_funcs.txt"; then
  pass "toolkit_view_and_library (lib64 -> lib under its own name, no nccl*.h, the library in DEST)"
else
  fail toolkit_view_and_library "status $rc: $out | entries: $(cat "$seen/toolkit_entries.txt" 2> /dev/null)"
fi

out=$(CUDA_HOME=$cuda JOBS=1 bash "$ROOT/scripts/build_nccl.sh" "$src" "$dest" 2>&1)
rc=$?
if [ $rc = 0 ] && [ "$out" = "build_nccl: NCCL 2.30.7 already in $dest" ]; then
  pass "cached_by_version"
else
  fail cached_by_version "status $rc: $out"
fi

old=$(stand_in_source 28)
out=$(CUDA_HOME=$cuda bash "$ROOT/scripts/build_nccl.sh" "$old" "$WORK/dest_old" 2>&1)
rc=$?
if [ $rc = 2 ] && [ "$out" = "build_nccl: $old is NCCL 2.28.7; ranks sharing a GPU need 2.30 or later" ] &&
   [ ! -e "$WORK/dest_old" ]; then
  pass "older_nccl_one_line"
else
  fail older_nccl_one_line "status $rc: $out"
fi
