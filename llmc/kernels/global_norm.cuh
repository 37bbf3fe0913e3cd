// Deterministic global gradient norm and the clip factor (torch.nn.utils.clip_grad_norm_ semantics), all on
// the device so the optimizer step needs no host synchronization.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/parallel/shard_view.h"

// Number of partial sums global_norm_squared() writes (a fixed grid, independent of P and of the GPU, so the
// summation order and hence the result are reproducible bit for bit). Size the scratch buffer with it.
size_t global_norm_num_partials();

// partials[0 .. global_norm_num_partials()) = per-block partial sums of grads_P[i]^2 over the flat gradient
// buffer (any P, any alignment). Squares are formed in fp32 (a |grad| above ~1.8e19 gives inf), accumulated
// in double per thread. NaN/inf gradients propagate into the partials.
// With a shard `view` (ZeRO-1), P counts the rank's shard elements, read at grads_P[view.map(i)].
void global_norm_squared(float* partials, const bf16* grads_P, size_t P, cudaStream_t stream,
                         const ShardView& view = ShardView::whole());

// norm_out[0] = sqrt(sum of partials), summed in a fixed order (double); scale_out[0] = the factor to
// multiply the gradients by: PyTorch's clamp(max_norm / (norm + 1e-6), max=1) if max_norm > 0, else 1. A NaN
// norm gives a NaN scale (as in PyTorch) and an inf norm a zero scale; the caller should check norm_out for
// finiteness.
void grad_clip_scale(float* norm_out, float* scale_out, const float* partials, int num_partials,
                     float max_norm, cudaStream_t stream);
