// The FP8 GEMMs over Fp8Tensor operands (llmc/kernels/gemm/gemm_fp8.cuh): a role and the copies it reads.
#include "llmc/kernels/gemm/gemm_fp8.cuh"

namespace {

GemmOperand operand(const __nv_fp8_storage_t* bytes, const Fp8Tensor& t) {
    return {bytes, t.format == Fp8Dtype::E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2, t.scale_inv};
}

GemmCall fp8_call(GemmKind kind, int N, int C, int OC, bf16* d, GemmOperand a, GemmOperand b) {
    GemmCall call;
    call.kind = kind;
    call.N = N, call.C = C, call.OC = OC;
    call.a = a;
    call.b = b;
    call.d = d;
    return call;
}

// The two operands' shared dimension (`dim`: its name) must agree.
void check_agree(const char* who, const char* dim, const Fp8Tensor& p, int p_dim, const Fp8Tensor& q,
                 int q_dim) {
    CHECK(p_dim == q_dim, "%s: operands [%d, %d] and [%d, %d] disagree on %s", who, p.rows, p.cols, q.rows,
          q.cols, dim);
}

}  // namespace

void matmul_fp8_forward(MatmulPlanCache* cache, GpuContext* ctx, bf16* out_NO, const Fp8Tensor& x,
                        const Fp8Tensor& w, const bf16* bias_O, cudaStream_t stream,
                        const bf16* residual_NO) {
    check_agree("matmul_fp8_forward", "C", x, x.cols, w, w.cols);
    GemmCall call = fp8_call(GemmKind::Fp8Forward, x.rows, x.cols, w.rows, out_NO, operand(w.data, w),
                             operand(x.data, x));
    call.bias = bias_O;
    call.residual = residual_NO;
    matmul_gemm(cache, ctx, call, stream);
}

void matmul_fp8_dgrad(MatmulPlanCache* cache, GpuContext* ctx, bf16* dinp_NC, const Fp8Tensor& dy,
                      const Fp8Tensor& w, cudaStream_t stream) {
    check_agree("matmul_fp8_dgrad", "OC", dy, dy.cols, w, w.rows);
    matmul_gemm(cache, ctx,
                fp8_call(GemmKind::Fp8Dgrad, dy.rows, w.cols, dy.cols, dinp_NC, operand(w.data_T, w),
                         operand(dy.data, dy)),
                stream);
}

void matmul_fp8_wgrad(MatmulPlanCache* cache, GpuContext* ctx, bf16* dweight_OI, const Fp8Tensor& dy,
                      const Fp8Tensor& x, bool accumulate, cudaStream_t stream) {
    check_agree("matmul_fp8_wgrad", "N", dy, dy.rows, x, x.rows);
    GemmCall call = fp8_call(GemmKind::Fp8Wgrad, x.rows, x.cols, dy.cols, dweight_OI, operand(x.data_T, x),
                             operand(dy.data_T, dy));
    call.accumulate = accumulate;
    matmul_gemm(cache, ctx, call, stream);
}
