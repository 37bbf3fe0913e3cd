// FP8 casts of per-tensor delayed scaling (Transformer Engine semantics; the recipe: README.md, "How FP8
// works"; the scale state: llmc/fp8/scale_state.cuh): the amax-only passes of the step-0 calibration and the
// cast kernels that quantize BF16/FP32 tensors to FP8 (row-wise and/or
// transposed copies, optionally with the bias gradient and dGELU fused in).
//
// Every cast kernel: reads the slot's current scale from device memory (no host sync, graph-capturable),
// writes x * scale saturated to +-fp8_max (round to nearest even), max-es |x| of the PRE-scale values into
// the slot's staging amax (warp/block reduce, one integer atomicMax on the float bits per block; NaN
// propagates), and writes the slot's scale_inv (= 1/scale used) to the tensor's scale_inv (one float, may be
// null): every FP8 buffer carries the scale_inv it was quantized with. The format (E4M3/E5M2) is the
// tensor's (decided from the scale state's table when the tensor is bound). Alignment: pointers 16-byte
// aligned; cast_transpose shapes need N and C multiples of 16.
#pragma once
#include "llmc/fp8/fp8_tensor.h"
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/host/config.h"

// Amax only (calibration): max |x| over t's rows x cols elements (a multiple of 8) into t's staging amax.
void fp8_amax(const bf16* in, const Fp8Tensor& t, cudaStream_t stream);
void fp8_amax(const float* in, const Fp8Tensor& t, cudaStream_t stream);
// Amax only of g = dout * gelu'(pre) (calibration for fp8_cast_transpose_dbias_dgelu), over t's elements.
void fp8_amax_dgelu(const bf16* dout, const bf16* pre, const Fp8Tensor& t, bool gelu_tanh,
                    cudaStream_t stream);

// Every cast writes the Fp8Tensor `out` (llmc/fp8/fp8_tensor.h), whose shape [N, C] = [out.rows, out.cols]
// is the input's: its bytes (out.data row-wise [N, C], may be null where only the transposed copy is
// written; out.data_T [C, N]), its scale_inv, with its slot's scale and amax, in its format.

// Cast + transpose in one pass, with amax. The float overload casts FP32 master weights (W_OI -> W [O, I]
// and W^T [I, O]).
void fp8_cast_transpose(const bf16* in_NC, const Fp8Tensor& out, cudaStream_t stream);
void fp8_cast_transpose(const float* in_NC, const Fp8Tensor& out, cudaStream_t stream);

// Row-wise only: out.data = the row-wise bytes fp8_cast_transpose writes for the same input, with amax and
// scale_inv (the transposed copy is rebuilt later by fp8_cast_transpose of out.transposed_only(), or by
// fp8_transpose). N * C multiple of 8. The float overload: a rank's rows of an FP32 master weight.
void fp8_cast(const bf16* in_NC, const Fp8Tensor& out, cudaStream_t stream);
void fp8_cast(const float* in_NC, const Fp8Tensor& out, cudaStream_t stream);

// t.data_T [cols, rows] = the bytes of t.data [rows, cols] transposed (already quantized: no scale, no
// amax). rows and cols multiples of 16, pointers 16-byte aligned, no overlap.
void fp8_transpose(const Fp8Tensor& t, cudaStream_t stream);

// Scratch (device, 16-byte aligned) needed by the dbias variants for N rows of O columns.
size_t fp8_dbias_scratch_bytes(int N, int O);
// Output gradient: cast + transpose of dY_NO [N, O] = [out.rows, out.cols] with amax, and dbias_O = sum over
// rows of dY in fp32, deterministic (per-tile partials, then a fixed-order reduction), written as bf16
// (accumulate: dbias += sum). Two launches.
void fp8_cast_transpose_dbias(const bf16* dY_NO, const Fp8Tensor& out, bf16* dbias_O, void* scratch,
                              bool accumulate, cudaStream_t stream);
// Same for the fc layer through GELU: g = dout * gelu'(pre) (erf form, or tanh approximation if gelu_tanh),
// dout_NF the gradient of the GELU output and pre_NF its input, both [N, F] = [out.rows, out.cols];
// quantizes g into out and reduces dbias_F from fp32 g before quantization. With gelu_out: also the GELU
// output bf16(gelu(pre)) quantized with gelu_out's slot scale and format, transposed only (gelu_out->data_T
// [F, N]), its amax into that slot's staging: with the forward's scale, the bytes fp8_gelu_cast_transpose
// wrote (the fc-projection's FP8 input, rebuilt instead of kept). gelu_out's scale_inv is not written.
void fp8_cast_transpose_dbias_dgelu(const bf16* dout_NF, const bf16* pre_NF, const Fp8Tensor& out,
                                    bf16* dbias_F, void* scratch, bool gelu_tanh, bool accumulate,
                                    cudaStream_t stream, const Fp8Tensor* gelu_out = nullptr);
