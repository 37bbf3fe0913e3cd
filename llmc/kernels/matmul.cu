// GEMMs through cuBLASLt (see matmul.cuh). Kernels (the dbias reduction) first, then the plan cache, then the
// launchers.
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
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "llmc/gpu/sanitizer_marks.h"
#include "llmc/kernels/matmul.cuh"

// ---------------------------------------------------------------------------------------------------------
// dbias kernels: column sums of dout_NOC. Pass 1: a block of (32, 8) threads owns 256 columns (each thread 8
// contiguous columns, one 16-byte load per row) and a slice of rows; threadIdx.y strides over the rows, the 8
// partial rows are summed in shared memory in a fixed order and written as FP32 partials [splits, OC].
// Pass 2 sums the partials of each column in split order. No atomics: bitwise deterministic.

constexpr int kDbiasColsPerBlock = 256;  // 32 threads x 8 bf16
constexpr int kDbiasRowLanes = 8;

__global__ void __launch_bounds__(256)
    matmul_dbias_partial_kernel(float* partial_SOC, const bf16* dout_NOC, int N, int OC, int rows_per_split) {
    __shared__ float sums[kDbiasRowLanes][kDbiasColsPerBlock];
    const int col = blockIdx.x * kDbiasColsPerBlock + threadIdx.x * x128::size;
    const int row_begin = blockIdx.y * rows_per_split;
    const int row_end = min(N, row_begin + rows_per_split);
    float acc[x128::size] = {};
    if (col < OC) {
        const bf16* p = dout_NOC + col;
#pragma unroll 4
        for (int r = row_begin + threadIdx.y; r < row_end; r += kDbiasRowLanes) {
            x128 v = load128cs(p + (size_t)r * OC);
#pragma unroll
            for (int k = 0; k < x128::size; k++) acc[k] += __bfloat162float(v[k]);
        }
    }
#pragma unroll
    for (int k = 0; k < x128::size; k++) sums[threadIdx.y][threadIdx.x * x128::size + k] = acc[k];
    __syncthreads();
    const int local = threadIdx.y * 32 + threadIdx.x;  // 0..255: one column per thread for the fold
    float s = 0.0f;
#pragma unroll
    for (int y = 0; y < kDbiasRowLanes; y++) s += sums[y][local];
    const int out_col = blockIdx.x * kDbiasColsPerBlock + local;
    if (out_col < OC) partial_SOC[(size_t)blockIdx.y * OC + out_col] = s;
}

// One thread per column sums its partials in split order. The splits are many (220 at OC = 1600) and the
// threads few (one per column), so the loads of 16 splits are issued before their adds (the same additions in
// the same order), and blocks of 64 threads spread the columns over more SMs.
constexpr int kDbiasFinalThreads = 64;
__global__ void matmul_dbias_final_kernel(bf16* dbias_OC, const float* partial_SOC, int splits, int OC,
                                          bool accumulate) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= OC) return;
    float s = 0.0f;
#pragma unroll 16
    for (int i = 0; i < splits; i++) s += partial_SOC[(size_t)i * OC + c];
    if (accumulate) s += __bfloat162float(dbias_OC[c]);
    dbias_OC[c] = __float2bfloat16(s);
}

// Split of the N rows for the dbias reduction: enough blocks to fill the GPU (~12 blocks of 256 threads per
// SM on 132 SMs) while each thread still reads several rows. Depends on (N, OC) only, so the scratch size is
// known without a device.
static void dbias_split(int N, int OC, int* splits, int* rows_per_split) {
    const int col_blocks = ceil_div(OC, kDbiasColsPerBlock);
    int s = ceil_div(1536, col_blocks);
    s = std::max(1, std::min(s, ceil_div(N, 32)));
    *rows_per_split = ceil_div(N, s);
    *splits = ceil_div(N, *rows_per_split);
}

// ---------------------------------------------------------------------------------------------------------
// Plan cache

namespace {

constexpr int kGemmCandidates = 8;  // heuristic answers timed per GEMM when autotuning

enum class GemmKind : int32_t { Forward, Dgrad, Wgrad, Fp8Forward, Fp8Dgrad, Fp8Wgrad };

const char* kind_name(int32_t kind) {
    switch ((GemmKind)kind) {
        case GemmKind::Forward:
            return "bf16 forward";
        case GemmKind::Dgrad:
            return "bf16 dgrad";
        case GemmKind::Wgrad:
            return "bf16 wgrad";
        case GemmKind::Fp8Forward:
            return "fp8 forward";
        case GemmKind::Fp8Dgrad:
            return "fp8 dgrad";
        case GemmKind::Fp8Wgrad:
            return "fp8 wgrad";
    }
    return "?";
}

// Everything that shapes a cuBLASLt plan. All int32 (no padding), so memcmp compares it exactly.
struct GemmKey {
    int32_t kind;
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

GemmKey make_key(GemmKind kind, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda,
                 int ldb, int ldd, cudaDataType_t at, cudaDataType_t bt) {
    GemmKey key;
    memset(&key, 0, sizeof key);
    key.kind = (int32_t)kind;
    key.transa = ta;
    key.transb = tb;
    key.m = m;
    key.n = n;
    key.k = k;
    key.lda = lda;
    key.ldb = ldb;
    key.ldd = ldd;
    key.a_type = at;
    key.b_type = bt;
    key.d_type = CUDA_R_16BF;
    key.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    return key;
}

// Per-call pointers.
struct GemmArgs {
    const void* a = nullptr;
    const void* b = nullptr;
    void* d = nullptr;  // also C when beta != 0
    float beta = 0.0f;
    const void* bias = nullptr;  // bias (forward, BIAS epilogue)
    const float* a_scale = nullptr;
    const float* b_scale = nullptr;
};

bool epilogue_has_bias(int32_t e) { return e == CUBLASLT_EPILOGUE_BIAS; }

const char* type_name(int32_t t) {
    switch ((cudaDataType_t)t) {
        case CUDA_R_16BF:
            return "bf16";
        case CUDA_R_8F_E4M3:
            return "e4m3";
        case CUDA_R_8F_E5M2:
            return "e5m2";
        case CUDA_R_32F:
            return "fp32";
        default:
            return "?";
    }
}

std::string describe(const GemmKey& k) {
    char buf[256];
    snprintf(buf, sizeof buf,
             "%s GEMM (m=%d n=%d k=%d, op %c%c, A %s, B %s, epilogue %d, beta %d, fast_accum %d)",
             kind_name(k.kind), k.m, k.n, k.k, k.transa == CUBLAS_OP_T ? 'T' : 'N',
             k.transb == CUBLAS_OP_T ? 'T' : 'N', type_name(k.a_type), type_name(k.b_type), k.epilogue,
             k.beta_nonzero, k.fast_accum);
    return buf;
}

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(T)));
}

// The pointer attributes, set on every call (and once before the heuristic, which reads their alignment).
void set_pointers(cublasLtMatmulDesc_t desc, const GemmKey& key, const GemmArgs& args) {
    if (epilogue_has_bias(key.epilogue)) set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias);
    if (key.scaled) {
        set_desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, (const void*)args.a_scale);
        set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, (const void*)args.b_scale);
    }
}

}  // namespace

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
};

static void destroy_plan(MatmulPlan* p) {
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c) cublasLtMatrixLayoutDestroy(p->c);
    if (p->d) cublasLtMatrixLayoutDestroy(p->d);
    delete p;
}

void matmul_plan_cache_clear(MatmulPlanCache* cache) {
    for (MatmulPlan* p : cache->plans) destroy_plan(p);
    cache->plans.clear();
}

MatmulPlanCache::~MatmulPlanCache() { matmul_plan_cache_clear(this); }

// ---------------------------------------------------------------------------------------------------------
// Algorithm choice (GemmTuning): time the heuristic's best answers on the call's operands, keep the fastest.

namespace {

constexpr int kTimingRounds = 2;  // candidates are timed in turn, twice; each keeps its faster round
constexpr int kTimedRuns = 8;     // launches per timing (after two warm-up launches)

// What a stored choice is valid for: the GPU, the library and the workspace the algorithms may use.
std::string tuning_fingerprint(const GpuContext* ctx) {
    char buf[320];
    snprintf(buf, sizeof buf, "%s sm_%d%d %d SMs cublasLt %zu workspace %zu", ctx->props.name,
             ctx->props.major, ctx->props.minor, ctx->props.multiProcessorCount, cublasLtGetVersion(),
             ctx->cublaslt_workspace_size);
    return buf;
}

std::vector<int64_t> key_ints(const GemmKey& k) {
    int32_t v[sizeof(GemmKey) / sizeof(int32_t)];
    memcpy(v, &k, sizeof k);
    return std::vector<int64_t>(v, v + sizeof(GemmKey) / sizeof(int32_t));
}

// A choice as stored: the algorithm's 8 opaque words.
std::vector<uint64_t> algo_words(const cublasLtMatmulAlgo_t& a) {
    return std::vector<uint64_t>(a.data, a.data + 8);
}

size_t d_bytes(const GemmKey& k) {
    return ((size_t)(k.n - 1) * k.ldd + k.m) * (k.d_type == CUDA_R_32F ? 4 : 2);
}

// Takes a stored algorithm if cuBLASLt still accepts it for this plan within our workspace.
bool adopt(GpuContext* ctx, MatmulPlan* p, const std::vector<uint64_t>& words) {
    if (words.size() != 8) return false;
    cublasLtMatmulAlgo_t algo;
    memcpy(algo.data, words.data(), sizeof algo.data);
    cublasLtMatmulHeuristicResult_t r{};
    if (cublasLtMatmulAlgoCheck(ctx->cublaslt, p->desc, p->a, p->b, p->c, p->d, &algo, &r) !=
            CUBLAS_STATUS_SUCCESS ||
        r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > ctx->cublaslt_workspace_size)
        return false;
    p->algo = algo;
    p->workspace = r.workspaceSize;
    p->choice = MatmulPlan::Choice::FromCache;
    return true;
}

// Mean microseconds of one launch of `algo` writing D at `d`, or -1 if cuBLASLt refuses it.
float time_algorithm(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                     const GemmArgs& args, void* d, cudaStream_t stream, cudaEvent_t start,
                     cudaEvent_t stop) {
    const float alpha = 1.0f, beta = args.beta;
    auto run = [&] {
        return cublasLtMatmul(ctx->cublaslt, p.desc, &alpha, args.a, p.a, args.b, p.b, &beta, d, p.c, d, p.d,
                              &algo, ctx->cublaslt_workspace, ctx->cublaslt_workspace_size, stream);
    };
    for (int i = 0; i < 2; i++)
        if (run() != CUBLAS_STATUS_SUCCESS) return -1.0f;
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < kTimedRuns; i++) run();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return 1000.0f * ms / kTimedRuns;
}

// Microseconds of each candidate (infinity where refused). With beta != 0 cuBLASLt reads C = D, so the
// timings write a scratch copy and the real accumulator stays untouched; otherwise they write D itself, which
// the real call that follows overwrites.
std::vector<float> time_candidates(GpuContext* ctx, const MatmulPlan& p,
                                   const std::vector<cublasLtMatmulHeuristicResult_t>& cands,
                                   const GemmArgs& args, cudaStream_t stream) {
    void* d = args.d;
    void* scratch = nullptr;
    if (p.key.beta_nonzero) {
        CHECK_CUDA(cudaMalloc(&scratch, d_bytes(p.key)));
        CHECK_CUDA(cudaMemsetAsync(scratch, 0, d_bytes(p.key), stream));
        d = scratch;
    }
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    std::vector<float> us(cands.size(), INFINITY);
    for (int round = 0; round < kTimingRounds; round++)
        for (size_t i = 0; i < cands.size(); i++) {
            const float t = time_algorithm(ctx, p, cands[i].algo, args, d, stream, start, stop);
            if (t >= 0.0f) us[i] = std::min(us[i], t);
        }
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    if (scratch) {
        CHECK_CUDA(cudaStreamSynchronize(stream));
        CHECK_CUDA(cudaFree(scratch));
    }
    return us;
}

// The plan's algorithm under autotuning: the stored choice if there is one, else (outside stream capture:
// no timing inside a graph) the fastest candidate, stored for later processes. Inside a capture with no
// stored choice the heuristic's first stays.
void choose_algorithm(MatmulPlanCache* cache, GpuContext* ctx, MatmulPlan* p,
                      const std::vector<cublasLtMatmulHeuristicResult_t>& cands, const GemmArgs& args,
                      cudaStream_t stream) {
    if (!cache->choices)
        cache->choices = std::make_unique<ChoiceCache>(cache->tuning.cache_path, tuning_fingerprint(ctx));
    const std::vector<int64_t> key = key_ints(p->key);
    std::vector<uint64_t> stored;
    if (cache->choices->find(key, &stored) && adopt(ctx, p, stored)) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CHECK_CUDA(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) return;
    const std::vector<float> us = time_candidates(ctx, *p, cands, args, stream);
    const size_t best = std::min_element(us.begin(), us.end()) - us.begin();  // ties: the heuristic's order
    if (!std::isfinite(us[best])) return;
    std::string error;
    const std::vector<uint64_t> mine = algo_words(cands[best].algo);
    const std::vector<uint64_t> kept = cache->choices->publish(key, mine, &error);
    if (!error.empty() && !cache->warned) {
        fprintf(stderr, "warning: GEMM autotuning: choices not stored (%s)\n", error.c_str());
        cache->warned = true;
    }
    if (kept != mine && adopt(ctx, p, kept)) return;  // another process stored its choice first
    p->algo = cands[best].algo;
    p->workspace = cands[best].workspaceSize;
    p->choice = MatmulPlan::Choice::Timed;
    p->rank = (int)best;
    p->candidates = (int)cands.size();
    p->us = us[best];
    p->first_us = us[0];
}

uint32_t algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
    uint32_t v = 0;  // ID is int32, TILE_ID / STAGES_ID / SPLITK_NUM uint32: all fit
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &written);
    return v;
}

}  // namespace

std::vector<std::string> matmul_plan_report(const MatmulPlanCache& cache) {
    std::vector<std::string> lines;
    for (const MatmulPlan* p : cache.plans) {
        if (!p->ok) continue;
        char how[160];
        if (p->choice == MatmulPlan::Choice::Timed)
            snprintf(how, sizeof how, "timed: answer %d of %d, %.1f us (first answer %.1f us, %.2fx)",
                     p->rank + 1, p->candidates, p->us, p->first_us, p->first_us / p->us);
        else
            snprintf(
                how, sizeof how, "%s",
                p->choice == MatmulPlan::Choice::FromCache ? "from the cache file" : "heuristic's first");
        char line[512];
        snprintf(line, sizeof line, "%s: algo %u tile %u stages %u split-k %u, %s", describe(p->key).c_str(),
                 algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_ID),
                 algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                 algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                 algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM), how);
        lines.push_back(line);
    }
    return lines;
}

// Builds descriptors and layouts for `key` and asks the heuristic for the best algorithm (with autotuning:
// its best few, then choose_algorithm).
static MatmulPlan* create_plan(MatmulPlanCache* cache, GpuContext* ctx, const GemmKey& key,
                               const GemmArgs& args, cudaStream_t stream) {
    MatmulPlan* p = new MatmulPlan();
    p->key = key;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, (int32_t)key.transa);
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, (int32_t)key.transb);
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, (uint32_t)key.epilogue);
    if (epilogue_has_bias(key.epilogue))
        set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, (int32_t)CUDA_R_16BF);
    if (key.a_type != CUDA_R_16BF) set_desc(p->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, (int8_t)key.fast_accum);
    set_pointers(p->desc, key, args);

    const bool ta = key.transa == CUBLAS_OP_T, tb = key.transb == CUBLAS_OP_T;
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, (cudaDataType_t)key.a_type, ta ? key.k : key.m,
                                            ta ? key.m : key.k, key.lda));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, (cudaDataType_t)key.b_type, tb ? key.n : key.k,
                                            tb ? key.k : key.n, key.ldb));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, (cudaDataType_t)key.d_type, key.m, key.n, key.ldd));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->d, (cudaDataType_t)key.d_type, key.m, key.n, key.ldd));

    cublasLtMatmulPreference_t pref;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = ctx->cublaslt_workspace_size;
    CHECK_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    // Split-K partial sums only in FP32 (not in the BF16 output type): accuracy, and no in-place counters.
    const uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                      &reduction_mask, sizeof reduction_mask));
    // Every pointer is checked to be 16-byte aligned (not 256 as the default assumes): no algorithm that
    // needs more.
    const uint32_t align = 16;
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
        CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align));
    cublasLtMatmulHeuristicResult_t results[kGemmCandidates] = {};
    int returned = 0;
    const int wanted = cache->tuning.autotune ? kGemmCandidates : 1;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx->cublaslt, p->desc, p->a, p->b, p->c, p->d, pref,
                                                       wanted, results, &returned);
    CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    std::vector<cublasLtMatmulHeuristicResult_t> usable;
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < returned; i++)
        if (results[i].state == CUBLAS_STATUS_SUCCESS) usable.push_back(results[i]);
    if (usable.empty()) return p;
    p->ok = true;
    p->algo = usable[0].algo;
    p->workspace = usable[0].workspaceSize;
    if (cache->tuning.autotune) choose_algorithm(cache, ctx, p, usable, args, stream);
    return p;
}

// Finds or builds the plan for `key`, then runs it. A GEMM cuBLASLt has no algorithm for is fatal.
static void run_gemm(MatmulPlanCache* cache, GpuContext* ctx, const GemmKey& key, const GemmArgs& args,
                     cudaStream_t stream) {
    MatmulPlan* plan = nullptr;
    for (MatmulPlan* p : cache->plans)
        if (memcmp(&p->key, &key, sizeof key) == 0) {
            plan = p;
            break;
        }
    if (!plan) {
        plan = create_plan(cache, ctx, key, args, stream);
        cache->plans.push_back(plan);
    }
    if (!plan->ok)
        fatal("cuBLASLt has no algorithm for the %s (check sizes/alignment)", describe(key).c_str());
    set_pointers(plan->desc, key, args);
    const float alpha = 1.0f, beta = args.beta;
    cublasStatus_t st = cublasLtMatmul(ctx->cublaslt, plan->desc, &alpha, args.a, plan->a, args.b, plan->b,
                                       &beta, args.d, plan->c, args.d, plan->d, &plan->algo,
                                       ctx->cublaslt_workspace, ctx->cublaslt_workspace_size, stream);
    if (st != CUBLAS_STATUS_SUCCESS)
        fatal("cublasLtMatmul failed with status %d for the %s", (int)st, describe(key).c_str());
    // D is column-major m x n with leading dimension ldd; its TMA stores are invisible to initcheck
    const size_t d_elem = key.d_type == CUDA_R_32F ? 4 : 2;
    mark_initialized(args.d, ((size_t)(key.n - 1) * key.ldd + key.m) * d_elem, stream);
}

static void check_aligned(const void* p, const char* name) {
    CHECK(((uintptr_t)p & 15) == 0, "matmul: %s (%p) must be 16-byte aligned", name, p);
}

// An FP8 GEMM's two scale_inv pointers: present, and aligned as the operands are (cuBLASLt refused a 4-byte
// aligned one with status 15, NOT_SUPPORTED).
static void check_scale_pointers(const char* who, const float* a, const char* a_name, const float* b,
                                 const char* b_name) {
    CHECK(a && b, "%s: scale_inv pointers are required", who);
    check_aligned(a, a_name);
    check_aligned(b, b_name);
}

static void check_dims(const char* what, int N, int C, int OC, int multiple_c, int multiple_n) {
    CHECK(N > 0 && C > 0 && OC > 0, "%s: bad sizes N=%d C=%d OC=%d", what, N, C, OC);
    CHECK(C % multiple_c == 0 && OC % multiple_c == 0, "%s: C=%d and OC=%d must be multiples of %d", what, C,
          OC, multiple_c);
    CHECK(N % multiple_n == 0, "%s: N=%d must be a multiple of %d", what, N, multiple_n);
}

// ---------------------------------------------------------------------------------------------------------
// BF16 launchers

void matmul_forward(MatmulPlanCache* cache, GpuContext* ctx, bf16* out_NOC, const bf16* inp_NC,
                    const bf16* weight_OCC, const bf16* bias_OC, int N, int C, int OC, cudaStream_t stream) {
    check_dims("matmul_forward", N, C, OC, 8, 1);
    check_aligned(out_NOC, "out");
    check_aligned(inp_NC, "inp");
    check_aligned(weight_OCC, "weight");
    if (bias_OC) check_aligned(bias_OC, "bias");
    GemmKey key =
        make_key(GemmKind::Forward, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, C, C, OC, CUDA_R_16BF, CUDA_R_16BF);
    key.epilogue = bias_OC ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    GemmArgs args;
    args.a = weight_OCC;
    args.b = inp_NC;
    args.d = out_NOC;
    args.bias = bias_OC;
    run_gemm(cache, ctx, key, args, stream);
}

size_t matmul_dbias_scratch_bytes(int N, int OC) {
    int splits, rows;
    dbias_split(N, OC, &splits, &rows);
    return (size_t)splits * OC * sizeof(float);
}

void matmul_dbias(bf16* dbias_OC, const bf16* dout_NOC, int N, int OC, float* dbias_scratch,
                  cudaStream_t stream, bool accumulate) {
    CHECK(N > 0 && OC > 0 && OC % 8 == 0, "matmul_dbias: OC=%d must be a positive multiple of 8 (N=%d)", OC,
          N);
    CHECK(dbias_scratch != nullptr, "matmul_dbias: dbias_scratch is required");
    check_aligned(dout_NOC, "dout");
    int splits, rows_per_split;
    dbias_split(N, OC, &splits, &rows_per_split);
    dim3 grid(ceil_div(OC, kDbiasColsPerBlock), splits), block(32, kDbiasRowLanes);
    matmul_dbias_partial_kernel<<<grid, block, 0, stream>>>(dbias_scratch, dout_NOC, N, OC, rows_per_split);
    CHECK_LAUNCH();
    matmul_dbias_final_kernel<<<ceil_div(OC, kDbiasFinalThreads), kDbiasFinalThreads, 0, stream>>>(
        dbias_OC, dbias_scratch, splits, OC, accumulate);
    CHECK_LAUNCH();
}

void matmul_backward(MatmulPlanCache* cache, GpuContext* ctx, bf16* dinp_NC, bf16* dweight_OCC,
                     bf16* dbias_OC, const bf16* dout_NOC, const bf16* inp_NC, const bf16* weight_OCC, int N,
                     int C, int OC, bool accumulate_dweight, float* dbias_scratch, cudaStream_t stream) {
    check_dims("matmul_backward", N, C, OC, 8, 1);
    check_aligned(dout_NOC, "dout");
    if (dinp_NC) {
        check_aligned(dinp_NC, "dinp");
        check_aligned(weight_OCC, "weight");
        GemmKey key =
            make_key(GemmKind::Dgrad, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, C, OC, C, CUDA_R_16BF, CUDA_R_16BF);
        GemmArgs args;
        args.a = weight_OCC;
        args.b = dout_NOC;
        args.d = dinp_NC;
        run_gemm(cache, ctx, key, args, stream);
    }
    if (dweight_OCC) {
        check_aligned(dweight_OCC, "dweight");
        check_aligned(inp_NC, "inp");
        GemmKey key =
            make_key(GemmKind::Wgrad, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, C, OC, C, CUDA_R_16BF, CUDA_R_16BF);
        key.beta_nonzero = accumulate_dweight;
        GemmArgs args;
        args.a = inp_NC;
        args.b = dout_NOC;
        args.d = dweight_OCC;
        args.beta = accumulate_dweight ? 1.0f : 0.0f;
        run_gemm(cache, ctx, key, args, stream);
    }
    if (dbias_OC) matmul_dbias(dbias_OC, dout_NOC, N, OC, dbias_scratch, stream, accumulate_dweight);
}

// ---------------------------------------------------------------------------------------------------------
// FP8 launchers

static void check_fp8_grad_type(cudaDataType_t t) {
    CHECK(t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2,
          "matmul fp8: gradient type must be CUDA_R_8F_E4M3 or "
          "CUDA_R_8F_E5M2 (got %d)",
          (int)t);
}

void matmul_fp8_forward(MatmulPlanCache* cache, GpuContext* ctx, bf16* out_NOC, const __nv_fp8_e4m3* inp_NC,
                        const float* inp_scale_inv, const __nv_fp8_e4m3* weight_OCC,
                        const float* weight_scale_inv, const bf16* bias_OC, int N, int C, int OC,
                        cudaStream_t stream) {
    check_dims("matmul_fp8_forward", N, C, OC, 16, 1);
    check_aligned(out_NOC, "out");
    check_aligned(inp_NC, "inp");
    check_aligned(weight_OCC, "weight");
    if (bias_OC) check_aligned(bias_OC, "bias");
    check_scale_pointers("matmul_fp8_forward", inp_scale_inv, "inp_scale_inv", weight_scale_inv,
                         "weight_scale_inv");
    GemmKey key = make_key(GemmKind::Fp8Forward, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, C, C, OC, CUDA_R_8F_E4M3,
                           CUDA_R_8F_E4M3);
    key.epilogue = bias_OC ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    key.fast_accum = cache->tuning.fp8_forward_fast_accum ? 1 : 0;
    key.scaled = 1;
    GemmArgs args;
    args.a = weight_OCC;
    args.a_scale = weight_scale_inv;
    args.b = inp_NC;
    args.b_scale = inp_scale_inv;
    args.d = out_NOC;
    args.bias = bias_OC;
    run_gemm(cache, ctx, key, args, stream);
}

void matmul_fp8_dgrad(MatmulPlanCache* cache, GpuContext* ctx, bf16* dinp_NC,
                      const __nv_fp8_e4m3* weightT_COC, const float* weight_scale_inv, const void* dout_NOC,
                      cudaDataType_t dout_type, const float* dout_scale_inv, int N, int C, int OC,
                      cudaStream_t stream) {
    check_dims("matmul_fp8_dgrad", N, C, OC, 16, 1);
    check_fp8_grad_type(dout_type);
    check_aligned(dinp_NC, "dinp");
    check_aligned(weightT_COC, "weightT");
    check_aligned(dout_NOC, "dout");
    check_scale_pointers("matmul_fp8_dgrad", weight_scale_inv, "weight_scale_inv", dout_scale_inv,
                         "dout_scale_inv");
    GemmKey key = make_key(GemmKind::Fp8Dgrad, CUBLAS_OP_T, CUBLAS_OP_N, C, N, OC, OC, OC, C, CUDA_R_8F_E4M3,
                           dout_type);
    key.scaled = 1;
    GemmArgs args;
    args.a = weightT_COC;
    args.a_scale = weight_scale_inv;
    args.b = dout_NOC;
    args.b_scale = dout_scale_inv;
    args.d = dinp_NC;
    run_gemm(cache, ctx, key, args, stream);
}

void matmul_fp8_wgrad(MatmulPlanCache* cache, GpuContext* ctx, bf16* dweight_OCC,
                      const __nv_fp8_e4m3* inpT_CN, const float* inp_scale_inv, const void* doutT_OCN,
                      cudaDataType_t dout_type, const float* dout_scale_inv, int N, int C, int OC,
                      bool accumulate, cudaStream_t stream) {
    check_dims("matmul_fp8_wgrad", N, C, OC, 16, 16);
    check_fp8_grad_type(dout_type);
    check_aligned(dweight_OCC, "dweight");
    check_aligned(inpT_CN, "inpT");
    check_aligned(doutT_OCN, "doutT");
    check_scale_pointers("matmul_fp8_wgrad", inp_scale_inv, "inp_scale_inv", dout_scale_inv,
                         "dout_scale_inv");
    GemmKey key =
        make_key(GemmKind::Fp8Wgrad, CUBLAS_OP_T, CUBLAS_OP_N, C, OC, N, N, N, C, CUDA_R_8F_E4M3, dout_type);
    key.scaled = 1;
    key.beta_nonzero = accumulate;
    GemmArgs args;
    args.a = inpT_CN;
    args.a_scale = inp_scale_inv;
    args.b = doutT_OCN;
    args.b_scale = dout_scale_inv;
    args.d = dweight_OCC;
    args.beta = accumulate ? 1.0f : 0.0f;
    run_gemm(cache, ctx, key, args, stream);
}
