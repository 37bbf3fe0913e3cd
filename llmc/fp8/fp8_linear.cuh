// An FP8 Linear layer with per-tensor delayed scaling: the cast kernels (llmc/fp8/cast.cuh) feeding the
// cuBLASLt FP8 GEMMs (llmc/kernels/matmul.cuh). Forward: X is cast (row-wise for this GEMM + transposed copy
// kept for wgrad) with its scale_inv; Y = X W^T + b with E4M3 x E4M3 and fast accumulation. Backward: dY is
// cast + transposed with dbias reduced in the same pass (dGELU fused for the fc layer), then dgrad dX = dY W
// (W^T copy) and wgrad dW = dY^T X (X^T and dY^T copies), all TN, without fast accumulation.
#pragma once
#include <library_types.h>

#include "llmc/fp8/cast.cuh"
#include "llmc/fp8/gemm.cuh"
#include "llmc/fp8/recipe.h"
#include "llmc/gpu/phase_timer.h"
#include "llmc/kernels/matmul.cuh"

struct GpuContext;

// The three scaled tensors of one Linear [OC, C] (llmc/fp8/fp8_tensor.h), each with its own slot
// fp8_slot(linear, role) in the scale state.
struct Fp8LinearBuffers {
    Fp8Tensor w;  // W [OC, C] and W^T [C, OC], cast once per optimizer step
    Fp8Tensor x;  // the input: row-wise [N, C] in the shared scratch (this GEMM), transposed [C, N] saved for
                  // wgrad
    Fp8Tensor dy;  // the output gradient: [N, OC] and [OC, N], both in the shared scratch
};

// Scratch shared by all FP8 Linears (used and consumed within one call).
struct Fp8Scratch {
    __nv_fp8_storage_t* x_rows = nullptr;   // [N, max in-features]
    __nv_fp8_storage_t* dy_rows = nullptr;  // [N, max out-features]
    __nv_fp8_storage_t* dyT = nullptr;      // [max out-features, N]
    float* dy_scale_inv = nullptr;
    void* dbias_scratch = nullptr;
};

// Points `lin`'s slots at those of Linear `linear` (fp8_slot(linear, role)) and its scratch-backed copies (X
// row-wise, dY both ways) at the shared scratch; sets each tensor's shape and format (from `st`) for N rows
// of a Linear [OC, C].
void fp8_linear_bind(Fp8LinearBuffers* lin, int linear, const Fp8Scratch& scratch, const Fp8ScaleState& st,
                     int N, int C, int OC);

struct Fp8LinearContext {
    GpuContext* ctx = nullptr;
    MatmulPlanCache* plans = nullptr;
    DelayedScaling* recipe = nullptr;  // the scale state, step-0 calibration and margin
    const Fp8Scratch* scratch = nullptr;
    bool gelu_tanh = false;
    PhaseTimer* timer = nullptr;
};

// Step 0 (the recipe calibrates): the amax of tensor `t` first (amax_pass), then its slot's scale from it.
template <class AmaxPass>
void fp8_calibrate_if_needed(const Fp8LinearContext* f, const Fp8Tensor& t, cudaStream_t stream,
                             AmaxPass amax_pass) {
    if (!f->recipe->calibrating()) return;
    amax_pass();
    fp8_calibrate_scales(f->recipe->scales(), t.slot, 1, f->recipe->config().margin, stream);
}

// out_NOC = X W^T + bias from an X already quantized by its producer (fused LayerNorm / GELU kernels, or a
// cast, write lin->x).
void fp8_linear_forward_quantized(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* out_NOC,
                                  const bf16* bias_OC, int N, int C, int OC, cudaStream_t stream);
// dinp_NC = dY W (overwritten; null: skipped), dweight_OCC = dY^T X, dbias_OC = sum_n dY (overwritten, or +=
// with accumulate). dY = dout_NOC, or, when pre_gelu_NOC is given, dout_NOC * gelu'(pre_gelu_NOC) (dout is
// then the gradient of the GELU output).
// next_input (with pre_gelu_NOC; null: none): the dGELU cast also writes gelu(pre_gelu_NOC), the next
// Linear's input, transposed into next_input->data_T with next_input's slot scale
// (fp8_cast_transpose_dbias_dgelu).
void fp8_linear_backward(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dinp_NC, bf16* dweight_OCC,
                         bf16* dbias_OC, const bf16* dout_NOC, const bf16* pre_gelu_NOC, int N, int C, int OC,
                         bool accumulate, cudaStream_t stream, const Fp8Tensor* next_input = nullptr);
// Where a deferred wgrad's dY waits: its transposed bytes [OC, N] and the scale_inv they were quantized with,
// a buffer of its own (16-byte aligned: cuBLASLt takes it as a scale pointer; the shared scratch's scale_inv
// belongs to the next cast by the time the wgrad runs).
struct Fp8KeptDy {
    __nv_fp8_storage_t* data_T_OCN = nullptr;
    float* scale_inv = nullptr;
};
// The same for a Linear whose transposed input is not there yet (rebuilt by a later cast): the cast of dY
// (no GELU) with dY^T and its scale_inv into `kept`, and the dgrad now; fp8_linear_wgrad later, from `kept`.
void fp8_linear_backward_dgrad(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dinp_NC,
                               bf16* dbias_OC, const bf16* dout_NOC, const Fp8KeptDy& kept, int N, int C,
                               int OC, bool accumulate, cudaStream_t stream);
// dweight_OCC (+)= dY^T X from `kept` (fp8_linear_backward_dgrad's) and lin->x.data_T.
void fp8_linear_wgrad(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dweight_OCC,
                      const Fp8KeptDy& kept, int N, int C, int OC, bool accumulate, cudaStream_t stream);
// The same without the cast: lin->dy.data already holds dY [N, OC] (the FP8 classifier wrote it, with its
// amax and scale_inv); dY^T is transposed into dyT_OCN (OC x N bytes) for the wgrad. No bias.
void fp8_linear_backward_quantized_dy(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dinp_NC,
                                      bf16* dweight_OCC, __nv_fp8_storage_t* dyT_OCN, int N, int C, int OC,
                                      bool accumulate, cudaStream_t stream);
// W and W^T in FP8 from the FP32 master weight [OC, C] (once per optimizer step), or from the BF16 working
// weight (several GPUs: the master is sharded, the gathered BF16 weight is what every rank has whole).
void fp8_linear_cast_weight(const Fp8LinearContext* f, Fp8LinearBuffers* lin, const float* master_OCC, int OC,
                            int C, cudaStream_t stream);
void fp8_linear_cast_weight(const Fp8LinearContext* f, Fp8LinearBuffers* lin, const bf16* weight_OCC, int OC,
                            int C, cudaStream_t stream);
