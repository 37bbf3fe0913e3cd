#include <algorithm>

#include "llmc/kernels/init.cuh"

__device__ inline uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__global__ void fill_normal_kernel(float* out, size_t n, float stddev, uint64_t key, ShardView view) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t r = splitmix64(key ^ splitmix64(view.map(i)));
        // two 24-bit uniforms in (0, 1]
        float u1 = ((float)(r >> 40) + 1.0f) * (1.0f / 16777216.0f);
        float u2 = (float)((r >> 16) & 0xFFFFFF) * (1.0f / 16777216.0f);
        out[i] = stddev * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    }
}

__global__ void fill_constant_kernel(float* out, size_t n, float value) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = value;
}

__global__ void convert_to_bf16_kernel(bf16* dst, const float* src, size_t n, ShardView view) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[view.map(i)] = __float2bfloat16_rn(src[i]);
}

static int grid_for(size_t n) { return (int)std::min<size_t>((n + 255) / 256, 132 * 16); }

void fill_normal(float* out, size_t n, float stddev, uint64_t seed, uint64_t stream_id, cudaStream_t stream,
                 const ShardView& view) {
    uint64_t key = seed * 0x2545F4914F6CDD1Dull + stream_id * 0x9E3779B97F4A7C15ull;
    fill_normal_kernel<<<grid_for(n), 256, 0, stream>>>(out, n, stddev, key, view);
    CHECK_LAUNCH();
}

void fill_constant(float* out, size_t n, float value, cudaStream_t stream) {
    fill_constant_kernel<<<grid_for(n), 256, 0, stream>>>(out, n, value);
    CHECK_LAUNCH();
}

void convert_to_bf16(bf16* dst, const float* src, size_t n, cudaStream_t stream, const ShardView& view) {
    convert_to_bf16_kernel<<<grid_for(n), 256, 0, stream>>>(dst, src, n, view);
    CHECK_LAUNCH();
}
