// Parameter initialization on the GPU from a counter-based RNG, so a 1.5B-parameter model initializes in
// milliseconds and the values depend only on (seed, tensor index, element index): reproducible across runs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "llmc/cuda_common.cuh"

// out[i] = stddev * z_i with z_i ~ N(0, 1) (Box-Muller over a splitmix64 hash of (seed, stream, i)).
void fill_normal(float* out, size_t n, float stddev, uint64_t seed, uint64_t stream_id, cudaStream_t stream);
void fill_constant(float* out, size_t n, float value, cudaStream_t stream);
// dst[i] = bf16(src[i]), round to nearest.
void convert_to_bf16(bf16* dst, const float* src, size_t n, cudaStream_t stream);
