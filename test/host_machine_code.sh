#!/usr/bin/env bash
# scripts/check/machine_code.sh (and cubin_compare.py) on made-up trees of one .cu file each (part of
# `make test`; needs nvcc and python3, no GPU). One [PASS]/[FAIL]/[SKIP] line per case.
#   identical_from_another_folder: the same source in two folders (so other anonymous-namespace hashes in
#     the kernels' names) is IDENTICAL, status 0.
#   changed_constant: one kernel's constant changed: that kernel's machine code differs (status 1), the other
#     kernel is not named.
#   kernel_added: a kernel only in the new tree is named as such (status 1).
#   does_not_compile: a tree whose .cu does not compile stops the check with that file named (status 2).
set -u
source "$(dirname "$0")/lib_host.sh" machine_code python3  # ROOT, WORK, pass/fail/skip; python3 or skip
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
if ! command -v "$nvcc" > /dev/null; then
  skip machine_code "no nvcc at $nvcc"
  exit 0
fi

# tree NAME FACTOR [EXTRA]: llmc/k.cu with a kernel in an anonymous namespace (x *= FACTOR), a global one, and
# EXTRA appended
tree() {
  mkdir -p "$WORK/$1/llmc"
  cat > "$WORK/$1/llmc/k.cu" << EOF
namespace {
__global__ void scale_kernel(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= $2;
}
}  // namespace
__global__ void add_kernel(float* x, const float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}
void launch(float* x, int n) { scale_kernel<<<(n + 255) / 256, 256>>>(x, n); }
${3:-}
EOF
}
run() { bash "$ROOT/scripts/check/machine_code.sh" "$WORK/$1" "$WORK/$2" 2>&1; }

tree a 2.0f
tree b 2.0f
out=$(run a b) rc=$?
if [ $rc = 0 ] && [[ "$out" == *"IDENTICAL: 2 kernels"* ]]; then
  pass "identical_from_another_folder ($out)"
else
  fail identical_from_another_folder "status $rc: $out"
fi

tree c 3.0f
out=$(run a c) rc=$?
if [ $rc = 1 ] && [[ "$out" == *"differ: llmc/k.cubin: machine code"*scale_kernel* ]] && [[ "$out" != *add_kernel* ]]; then
  pass "changed_constant (status 1, only scale_kernel named)"
else
  fail changed_constant "status $rc: $out"
fi

tree d 2.0f '__global__ void sub_kernel(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] -= 1.0f; }'
out=$(run a d) rc=$?
if [ $rc = 1 ] && [[ "$out" == *"only in new: llmc/k.cubin: machine code"*sub_kernel* ]]; then
  pass "kernel_added (status 1, sub_kernel only in new)"
else
  fail kernel_added "status $rc: $out"
fi

tree e 'undeclared_name'
out=$(run a e) rc=$?
if [ $rc = 2 ] && [[ "$out" == *"llmc/k.cu does not compile"* ]]; then
  pass "does_not_compile (status 2, the file named)"
else
  fail does_not_compile "status $rc: $out"
fi
