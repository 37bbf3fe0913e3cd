// The FP8 Linear's GEMMs and casts (llmc/fp8/fp8_linear.cuh).
#include "llmc/fp8/fp8_linear.cuh"
#include "llmc/gpu/context.h"

static void mark(const Fp8LinearContext* f, Phase p, cudaStream_t stream) {
    if (f->timer) f->timer->mark(p, stream);
}

void fp8_linear_bind(Fp8LinearBuffers* lin, int linear, const Fp8Scratch& scratch, const Fp8ScaleState& st,
                     int N, int C, int OC) {
    lin->w.slot = fp8_slot(linear, kFp8W);
    lin->x.slot = fp8_slot(linear, kFp8X);
    lin->x.data = scratch.x_rows;
    lin->dy = {scratch.dy_rows, scratch.dyT, scratch.dy_scale_inv, fp8_slot(linear, kFp8DY)};
    lin->w.set_shape(OC, C, st.dtypes[lin->w.slot]);
    lin->x.set_shape(N, C, st.dtypes[lin->x.slot]);
    lin->dy.set_shape(N, OC, st.dtypes[lin->dy.slot]);
}

void fp8_linear_forward_quantized(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* out_NOC,
                                  const bf16* bias_OC, int N, int C, int OC, cudaStream_t stream) {
    CHECK(lin->x.rows == N && lin->x.cols == C && lin->w.rows == OC, "fp8_linear_forward: shape mismatch");
    mark(f, kPhaseGemm, stream);
    matmul_fp8_forward(f->plans, f->ctx, out_NOC, lin->x, lin->w, bias_OC, stream);
}

// dY [N, OC] and W [OC, C] as the backward's arguments say.
static void check_backward_shape(const Fp8LinearBuffers* lin, int N, int C, int OC) {
    CHECK(lin->dy.rows == N && lin->dy.cols == OC && lin->w.cols == C, "fp8_linear_backward: shape mismatch");
}

// dinp = dY W (null: skipped) from dY's row-wise copy; dW (+)= dY^T X from the transposed copies.
static void dgrad_gemm(const Fp8LinearContext* f, const Fp8LinearBuffers* lin, const Fp8Tensor& dy,
                       bf16* dinp_NC, int N, int C, int OC, cudaStream_t stream) {
    mark(f, kPhaseGemm, stream);
    if (dinp_NC) matmul_fp8_dgrad(f->plans, f->ctx, dinp_NC, dy, lin->w, stream);
}
static void wgrad_gemm(const Fp8LinearContext* f, const Fp8LinearBuffers* lin, const Fp8Tensor& dy,
                       bf16* dweight_OCC, int N, int C, int OC, bool accumulate, cudaStream_t stream) {
    mark(f, kPhaseGemm, stream);
    matmul_fp8_wgrad(f->plans, f->ctx, dweight_OCC, dy, lin->x, accumulate, stream);
}
static void backward_gemms(const Fp8LinearContext* f, const Fp8LinearBuffers* lin, const Fp8Tensor& dy,
                           bf16* dinp_NC, bf16* dweight_OCC, int N, int C, int OC, bool accumulate,
                           cudaStream_t stream) {
    dgrad_gemm(f, lin, dy, dinp_NC, N, C, OC, stream);
    wgrad_gemm(f, lin, dy, dweight_OCC, N, C, OC, accumulate, stream);
}

// The cast of dout into dy (with dbias, and dGELU with pre_gelu_NOC).
static void cast_dy(const Fp8LinearContext* f, const Fp8Tensor& dy, bf16* dbias_OC, const bf16* dout_NOC,
                    const bf16* pre_gelu_NOC, int N, int OC, bool accumulate, cudaStream_t stream,
                    const Fp8Tensor* next_input) {
    Fp8ScaleState* scales = f->recipe->scales();
    void* dbias_scratch = f->scratch->dbias_scratch;
    mark(f, kPhaseCast, stream);
    if (pre_gelu_NOC) {
        fp8_calibrate_if_needed(f, dy, stream, [&] {
            fp8_amax_dgelu(scales, dy.slot, dout_NOC, pre_gelu_NOC, (long)N * OC, f->gelu_tanh, stream);
        });
        fp8_cast_transpose_dbias_dgelu(dy, dbias_OC, dbias_scratch, scales, dout_NOC, pre_gelu_NOC, N, OC,
                                       f->gelu_tanh, accumulate, stream, next_input);
        return;
    }
    CHECK(next_input == nullptr, "fp8_linear_backward: a rebuilt input needs the dGELU cast");
    fp8_calibrate_if_needed(f, dy, stream,
                            [&] { fp8_amax(scales, dy.slot, dout_NOC, (long)N * OC, stream); });
    if (dbias_OC)
        fp8_cast_transpose_dbias(dy, dbias_OC, dbias_scratch, scales, dout_NOC, N, OC, accumulate, stream);
    else  // no bias (the FP8 LM head takes fp8_linear_backward_quantized_dy instead)
        fp8_cast_transpose(dy, scales, dout_NOC, N, OC, stream);
}

void fp8_linear_backward(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dinp_NC, bf16* dweight_OCC,
                         bf16* dbias_OC, const bf16* dout_NOC, const bf16* pre_gelu_NOC, int N, int C, int OC,
                         bool accumulate, cudaStream_t stream, const Fp8Tensor* next_input) {
    check_backward_shape(lin, N, C, OC);
    cast_dy(f, lin->dy, dbias_OC, dout_NOC, pre_gelu_NOC, N, OC, accumulate, stream, next_input);
    backward_gemms(f, lin, lin->dy, dinp_NC, dweight_OCC, N, C, OC, accumulate, stream);
}

// The deferred wgrad's dY: lin->dy's rows and slot with the kept transposed copy and scale_inv.
static Fp8Tensor kept_dy(const Fp8LinearBuffers* lin, const Fp8KeptDy& kept) {
    CHECK(kept.data_T_OCN != nullptr && kept.scale_inv != nullptr,
          "fp8 deferred wgrad: the kept dY^T and its scale_inv are required");
    Fp8Tensor dy = lin->dy;
    dy.data_T = kept.data_T_OCN;
    dy.scale_inv = kept.scale_inv;
    return dy;
}

void fp8_linear_backward_dgrad(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dinp_NC,
                               bf16* dbias_OC, const bf16* dout_NOC, const Fp8KeptDy& kept, int N, int C,
                               int OC, bool accumulate, cudaStream_t stream) {
    check_backward_shape(lin, N, C, OC);
    const Fp8Tensor dy = kept_dy(lin, kept);
    cast_dy(f, dy, dbias_OC, dout_NOC, nullptr, N, OC, accumulate, stream, nullptr);
    dgrad_gemm(f, lin, dy, dinp_NC, N, C, OC, stream);
}

void fp8_linear_wgrad(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dweight_OCC,
                      const Fp8KeptDy& kept, int N, int C, int OC, bool accumulate, cudaStream_t stream) {
    wgrad_gemm(f, lin, kept_dy(lin, kept), dweight_OCC, N, C, OC, accumulate, stream);
}

void fp8_linear_backward_quantized_dy(const Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dinp_NC,
                                      bf16* dweight_OCC, __nv_fp8_storage_t* dyT_OCN, int N, int C, int OC,
                                      bool accumulate, cudaStream_t stream) {
    check_backward_shape(lin, N, C, OC);
    Fp8Tensor dy = lin->dy;
    dy.data_T = dyT_OCN;
    mark(f, kPhaseCast, stream);
    fp8_transpose(dy, stream);
    backward_gemms(f, lin, dy, dinp_NC, dweight_OCC, N, C, OC, accumulate, stream);
}

template <class T>
static void cast_weight(const Fp8LinearContext* f, Fp8LinearBuffers* lin, const T* weight_OCC, int OC, int C,
                        cudaStream_t stream) {
    Fp8ScaleState* scales = f->recipe->scales();
    fp8_calibrate_if_needed(f, lin->w, stream,
                            [&] { fp8_amax(scales, lin->w.slot, weight_OCC, (long)OC * C, stream); });
    fp8_cast_transpose(lin->w, scales, weight_OCC, OC, C, stream);
}

void fp8_linear_cast_weight(const Fp8LinearContext* f, Fp8LinearBuffers* lin, const float* master_OCC, int OC,
                            int C, cudaStream_t stream) {
    cast_weight(f, lin, master_OCC, OC, C, stream);
}
void fp8_linear_cast_weight(const Fp8LinearContext* f, Fp8LinearBuffers* lin, const bf16* weight_OCC, int OC,
                            int C, cudaStream_t stream) {
    cast_weight(f, lin, weight_OCC, OC, C, stream);
}
