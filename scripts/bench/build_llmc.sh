#!/usr/bin/env bash
# Builds llm.c's train_gpt2cu (BF16, cuDNN flash attention when the cudnn-frontend headers of `make deps` are
# there) from a checkout of github.com/karpathy/llm.c, in a copy outside this repository, for `make bench
# LLMC=...`. CUDA 13 changed cudaMemAdvise to take a cudaMemLocation, and cudnn-frontend 1.x needs NVRTC and
# the driver library at link time: the copy gets those two one-line changes.
# Usage: scripts/bench/build_llmc.sh LLMC_SRC [BUILD_DIR]   (prints the binary's path last)
set -eu
src=${1:?usage: scripts/bench/build_llmc.sh LLMC_SRC [BUILD_DIR]}
build=${2:-/tmp/llmc_build}
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -f "$src/train_gpt2.cu" ] || { echo "build_llmc: $src has no train_gpt2.cu (not an llm.c checkout)" >&2; exit 2; }
rm -rf "$build" && mkdir -p "$build" && cp -r "$src"/. "$build"
cd "$build"
sed -i 's/cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId)/cudaMemAdviseSetPreferredLocation, cudaMemLocation{cudaMemLocationTypeHost, 0})/' \
  llmc/cuda_utils.cuh
# cudnn-frontend 1.x (make deps) compiles some kernels at run time: it needs NVRTC and the driver API too
sed -i 's/NVCC_LDFLAGS += -lcudnn$/NVCC_LDFLAGS += -lcudnn -lnvrtc -lcuda/' Makefile
cap=${GPU_COMPUTE_CAPABILITY:-90}
# cuDNN's header and library where this repository's Makefile finds them (llm.c's Makefile only names -lcudnn)
cuda=${CUDA_HOME:-/usr/local/cuda}
for d in "$cuda/include" /usr/include/x86_64-linux-gnu /usr/include /usr/local/include; do
  [ -f "$d/cudnn.h" ] && { export CPATH="$d${CPATH:+:$CPATH}"; break; }
done
for d in "$cuda/lib64" "$cuda/lib" /usr/lib/x86_64-linux-gnu /usr/local/lib; do
  [ -e "$d/libcudnn.so" ] && { export LIBRARY_PATH="$d${LIBRARY_PATH:+:$LIBRARY_PATH}"; break; }
done
# llm.c links NVML (libnvidia-ml, part of the GPU driver). A build machine without a driver gets a stand-in
# library with the functions llm.c names, all returning 0, for the link only: the driver's real one loads when
# the binary runs on a GPU machine (same soname).
if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so '; then
  have=""
  for d in ${LIBRARY_PATH:+${LIBRARY_PATH//:/ }} "$cuda/lib64/stubs" "$cuda/lib/stubs"; do [ -e "$d/libnvidia-ml.so" ] && have=$d; done
  if [ -z "$have" ]; then
    mkdir -p nvml_stub
    grep -rhoE '\bnvml[A-Z][A-Za-z0-9_]*\(' llmc train_gpt2.cu | tr -d '(' | sort -u |
      sed 's/.*/int &(void) { return 0; }/' > nvml_stub/stub.c
    grep -q ' nvmlInit_v2(' nvml_stub/stub.c ||  # nvml.h's nvmlInit is a macro for it
      echo 'int nvmlInit_v2(void) { return 0; }' >> nvml_stub/stub.c
    gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o nvml_stub/libnvidia-ml.so nvml_stub/stub.c ||
      { echo "build_llmc: no libnvidia-ml here and the stand-in did not build" >&2; exit 1; }
    export LIBRARY_PATH="$build/nvml_stub${LIBRARY_PATH:+:$LIBRARY_PATH}"
    echo "build_llmc: no libnvidia-ml on this machine (no GPU driver): linking against a stand-in"
  fi
fi
fe="$repo/third_party/cudnn-frontend/include"
# (llm.c's Makefile looks for the headers in ./cudnn-frontend/include before it takes CUDNN_FRONTEND_PATH)
[ -d "$fe" ] && ln -sfn "$repo/third_party/cudnn-frontend" cudnn-frontend
if [ -d "$fe" ] && make train_gpt2cu USE_CUDNN=1 CUDNN_FRONTEND_PATH="$fe" GPU_COMPUTE_CAPABILITY="$cap" \
  NO_MULTI_GPU=1 NO_USE_MPI=1 > build_cudnn.log 2>&1; then
  echo "build_llmc: built with cuDNN flash attention"
else
  echo "build_llmc: the cuDNN build failed ($build/build_cudnn.log: $(grep -m1 -iE 'error' build_cudnn.log)), building without cuDNN"
  make clean > /dev/null 2>&1 || true
  make train_gpt2cu GPU_COMPUTE_CAPABILITY="$cap" NO_MULTI_GPU=1 NO_USE_MPI=1 > build.log 2>&1 ||
    { tail -20 build.log; exit 1; }
fi
echo "$build/train_gpt2cu"
