// GEMM algorithm autotuning (llmc/kernels/gemm/matmul_autotune.h): time the heuristic's best answers on the
// call's operands, keep the fastest, and share the choice through the `--gemm-cache` file (ChoiceCache).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "llmc/kernels/gemm/matmul_autotune.h"

namespace {

constexpr int kTimingRounds = 2;  // candidates are timed in turn, twice; each keeps its faster round

// What a stored choice is valid for: the GPU, the library and the workspace the algorithms may use.
// " variants": choices of the two rounds (gemm_refine_choice), kept apart from those of the first round
// alone (a run with the second round does not take the slower first-round choice, nor the other way round).
std::string tuning_fingerprint(const GpuContext* ctx, bool variants) {
    char buf[320];
    snprintf(buf, sizeof buf, "%s sm_%d%d %d SMs cublasLt %zu workspace %zu%s", ctx->props.name,
             ctx->props.major, ctx->props.minor, ctx->props.multiProcessorCount, cublasLtGetVersion(),
             ctx->cublaslt_workspace_size, variants ? " variants" : "");
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

// Takes a stored algorithm if cuBLASLt still accepts it for this plan within our workspace.
bool adopt(GpuContext* ctx, MatmulPlan* p, const std::vector<uint64_t>& words) {
    if (words.size() != 8) return false;
    cublasLtMatmulAlgo_t algo;
    memcpy(algo.data, words.data(), sizeof algo.data);
    cublasLtMatmulHeuristicResult_t r;
    if (!gemm_algo_accepted(ctx, *p, algo, &r)) return false;
    p->algo = algo;
    p->workspace = r.workspaceSize;
    p->choice = MatmulPlan::Choice::FromCache;
    return true;
}

// Microseconds of each candidate (infinity where refused). Accumulating in place (beta != 0, C = D), the
// timings write a scratch copy and the real accumulator stays untouched; otherwise (C elsewhere, or no C)
// they write D itself, which the real call that follows overwrites.
std::vector<float> time_candidates(GpuContext* ctx, const MatmulPlan& p,
                                   const std::vector<cublasLtMatmulHeuristicResult_t>& cands,
                                   const GemmArgs& args, cudaStream_t stream) {
    void* d = args.d;
    void* scratch = nullptr;
    if (p.key.beta_nonzero && !args.c) {
        CHECK_CUDA(cudaMalloc(&scratch, gemm_d_bytes(p.key)));
        CHECK_CUDA(cudaMemsetAsync(scratch, 0, gemm_d_bytes(p.key), stream));
        d = scratch;
    }
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    std::vector<float> us(cands.size(), INFINITY);
    for (int round = 0; round < kTimingRounds; round++)
        for (size_t i = 0; i < cands.size(); i++) {
            const float t =
                gemm_time_algorithm(ctx, p, cands[i].algo, args, args.c ? args.c : d, d, stream, start, stop);
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

}  // namespace

// Mean microseconds of one launch of `algo` reading C at `c` and writing D at `d`, or -1 if cuBLASLt refuses
// it.
float gemm_time_algorithm(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                          const GemmArgs& args, const void* c, void* d, cudaStream_t stream,
                          cudaEvent_t start, cudaEvent_t stop) {
    auto run = [&] { return gemm_launch(ctx, p, algo, args, c, d, stream); };
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

void gemm_choose_algorithm(MatmulPlanCache* cache, GpuContext* ctx, MatmulPlan* p,
                           const std::vector<cublasLtMatmulHeuristicResult_t>& cands, const GemmArgs& args,
                           cudaStream_t stream) {
    if (!cache->choices)
        cache->choices = std::make_unique<ChoiceCache>(cache->tuning.cache_path,
                                                       tuning_fingerprint(ctx, cache->tuning.variants));
    const std::vector<int64_t> key = key_ints(p->key);
    std::vector<uint64_t> stored;
    if (cache->choices->find(key, &stored) && adopt(ctx, p, stored)) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CHECK_CUDA(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) return;
    const std::vector<float> us = time_candidates(ctx, *p, cands, args, stream);
    const size_t best = std::min_element(us.begin(), us.end()) - us.begin();  // ties: the heuristic's order
    if (!std::isfinite(us[best])) return;
    GemmRefinement refined{cands[best]};  // no second round: the winner
    if (cache->tuning.variants) refined = gemm_refine_choice(ctx, *p, cands, best, args, stream);
    std::string error;
    const std::vector<uint64_t> mine = algo_words(refined.choice.algo);
    const std::vector<uint64_t> kept = cache->choices->publish(key, mine, &error);
    if (!error.empty() && !cache->warned) {
        fprintf(stderr, "warning: GEMM autotuning: choices not stored (%s)\n", error.c_str());
        cache->warned = true;
    }
    if (kept != mine && adopt(ctx, p, kept)) return;  // another process stored its choice first
    p->algo = refined.choice.algo;
    p->workspace = refined.choice.workspaceSize;
    p->choice = MatmulPlan::Choice::Timed;
    p->rank = (int)best;
    p->candidates = (int)cands.size();
    p->us = us[best];
    p->first_us = us[0];
    p->variants = refined.variants;
    p->compared = refined.compared;
    p->same_bits = refined.same_bits;
    p->refined_us = refined.us;
    p->winner_us = refined.base_us;
}
