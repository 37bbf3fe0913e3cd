#!/usr/bin/env bash
# Builds NCCL 2.30 or later from a source checkout of NVIDIA/nccl (a tag v2.30.x or newer) into DEST
# (default third_party/nccl: lib/libnccl.so.2 and include/), for ranks that share a GPU (train_gpt
# --ranks-per-gpu; test/gpu_multi.sh uses DEST/lib when this machine has one GPU). Users with several GPUs
# keep the NCCL they have.
#   - Hopper only (NVCC_GENCODE, default sm_90) and only the collectives train_gpt calls (all-gather, FP32
#     all-reduce sum/max, BF16/FP32 reduce-scatter sum, broadcast, send/recv; NCCL's ONLY_FUNCS): a fraction
#     of NCCL's device code, so the build takes minutes, not tens of minutes, and the library is smaller.
#   - CUDA 13 ships NCCL's own headers in $CUDA_HOME/include, which NCCL's build would pick up before its own
#     (NCCL_GIN_MAX_CONNECTIONS undeclared): the build sees a view of the toolkit without them.
#   - Cached: nothing is done when DEST already holds a library of the source's version.
# Usage: bash scripts/build_nccl.sh NCCL_SRC [DEST]     Environment: JOBS [nproc], CUDA_HOME, NVCC_GENCODE
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 NCCL_SRC [DEST]" >&2; exit 2; }
SRC=$(cd "$1" && pwd) || { echo "build_nccl: $1 is not a directory" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${2:-$ROOT/third_party/nccl}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
JOBS=${JOBS:-$(nproc)}
NVCC_GENCODE=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
ONLY_FUNCS="AllGather * *|Broadcast * *|SendRecv|AllReduce (Sum|MinMax) f32 * *|ReduceScatter Sum (bf16|f32) * *"

version_file=$SRC/makefiles/version.mk
[ -f "$version_file" ] || { echo "build_nccl: $SRC is not an NCCL source tree (no makefiles/version.mk)" >&2; exit 2; }
version=$(awk '$1 ~ /^NCCL_(MAJOR|MINOR|PATCH)$/ {v = v (v ? "." : "") $3} END {print v}' "$version_file")
if [ "$(printf '%s\n' 2.30.0 "$version" | sort -V | head -1)" != 2.30.0 ]; then
  echo "build_nccl: $SRC is NCCL $version; ranks sharing a GPU need 2.30 or later" >&2
  exit 2
fi
if [ -e "$DEST/lib/libnccl.so.2" ] && [ "$(cat "$DEST/VERSION" 2> /dev/null)" = "$version" ]; then
  echo "build_nccl: NCCL $version already in $DEST"
  exit 0
fi

work=$(mktemp -d /tmp/build_nccl_XXXXXX)
trap 'rm -rf "$work"' EXIT
# the toolkit without its nccl*.h
mkdir -p "$work/cuda/include"
# (each link named after the entry, not its target: lib64 -> lib would otherwise collide with lib)
for f in "$CUDA_HOME"/*; do
  name=$(basename "$f")
  [ "$name" = include ] || ln -s "$(realpath "$f")" "$work/cuda/$name"
done
for f in "$CUDA_HOME"/include/*; do
  name=$(basename "$f")
  case $name in nccl*) ;; *) ln -s "$(realpath "$f")" "$work/cuda/include/$name" ;; esac
done
cp -r "$SRC" "$work/src"
start=$SECONDS
echo "build_nccl: NCCL $version for ${NVCC_GENCODE#*code=}, $JOBS jobs (a few minutes)"
make -C "$work/src" -j"$JOBS" src.build BUILDDIR="$work/build" CUDA_HOME="$work/cuda" NVCC_GENCODE="$NVCC_GENCODE" \
  ONLY_FUNCS="$ONLY_FUNCS" > "$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; exit 1; }
rm -rf "$DEST"
mkdir -p "$DEST/lib"
cp -a "$work/build/lib"/libnccl.so* "$DEST/lib/"
cp -r "$work/build/include" "$DEST/include"
strip --strip-unneeded "$DEST/lib/libnccl.so.$version" 2> /dev/null || true
echo "$version" > "$DEST/VERSION"
echo "build_nccl: NCCL $version in $DEST/lib ($(du -sh "$DEST/lib" | cut -f1), $((SECONDS - start)) s)"
