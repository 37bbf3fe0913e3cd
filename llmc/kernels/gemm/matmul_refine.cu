// The second round of GEMM autotuning (llmc/kernels/gemm/matmul_autotune.h): the first round's winner against
// the variants of the heuristic's answers that compute bitwise its output (docs/performance.md, 2026-12-04
// fourth session: what it gains on the H200, and that every variant tried there summed like the winner).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <set>
#include <utility>
#include <vector>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/gpu/sanitizer_marks.h"
#include "llmc/kernels/gemm/matmul_autotune.h"

namespace {

// Thread-block cluster shapes tried with every custom option: the library's choice and clusters of 1, 2
// and 4 CTAs; with every tile, the first four.
constexpr cublasLtClusterShape_t kClusterShapes[] = {
    CUBLASLT_CLUSTER_SHAPE_AUTO,  CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
    CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
    CUBLASLT_CLUSTER_SHAPE_1x4x1};
constexpr int kTileClusterShapes = 4;
constexpr uint32_t kMaxCustomOption = 7;
constexpr int kFinalists = 8;    // the variants fastest in one launch, timed properly against the winner
constexpr int kFinalRounds = 2;  // in turn, each keeping its faster round (as the first round times)

template <class T>
void set_config(cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, T value) {
    cublasLtMatmulAlgoConfigSetAttribute(algo, attr, &value, sizeof value);
}

uint32_t capability(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
    uint32_t v = 0;
    size_t written = 0;
    cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof v, &written);
    return v;
}

std::vector<uint32_t> tile_ids(const cublasLtMatmulAlgo_t& algo) {
    size_t bytes = 0;
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, nullptr, 0, &bytes);
    std::vector<uint32_t> tiles(bytes / sizeof(uint32_t));
    if (!tiles.empty())
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles.data(), bytes, &bytes);
    return tiles;
}

// A configuration as cuBLASLt encodes it (the algorithm's 8 opaque words).
using AlgoWords = std::array<uint64_t, 8>;
AlgoWords words_of(const cublasLtMatmulAlgo_t& algo) {
    AlgoWords w;
    memcpy(w.data(), algo.data, sizeof algo.data);
    return w;
}

// The variants of `answer` that cuBLASLt accepts for the plan within our workspace, appended to *out.
// `tried`: the configurations already checked (for the earlier answers, whose variants coincide with many of
// these; the winner is in it from the start), each checked once.
void variants_of(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& answer,
                 std::set<AlgoWords>* tried, std::vector<cublasLtMatmulHeuristicResult_t>* out) {
    auto add = [&](const cublasLtMatmulAlgo_t& algo) {
        if (!tried->insert(words_of(algo)).second) return;
        cublasLtMatmulHeuristicResult_t r{};
        cublasLtMatmulAlgo_t checked = algo;
        if (cublasLtMatmulAlgoCheck(ctx->cublaslt, p.desc, p.a, p.b, p.c, p.d, &checked, &r) !=
                CUBLAS_STATUS_SUCCESS ||
            r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > ctx->cublaslt_workspace_size)
            return;
        r.algo = algo;
        out->push_back(r);
    };
    const uint32_t customs =
        std::min(capability(answer, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX), kMaxCustomOption);
    const uint32_t swizzles = capability(answer, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) ? 1 : 0;
    for (cublasLtClusterShape_t cluster : kClusterShapes)
        for (uint32_t custom = 0; custom <= customs; custom++)
            for (uint32_t swizzle = 0; swizzle <= swizzles; swizzle++) {
                cublasLtMatmulAlgo_t v = answer;
                set_config(&v, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, (uint16_t)cluster);
                set_config(&v, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom);
                set_config(&v, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swizzle);
                add(v);
            }
    for (uint32_t tile : tile_ids(answer))
        for (int c = 0; c < kTileClusterShapes; c++) {
            cublasLtMatmulAlgo_t v = answer;
            set_config(&v, CUBLASLT_ALGO_CONFIG_TILE_ID, tile);
            set_config(&v, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, (uint16_t)kClusterShapes[c]);
            add(v);
        }
}

__global__ void any_difference_kernel(const uint16_t* a, const uint16_t* b, size_t n, unsigned int* differs) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (a[i] != b[i]) *differs = 1u;  // every writer stores the same value
}

// The comparison's device buffers (D-sized: the winner's output, a variant's, zeros as C where the real call
// accumulates in place), or none where they do not fit: the refinement is then skipped; and the timing
// events.
struct Scratch {
    void *ref = nullptr, *out = nullptr, *zeros = nullptr;
    unsigned int* differs = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    bool ok = false;
    Scratch(size_t bytes, bool need_zeros, cudaStream_t stream) {
        CHECK_CUDA(cudaEventCreate(&start));
        CHECK_CUDA(cudaEventCreate(&stop));
        ok = cudaMalloc(&ref, bytes) == cudaSuccess && cudaMalloc(&out, bytes) == cudaSuccess &&
             (!need_zeros || cudaMalloc(&zeros, bytes) == cudaSuccess) &&
             cudaMalloc(&differs, sizeof(unsigned int)) == cudaSuccess;
        if (!ok) {
            cudaGetLastError();  // out of memory here is not an error of the run
            return;
        }
        if (zeros) CHECK_CUDA(cudaMemsetAsync(zeros, 0, bytes, stream));
    }
    ~Scratch() {
        for (void* ptr : {ref, out, zeros, (void*)differs})
            if (ptr) cudaFree(ptr);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
};

// One launch of `algo` into d after a first one (which also loads the kernel), in microseconds; or infinity
// where cuBLASLt refuses it. The screen before the finalists' proper timing.
float one_launch_us(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                    const GemmArgs& args, const void* c, void* d, cudaStream_t stream, cudaEvent_t start,
                    cudaEvent_t stop) {
    if (gemm_launch(ctx, p, algo, args, c, d, stream) != CUBLAS_STATUS_SUCCESS) return INFINITY;
    CHECK_CUDA(cudaEventRecord(start, stream));
    gemm_launch(ctx, p, algo, args, c, d, stream);
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return 1000.0f * ms;
}

}  // namespace

GemmRefinement gemm_refine_choice(GpuContext* ctx, const MatmulPlan& p,
                                  const std::vector<cublasLtMatmulHeuristicResult_t>& answers, size_t winner,
                                  const GemmArgs& args, cudaStream_t stream) {
    GemmRefinement result{answers[winner]};
    std::vector<cublasLtMatmulHeuristicResult_t> variants;
    std::set<AlgoWords> tried = {words_of(answers[winner].algo)};
    for (const auto& answer : answers) variants_of(ctx, p, answer.algo, &tried, &variants);
    result.variants = (int)variants.size();
    const size_t bytes = gemm_d_bytes(p.key);
    const bool in_place = args.beta != 0.0f && !args.c;
    Scratch s(bytes, in_place, stream);
    if (variants.empty() || !s.ok) return result;
    const void* c = in_place ? s.zeros : args.c;  // beta = 0: C is not read
    if (gemm_launch(ctx, p, answers[winner].algo, args, c ? c : s.ref, s.ref, stream) !=
        CUBLAS_STATUS_SUCCESS)
        return result;
    mark_initialized(s.ref, bytes, stream);
    std::vector<std::pair<float, size_t>> screened;  // one launch's microseconds, variant
    for (size_t i = 0; i < variants.size(); i++) {
        const float us =
            one_launch_us(ctx, p, variants[i].algo, args, c ? c : s.out, s.out, stream, s.start, s.stop);
        if (!std::isfinite(us)) continue;
        mark_initialized(s.out, bytes, stream);
        CHECK_CUDA(cudaMemsetAsync(s.differs, 0, sizeof(unsigned int), stream));
        any_difference_kernel<<<4 * ctx->props.multiProcessorCount, 256, 0, stream>>>(
            (const uint16_t*)s.ref, (const uint16_t*)s.out, bytes / sizeof(uint16_t), s.differs);
        CHECK_CUDA(cudaGetLastError());
        unsigned int differs = 1;
        CHECK_CUDA(cudaMemcpyAsync(&differs, s.differs, sizeof differs, cudaMemcpyDeviceToHost, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        if (!differs) screened.push_back({us, i});
    }
    result.same_bits = (int)screened.size();
    if (screened.empty()) return result;
    const size_t finalists = std::min(screened.size(), (size_t)kFinalists);
    std::partial_sort(screened.begin(), screened.begin() + finalists, screened.end());
    auto time = [&](const cublasLtMatmulAlgo_t& algo) {
        const float us =
            gemm_time_algorithm(ctx, p, algo, args, c ? c : s.out, s.out, stream, s.start, s.stop);
        return us < 0.0f ? INFINITY : us;
    };
    result.base_us = INFINITY;
    std::vector<float> best_us(finalists, INFINITY);
    for (int round = 0; round < kFinalRounds; round++) {  // the winner and the finalists in turn
        result.base_us = std::min(result.base_us, time(answers[winner].algo));
        for (size_t f = 0; f < finalists; f++)
            best_us[f] = std::min(best_us[f], time(variants[screened[f].second].algo));
    }
    result.us = result.base_us;
    for (size_t f = 0; f < finalists; f++)
        if (best_us[f] < result.us) {
            result.us = best_us[f];
            result.choice = variants[screened[f].second];
        }
    return result;  // gemm_time_algorithm waited for its last launch: the scratch may go
}
