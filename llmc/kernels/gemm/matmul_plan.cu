// The cuBLASLt plan cache (llmc/kernels/gemm/matmul_plan.cuh): descriptors, layouts and the algorithm of each
// distinct GEMM, built once (the heuristic's first answer, or autotuned: llmc/kernels/gemm/matmul_autotune.h)
// and run by every later call with only its pointers set.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "llmc/gpu/sanitizer_marks.h"
#include "llmc/kernels/gemm/matmul_autotune.h"
#include "llmc/kernels/gemm/matmul_plan.cuh"

namespace {

// Indexed by GemmKind.
const char* const kKindNames[] = {"bf16 forward", "bf16 dgrad", "bf16 wgrad",
                                  "fp8 forward",  "fp8 dgrad",  "fp8 wgrad"};

const char* kind_name(int32_t kind) {
    return kind >= 0 && kind < (int32_t)(sizeof kKindNames / sizeof kKindNames[0]) ? kKindNames[kind] : "?";
}

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

void destroy_plan(MatmulPlan* p) {
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    for (cublasLtMatrixLayout_t layout : {p->a, p->b, p->c, p->d})
        if (layout) cublasLtMatrixLayoutDestroy(layout);
    delete p;
}

// Builds descriptors and layouts for `key` and asks the heuristic for the best algorithm (with autotuning:
// its best few, then gemm_choose_algorithm).
MatmulPlan* create_plan(MatmulPlanCache* cache, GpuContext* ctx, const GemmKey& key, const GemmArgs& args,
                        cudaStream_t stream) {
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
    if (cache->tuning.autotune) gemm_choose_algorithm(cache, ctx, p, usable, args, stream);
    return p;
}

}  // namespace

std::string gemm_describe(const GemmKey& k) {
    char buf[256];
    snprintf(buf, sizeof buf,
             "%s GEMM (m=%d n=%d k=%d, op %c%c, A %s, B %s, epilogue %d, beta %d, fast_accum %d)",
             kind_name(k.kind), k.m, k.n, k.k, k.transa == CUBLAS_OP_T ? 'T' : 'N',
             k.transb == CUBLAS_OP_T ? 'T' : 'N', type_name(k.a_type), type_name(k.b_type), k.epilogue,
             k.beta_nonzero, k.fast_accum);
    return buf;
}

void matmul_plan_cache_clear(MatmulPlanCache* cache) {
    for (MatmulPlan* p : cache->plans) destroy_plan(p);
    cache->plans.clear();
}

MatmulPlanCache::~MatmulPlanCache() { matmul_plan_cache_clear(this); }

std::vector<std::string> matmul_plan_report(const MatmulPlanCache& cache) {
    std::vector<std::string> lines;
    for (const MatmulPlan* p : cache.plans) {
        if (!p->ok) continue;
        char how[320];
        if (p->choice == MatmulPlan::Choice::Timed && p->variants < 0)
            snprintf(how, sizeof how, "timed: answer %d of %d, %.1f us (first answer %.1f us, %.2fx)",
                     p->rank + 1, p->candidates, p->us, p->first_us, p->first_us / p->us);
        else if (p->choice == MatmulPlan::Choice::Timed)
            snprintf(
                how, sizeof how,
                "timed: answer %d of %d, %.1f us (first answer %.1f us, %.2fx); %d variants screened, of "
                "%d compared %d bitwise the same, %s: %.1f us against %.1f",
                p->rank + 1, p->candidates, p->us, p->first_us, p->first_us / p->us, p->variants, p->compared,
                p->same_bits, p->refined_us < p->winner_us ? "one taken" : "none faster", p->refined_us,
                p->winner_us);
        else
            snprintf(
                how, sizeof how, "%s",
                p->choice == MatmulPlan::Choice::FromCache ? "from the cache file" : "heuristic's first");
        char line[768];
        uint16_t cluster = 0;
        size_t written = 0;
        cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                             sizeof cluster, &written);
        snprintf(line, sizeof line, "%s: algo %u tile %u stages %u split-k %u cluster %u custom %u, %s",
                 gemm_describe(p->key).c_str(), algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_ID),
                 algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                 algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                 algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM), (unsigned)cluster,
                 algo_attr(p->algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION), how);
        lines.push_back(line);
    }
    return lines;
}

uint32_t algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
    uint32_t v = 0;  // ID is int32, TILE_ID / STAGES_ID / SPLITK_NUM / CUSTOM_OPTION uint32: all fit
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &written);
    return v;
}

cublasStatus_t gemm_launch(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                           const GemmArgs& args, const void* c, void* d, cudaStream_t stream) {
    const float alpha = 1.0f, beta = args.beta;
    return cublasLtMatmul(ctx->cublaslt, p.desc, &alpha, args.a, p.a, args.b, p.b, &beta, c, p.c, d, p.d,
                          &algo, ctx->cublaslt_workspace, ctx->cublaslt_workspace_size, stream);
}

bool gemm_algo_accepted(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                        cublasLtMatmulHeuristicResult_t* result) {
    cublasLtMatmulHeuristicResult_t r{};
    if (cublasLtMatmulAlgoCheck(ctx->cublaslt, p.desc, p.a, p.b, p.c, p.d, &algo, &r) !=
            CUBLAS_STATUS_SUCCESS ||
        r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > ctx->cublaslt_workspace_size)
        return false;
    r.algo = algo;
    *result = r;
    return true;
}

void gemm_run(MatmulPlanCache* cache, GpuContext* ctx, const GemmKey& key, const GemmArgs& args,
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
        fatal("cuBLASLt has no algorithm for the %s (check sizes/alignment)", gemm_describe(key).c_str());
    set_pointers(plan->desc, key, args);
    const cublasStatus_t st =
        gemm_launch(ctx, *plan, plan->algo, args, args.c ? args.c : args.d, args.d, stream);
    if (st != CUBLAS_STATUS_SUCCESS)
        fatal("cublasLtMatmul failed with status %d for the %s", (int)st, gemm_describe(key).c_str());
    mark_initialized(args.d, gemm_d_bytes(key), stream);  // D's TMA stores are invisible to initcheck
}
