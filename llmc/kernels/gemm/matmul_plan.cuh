// The cuBLASLt plan cache behind llmc/kernels/gemm/matmul.cuh, internal to llmc/kernels/matmul*.cu: the key
// that shapes a plan (also the key of a stored autotuning choice: the `--gemm-cache` file holds its 16 ints),
// the pointers of one call, the plan, and the call that finds or builds a plan and runs it.
#pragma once
#include <cublasLt.h>

#include <cstdint>
#include <string>

#include "llmc/kernels/gemm/matmul.cuh"

// Everything that shapes a cuBLASLt plan. All int32 (no padding), so memcmp compares it exactly.
struct GemmKey {
    int32_t kind;            // GemmKind
    int32_t transa, transb;  // cublasOperation_t
    int32_t m, n, k;
    int32_t lda, ldb, ldd;
    int32_t a_type, b_type, d_type;  // cudaDataType_t; C has D's type
    int32_t epilogue;                // cublasLtEpilogue_t
    int32_t beta_nonzero;
    int32_t fast_accum;
    int32_t scaled;  // A/B scale pointers set (FP8)
};
static_assert(sizeof(GemmKey) == 16 * sizeof(int32_t), "GemmKey must have no padding");

// Per-call pointers.
struct GemmArgs {
    const void* a = nullptr;
    const void* b = nullptr;
    void* d = nullptr;
    const void* c = nullptr;  // C when beta != 0, out of place (null: C = D, accumulation in place)
    float beta = 0.0f;
    const void* bias = nullptr;  // bias (forward, BIAS epilogue)
    const float* a_scale = nullptr;
    const float* b_scale = nullptr;
};

struct MatmulPlan {
    GemmKey key;
    bool ok = false;  // false: cuBLASLt has no algorithm (cached so that we do not ask again)
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    size_t workspace = 0;
    // How the algorithm was chosen (matmul_plan_report).
    enum class Choice { Heuristic, Timed, FromCache } choice = Choice::Heuristic;
    int rank = 0, candidates = 1;      // Timed: the winner's place among the heuristic's answers
    float us = 0.0f, first_us = 0.0f;  // Timed: the winner's and the first answer's microseconds
    // Timed, the second round (-1: not run): the variants screened, those compared with the winner's output
    // and those bitwise the same, and the microseconds of the choice and of the winner timed alike (equal:
    // the winner stayed).
    int variants = -1, compared = 0, same_bits = 0;
    float refined_us = 0.0f, winner_us = 0.0f;
};

// Bytes cuBLASLt writes at D: column-major m x n with leading dimension ldd.
inline size_t gemm_d_bytes(const GemmKey& k) {
    return ((size_t)(k.n - 1) * k.ldd + k.m) * (k.d_type == CUDA_R_32F ? 4 : 2);
}

// "fp8 dgrad GEMM (m=... n=... k=..., op TN, ...)": for errors and the plan report.
std::string gemm_describe(const GemmKey& k);

// A configuration attribute of `algo` that fits 32 bits: its ID, tile, stages, split-K, custom option.
uint32_t algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr);

// One cublasLtMatmul of plan p with `algo` on args' operands, alpha 1 and args.beta, reading C at c and
// writing D at d (gemm_run: the call's own; the autotuner's timings and comparisons: scratch), in ctx's
// cuBLASLt workspace.
cublasStatus_t gemm_launch(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                           const GemmArgs& args, const void* c, void* d, cudaStream_t stream);

// Whether cuBLASLt accepts `algo` for plan p within ctx's cuBLASLt workspace (cublasLtMatmulAlgoCheck); if so
// *result holds its workspace size and `algo` itself. The one test of a stored choice and of a tuning
// variant.
bool gemm_algo_accepted(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                        cublasLtMatmulHeuristicResult_t* result);

// Finds or builds the plan for `key` in the cache, then runs it. A GEMM cuBLASLt has no algorithm for is
// fatal.
void gemm_run(MatmulPlanCache* cache, GpuContext* ctx, const GemmKey& key, const GemmArgs& args,
              cudaStream_t stream);
