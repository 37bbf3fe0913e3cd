#include "llmc/context.h"
#include "llmc/fp8_linear.cuh"

static void mark(Fp8LinearContext* f, Phase p, cudaStream_t stream) {
    if (f->timer) f->timer->mark(p, stream);
}

void fp8_linear_forward(Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* out_NOC, const bf16* inp_NC,
                        const bf16* bias_OC, int N, int C, int OC, cudaStream_t stream) {
    const int slot = fp8_slot(lin->linear, kFp8X);
    mark(f, kPhaseCast, stream);
    if (f->calibrate) {
        fp8_amax(f->scales, slot, inp_NC, (long)N * C, stream);
        fp8_calibrate_scales(f->scales, slot, 1, f->margin, stream);
    }
    fp8_cast_transpose(f->scratch.x_rows, lin->xT, lin->x_scale_inv, f->scales, slot, inp_NC, N, C, stream);
    fp8_linear_forward_quantized(f, lin, out_NOC, bias_OC, N, C, OC, stream);
}

void fp8_linear_forward_quantized(Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* out_NOC,
                                  const bf16* bias_OC, int N, int C, int OC, cudaStream_t stream) {
    mark(f, kPhaseGemm, stream);
    matmul_fp8_forward(f->plans, f->ctx, out_NOC, reinterpret_cast<const __nv_fp8_e4m3*>(f->scratch.x_rows),
                       lin->x_scale_inv, reinterpret_cast<const __nv_fp8_e4m3*>(lin->w), lin->w_scale_inv,
                       bias_OC, N, C, OC, stream);
}

void fp8_linear_backward(Fp8LinearContext* f, Fp8LinearBuffers* lin, bf16* dinp_NC, bf16* dweight_OCC,
                         bf16* dbias_OC, const bf16* dout_NOC, const bf16* pre_gelu_NOC, int N, int C, int OC,
                         cudaStream_t stream) {
    const int slot = fp8_slot(lin->linear, kFp8DY);
    Fp8Scratch& s = f->scratch;
    mark(f, kPhaseCast, stream);
    if (pre_gelu_NOC) {
        if (f->calibrate) {
            fp8_amax_dgelu(f->scales, slot, dout_NOC, pre_gelu_NOC, (long)N * OC, f->gelu_tanh, stream);
            fp8_calibrate_scales(f->scales, slot, 1, f->margin, stream);
        }
        fp8_cast_transpose_dbias_dgelu(s.dy_rows, s.dyT, s.dy_scale_inv, dbias_OC, s.dbias_scratch, f->scales,
                                       slot, dout_NOC, pre_gelu_NOC, N, OC, f->gelu_tanh, f->accumulate_grads,
                                       stream);
    } else {
        if (f->calibrate) {
            fp8_amax(f->scales, slot, dout_NOC, (long)N * OC, stream);
            fp8_calibrate_scales(f->scales, slot, 1, f->margin, stream);
        }
        fp8_cast_transpose_dbias(s.dy_rows, s.dyT, s.dy_scale_inv, dbias_OC, s.dbias_scratch, f->scales, slot,
                                 dout_NOC, N, OC, f->accumulate_grads, stream);
    }
    mark(f, kPhaseGemm, stream);
    if (dinp_NC)
        matmul_fp8_dgrad(f->plans, f->ctx, dinp_NC, reinterpret_cast<const __nv_fp8_e4m3*>(lin->wT),
                         lin->w_scale_inv, s.dy_rows, f->dy_type, s.dy_scale_inv, N, C, OC, stream);
    matmul_fp8_wgrad(f->plans, f->ctx, dweight_OCC, reinterpret_cast<const __nv_fp8_e4m3*>(lin->xT),
                     lin->x_scale_inv, s.dyT, f->dy_type, s.dy_scale_inv, N, C, OC, f->accumulate_grads,
                     stream);
}

template <class T>
static void cast_weight(Fp8LinearContext* f, Fp8LinearBuffers* lin, const T* weight_OCC, int OC, int C,
                        cudaStream_t stream) {
    const int slot = fp8_slot(lin->linear, kFp8W);
    if (f->calibrate) {
        fp8_amax(f->scales, slot, weight_OCC, (long)OC * C, stream);
        fp8_calibrate_scales(f->scales, slot, 1, f->margin, stream);
    }
    fp8_cast_transpose(lin->w, lin->wT, lin->w_scale_inv, f->scales, slot, weight_OCC, OC, C, stream);
}

void fp8_linear_cast_weight(Fp8LinearContext* f, Fp8LinearBuffers* lin, const float* master_OCC, int OC,
                            int C, cudaStream_t stream) {
    cast_weight(f, lin, master_OCC, OC, C, stream);
}
void fp8_linear_cast_weight(Fp8LinearContext* f, Fp8LinearBuffers* lin, const bf16* weight_OCC, int OC, int C,
                            cudaStream_t stream) {
    cast_weight(f, lin, weight_OCC, OC, C, stream);
}
