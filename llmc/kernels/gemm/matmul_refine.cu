// The second round of GEMM autotuning (llmc/kernels/gemm/matmul_autotune.h): the first round's winner against
// variants of it and of the heuristic's other answers that compute bitwise its output (docs/performance.md,
// 2026-12-04 fourth session: what it gains on the H200, and that every variant tried there summed like the
// winner; fifth session: where the tuning time went, and the bounded search below).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <set>
#include <vector>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/gpu/sanitizer_marks.h"
#include "llmc/kernels/gemm/matmul_autotune.h"

namespace {

// The search, in three steps, each variant screened by the time of one launch:
//   tiles:     the heuristic's answers as they are, and the winner with each tile cuBLASLt offers;
//   shapes:    the kTopTiles fastest of those (bitwise the winner's) with every thread-block cluster
//              shape below and every custom option (kernel variant) up to kMaxCustomOption;
//   finalists: the kFinalists fastest screened variants whose output is bitwise the winner's, each timed
//              against the winner as the first round times.
// On the H200 (GPT-1.5B) a GEMM offers 300-380 tiles and every variant costs a kernel load (3-7 ms, the
// first launch of each kernel) plus its launches: the exhaustive search of the fourth session (every tile
// x 3 shapes x each answer's options, 900-2,200 variants a GEMM) tuned for 95 s; this one screens ~10x fewer.
// The library's own cluster choice (AUTO) was never accepted for these algorithms: not tried.
constexpr cublasLtClusterShape_t kClusterShapes[] = {
    CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1,
    CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1, CUBLASLT_CLUSTER_SHAPE_1x4x1};
constexpr int kTopTiles = 4;
constexpr uint32_t kMaxCustomOption = 7;
constexpr int kFinalists = 8;        // the variants fastest in one launch, timed properly against the winner
constexpr int kFinalRounds = 2;      // in turn, each keeping its faster round (as the first round times)
constexpr int kMaxComparisons = 32;  // bitwise comparisons a GEMM, at most (each one more launch and a sync)

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

// A screened variant: its configuration, one launch's microseconds (infinity: refused at launch) and, once
// compared, whether its output is bitwise the winner's.
struct Variant {
    cublasLtMatmulHeuristicResult_t result;
    float us = INFINITY;
    enum class Bits { Unknown, Same, Differ } bits = Bits::Unknown;
};

// Appends `algo` to *out if it is new (`tried`: every configuration checked so far, the winner's among them)
// and cuBLASLt accepts it for the plan within our workspace.
void add_if_accepted(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                     std::set<AlgoWords>* tried, std::vector<Variant>* out) {
    if (!tried->insert(words_of(algo)).second) return;
    cublasLtMatmulHeuristicResult_t r;
    if (gemm_algo_accepted(ctx, p, algo, &r)) out->push_back({r});
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

// The second round's state for one GEMM: the call, its scratch, the variants screened so far.
struct Search {
    GpuContext* ctx;
    const MatmulPlan& p;
    const GemmArgs& args;
    cudaStream_t stream;
    Scratch& s;
    const void* c;  // C as the variants read it: the call's, the zeros where it accumulates in place, or D
    size_t bytes;
    std::vector<Variant> variants;
    int comparisons = 0;

    // Screens variants[from..]: each launched once (which loads its kernel) and then once more between two
    // events. Queued without waiting in between, so that the GPU runs one variant while the host loads the
    // next one's kernel; one synchronization at the end.
    void screen(size_t from) {
        const size_t n = variants.size() - from;
        std::vector<cudaEvent_t> events(2 * n, nullptr);
        std::vector<bool> launched(n, false);
        for (size_t i = 0; i < n; i++) {
            const cublasLtMatmulAlgo_t& algo = variants[from + i].result.algo;
            if (gemm_launch(ctx, p, algo, args, c, s.out, stream) != CUBLAS_STATUS_SUCCESS) continue;
            CHECK_CUDA(cudaEventCreate(&events[2 * i]));
            CHECK_CUDA(cudaEventCreate(&events[2 * i + 1]));
            CHECK_CUDA(cudaEventRecord(events[2 * i], stream));
            launched[i] = gemm_launch(ctx, p, algo, args, c, s.out, stream) == CUBLAS_STATUS_SUCCESS;
            CHECK_CUDA(cudaEventRecord(events[2 * i + 1], stream));
        }
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (size_t i = 0; i < n; i++) {
            float ms = 0.0f;
            if (launched[i] && cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]) == cudaSuccess)
                variants[from + i].us = 1000.0f * ms;
            for (cudaEvent_t e : {events[2 * i], events[2 * i + 1]})
                if (e) cudaEventDestroy(e);
        }
    }

    // Whether variant v's output is bitwise the winner's (in s.ref): run once more and compared on the
    // device; decided once a variant, at most kMaxComparisons times a GEMM (beyond: not the same).
    bool same_as_winner(Variant* v) {
        if (v->bits != Variant::Bits::Unknown) return v->bits == Variant::Bits::Same;
        if (comparisons >= kMaxComparisons) return false;
        comparisons++;
        v->bits = Variant::Bits::Differ;
        if (gemm_launch(ctx, p, v->result.algo, args, c, s.out, stream) != CUBLAS_STATUS_SUCCESS)
            return false;
        mark_initialized(s.out, bytes, stream);
        CHECK_CUDA(cudaMemsetAsync(s.differs, 0, sizeof(unsigned int), stream));
        any_difference_kernel<<<4 * ctx->props.multiProcessorCount, 256, 0, stream>>>(
            (const uint16_t*)s.ref, (const uint16_t*)s.out, bytes / sizeof(uint16_t), s.differs);
        CHECK_LAUNCH();
        unsigned int differs = 1;
        CHECK_CUDA(cudaMemcpyAsync(&differs, s.differs, sizeof differs, cudaMemcpyDeviceToHost, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        if (!differs) v->bits = Variant::Bits::Same;
        return !differs;
    }

    // The screened variants, fastest first (those refused at launch left out).
    std::vector<size_t> fastest() const {
        std::vector<size_t> order;
        for (size_t i = 0; i < variants.size(); i++)
            if (std::isfinite(variants[i].us)) order.push_back(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return variants[a].us < variants[b].us; });
        return order;
    }
};

}  // namespace

GemmRefinement gemm_refine_choice(GpuContext* ctx, const MatmulPlan& p,
                                  const std::vector<cublasLtMatmulHeuristicResult_t>& answers, size_t winner,
                                  const GemmArgs& args, cudaStream_t stream) {
    GemmRefinement result{answers[winner]};
    const cublasLtMatmulAlgo_t& best = answers[winner].algo;
    const size_t bytes = gemm_d_bytes(p.key);
    const bool in_place = args.beta != 0.0f && !args.c;
    Scratch s(bytes, in_place, stream);
    if (!s.ok) return result;
    const void* c = in_place ? s.zeros : args.c;  // beta = 0: C is not read (D passed, as gemm_run does)
    if (gemm_launch(ctx, p, best, args, c ? c : s.ref, s.ref, stream) != CUBLAS_STATUS_SUCCESS) return result;
    mark_initialized(s.ref, bytes, stream);
    Search search{ctx, p, args, stream, s, c ? c : s.out, bytes};
    std::set<AlgoWords> tried = {words_of(best)};

    // Tiles: the other answers as they are, the winner with each tile (its cluster shape, else 1x1).
    for (const auto& answer : answers) add_if_accepted(ctx, p, answer.algo, &tried, &search.variants);
    for (uint32_t tile : tile_ids(best)) {
        const size_t before = search.variants.size();
        cublasLtMatmulAlgo_t v = best;
        set_config(&v, CUBLASLT_ALGO_CONFIG_TILE_ID, tile);
        add_if_accepted(ctx, p, v, &tried, &search.variants);
        if (search.variants.size() == before) {
            set_config(&v, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, (uint16_t)CUBLASLT_CLUSTER_SHAPE_1x1x1);
            add_if_accepted(ctx, p, v, &tried, &search.variants);
        }
    }
    search.screen(0);

    // Shapes: the winner's tile and the fastest other tiles bitwise the winner's, each with every cluster
    // shape and custom option.
    std::vector<cublasLtMatmulAlgo_t> bases = {best};
    std::set<uint32_t> base_tiles = {algo_attr(best, CUBLASLT_ALGO_CONFIG_TILE_ID)};
    for (size_t i : search.fastest()) {
        if ((int)bases.size() >= kTopTiles || search.comparisons >= kMaxComparisons / 2) break;
        const uint32_t tile = algo_attr(search.variants[i].result.algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
        if (!base_tiles.count(tile) && search.same_as_winner(&search.variants[i])) {
            bases.push_back(search.variants[i].result.algo);
            base_tiles.insert(tile);
        }
    }
    const size_t shapes_from = search.variants.size();
    for (const cublasLtMatmulAlgo_t& base : bases) {
        const uint32_t customs =
            std::min(capability(base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX), kMaxCustomOption);
        for (cublasLtClusterShape_t cluster : kClusterShapes)
            for (uint32_t custom = 0; custom <= customs; custom++) {
                cublasLtMatmulAlgo_t v = base;
                set_config(&v, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, (uint16_t)cluster);
                set_config(&v, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom);
                add_if_accepted(ctx, p, v, &tried, &search.variants);
            }
    }
    search.screen(shapes_from);
    result.variants = (int)search.variants.size();

    // Finalists: the fastest screened variants with bitwise the winner's output.
    std::vector<size_t> finalists;
    for (size_t i : search.fastest()) {
        if ((int)finalists.size() >= kFinalists || search.comparisons >= kMaxComparisons) break;
        if (search.same_as_winner(&search.variants[i])) finalists.push_back(i);
    }
    for (const Variant& v : search.variants) result.same_bits += v.bits == Variant::Bits::Same;
    result.compared = search.comparisons;
    if (finalists.empty()) return result;
    auto time = [&](const cublasLtMatmulAlgo_t& algo) {
        const float us = gemm_time_algorithm(ctx, p, algo, args, search.c, s.out, stream, s.start, s.stop);
        return us < 0.0f ? INFINITY : us;
    };
    result.base_us = INFINITY;
    std::vector<float> best_us(finalists.size(), INFINITY);
    for (int round = 0; round < kFinalRounds; round++) {  // the winner and the finalists in turn
        result.base_us = std::min(result.base_us, time(best));
        for (size_t f = 0; f < finalists.size(); f++)
            best_us[f] = std::min(best_us[f], time(search.variants[finalists[f]].result.algo));
    }
    result.us = result.base_us;
    for (size_t f = 0; f < finalists.size(); f++)
        if (best_us[f] < result.us) {
            result.us = best_us[f];
            result.choice = search.variants[finalists[f]].result;
        }
    return result;  // gemm_time_algorithm waited for its last launch: the scratch may go
}
