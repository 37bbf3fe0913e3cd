// GELU activation, forward and backward, on bf16 tensors of n elements (n a multiple of 8, 16-byte aligned).
// Default is the exact erf form used by PyTorch's nn.GELU(): gelu(x) = 0.5 x (1 + erf(x / sqrt(2)));
// tanh_approx selects 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Math in fp32, one rounding to bf16.
// Both forms are evaluated in cancellation-free ways (erfc, logistic of 2u) so the tails stay accurate in
// relative terms even with --use_fast_math; the device math is llmc/kernels/gelu/gelu_math.cuh (shared with
// FP8).
#pragma once
#include <cstddef>

#include "llmc/gpu/cuda_common.cuh"

// out = gelu(inp). out may alias inp.
void gelu_forward(bf16* out, const bf16* inp, size_t n, bool tanh_approx, cudaStream_t stream);
// d_in_out = d_in_out * gelu'(inp): d_in_out holds dL/d(gelu output) on entry, dL/d(inp) on exit.
void gelu_backward_inplace(bf16* d_in_out, const bf16* inp, size_t n, bool tanh_approx, cudaStream_t stream);
