// Step verdict kernels (llmc/gpu/step_guard.cuh): single-thread scalars, a grid-stride conditional copy.
#include <algorithm>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/gpu/step_guard.cuh"
#include "llmc/host/check.h"

namespace {

__global__ void step_loss_accumulate_kernel(float* step_loss, const float* micro_loss, bool first) {
    step_loss[0] = first ? micro_loss[0] : step_loss[0] + micro_loss[0];
}

__global__ void step_verdict_kernel(int* apply, const float* loss_sum, const float* norm) {
    apply[0] = isfinite(loss_sum[0]) && isfinite(norm[0]) ? 1 : 0;
}

__global__ void restore_if_skipped_kernel(float* dst, const float* src, size_t n, const int* apply) {
    if (apply[0]) return;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

}  // namespace

void step_loss_accumulate(float* step_loss, const float* micro_loss, bool first, cudaStream_t stream) {
    step_loss_accumulate_kernel<<<1, 1, 0, stream>>>(step_loss, micro_loss, first);
    CHECK_LAUNCH();
}

void step_verdict(int* apply, const float* loss_sum, const float* norm, cudaStream_t stream) {
    step_verdict_kernel<<<1, 1, 0, stream>>>(apply, loss_sum, norm);
    CHECK_LAUNCH();
}

void restore_if_skipped(float* dst, const float* src, size_t n, const int* apply, cudaStream_t stream) {
    if (n == 0) return;
    const int block = 256;
    const int grid = (int)std::min<size_t>((n + block - 1) / block, 1024);
    restore_if_skipped_kernel<<<grid, block, 0, stream>>>(dst, src, n, apply);
    CHECK_LAUNCH();
}
