// FP8 casts of per-tensor delayed scaling (Transformer Engine semantics; the recipe: README.md, "How FP8
// works"; the scale state: llmc/fp8/scale_state.cuh): the amax-only passes of the step-0 calibration and the
// cast kernels that quantize BF16/FP32 tensors to FP8 (row-wise and/or
// transposed copies, optionally with the bias gradient and dGELU fused in).
//
// Every cast kernel: reads the slot's current scale from device memory (no host sync, graph-capturable),
// writes x * scale saturated to +-fp8_max (round to nearest even), max-es |x| of the PRE-scale values into
// the slot's staging amax (warp/block reduce, one integer atomicMax on the float bits per block; NaN
// propagates), and writes the slot's scale_inv (= 1/scale used) to `out_scale_inv` (one float, may be null):
// every FP8 buffer carries the scale_inv it was quantized with. The slot's format (E4M3/E5M2) comes from the
// state. Alignment: pointers 16-byte aligned; cast_transpose shapes need N and C multiples of 16.
#pragma once
#include <vector>

#include "llmc/fp8/fp8_tensor.h"
#include "llmc/fp8/scale_state.cuh"
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/host/config.h"

// Amax only (calibration): max |x| of n elements into the slot's staging amax. n multiple of 8.
void fp8_amax(Fp8ScaleState* st, int slot, const bf16* in, long n, cudaStream_t stream);
void fp8_amax(Fp8ScaleState* st, int slot, const float* in, long n, cudaStream_t stream);
// Amax only of g = dout * gelu'(pre) (calibration for fp8_cast_transpose_dbias_dgelu). n multiple of 8.
void fp8_amax_dgelu(Fp8ScaleState* st, int slot, const bf16* dout, const bf16* pre, long n, bool gelu_tanh,
                    cudaStream_t stream);

// Cast + transpose in one pass: out_NC [N, C] (row-wise, may be null) and out_T_CN [C, N] (transposed), with
// amax. The float overload casts FP32 master weights (W_OCC -> W [OC, C] and W^T [C, OC]).
void fp8_cast_transpose(__nv_fp8_storage_t* out_NC, __nv_fp8_storage_t* out_T_CN, float* out_scale_inv,
                        Fp8ScaleState* st, int slot, const bf16* in_NC, int N, int C, cudaStream_t stream);
void fp8_cast_transpose(__nv_fp8_storage_t* out_NC, __nv_fp8_storage_t* out_T_CN, float* out_scale_inv,
                        Fp8ScaleState* st, int slot, const float* in_NC, int N, int C, cudaStream_t stream);

// Row-wise only: out [n] = the row-wise bytes fp8_cast_transpose writes for the same input, with amax and
// scale_inv (the transposed copy is rebuilt later by fp8_cast_transpose with out_NC null). n multiple of 8.
void fp8_cast(__nv_fp8_storage_t* out, float* out_scale_inv, Fp8ScaleState* st, int slot, const bf16* in,
              long n, cudaStream_t stream);

// out_T_CN [C, N] = the bytes of in_NC [N, C] transposed (already quantized: no scale, no amax). N and C
// multiples of 16, pointers 16-byte aligned, no overlap.
void fp8_transpose(__nv_fp8_storage_t* out_T_CN, const __nv_fp8_storage_t* in_NC, int N, int C,
                   cudaStream_t stream);

// Scratch (device, 16-byte aligned) needed by the dbias variants for N rows of OC columns.
size_t fp8_dbias_scratch_bytes(int N, int OC);
// Output gradient: cast + transpose of dY_NOC [N, OC] (out_NOC may be null, out_T_OCN [OC, N]) with amax, and
// dbias_OC = sum over rows of dY in fp32, deterministic (per-tile partials, then a fixed-order reduction),
// written as bf16 (accumulate: dbias += sum). Two launches.
void fp8_cast_transpose_dbias(__nv_fp8_storage_t* out_NOC, __nv_fp8_storage_t* out_T_OCN,
                              float* out_scale_inv, bf16* dbias_OC, void* scratch, Fp8ScaleState* st,
                              int slot, const bf16* dY_NOC, int N, int OC, bool accumulate,
                              cudaStream_t stream);
// Same for the fc layer through GELU: g = dout * gelu'(pre) (erf form, or tanh approximation if gelu_tanh),
// dout_NF the gradient of the GELU output and pre_NF its input, both [N, F]; quantizes g (row-wise out_NF
// may be null, transposed out_T_FN [F, N]) and reduces dbias_F from fp32 g before quantization. With
// gelu_out_T_FN: also the GELU output bf16(gelu(pre)) quantized with slot gelu_slot's scale, transposed only
// [F, N], its amax into that slot's staging: with the forward's scale, the bytes fp8_gelu_cast_transpose
// wrote (the fc-projection's FP8 input, rebuilt instead of kept).
void fp8_cast_transpose_dbias_dgelu(__nv_fp8_storage_t* out_NF, __nv_fp8_storage_t* out_T_FN,
                                    float* out_scale_inv, bf16* dbias_F, void* scratch, Fp8ScaleState* st,
                                    int slot, const bf16* dout_NF, const bf16* pre_NF, int N, int F,
                                    bool gelu_tanh, bool accumulate, cudaStream_t stream,
                                    __nv_fp8_storage_t* gelu_out_T_FN = nullptr, int gelu_slot = -1);

// The casts above with their output as one Fp8Tensor (bytes, scale_inv and slot; `out.data` may be null).
inline void fp8_cast(const Fp8Tensor& out, Fp8ScaleState* st, const bf16* in_NC, int N, int C,
                     cudaStream_t stream) {
    fp8_cast(out.data, out.scale_inv, st, out.slot, in_NC, (long)N * C, stream);
}
inline void fp8_cast_transpose(const Fp8Tensor& out, Fp8ScaleState* st, const bf16* in_NC, int N, int C,
                               cudaStream_t stream) {
    fp8_cast_transpose(out.data, out.data_T, out.scale_inv, st, out.slot, in_NC, N, C, stream);
}
inline void fp8_cast_transpose(const Fp8Tensor& out, Fp8ScaleState* st, const float* in_NC, int N, int C,
                               cudaStream_t stream) {
    fp8_cast_transpose(out.data, out.data_T, out.scale_inv, st, out.slot, in_NC, N, C, stream);
}
inline void fp8_cast_transpose_dbias(const Fp8Tensor& out, bf16* dbias_OC, void* scratch, Fp8ScaleState* st,
                                     const bf16* dY_NOC, int N, int OC, bool accumulate,
                                     cudaStream_t stream) {
    fp8_cast_transpose_dbias(out.data, out.data_T, out.scale_inv, dbias_OC, scratch, st, out.slot, dY_NOC, N,
                             OC, accumulate, stream);
}
inline void fp8_cast_transpose_dbias_dgelu(const Fp8Tensor& out, bf16* dbias_F, void* scratch,
                                           Fp8ScaleState* st, const bf16* dout_NF, const bf16* pre_NF, int N,
                                           int F, bool gelu_tanh, bool accumulate, cudaStream_t stream) {
    fp8_cast_transpose_dbias_dgelu(out.data, out.data_T, out.scale_inv, dbias_F, scratch, st, out.slot,
                                   dout_NF, pre_NF, N, F, gelu_tanh, accumulate, stream);
}
