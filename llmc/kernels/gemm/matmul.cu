// The one GEMM entry (matmul_gemm) and the BF16 launchers over it (see matmul.cuh). The plan cache is
// matmul_plan.cu, the algorithm autotuning matmul_autotune.cu, the bias gradient matmul_dbias.cu.
//
// cuBLASLt is column-major. A row-major [R, S] matrix is a column-major [S, R] one with ld = S, so each
// row-major GEMM is written for the transposed output (D^T = B'^T A'^T) with these operands:
// clang-format off
//   forward    Y^T  [OC, N] = op_T(W: col-major [C, OC]) * X (col-major [C, N])         m=OC n=N  k=C  "TN"
//   dgrad      dX^T [C, N]  = W (col-major [C, OC]) * dY^T (col-major [OC, N])         m=C  n=N  k=OC "NN"
//   wgrad      dW^T [C, OC] = X^T (col-major [C, N]) * op_T(dY^T: col-major [OC, N])   m=C  n=OC k=N  "NT"
//   fp8 dgrad  dX^T [C, N]  = op_T(W^T stored [C, OC]: col-major [OC, C]) * dY^T        m=C  n=N  k=OC "TN"
//   fp8 wgrad  dW^T [C, OC] = op_T(X^T stored [C, N]: col-major [N, C])
//                             * dY^T stored [OC, N] (col-major [N, OC])                 m=C  n=OC k=N  "TN"
// clang-format on
#include <cstdint>
#include <cstring>

#include "llmc/kernels/gemm/matmul.cuh"
#include "llmc/kernels/gemm/matmul_plan.cuh"

namespace {

bool is_fp8(GemmKind kind) { return kind >= GemmKind::Fp8Forward; }
bool is_forward(GemmKind kind) { return kind == GemmKind::Forward || kind == GemmKind::Fp8Forward; }
bool is_wgrad(GemmKind kind) { return kind == GemmKind::Wgrad || kind == GemmKind::Fp8Wgrad; }

// Each role: the names its errors use (the launcher's, D's, A's and B's), its transposes, and m, n, k and the
// leading dimensions of A, B and D as picks among N, C and OC (the table at the top of this file).
enum Dim { kDimN, kDimC, kDimOC };
struct Role {
    const char *who, *d, *a, *b;
    cublasOperation_t ta, tb;
    Dim m, n, k, lda, ldb, ldd;
};
constexpr cublasOperation_t kT = CUBLAS_OP_T, kN = CUBLAS_OP_N;
// clang-format off
const Role kRoles[] = {  // indexed by GemmKind
    {"matmul_forward",          "out",     "weight",  "inp",   kT, kN, kDimOC, kDimN,  kDimC,  kDimC,  kDimC,  kDimOC},
    {"matmul_backward (dgrad)", "dinp",    "weight",  "dout",  kN, kN, kDimC,  kDimN,  kDimOC, kDimC,  kDimOC, kDimC},
    {"matmul_backward (wgrad)", "dweight", "inp",     "dout",  kN, kT, kDimC,  kDimOC, kDimN,  kDimC,  kDimOC, kDimC},
    {"matmul_fp8_forward",      "out",     "weight",  "inp",   kT, kN, kDimOC, kDimN,  kDimC,  kDimC,  kDimC,  kDimOC},
    {"matmul_fp8_dgrad",        "dinp",    "weightT", "dout",  kT, kN, kDimC,  kDimN,  kDimOC, kDimOC, kDimOC, kDimC},
    {"matmul_fp8_wgrad",        "dweight", "inpT",    "doutT", kT, kN, kDimC,  kDimOC, kDimN,  kDimN,  kDimN,  kDimC},
};
// clang-format on
const Role& role(GemmKind kind) { return kRoles[(int)kind]; }

// The key of a call before its options (epilogue, beta, fast accumulation, scales); D is BF16.
GemmKey role_key(const GemmCall& c) {
    const Role& r = role(c.kind);
    const int dims[3] = {c.N, c.C, c.OC};
    GemmKey key;
    memset(&key, 0, sizeof key);
    key.kind = (int32_t)c.kind;
    key.transa = r.ta;
    key.transb = r.tb;
    key.m = dims[r.m];
    key.n = dims[r.n];
    key.k = dims[r.k];
    key.lda = dims[r.lda];
    key.ldb = dims[r.ldb];
    key.ldd = dims[r.ldd];
    key.a_type = c.a.type;
    key.b_type = c.b.type;
    key.d_type = CUDA_R_16BF;
    key.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    return key;
}

void check_aligned(const void* p, const char* who, const char* name) {
    CHECK(((uintptr_t)p & 15) == 0, "%s: %s (%p) must be 16-byte aligned", who, name, p);
}

// Sizes: BF16 needs C and OC multiples of 8; FP8 multiples of 16, and N too for wgrad (its reduction
// dimension). Types: BF16 operands in BF16 roles; in FP8 roles A is E4M3 and B E4M3 (forward) or E4M3 /
// E5M2 (gradients). Pointers 16-byte aligned; FP8 scale_inv pointers present and aligned as the operands are
// (cuBLASLt refused a 4-byte aligned one with status 15, NOT_SUPPORTED).
void check_call(const GemmCall& c) {
    const Role& nm = role(c.kind);
    const bool fp8 = is_fp8(c.kind);
    const int multiple = fp8 ? 16 : 8, multiple_n = c.kind == GemmKind::Fp8Wgrad ? 16 : 1;
    CHECK(c.N > 0 && c.C > 0 && c.OC > 0, "%s: bad sizes N=%d C=%d OC=%d", nm.who, c.N, c.C, c.OC);
    CHECK(c.C % multiple == 0 && c.OC % multiple == 0, "%s: C=%d and OC=%d must be multiples of %d", nm.who,
          c.C, c.OC, multiple);
    CHECK(c.N % multiple_n == 0, "%s: N=%d must be a multiple of %d", nm.who, c.N, multiple_n);
    if (fp8) {
        const bool b_ok =
            c.b.type == CUDA_R_8F_E4M3 || (c.kind != GemmKind::Fp8Forward && c.b.type == CUDA_R_8F_E5M2);
        CHECK(c.a.type == CUDA_R_8F_E4M3 && b_ok,
              "%s: operand types %d x %d (E4M3 x E4M3, or x E5M2 for a gradient)", nm.who, (int)c.a.type,
              (int)c.b.type);
        CHECK(c.a.scale_inv && c.b.scale_inv, "%s: scale_inv pointers are required", nm.who);
        check_aligned(c.a.scale_inv, nm.who, "A's scale_inv");
        check_aligned(c.b.scale_inv, nm.who, "B's scale_inv");
    } else {
        CHECK(c.a.type == CUDA_R_16BF && c.b.type == CUDA_R_16BF, "%s: operands must be BF16", nm.who);
    }
    CHECK(c.bias == nullptr || is_forward(c.kind), "%s: a bias only in a forward GEMM", nm.who);
    CHECK(c.residual == nullptr || is_forward(c.kind), "%s: a residual only in a forward GEMM", nm.who);
    CHECK(c.residual == nullptr || (const void*)c.residual != (const void*)c.d,
          "%s: the residual must not be the output (out of place)", nm.who);
    CHECK(!c.accumulate || is_wgrad(c.kind), "%s: accumulation only in a wgrad GEMM", nm.who);
    check_aligned(c.d, nm.who, nm.d);
    check_aligned(c.a.data, nm.who, nm.a);
    check_aligned(c.b.data, nm.who, nm.b);
    if (c.bias) check_aligned(c.bias, nm.who, "bias");
    if (c.residual) check_aligned(c.residual, nm.who, "residual");
}

}  // namespace

void matmul_gemm(MatmulPlanCache* cache, GpuContext* ctx, const GemmCall& call, cudaStream_t stream) {
    check_call(call);
    GemmKey key = role_key(call);
    key.epilogue = call.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    key.beta_nonzero = call.accumulate || call.residual;
    key.fast_accum = call.kind == GemmKind::Fp8Forward && cache->tuning.fp8_forward_fast_accum ? 1 : 0;
    key.scaled = is_fp8(call.kind);
    GemmArgs args;
    args.a = call.a.data;
    args.a_scale = call.a.scale_inv;
    args.b = call.b.data;
    args.b_scale = call.b.scale_inv;
    args.d = call.d;
    args.bias = call.bias;
    args.c = call.residual;
    args.beta = call.accumulate || call.residual ? 1.0f : 0.0f;
    gemm_run(cache, ctx, key, args, stream);
}

// ---------------------------------------------------------------------------------------------------------
// BF16 launchers

static GemmOperand bf16_operand(const bf16* p) { return {p, CUDA_R_16BF, nullptr}; }

void matmul_forward(MatmulPlanCache* cache, GpuContext* ctx, bf16* out_NO, const bf16* inp_NC,
                    const bf16* weight_OI, const bf16* bias_O, int N, int C, int OC, cudaStream_t stream,
                    const bf16* residual_NO) {
    GemmCall call;
    call.kind = GemmKind::Forward;
    call.N = N, call.C = C, call.OC = OC;
    call.a = bf16_operand(weight_OI);
    call.b = bf16_operand(inp_NC);
    call.d = out_NO;
    call.bias = bias_O;
    call.residual = residual_NO;
    matmul_gemm(cache, ctx, call, stream);
}

void matmul_backward(MatmulPlanCache* cache, GpuContext* ctx, bf16* dinp_NC, bf16* dweight_OI, bf16* dbias_O,
                     const bf16* dout_NO, const bf16* inp_NC, const bf16* weight_OI, int N, int C, int OC,
                     bool accumulate_dweight, float* dbias_scratch, cudaStream_t stream) {
    GemmCall call;
    call.N = N, call.C = C, call.OC = OC;
    call.b = bf16_operand(dout_NO);
    if (dinp_NC) {
        call.kind = GemmKind::Dgrad;
        call.a = bf16_operand(weight_OI);
        call.d = dinp_NC;
        matmul_gemm(cache, ctx, call, stream);
    }
    if (dweight_OI) {
        call.kind = GemmKind::Wgrad;
        call.a = bf16_operand(inp_NC);
        call.d = dweight_OI;
        call.accumulate = accumulate_dweight;
        matmul_gemm(cache, ctx, call, stream);
    }
    if (dbias_O) matmul_dbias(dbias_O, dout_NO, N, OC, dbias_scratch, stream, accumulate_dweight);
}
