// Parameter initialization on the GPU from a counter-based RNG, so a 1.5B-parameter model initializes in
// milliseconds and the values depend only on (seed, tensor index, element index): reproducible across runs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/parallel/shard_view.h"

// out[i] = stddev * z_i with z_i ~ N(0, 1) (Box-Muller over a splitmix64 hash of (seed, stream, i)). With a
// shard view, out is a rank's shard and element i gets the value of full index view.map(i): every rank's
// shard holds exactly its part of the one-GPU initialization.
void fill_normal(float* out, size_t n, float stddev, uint64_t seed, uint64_t stream_id, cudaStream_t stream,
                 const ShardView& view = ShardView::whole());
void fill_constant(float* out, size_t n, float value, cudaStream_t stream);
// dst[view.map(i)] = bf16(src[i]), round to nearest (src a shard of n elements, dst the full tensor).
void convert_to_bf16(bf16* dst, const float* src, size_t n, cudaStream_t stream,
                     const ShardView& view = ShardView::whole());
