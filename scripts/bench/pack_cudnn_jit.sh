#!/usr/bin/env bash
# Packs the part of a PyPI cuDNN (nvidia-cudnn-cu13) that cuDNN's "GRAPH_JIT_ONLY" library configuration
# needs, libcudnn.so.9 + libcudnn_graph.so.9 + libcudnn_engines_runtime_compiled.so.9 (the graph API with the
# runtime-compiled engines, where the SDPA kernels are; without the precompiled engines and heuristics
# libraries), with the version's headers in include/ (1.2 MB; to build against them, as the frontend enables
# what needs a newer cuDNN only where both the headers and the library have it; such a binary must link this
# libcudnn.so too, e.g. make BUILD=build928 NVCC="nvcc -IDIR/include -LDIR" build928/dev/bench_attention_fe_new,
# because the newer headers make the frontend call functions older libraries lack), into one .tar.xz small enough
# to travel to a machine without network (scripts/bench/bench_attention.sh takes the archive in CUDNN_DIRS and
# runs with CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY). Prints each library's size, raw and in the archive. Needs network
# and python3 -m pip.
# Usage: pack_cudnn_jit.sh VERSION OUT.tar.xz     e.g. pack_cudnn_jit.sh 9.28.1.4 third_party/cudnn-9.28.1.4-jit.tar.xz
set -eu
[ $# = 2 ] || { echo "usage: pack_cudnn_jit.sh VERSION OUT.tar.xz" >&2; exit 2; }
version=$1 out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
  -d "$tmp" "nvidia-cudnn-cu13==$version"
libs=(libcudnn.so.9 libcudnn_graph.so.9 libcudnn_engines_runtime_compiled.so.9)
dir="cudnn-$version-jit"
mkdir -p "$tmp/$dir"
for l in "${libs[@]}"; do unzip -q -j "$tmp"/nvidia_cudnn_cu13-*.whl "nvidia/cudnn/lib/$l" -d "$tmp/$dir"; done
unzip -q -j "$tmp"/nvidia_cudnn_cu13-*.whl 'nvidia/cudnn/include/*' -d "$tmp/$dir/include"
ln -s libcudnn.so.9 "$tmp/$dir/libcudnn.so"  # for -L at link time (a binary built against these headers)
mkdir -p "$(dirname "$out")"
tar -C "$tmp" -cf - "$dir" | xz -9 -T0 >"$out"
for l in "${libs[@]}"; do printf '%-40s %8.1f MiB raw\n' "$l" "$(stat -c %s "$tmp/$dir/$l" | awk '{print $1 / 1048576}')"; done
printf '%-40s %8.1f MiB (xz -9)\n' "$out" "$(stat -c %s "$out" | awk '{print $1 / 1048576}')"
