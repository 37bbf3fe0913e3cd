// GEMMs of the trainer through cuBLASLt, BF16 and FP8 (Hopper), for row-major nn.Linear layers:
// clang-format off
//   forward  out_NO   = inp_NC weight_OI^T (+ bias_O)
//   dgrad    dinp_NC   = dout_NO weight_OI
//   wgrad    dweight_OI (+)= dout_NO^T inp_NC
//   dbias    dbias_O  = sum over N of dout_NO
// clang-format on
// N = B*T rows, C input channels, OC output channels. All pointers must be 16-byte aligned. BF16 GEMMs need
// C and OC multiples of 8 (N is free); FP8 GEMMs need C and OC multiples of 16, and N too for wgrad (it is
// the reduction dimension there). Compute is FP32 everywhere; outputs are BF16.
//
// cuBLASLt descriptors, matrix layouts and the algorithm picked by the heuristic are built once per distinct
// GEMM (kind, shape, dtypes, epilogue, beta != 0, fast accumulation) and kept in a MatmulPlanCache owned by
// the caller; a call only sets the pointer attributes (bias, scales), which is cheap. Split-K reductions
// in BF16 (cuBLASLt's INPLACE / OUTPUT_TYPE schemes) are excluded, so partial sums are always reduced in
// FP32. All GEMMs share ctx->cublaslt_workspace: calls must be ordered (one stream, or streams that are
// serialized).
//
// FP8 (per-tensor scaling): every FP8 operand comes with a scale_inv, a device float holding its
// dequantization factor (1/scale of the cast that wrote it); D = scale_inv_A * scale_inv_B * (A B). cuBLASLt
// on sm_90 only runs "TN" FP8 GEMMs (both operands contiguous along K), so backward reads transposed FP8
// copies (produced by the cast kernels): weightT_COC for dgrad, inpT_CN and doutT_OCN for wgrad. Gradient
// operands are E4M3 or E5M2 (a runtime choice); E5M2 x E5M2 does not exist, and the other operand is always
// E4M3. Forward uses fast accumulation (GemmTuning), dgrad and wgrad do not. The FP8 launchers that take
// Fp8Tensor operands are llmc/fp8/gemm.cuh.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llmc/gpu/context.h"
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/host/choice_cache.h"

struct MatmulPlan;  // matmul_plan.cuh: descriptors + layouts + algorithm for one GEMM key

// How a plan's algorithm is chosen. Off: cuBLASLt's first heuristic answer. On: its best kGemmCandidates
// answers are each timed on the call's own operands (outside stream capture, e.g. the first training step)
// and the fastest is kept (with `variants`, a second round: variants of it and of the other answers, other
// tiles, cluster shapes and kernel options, screened, and the fastest whose output is bitwise its own kept;
// matmul_autotune.h); with a cache file the choice is stored there (keyed by GPU, SM count, cuBLASLt version
// and the GEMM) and later processes take it from there instead of timing, so runs sharing the file make the
// same choices and stay bitwise reproducible.
struct GemmTuning {
    bool autotune = false;
    std::string cache_path;              // "": no file (each process times its own)
    bool fp8_forward_fast_accum = true;  // matmul_fp8_forward in fast accumulation (else FP32 promotion)
    bool variants = false;               // the second round (--gemm-variants)
};

struct MatmulPlanCache {
    std::vector<MatmulPlan*> plans;
    GemmTuning tuning;
    std::unique_ptr<ChoiceCache> choices;  // opened on the first tuned plan
    bool warned = false;                   // a cache write error was printed

    MatmulPlanCache() = default;
    MatmulPlanCache(const MatmulPlanCache&) = delete;
    MatmulPlanCache& operator=(const MatmulPlanCache&) = delete;
    ~MatmulPlanCache();
    size_t size() const { return plans.size(); }
};
// Destroys every cached plan (the cache stays usable and refills on demand). The destructor calls it.
void matmul_plan_cache_clear(MatmulPlanCache* cache);
// One line per plan: the GEMM, the algorithm (id, tile, stages, split-K) and how it was chosen (timed: its
// rank among the heuristic's answers and its time against the first answer's; or from the cache file).
std::vector<std::string> matmul_plan_report(const MatmulPlanCache& cache);

// ---------------------------------------------------------------------------------------------------------
// BF16

// out_NO = inp_NC weight_OI^T + bias_O (bias nullable: then no bias, e.g. the LM head logits_NV)
// (+ residual_NO when given: the residual stream's add in the GEMM's epilogue; out_NO must not alias it).
void matmul_forward(MatmulPlanCache* cache, GpuContext* ctx, bf16* out_NO, const bf16* inp_NC,
                    const bf16* weight_OI, const bf16* bias_O, int N, int C, int OC, cudaStream_t stream,
                    const bf16* residual_NO = nullptr);

// Bytes of FP32 scratch the dbias reduction needs (pass as dbias_scratch).
size_t matmul_dbias_scratch_bytes(int N, int OC);

// Backward of matmul_forward. Each output is optional (nullptr skips it):
//   dinp_NC = dout W (overwritten); dweight_OI = dout^T inp (+= if accumulate_dweight, else overwritten);
//   dbias_O = column sums of dout (+= if accumulate_dweight, else overwritten; deterministic, by
//   matmul_dbias; needs dbias_scratch of
//   matmul_dbias_scratch_bytes(N, OC)).
// inp_NC is only read for dweight, weight_OI only for dinp.
void matmul_backward(MatmulPlanCache* cache, GpuContext* ctx, bf16* dinp_NC, bf16* dweight_OI, bf16* dbias_O,
                     const bf16* dout_NO, const bf16* inp_NC, const bf16* weight_OI, int N, int C, int OC,
                     bool accumulate_dweight, float* dbias_scratch, cudaStream_t stream);

// dbias_O (+)= sum over the N rows of dout_NO (bf16 out), as two deterministic passes through
// dbias_scratch. Exposed for callers that reduce a dout that no GEMM reads in BF16. OC must be a multiple
// of 8.
void matmul_dbias(bf16* dbias_O, const bf16* dout_NO, int N, int OC, float* dbias_scratch,
                  cudaStream_t stream, bool accumulate = false);

// ---------------------------------------------------------------------------------------------------------
// The one GEMM entry: the launchers above and the FP8 ones (llmc/kernels/gemm/gemm_fp8.cuh, over Fp8Tensor
// operands) are adapters that name a role and its operands.

// The six roles. The values are part of every plan key, so of the `--gemm-cache` file: never renumber.
enum class GemmKind : int32_t { Forward, Dgrad, Wgrad, Fp8Forward, Fp8Dgrad, Fp8Wgrad };

// One operand as cuBLASLt reads it: its bytes, their type and (FP8) the device scale_inv it dequantizes
// with.
struct GemmOperand {
    const void* data = nullptr;
    cudaDataType_t type = CUDA_R_16BF;
    const float* scale_inv = nullptr;
};

// A GEMM of a Linear [OC, C] over N rows. Operands a and b in cuBLASLt's order, per role:
// clang-format off
//   Forward    a = weight_OI        b = inp_NC     d = out_NO       BF16
//   Dgrad      a = weight_OI        b = dout_NO   d = dinp_NC       BF16
//   Wgrad      a = inp_NC            b = dout_NO   d = dweight_OI   BF16
//   Fp8Forward a = weight_OI        b = inp_NC     d = out_NO       E4M3 x E4M3, fast accumulation
//   Fp8Dgrad   a = weightT_COC       b = dout_NO   d = dinp_NC       E4M3 x (E4M3 or E5M2)
//   Fp8Wgrad   a = inpT_CN           b = doutT_OCN  d = dweight_OI   E4M3 x (E4M3 or E5M2)
// clang-format on
// bias (forward roles, nullable) is added through the epilogue; residual (forward roles, nullable) is added
// as C (beta 1, out of place: D = A B + bias + residual, one rounding of their FP32 sum); accumulate (wgrad
// roles) makes D += (beta 1) instead of D =.
struct GemmCall {
    GemmKind kind = GemmKind::Forward;
    int N = 0, C = 0, OC = 0;
    GemmOperand a, b;
    bf16* d = nullptr;
    const bf16* bias = nullptr;
    const bf16* residual = nullptr;
    bool accumulate = false;
};
void matmul_gemm(MatmulPlanCache* cache, GpuContext* ctx, const GemmCall& call, cudaStream_t stream);
