#!/usr/bin/env bash
# Does this tree build with a CUDA toolkit other than the installed one? No GPU needed: fetches a toolkit
# into a cache folder, runs `make all` with it (CUDA_HOME) in a git worktree of HEAD (with this checkout's
# third_party/), and lists the kernels whose registers or stack frame differ from the installed toolkit's
# build of the same commit (what a user of that toolkit would run differently). Builds, links and --version
# are checked; nothing runs on a GPU.
#   debian       Debian trixie's non-free CUDA packages (nvcc, headers, cuBLAS, NVRTC; CUDA 12.4 when
#                written; ~1.3 GB to fetch). PyPI's CUDA 12 wheels have no nvcc driver, so 12.x comes from here.
#   pypi:13.X.Y  PyPI's cuda-toolkit wheels of that version (nvcc, runtime, cuBLAS, NVRTC, NVTX, CCCL; ~650 MB)
# cuDNN and NCCL are the installed ones (their headers and libraries do not depend on the toolkit); the
# driver API stub comes from the installed toolkit.
# Usage: other_toolkit.sh debian|pypi:13.X.Y   (TOOLKIT_CACHE: default ~/.cache/train_gpt/toolkits)
# Exit status: 0 built, 1 did not build (the log's first errors printed), 2 could not fetch or set up.
set -uo pipefail
spec=${1:-}
case "$spec" in
  debian) name=debian-trixie ;;
  pypi:13.*) name=pypi-${spec#pypi:} ;;
  *) echo "usage: $0 debian|pypi:13.X.Y" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/../.." && pwd)
installed=${CUDA_HOME:-/usr/local/cuda}
cache=${TOOLKIT_CACHE:-$HOME/.cache/train_gpt/toolkits}/$name
fail() { echo "other_toolkit: $*" >&2; exit 2; }
mkdir -p "$cache" || fail "cannot make $cache"
root=$cache/cuda  # the assembled CUDA_HOME: bin/ include/ lib64/ (+ lib64/stubs) nvvm/

fetch_debian() {
  local pool=http://deb.debian.org/debian index=$cache/Packages
  curl -fsS "$pool/dists/trixie/non-free/binary-amd64/Packages.xz" | xz -dc > "$index" ||
    fail "cannot read Debian trixie's non-free package index"
  mkdir -p "$cache/debs" "$cache/root"
  local p file
  for p in nvidia-cuda-toolkit nvidia-cuda-dev libcudart12 libcublas12 libcublaslt12 libnvrtc12 libnvvm4 \
    libnvtoolsext1; do
    file=$(awk -v RS= -v p="$p" '$0 ~ "(^|\n)Package: " p "\n"' "$index" | sed -n 's/^Filename: //p' | head -1)
    [ -n "$file" ] || fail "no package $p in Debian trixie's non-free index"
    [ -s "$cache/debs/${file##*/}" ] || curl -fsS -o "$cache/debs/${file##*/}" "$pool/$file" ||
      fail "cannot fetch $pool/$file"
    dpkg -x "$cache/debs/${file##*/}" "$cache/root" || fail "cannot unpack ${file##*/}"
  done
  # Debian's layout (tools in /usr/lib/nvidia-cuda-toolkit, headers in /usr/include, libraries in the
  # multiarch folder) as a CUDA_HOME, with an nvcc.profile that points into it
  local r=$cache/root/usr
  mkdir -p "$root/bin" "$root/nvvm" "$root/lib64/stubs" || fail "cannot make $root"
  cp -a "$r/lib/nvidia-cuda-toolkit/bin/cicc" "$r/lib/nvidia-cuda-toolkit/bin/nvcc" \
    "$r/lib/nvidia-cuda-toolkit/bin/crt" "$root/bin/" || fail "no nvcc in the packages"
  for b in ptxas fatbinary nvlink cudafe++ bin2c cuobjdump; do cp -a "$r/bin/$b" "$root/bin/"; done
  cp -a "$r/lib/nvidia-cuda-toolkit/libdevice" "$root/nvvm/"
  cp -a "$r/include" "$root/include"
  cp -a "$r"/lib/x86_64-linux-gnu/*.so* "$r"/lib/x86_64-linux-gnu/*.a "$root/lib64/"
  cp -a "$r/lib/x86_64-linux-gnu/stubs/libcuda.so" "$root/lib64/stubs/"
  cat > "$root/bin/nvcc.profile" << 'EOF'
TOP = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH += $(TOP)/bin:
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
EOF
}

fetch_pypi() {
  local version=${spec#pypi:} stub
  mkdir -p "$cache/wheels" "$cache/x"
  python3 -m pip download -q -d "$cache/wheels" \
    "cuda-toolkit[nvcc,crt,cudart,cublas,nvrtc,nvtx,cccl,cuobjdump]==$version" ||
    fail "pip cannot fetch cuda-toolkit $version"
  for w in "$cache"/wheels/nvidia_*.whl; do
    python3 -m zipfile -e "$w" "$cache/x" || fail "cannot unpack $w"
  done
  [ -d "$cache/x/nvidia/cu13/bin" ] || fail "the wheels hold no nvidia/cu13 toolkit"
  ln -sfn "$cache/x/nvidia/cu13" "$root"
  chmod +x "$root"/bin/* "$root"/nvvm/bin/* 2> /dev/null  # zipfile keeps no modes
  # the wheels name their libraries by major version only; the linker's -lNAME wants NAME.so
  (cd "$root/lib" && for l in lib*.so.13; do ln -sfn "$l" "${l%.13}"; done)
  ln -sfn lib "$root/lib64"
  mkdir -p "$root/lib/stubs"
  stub=
  for f in "$installed"/lib64/stubs/libcuda.so "$installed"/lib/stubs/libcuda.so; do [ -e "$f" ] && stub=$f; done
  [ -n "$stub" ] || fail "no libcuda.so stub in $installed (set CUDA_HOME to the installed toolkit)"
  cp -a "$stub" "$root/lib/stubs/"
}

if [ ! -x "$root/bin/nvcc" ]; then
  echo "other_toolkit: fetching $spec into $cache"
  case "$spec" in debian) fetch_debian ;; *) fetch_pypi ;; esac
fi
"$root/bin/nvcc" --version > "$cache/nvcc_version.txt" 2>&1 || fail "$root/bin/nvcc does not run"
version=$(sed -n 's/.*release \([0-9.]*\),.*/\1/p' "$cache/nvcc_version.txt")

# cuDNN and NCCL as the installed build finds them, their headers copied (their folder may be the installed
# toolkit's include/, which must not shadow the other toolkit's headers)
read -r cudnn_inc cudnn_lib nccl_inc nccl_lib < <(make -s -C "$repo" print-dep-dirs) ||
  fail "make print-dep-dirs failed"
deps=$cache/deps
mkdir -p "$deps/include" "$deps/lib"
cp -a "$cudnn_inc"/cudnn*.h "$nccl_inc"/nccl*.h "$deps/include/" || fail "no cuDNN or NCCL headers found"
ln -sfn "$cudnn_lib/libcudnn.so.9" "$deps/lib/libcudnn.so.9"
ln -sfn "$nccl_lib/libnccl.so" "$deps/lib/libnccl.so"

# two worktrees of HEAD: the other toolkit's build and the installed one's (for the kernel comparison)
tree=$(mktemp -d /tmp/other_toolkit.XXXXXX)
default_tree=$(mktemp -d /tmp/other_toolkit_installed.XXXXXX)
cleanup() {
  for t in "$tree" "$default_tree"; do git -C "$repo" worktree remove --force "$t" > /dev/null 2>&1; rm -rf "$t"; done
}
trap cleanup EXIT
for t in "$tree" "$default_tree"; do
  git -C "$repo" worktree add -q --detach -f "$t" HEAD || fail "cannot add a worktree of HEAD at $t"
  ln -sfn "$repo/third_party" "$t/third_party"
done
log=$cache/build.log
start=$(date +%s)
echo "other_toolkit: make all with CUDA $version ($root), log in $log"
if ! make -C "$tree" -j"$(nproc)" CUDA_HOME="$root" CUDNN_INCLUDE="$deps/include" CUDNN_LIB="$deps/lib" \
  NCCL_INCLUDE="$deps/include" NCCL_LIB="$deps/lib" all > "$log" 2>&1; then
  grep -m 10 -E 'error|undefined reference' "$log" >&2
  echo "other_toolkit: error: the tree does not build with CUDA $version (log: $log)" >&2
  exit 1
fi
echo "other_toolkit: every target of make all built with CUDA $version in $(($(date +%s) - start)) s"
"$tree/train_gpt" --version 2>&1 | grep -E 'CUDA runtime|cuBLASLt' | sed 's/^/  /'

# Registers and stack frame of each kernel, against the installed toolkit's build of the same commit
objdump=$root/bin/cuobjdump
[ -x "$objdump" ] || { echo "other_toolkit: no cuobjdump in the toolkit: kernels not compared"; exit 0; }
if ! make -C "$default_tree" -j"$(nproc)" build/libllmc.a > "$cache/installed_build.log" 2>&1; then
  echo "other_toolkit: the installed toolkit's build failed ($cache/installed_build.log): kernels not compared"
  exit 0
fi
export LC_ALL=C
usage() {  # one line a kernel: name (anonymous namespaces as cubin_compare.py names them), registers, stack
  "$objdump" -res-usage "$1" 2> /dev/null | awk '
    /Function [^:]*:/ { f = $2; sub(/:$/, "", f); next }
    f != "" && /REG:/ { match($0, /REG:[0-9]+/); r = substr($0, RSTART + 4, RLENGTH - 4)
                        match($0, /STACK:[0-9]+/); s = substr($0, RSTART + 6, RLENGTH - 6)
                        print f, r, s; f = "" }' |
    PYTHONPATH="$repo/scripts/check" python3 -c '
import sys
from cubin_compare import normalize
for line in sys.stdin:
    name, regs, stack = line.split()
    print(normalize(name), regs, stack)' | sort -k1,1
}
join <(usage "$default_tree/build/libllmc.a") <(usage "$tree/build/libllmc.a") |
  awk -v v="$version" '
    { k++ }
    $2 != $4 || $3 != $5 { if (!n++) print "  kernels whose registers or stack bytes differ (installed -> CUDA " v "):"
                           printf "  regs %3d -> %3d, stack %4d -> %4d  %s\n", $2, $4, $3, $5, substr($1, 1, 100) }
    END { print "  " k " kernels compared, " n + 0 " differ in registers or stack" }'
