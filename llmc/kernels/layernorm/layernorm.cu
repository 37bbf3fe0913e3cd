// LayerNorm kernels then launchers. See layernorm.cuh for the design.
#include <cuda_pipeline_primitives.h>

#include <array>
#include <cstdint>

#include "llmc/gpu/bulk_copy.cuh"
#include "llmc/kernels/layernorm/layernorm.cuh"
#include "llmc/kernels/layernorm/layernorm_row.cuh"

namespace {

// ---------------------------------------------------------------------------------------------------------
// Kernels

constexpr int kFwdBlock = 256;  // 8 warps = 8 rows per block

// One warp per row (layernorm_row_forward, llmc/kernels/layernorm/layernorm_row.cuh): the row is held in
// registers, K 16-byte chunks per lane.
template <int K, bool kResidual>
__global__ void __launch_bounds__(kFwdBlock)
    layernorm_forward_kernel(bf16* residual, bf16* out, float* mean, float* rstd, const bf16* inp1,
                             const bf16* inp2, const bf16* weight, const bf16* bias, int N, int C) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (kFwdBlock / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const size_t off = (size_t)row * C;
    float m, s;
    layernorm_row_forward<K, kResidual, kResidual, /*kInp2Batch=*/K>(
        m, s, residual, inp1, inp2, weight, bias, off, C, lane, [](bf16) {},
        [&](int c, const x128& o) { store128(out + off + c, o); });
    if (lane == 0) {
        if (mean) mean[row] = m;
        if (rstd) rstd[row] = s;
    }
}

constexpr int kBwdMaxThreads = 512;
constexpr int kBwdMaxParts = 2048;  // at most this many blocks (= partial-sum rows in scratch)

// This block's dweight and dbias partial sums into its [dweight (C) | dbias (C)] row of the scratch.
template <int CH>
__device__ __forceinline__ void store_weight_partials(float* part, const float (&dw)[CH][x128::size],
                                                      const float (&db)[CH][x128::size], const int (&cs)[CH],
                                                      const bool (&act)[CH], int C) {
#pragma unroll
    for (int j = 0; j < CH; j++) {
        if (act[j]) {
            f128 a, b;
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = dw[j][i], b[i] = dw[j][i + 4];
            store128(part + cs[j], a);
            store128(part + cs[j] + 4, b);
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = db[j][i], b[i] = db[j][i + 4];
            store128(part + C + cs[j], a);
            store128(part + C + cs[j] + 4, b);
        }
    }
}

// Rows in flight per block: the row being reduced and S - 1 after it, copied by cp.async into shared memory
// (no registers held for them). With only the next row in flight (registers) the kernel reached 46-55% of the
// copy ceiling at C = 1600 (4 blocks of 224 threads per SM: ~38 KB of loads in flight per SM). The launcher
// takes the deepest S in [2, kBwdMaxStages] that still lets as many blocks reside per SM as the registers do,
// so the grid, and with it the order of the dweight/dbias sums, is the one the register limit alone gives.
constexpr int kBwdMaxStages = 4;

// Bulk loads (kBulk): one thread copies each staged row whole (cp.async.bulk, the tensor memory accelerator),
// completion counted in bytes on the stage's mbarrier, instead of every thread issuing its own cp.async per
// chunk and statistic (about 50 of a warp's instructions a row) and waiting on its own groups. The stage
// layout is the same: thread t's chunk j of a row is the row's 16-byte chunk t + j * threads, so the whole
// row lies at the start of its tensor's slots. The statistics come as the aligned groups of 4 floats that
// hold mean[r] and rstd[r]. The bits are the per-thread copies' (the same values read from the same slots).
struct BwdBulkStats {
    float mean4[4], rstd4[4];  // mean[r & ~3 ...], rstd[r & ~3 ...]
};

// The shared memory of one block: S stages of [dout, inp, dinp] x CH chunks x `threads` (16 bytes each,
// thread-consecutive: conflict-free), then S x `threads` (mean, rstd) pairs, or with bulk loads S
// BwdBulkStats and S mbarriers.
__host__ __device__ constexpr size_t layernorm_backward_smem_bytes(int ch, int stages, int threads,
                                                                   bool bulk = false) {
    return (size_t)stages * threads * 3 * ch * sizeof(x128) +
           (bulk ? (size_t)stages * (sizeof(BwdBulkStats) + sizeof(uint64_t))
                 : (size_t)stages * threads * sizeof(float2));
}

// The two per-row sums over the whole block, in a fixed order: warp sums, then the warps' partials in warp
// order (red: this row's half of the double buffer; one __syncthreads). kSlots > 0 (blocks of at most kSlots
// warps): the sum runs over all kSlots slots, those past the block's warps holding -0.0f (set by
// block_sum_pair_clear): t + (-0.0f) is t for every t, -0.0f, +0.0f and NaN included (round to nearest; t is
// a flushed result, never denormal), so the bits are those of the loop over the block's warps, without its
// run-time trip count (about 45 of a warp's ~360 instructions a row at 7 warps). kSlots = 0: that loop.
constexpr int kBwdRedSlots = 8;
template <int kSlots>
__device__ __forceinline__ float2 block_sum_pair(float2* red, float s1, float s2, int lane, int warp,
                                                 int num_warps) {
    s1 = warp_reduce_sum(s1);
    s2 = warp_reduce_sum(s2);
    if (lane == 0) red[warp] = make_float2(s1, s2);
    __syncthreads();
    float t1 = 0.0f, t2 = 0.0f;
    if constexpr (kSlots > 0) {
#pragma unroll
        for (int i = 0; i < kSlots; i++) {
            const float2 v = red[i];
            t1 += v.x;
            t2 += v.y;
        }
    } else {
        for (int i = 0; i < num_warps; i++) {
            const float2 v = red[i];
            t1 += v.x;
            t2 += v.y;
        }
    }
    return make_float2(t1, t2);
}

// kSlots > 0: the slots of both buffers past the block's warps to -0.0f (visible after the first barrier).
template <int kSlots>
__device__ __forceinline__ void block_sum_pair_clear(float2 (&red)[2][32], int num_warps) {
    if constexpr (kSlots > 0) {
        if (threadIdx.x < 2 * kSlots && (int)threadIdx.x % kSlots >= num_warps)
            red[threadIdx.x / kSlots][threadIdx.x % kSlots] = make_float2(-0.0f, -0.0f);
    }
}

// One 16-byte chunk of dinp: g + rstd (dnorm - mean(dnorm) - xhat mean(dnorm xhat)), g the gradient there.
__device__ __forceinline__ x128 dinp_chunk(const x128& d, const x128& x, const x128& g, const x128& w,
                                           float m, float r, float t1, float t2) {
    x128 o;
#pragma unroll
    for (int i = 0; i < x128::size; i++) {
        const float xh = (__bfloat162float(x[i]) - m) * r;
        const float dn = __bfloat162float(w[i]) * __bfloat162float(d[i]);
        o[i] = __float2bfloat16(__bfloat162float(g[i]) + r * (dn - t1 - xh * t2));
    }
    return o;
}

// The bulk loads (one thread): row r of the three tensors whole to rows + tensor * pitch and the
// statistics' aligned groups, counted on bar. (No proxy fence before the copies: the stage's readers read
// it before the previous row's barrier, and reads followed by the copy's writes need none, as in the
// usual TMA load pipelines.)
__device__ __forceinline__ void bwd_fetch_row_bulk(x128* rows, size_t pitch, BwdBulkStats* stats,
                                                   uint64_t* bar, const bf16* dout, const bf16* inp,
                                                   const bf16* dinp, const float* mean, const float* rstd,
                                                   int r, int C) {
    const uint32_t row_bytes = (uint32_t)C * sizeof(bf16);
    const size_t o = (size_t)r * C;
    mbarrier_expect_bytes(bar, 3 * row_bytes + 2 * 4 * sizeof(float));
    bulk_copy_to_shared(rows, dout + o, row_bytes, bar);
    bulk_copy_to_shared(rows + pitch, inp + o, row_bytes, bar);
    bulk_copy_to_shared(rows + 2 * pitch, dinp + o, row_bytes, bar);
    bulk_copy_to_shared(stats->mean4, mean + (r & ~3), 4 * sizeof(float), bar);
    bulk_copy_to_shared(stats->rstd4, rstd + (r & ~3), 4 * sizeof(float), bar);
}

// Waits for the stage's bulk loads (phase `parity` of its mbarrier) and reads row's mean and rstd.
__device__ __forceinline__ void bwd_wait_row_bulk(float& m, float& r, uint64_t* bar, uint32_t parity,
                                                  const BwdBulkStats& stats, int row) {
    mbarrier_wait(bar, parity);
    m = stats.mean4[row & 3];
    r = stats.rstd4[row & 3];
}

// This thread's part of a row: (sum of dnorm, sum of dnorm * xhat) over its channels, and its channels'
// dweight (dy * xhat) and dbias (dy) sums continued with this row.
template <int CH>
__device__ __forceinline__ float2 bwd_row_terms(float (&dw)[CH][x128::size], float (&db)[CH][x128::size],
                                                const x128 (&d)[CH], const x128 (&x)[CH], const x128 (&w)[CH],
                                                const bool (&act)[CH], float m, float r) {
    float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
    for (int j = 0; j < CH; j++) {
        if (act[j]) {
#pragma unroll
            for (int i = 0; i < x128::size; i++) {
                const float dy = __bfloat162float(d[j][i]);
                const float xh = (__bfloat162float(x[j][i]) - m) * r;
                const float dn = __bfloat162float(w[j][i]) * dy;
                s1 += dn;
                s2 += dn * xh;
                dw[j][i] += dy * xh;
                db[j][i] += dy;
            }
        }
    }
    return make_float2(s1, s2);
}

// Block b handles rows b, b + gridDim.x, ...; thread t owns the 16-byte chunks t, t + blockDim.x, ...
// (CH of them) of every row, so dweight/dbias for its channels accumulate in registers in row order. Each
// thread copies its own chunks of the next S - 1 rows (and the rows' mean and rstd) into its own
// shared-memory slots with cp.async and reads back only those, so the pipeline needs no barrier of its own;
// one commit group per row (empty past N) keeps the group count uniform. Per row, the two sums over C (of
// dnorm and dnorm*xhat) are reduced across the block in a fixed order, double-buffered so one __syncthreads
// per row suffices. CH = 1: at most 64 registers (a 224-thread block for C = 1600 then fits 4 times per SM).
// kSlots: block_sum_pair's fixed slot count (blocks of at most kSlots warps), or 0. kBulk: the bulk loads
// (BwdBulkStats; mean and rstd 16-byte aligned, N a multiple of 4).
template <int CH, int S, int kSlots = 0, bool kBulk = false>
__global__ void __launch_bounds__(kBwdMaxThreads, CH == 1 ? 2 : 1)
    layernorm_backward_kernel(bf16* dinp, float* scratch, const bf16* dout, const bf16* inp,
                              const bf16* weight, const float* mean, const float* rstd, int N, int C) {
    __shared__ float2 red[2][32];
    extern __shared__ __align__(16) unsigned char stage_smem[];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
    block_sum_pair_clear<kSlots>(red, num_warps);
    const int threads = blockDim.x;
    x128* stage_rows = reinterpret_cast<x128*>(stage_smem);  // [stage][tensor][j][thread]
    float2* stage_stats = reinterpret_cast<float2*>(stage_rows + (size_t)S * 3 * CH * threads);
    BwdBulkStats* bulk_stats = reinterpret_cast<BwdBulkStats*>(stage_rows + (size_t)S * 3 * CH * threads);
    uint64_t* bars = reinterpret_cast<uint64_t*>(bulk_stats + S);  // kBulk: one mbarrier a stage
    const auto slot = [&](int stage, int tensor, int j) -> x128* {
        return stage_rows + ((size_t)(stage * 3 + tensor) * CH + j) * threads + threadIdx.x;
    };
    int cs[CH];
    bool act[CH];
    x128 w[CH];
    float dw[CH][x128::size], db[CH][x128::size];
#pragma unroll
    for (int j = 0; j < CH; j++) {
        cs[j] = (threadIdx.x + j * threads) * x128::size;
        act[j] = cs[j] < C;
        if (act[j]) w[j] = load128ldg(weight + cs[j]);
#pragma unroll
        for (int i = 0; i < x128::size; i++) dw[j][i] = db[j][i] = 0.0f;
    }
    if constexpr (kBulk) mbarriers_init<S>(bars);

    // Row r's chunks and statistics into stage s (nothing past N). Per thread: then one commit group either
    // way. Bulk: thread 0 copies the row's three tensors and its statistics' groups.
    const auto fetch = [&](int r, int s) {
        if constexpr (kBulk) {
            if (threadIdx.x == 0 && r < N)  // the stage's three rows, each from its chunk 0
                bwd_fetch_row_bulk(stage_rows + (size_t)s * 3 * CH * threads, (size_t)CH * threads,
                                   bulk_stats + s, bars + s, dout, inp, dinp, mean, rstd, r, C);
        } else {
            if (r < N) {
#pragma unroll
                for (int j = 0; j < CH; j++) {
                    if (act[j]) {
                        const size_t o = (size_t)r * C + cs[j];
                        __pipeline_memcpy_async(slot(s, 0, j), dout + o, sizeof(x128));
                        __pipeline_memcpy_async(slot(s, 1, j), inp + o, sizeof(x128));
                        __pipeline_memcpy_async(slot(s, 2, j), dinp + o, sizeof(x128));
                    }
                }
                float2* st = stage_stats + (size_t)s * threads + threadIdx.x;
                __pipeline_memcpy_async(&st->x, mean + r, sizeof(float));
                __pipeline_memcpy_async(&st->y, rstd + r, sizeof(float));
            }
            __pipeline_commit();
        }
    };
    // The launcher guarantees gridDim.x <= N. Stage s holds rows blockIdx.x + (s + k S) gridDim.x.
#pragma unroll
    for (int s = 0; s < S - 1; s++) fetch(blockIdx.x + s * gridDim.x, s);

    const float inv_c = 1.0f / (float)C;
    int buf = 0, stage = 0;
    uint32_t parity = 0;  // kBulk: of the phase the current stage's mbarrier completes for this row
    for (int row = blockIdx.x; row < N; row += gridDim.x) {
        // The row S - 1 ahead goes into the stage read last (per thread: this thread's reads of it are done;
        // bulk: every thread's, before the previous row's barrier in block_sum_pair).
        fetch(row + (S - 1) * gridDim.x, stage == 0 ? S - 1 : stage - 1);
        float m, r;
        if constexpr (kBulk)
            bwd_wait_row_bulk(m, r, bars + stage, parity, bulk_stats[stage], row);
        else
            __pipeline_wait_prior(S - 1);  // this row's group (and the ones before it) have landed
        x128 d[CH], x[CH], g[CH];
#pragma unroll
        for (int j = 0; j < CH; j++) {
            if (act[j]) d[j] = *slot(stage, 0, j), x[j] = *slot(stage, 1, j), g[j] = *slot(stage, 2, j);
        }
        if constexpr (!kBulk) {
            const float2 stats = stage_stats[(size_t)stage * threads + threadIdx.x];
            m = stats.x, r = stats.y;
        }
        if (stage == S - 1) parity ^= 1;
        stage = stage == S - 1 ? 0 : stage + 1;

        const float2 sums = bwd_row_terms<CH>(dw, db, d, x, w, act, m, r);
        const float2 t = block_sum_pair<kSlots>(red[buf], sums.x, sums.y, lane, warp, num_warps);
        buf ^= 1;
        const float t1 = t.x * inv_c, t2 = t.y * inv_c;
#pragma unroll
        for (int j = 0; j < CH; j++)
            if (act[j])
                store128(dinp + (size_t)row * C + cs[j], dinp_chunk(d[j], x[j], g[j], w[j], m, r, t1, t2));
    }
    // No copy may still write shared memory when the block exits (bulk: every fetched row was waited for).
    if constexpr (!kBulk) __pipeline_wait_prior(0);

    store_weight_partials<CH>(scratch + (size_t)blockIdx.x * 2 * C, dw, db, cs, act, C);
}

constexpr int kRedX = 32, kRedY = 16;

// Column j of the [parts, 2C] scratch is summed by the 16 threads of column j in this block (thread y takes
// parts y, y+16, ...), then thread y=0 adds the 16 partial sums in order: a fixed order for a given `parts`.
__global__ void __launch_bounds__(kRedX* kRedY)
    layernorm_backward_reduce_kernel(bf16* dweight, bf16* dbias, const float* scratch, int parts, int C,
                                     bool accumulate) {
    __shared__ float sums[kRedY][kRedX + 1];
    const int j = blockIdx.x * kRedX + threadIdx.x;
    const int width = 2 * C;
    float acc = 0.0f;
    if (j < width) {
#pragma unroll 16  // 528 parts at C = 1600: 33 per thread, their loads issued 16 at a time (same sum order)
        for (int p = threadIdx.y; p < parts; p += kRedY) acc += __ldcs(scratch + (size_t)p * width + j);
    }
    sums[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < width) {
        float s = 0.0f;
#pragma unroll
        for (int y = 0; y < kRedY; y++) s += sums[y][threadIdx.x];
        bf16* out = j < C ? dweight + j : dbias + (j - C);
        if (accumulate) s += __bfloat162float(*out);  // one rounding of old + new
        *out = __float2bfloat16(s);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Launchers

void check_c(const char* who, int C) {
    CHECK(C > 0 && C % 8 == 0 && C <= kLayerNormMaxC,
          "%s: C = %d must be a positive multiple of 8, at most %d", who, C, kLayerNormMaxC);
}

typedef void (*ForwardKernel)(bf16*, bf16*, float*, float*, const bf16*, const bf16*, const bf16*,
                              const bf16*, int, int);

template <bool kResidual>
ForwardKernel pick_forward_kernel(int C) {
    return layernorm_pick_k(C,
                            [](auto k) { return layernorm_forward_kernel<decltype(k)::value, kResidual>; });
}

// The forward launch: with kResidual, residual = inp1 + inp2 is written and normalized (inp2 and residual
// required); without, inp1 is normalized. `who` names the caller in errors.
template <bool kResidual>
void launch_forward(const char* who, bf16* residual_NC, bf16* out_NC, float* mean_N, float* rstd_N,
                    const bf16* inp1_NC, const bf16* inp2_NC, const bf16* weight_C, const bf16* bias_C, int N,
                    int C, cudaStream_t stream) {
    check_c(who, C);
    CHECK(N >= 0, "%s: N = %d", who, N);
    CHECK(aligned16(residual_NC) && aligned16(out_NC) && aligned16(inp1_NC) && aligned16(inp2_NC) &&
              aligned16(weight_C) && aligned16(bias_C),
          "%s: tensors must be 16-byte aligned", who);
    if (N == 0) return;
    const int grid = ceil_div(N, kFwdBlock / 32);
    pick_forward_kernel<kResidual>(C)<<<grid, kFwdBlock, 0, stream>>>(
        residual_NC, out_NC, mean_N, rstd_N, inp1_NC, inp2_NC, weight_C, bias_C, N, C);
    CHECK_LAUNCH();
}

using BwdKernel = void (*)(bf16*, float*, const bf16*, const bf16*, const bf16*, const float*, const float*,
                           int, int);
using BwdKernels = std::array<BwdKernel, kBwdMaxStages - 1>;  // S = 2, 3, ..., kBwdMaxStages
template <int CH, int kSlots, bool kBulk>
BwdKernels bwd_kernels() {
    return {layernorm_backward_kernel<CH, 2, kSlots, kBulk>, layernorm_backward_kernel<CH, 3, kSlots, kBulk>,
            layernorm_backward_kernel<CH, 4, kSlots, kBulk>};
}

}  // namespace

void layernorm_forward(bf16* out_NC, float* mean_N, float* rstd_N, const bf16* inp_NC, const bf16* weight_C,
                       const bf16* bias_C, int N, int C, cudaStream_t stream) {
    launch_forward<false>("layernorm_forward", nullptr, out_NC, mean_N, rstd_N, inp_NC, nullptr, weight_C,
                          bias_C, N, C, stream);
}

void residual_layernorm_forward(bf16* residual_NC, bf16* out_NC, float* mean_N, float* rstd_N,
                                const bf16* inp1_NC, const bf16* inp2_NC, const bf16* weight_C,
                                const bf16* bias_C, int N, int C, cudaStream_t stream) {
    launch_forward<true>("residual_layernorm_forward", residual_NC, out_NC, mean_N, rstd_N, inp1_NC, inp2_NC,
                         weight_C, bias_C, N, C, stream);
}

size_t layernorm_backward_scratch_bytes(int N, int C) {
    const size_t parts = (size_t)(N < kBwdMaxParts ? N : kBwdMaxParts);
    return parts * 2 * (size_t)C * sizeof(float);
}

void layernorm_backward(bf16* dinp_NC, bf16* dweight_C, bf16* dbias_C, float* scratch, const bf16* dout_NC,
                        const bf16* inp_NC, const bf16* weight_C, const float* mean_N, const float* rstd_N,
                        int N, int C, cudaStream_t stream, bool accumulate,
                        LayerNormBackwardOptions options) {
    check_c("layernorm_backward", C);
    CHECK(N > 0, "layernorm_backward: N = %d must be positive", N);
    CHECK(aligned16(dinp_NC) && aligned16(dweight_C) && aligned16(dbias_C) && aligned16(scratch) &&
              aligned16(dout_NC) && aligned16(inp_NC) && aligned16(weight_C),
          "layernorm_backward: tensors must be 16-byte aligned");
    const int chunks = C / x128::size;
    const int ch = chunks <= kBwdMaxThreads ? 1 : 2;  // 16-byte chunks per thread (C <= 4096: 1)
    const int threads = ceil_div(ceil_div(chunks, ch), 32) * 32;
    const bool bulk = options.bulk_loads && aligned16(mean_N) && aligned16(rstd_N) && N % 4 == 0;
    const bool slots = options.fixed_slots && threads <= kBwdRedSlots * 32;
    const BwdKernels kernels =
        ch == 2 ? (bulk ? bwd_kernels<2, 0, true>() : bwd_kernels<2, 0, false>())
        : slots ? (bulk ? bwd_kernels<1, kBwdRedSlots, true>() : bwd_kernels<1, kBwdRedSlots, false>())
                : (bulk ? bwd_kernels<1, 0, true>() : bwd_kernels<1, 0, false>());

    // About 32 resident warps per SM as the registers allow, one wave, so each block does N / grid rows; then
    // the deepest pipeline that keeps that many blocks resident. The grid depends only on the GPU and the
    // shape (the registers of the per-thread kernel, whichever variant runs), so results are reproducible and
    // the same for every variant (the rows of a block, and so the dweight/dbias order, follow the grid).
    const int sms = current_device_sms();
    const BwdKernel grid_kernel = ch == 2 ? bwd_kernels<2, 0, false>()[0] : bwd_kernels<1, 0, false>()[0];
    int occupancy = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occupancy, grid_kernel, threads, 0));
    int per_sm = 1024 / threads;
    if (per_sm > occupancy) per_sm = occupancy;
    if (per_sm < 1) per_sm = 1;
    BwdKernel kernel = nullptr;
    size_t smem = 0;
    for (int stages = kBwdMaxStages; stages >= 2 && kernel == nullptr; stages--) {
        BwdKernel k = kernels[stages - 2];
        const size_t bytes = layernorm_backward_smem_bytes(ch, stages, threads, bulk);
        allow_dynamic_smem(k, bytes);
        int resident = 0;
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, threads, bytes));
        if (resident >= per_sm || stages == 2) kernel = k, smem = bytes;
    }
    long grid = (long)sms * per_sm;
    if (grid > N) grid = N;
    if (grid > kBwdMaxParts) grid = kBwdMaxParts;

    kernel<<<(int)grid, threads, smem, stream>>>(dinp_NC, scratch, dout_NC, inp_NC, weight_C, mean_N, rstd_N,
                                                 N, C);
    CHECK_LAUNCH();
    dim3 rblock(kRedX, kRedY);
    layernorm_backward_reduce_kernel<<<ceil_div(2 * C, kRedX), rblock, 0, stream>>>(
        dweight_C, dbias_C, scratch, (int)grid, C, accumulate);
    CHECK_LAUNCH();
}
