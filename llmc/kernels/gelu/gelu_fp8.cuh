// GELU written in FP8 directly by the pass that computes it (the fc-projection's input), and its amax-only
// calibration pass.
//
// Semantics, bit for bit: y = the bf16 value gelu_forward writes (llmc/kernels/gelu/gelu.cu), then quantized
// exactly as fp8_cast_transpose does (llmc/kernels/cast/cast.cuh): fp8 = saturate(float(y) * scale), amax =
// max |y| into the slot's staging amax, scale read on the device, out.scale_inv (may be null) written.
// Shapes: N and C positive multiples of 16, pointers 16-byte aligned.
//
// Step-0 calibration: fp8_gelu_amax, then the recipe's calibration of the slot, then the fused kernel.
#pragma once
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/kernels/cast/cast.cuh"

// y = bf16(gelu(pre)) as gelu_forward computes it (erf form, or the tanh approximation if gelu_tanh),
// quantized to FP8: row-wise out.data [N, C] (may be null) and transposed out.data_T [C, N], with amax.
// pre_NC is the GELU input (the fc output). 128 x 128 tiles transposed through shared memory.
// [N, C] = [out.rows, out.cols].
void fp8_gelu_cast_transpose(const bf16* pre_NC, const Fp8Tensor& out, bool gelu_tanh, cudaStream_t stream);

// The same, row-wise out.data only (no transposed copy: --recompute 1 rebuilds it in backward): the same
// bytes, amax and scale_inv as fp8_gelu_cast_transpose's row-wise output. N * C multiple of 8.
void fp8_gelu_cast(const bf16* pre_NC, const Fp8Tensor& out, bool gelu_tanh, cudaStream_t stream);

// Calibration: max |bf16(gelu(pre))| over t's rows x cols elements (a multiple of 8) into t's staging amax.
void fp8_gelu_amax(const bf16* pre_NC, const Fp8Tensor& t, bool gelu_tanh, cudaStream_t stream);
