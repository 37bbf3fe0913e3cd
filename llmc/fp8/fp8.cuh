// FP8 per-tensor delayed scaling (Transformer Engine semantics; the recipe: README.md, "How FP8 works"): the
// scale state of every scaled tensor ("slot"), the one-launch amax-history/scale update, the amax-only passes
// of the step-0 calibration, and the cast kernels that quantize BF16/FP32 tensors to FP8 (row-wise and/or
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

#include "llmc/host/config.h"
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/fp8/fp8_scale_math.h"
#include "llmc/fp8/fp8_tensor.h"

// All device arrays live in one allocation (`storage`, `storage_floats` floats: save/restore it whole).
struct Fp8ScaleState {
    int num_slots = 0;
    int history_len = 0;            // H >= 1 rows including the staging row; H = 1 keeps no past amaxes
    float* amax_history = nullptr;  // [H][num_slots]; row 0 = staging (this step's amax), then past amaxes
    float* scale = nullptr;         // [num_slots], quantization factor x_fp8 = x * scale
    float* scale_inv = nullptr;     // [num_slots], 1 / scale
    float* fp8_max = nullptr;       // [num_slots], 448 (E4M3) or 57344 (E5M2)
    std::vector<Fp8Dtype> dtypes;   // host copy of each slot's format (picks the cast kernel)
    float* storage = nullptr;
    size_t storage_floats = 0;
};

// One slot per entry of `dtypes` (see fp8_linear_slot_dtypes); scale = scale_inv = 1, history zeros.
// Synchronous (allocates and uploads).
Fp8ScaleState fp8_scale_state_create(const std::vector<Fp8Dtype>& dtypes, int history_len);
void fp8_scale_state_destroy(Fp8ScaleState* st);
// Staging amaxes, contiguous float[num_slots] (row 0 of the history): all-reduce MAX over it across
// data-parallel ranks before fp8_update_scales.
float* fp8_staging_amax(Fp8ScaleState* st);

// Once per optimizer step, one launch for all slots. Per slot with staging amax != 0:
// amax = max over the window (all H rows incl. staging, NaN/inf propagate) for Max, or the staging value for
// MostRecent; roll the history (row H-1 = this step, row 1 = oldest kept, the oldest dropped; row 0 zeroed);
// scale = (fp8_max / amax) / 2^margin if amax finite and > 0, else the old scale (inf result -> FLT_MAX);
// scale_inv = 1/scale. Slots with staging amax 0 (unused this step) are untouched.
void fp8_update_scales(Fp8ScaleState* st, AmaxAlgo algo, int margin, cudaStream_t stream);
// Step-0 calibration ("current scaling" once): for slots [first_slot, first_slot + count), scale from the
// staging amax (fp8_compute_scale, margin applied) with no roll; staging and history untouched, so the
// regular update still records this step. Use after an fp8_amax* pass over the tensor and before its real
// cast.
void fp8_calibrate_scales(Fp8ScaleState* st, int first_slot, int count, int margin, cudaStream_t stream);

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
// dout_NC4 the gradient of the GELU output and pre_NC4 its input, both [N, C4]; quantizes g (row-wise out_NC4
// may be null, transposed out_T_C4N [C4, N]) and reduces dbias_C4 from fp32 g before quantization.
void fp8_cast_transpose_dbias_dgelu(__nv_fp8_storage_t* out_NC4, __nv_fp8_storage_t* out_T_C4N,
                                    float* out_scale_inv, bf16* dbias_C4, void* scratch, Fp8ScaleState* st,
                                    int slot, const bf16* dout_NC4, const bf16* pre_NC4, int N, int C4,
                                    bool gelu_tanh, bool accumulate, cudaStream_t stream);

// The casts above with their output as one Fp8Tensor (bytes, scale_inv and slot; `out.data` may be null).
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
inline void fp8_cast_transpose_dbias_dgelu(const Fp8Tensor& out, bf16* dbias_C4, void* scratch,
                                           Fp8ScaleState* st, const bf16* dout_NC4, const bf16* pre_NC4,
                                           int N, int C4, bool gelu_tanh, bool accumulate,
                                           cudaStream_t stream) {
    fp8_cast_transpose_dbias_dgelu(out.data, out.data_T, out.scale_inv, dbias_C4, scratch, st, out.slot,
                                   dout_NC4, pre_NC4, N, C4, gelu_tanh, accumulate, stream);
}
