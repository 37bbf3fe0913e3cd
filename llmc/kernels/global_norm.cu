// Global norm: a fixed grid of 264 x 512 threads (two blocks per SM on a 132-SM H100/H200) reads the
// gradients once with 16-byte streaming loads; each thread sums the squares of a vector in fp32 and adds
// that to a double accumulator; each block reduces in double in a fixed tree and writes one float partial.
// A single-block kernel then adds the partials in a fixed order and forms the clip factor.
#include <cstdint>

#include "llmc/kernels/global_norm.cuh"

namespace {

constexpr int kNormBlocks = 264;
constexpr int kNormThreads = 512;  // <= 64 registers: two blocks per SM
constexpr int kUnroll = 4;         // 16-byte loads in flight per thread

__device__ inline double warp_reduce_sum_double(double v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
    return v;
}
// Fixed-order block sum in double (blockDim.x a multiple of 32); the result is valid in thread 0.
__device__ inline double block_reduce_sum_double(double v) {
    __shared__ double shared[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
    v = warp_reduce_sum_double(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_reduce_sum_double(lane < num_warps ? shared[lane] : 0.0);
    return v;
}

__device__ inline float square(bf16 x) {
    const float f = __bfloat162float(x);
    return f * f;  // exact: 8-bit significand squared
}

// ---------------------------------------------------------------------------------------------- kernels

// Vectors [head, head + 8 * nvec) take the 16-byte path; elements [0, head) and [head + 8 * nvec, P) the
// scalar one.
__global__ void __launch_bounds__(kNormThreads, 2)
    global_norm_squared_kernel(float* partials, const bf16* grads_P, size_t P, size_t head, size_t nvec,
                               ShardView view) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0.0;
    for (size_t base = tid; base < nvec; base += kUnroll * stride) {
        x128 in[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const size_t i = base + u * stride;
            if (i < nvec) in[u] = load128cs(grads_P + view.map(head + i * 8));
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            if (base + u * stride >= nvec) break;
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; k++) s += square(in[u][k]);
            acc += (double)s;
        }
    }
    const size_t nscalar = P - nvec * 8;
    for (size_t j = tid; j < nscalar; j += stride)
        acc += (double)square(grads_P[view.map(j < head ? j : j + nvec * 8)]);
    acc = block_reduce_sum_double(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = (float)acc;
}

__global__ void __launch_bounds__(256)
    grad_clip_scale_kernel(float* norm_out, float* scale_out, const float* partials, int num_partials,
                           float max_norm) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < num_partials; i += blockDim.x) acc += (double)partials[i];
    acc = block_reduce_sum_double(acc);
    if (threadIdx.x == 0) {
        const float norm = (float)sqrt(acc);  // NaN and inf pass through
        float scale = 1.0f;
        if (max_norm > 0.0f) {
            // torch: clip_coef = max_norm / (total_norm + 1e-6); clamp(clip_coef, max=1.0) keeps a NaN.
            const float coef = __fdiv_rn(max_norm, __fadd_rn(norm, 1e-6f));
            scale = coef > 1.0f ? 1.0f : coef;
        }
        norm_out[0] = norm;
        scale_out[0] = scale;
    }
}

}  // namespace

// -------------------------------------------------------------------------------------------- launchers

size_t global_norm_num_partials() { return kNormBlocks; }

void global_norm_squared(float* partials, const bf16* grads_P, size_t P, cudaStream_t stream,
                         const ShardView& view) {
    CHECK(((uintptr_t)grads_P & 1) == 0, "global_norm_squared: misaligned bf16 pointer");
    // Head: elements until the view is 16-byte aligned (a shard view: vectors from 0, or none).
    size_t head = view.identity ? ((16 - ((uintptr_t)grads_P & 15)) & 15) / 2 : 0, nvec = 0;
    if (head < P && view.vectorizable() && ((uintptr_t)(grads_P + head) & 15) == 0) {
        nvec = (P - head) / 8;
    } else {
        head = 0;
    }
    global_norm_squared_kernel<<<kNormBlocks, kNormThreads, 0, stream>>>(partials, grads_P, P, head, nvec,
                                                                         view);
    CHECK_LAUNCH();
}

void grad_clip_scale(float* norm_out, float* scale_out, const float* partials, int num_partials,
                     float max_norm, cudaStream_t stream) {
    grad_clip_scale_kernel<<<1, 256, 0, stream>>>(norm_out, scale_out, partials, num_partials, max_norm);
    CHECK_LAUNCH();
}
