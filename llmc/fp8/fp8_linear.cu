#include "llmc/gpu/context.h"
#include "llmc/fp8/fp8_linear.cuh"

static void mark(Fp8LinearContext* f, Phase p, cudaStream_t stream) {
    if (f->timer) f->timer->mark(p, stream);
}

void fp8_linear_bind(Fp8LinearBuffers* lin, int linear, const Fp8Scratch& scratch) {
    lin->w.slot = fp8_slot(linear, kFp8W);
    lin->x.slot = fp8_slot(linear, kFp8X);
    lin->x.data = scratch.x_rows;
    lin->dy = {scratch.dy_rows, scratch.dyT, scratch.dy_scale_inv, fp8_slot(linear, kFp8DY)};
}

// Step 0 (calibration): the tensor's amax first (amax_pass), then its slot's scale from it.
template <class AmaxPass>
static void calibrate_if_needed(Fp8LinearContext* f, const Fp8Tensor& t, cudaStream_t stream,
                                AmaxPass amax_pass) {
    if (!f->calibrate) return;
    amax_pass();
    fp8_calibrate_scales(f->scales, t.slot, 1, f->margin, stream);
}

static const __nv_fp8_e4m3* e4m3(const __nv_fp8_storage_t* p) {
    return reinterpret_cast<const __nv_fp8_e4m3*>(p);
}
static cudaDataType_t cuda_type(const Fp8ScaleState* st, const Fp8Tensor& t) {
    return st->dtypes[t.slot] == Fp8Dtype::E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

void fp8_linear_forward(Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* out_NOC, const bf16* inp_NC,
                        const bf16* bias_OC, int N, int C, int OC, cudaStream_t stream) {
    mark(f, kPhaseCast, stream);
    calibrate_if_needed(f, lin->x, stream,
                        [&] { fp8_amax(f->scales, lin->x.slot, inp_NC, (long)N * C, stream); });
    fp8_cast_transpose(lin->x, f->scales, inp_NC, N, C, stream);
    fp8_linear_forward_quantized(f, lin, out_NOC, bias_OC, N, C, OC, stream);
}

void fp8_linear_forward_quantized(Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* out_NOC,
                                  const bf16* bias_OC, int N, int C, int OC, cudaStream_t stream) {
    mark(f, kPhaseGemm, stream);
    matmul_fp8_forward(f->plans, f->ctx, out_NOC, e4m3(lin->x.data), lin->x.scale_inv, e4m3(lin->w.data),
                       lin->w.scale_inv, bias_OC, N, C, OC, stream);
}

void fp8_linear_backward(Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dinp_NC, bf16* dweight_OCC,
                         bf16* dbias_OC, const bf16* dout_NOC, const bf16* pre_gelu_NOC, int N, int C, int OC,
                         cudaStream_t stream) {
    const Fp8Tensor& dy = lin->dy;
    void* dbias_scratch = f->scratch.dbias_scratch;
    mark(f, kPhaseCast, stream);
    if (pre_gelu_NOC) {
        calibrate_if_needed(f, dy, stream, [&] {
            fp8_amax_dgelu(f->scales, dy.slot, dout_NOC, pre_gelu_NOC, (long)N * OC, f->gelu_tanh, stream);
        });
        fp8_cast_transpose_dbias_dgelu(dy, dbias_OC, dbias_scratch, f->scales, dout_NOC, pre_gelu_NOC, N, OC,
                                       f->gelu_tanh, f->accumulate_grads, stream);
    } else {
        calibrate_if_needed(f, dy, stream,
                            [&] { fp8_amax(f->scales, dy.slot, dout_NOC, (long)N * OC, stream); });
        fp8_cast_transpose_dbias(dy, dbias_OC, dbias_scratch, f->scales, dout_NOC, N, OC, f->accumulate_grads,
                                 stream);
    }
    mark(f, kPhaseGemm, stream);
    const cudaDataType_t dy_type = cuda_type(f->scales, dy);
    if (dinp_NC)
        matmul_fp8_dgrad(f->plans, f->ctx, dinp_NC, e4m3(lin->w.data_T), lin->w.scale_inv, dy.data, dy_type,
                         dy.scale_inv, N, C, OC, stream);
    matmul_fp8_wgrad(f->plans, f->ctx, dweight_OCC, e4m3(lin->x.data_T), lin->x.scale_inv, dy.data_T, dy_type,
                     dy.scale_inv, N, C, OC, f->accumulate_grads, stream);
}

template <class T>
static void cast_weight(Fp8LinearContext* f, Fp8LinearBuffers* lin, const T* weight_OCC, int OC, int C,
                        cudaStream_t stream) {
    calibrate_if_needed(f, lin->w, stream,
                        [&] { fp8_amax(f->scales, lin->w.slot, weight_OCC, (long)OC * C, stream); });
    fp8_cast_transpose(lin->w, f->scales, weight_OCC, OC, C, stream);
}

void fp8_linear_cast_weight(Fp8LinearContext* f, Fp8LinearBuffers* lin, const float* master_OCC, int OC,
                            int C, cudaStream_t stream) {
    cast_weight(f, lin, master_OCC, OC, C, stream);
}
void fp8_linear_cast_weight(Fp8LinearContext* f, Fp8LinearBuffers* lin, const bf16* weight_OCC, int OC, int C,
                            cudaStream_t stream) {
    cast_weight(f, lin, weight_OCC, OC, C, stream);
}
