#!/usr/bin/env bash
# Did a change leave the GPU code as it was? No GPU needed: compiles every .cu under llmc/ of OLD_SRC_DIR (a
# plain copy of an older commit, e.g. `git worktree add /tmp/old REV`; its third_party/ is linked to this
# repository's when it has none) and of NEW_SRC_DIR (default: this tree) to cubins, with the Makefile's device
# flags without line info (`make print-cubin-flags`), and compares them kernel by kernel
# (scripts/check/cubin_compare.py: each kernel's machine code and constant banks, byte for byte). Identical
# machine code runs identically: with it, a refactor of kernel code needs no GPU run to show that training
# did not change (host code is another matter: scripts/check/refactor_check.sh on a GPU machine).
# Prints cubin_compare's lines; exit status 0 identical, 1 different, 2 when something could not run.
# About 40 s a tree on 2 cores (JOBS: parallel compilations, default the number of cores).
# Usage: machine_code.sh OLD_SRC_DIR [NEW_SRC_DIR]
set -uo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] && [ -d "$1" ] && [ -d "${2:-.}" ] ||
  { echo "usage: $0 OLD_SRC_DIR [NEW_SRC_DIR]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
old=$(cd "$1" && pwd)
new=$(cd "${2:-$repo}" && pwd)
jobs=${JOBS:-$(nproc)}
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
command -v "$nvcc" > /dev/null || { echo "machine_code: no nvcc at $nvcc (set NVCC)" >&2; exit 2; }
flags=$(make -s -C "$repo" print-cubin-flags) || { echo "machine_code: make print-cubin-flags failed" >&2; exit 2; }
out=$(mktemp -d /tmp/machine_code.XXXXXX)
trap 'rm -rf "$out"' EXIT

# cubins of every llmc/**/*.cu of tree $1 into $2 (same relative paths); the includes resolve in the tree
build() {
  local tree=$1 dest=$2
  if [ ! -e "$tree/third_party" ] && [ "$tree" != "$repo" ]; then ln -s "$repo/third_party" "$tree/third_party"; fi
  (cd "$tree" && find llmc -name '*.cu' | sort) > "$dest.list"
  [ -s "$dest.list" ] || { echo "machine_code: no .cu file under $tree/llmc" >&2; return 2; }
  # shellcheck disable=SC2086  # flags are words
  (cd "$tree" && xargs -P "$jobs" -I{} sh -c 'mkdir -p "$(dirname "$0/$1")" &&
      "$2" $3 -cubin -o "$0/${1%.cu}.cubin" "$1" 2> "$0/${1%.cu}.err" ||
      { echo "machine_code: $1 does not compile in $(pwd):" >&2; head -5 "$0/${1%.cu}.err" >&2; exit 255; }' \
      "$dest" {} "$nvcc" "$flags" < "$dest.list")
}
mkdir -p "$out/old" "$out/new"
build "$old" "$out/old" || exit 2
build "$new" "$out/new" || exit 2
find "$out" -name '*.err' -delete
python3 "$repo/scripts/check/cubin_compare.py" "$out/old" "$out/new"
