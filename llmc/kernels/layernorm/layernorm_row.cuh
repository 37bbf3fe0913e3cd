// The per-row LayerNorm forward shared by llmc/kernels/layernorm/layernorm.cu (BF16 output) and
// layernorm_fp8.cu (FP8 output). Both kernels inline this very code, so they evaluate the same fp32
// expressions in the same order with the same lane -> element assignment in the reductions: the FP8
// producer's y (and mean, rstd, residual) is bit-identical to the BF16 kernel's by construction. Internal to
// those two files (not a launcher header).
//
// One warp per row. Lane l holds 16-byte chunks l, l+32, ..., l+32(K-1) of the row (coalesced 512-byte warp
// accesses), so K = ceil(C / 256) chunks per lane; chunks past the end of the row are predicated off, so any
// K >= ceil(C / 256) gives the same bits (layernorm_pick_k picks K for C).
#pragma once
#include <type_traits>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/kernels/layernorm/layernorm.cuh"

__device__ __forceinline__ x128 load128ldg(const bf16* p) {
    x128 r;
    *reinterpret_cast<int4*>(&r) = __ldg(reinterpret_cast<const int4*>(p));
    return r;
}

// fn(v) for every value this lane holds of the row (chunks k = 0..K-1 inside the row, elements in order).
template <int K, class Fn>
__device__ __forceinline__ void layernorm_row_values(const x128 (&x)[K], int C, int lane, Fn fn) {
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int c = (k * 32 + lane) * x128::size;
        if (c < C) {
#pragma unroll
            for (int i = 0; i < x128::size; i++) fn(__bfloat162float(x[k][i]));
        }
    }
}

// A row shared by the two warps of a pair: warp `half` 0 holds the lane's chunks k < KH = ceil(K / 2), half 1
// the rest (k >= KH), each in KH registers' worth of chunks, so a thread needs about half the registers. The
// statistics keep the one-warp order exactly: half 0 sums its chunks, hands each lane's partial sum through
// shared memory (xchg), half 1 continues that lane's sum over its own chunks and reduces across the lanes,
// and hands the mean back; the same for the variance (layernorm_row_stat). So every fp32 addition is the
// one-warp kernel's, in its order, and the outputs are bit for bit the same. barrier: a named barrier (1..15)
// of the pair's 64 threads. xchg: the 32 lanes' partial sums, then the mean and the rstd.
constexpr int kLnPairMeanSlot = 32, kLnPairRstdSlot = 33, kLnPairXchgFloats = 34;
struct LnRowPair {
    int half;     // 0 or 1
    int barrier;  // named barrier id of this pair
    float* xchg;  // [kLnPairXchgFloats] in shared memory
};
__device__ __forceinline__ void ln_pair_sync(int barrier) {
    asm volatile("bar.sync %0, 64;" ::"r"(barrier) : "memory");
}

// finish(the sum of add(sum, v) over every value of the row), in every lane of this warp (and of its pair):
// with one warp, each lane sums its values (the columns from cx on counted from its first chunk), then the
// lanes reduce; with kPair, half 0's per-lane sums go through xchg to half 1, which continues them over its
// values, reduces across the lanes, finishes and hands the result back through xchg[slot] (two barriers).
template <int KX, bool kPair, class Add, class Finish>
__device__ __forceinline__ float layernorm_row_stat(const x128 (&x)[KX], int cx, int lane, LnRowPair pair,
                                                    int slot, Add add, Finish finish) {
    float sum = 0.0f;
    if constexpr (!kPair) {
        layernorm_row_values<KX>(x, cx, lane, [&](float v) { add(sum, v); });
        return finish(warp_reduce_sum(sum));
    } else {
        float result;  // half 1 finishes it, half 0 reads it back
        if (pair.half == 0) {
            layernorm_row_values<KX>(x, cx, lane, [&](float v) { add(sum, v); });
            pair.xchg[lane] = sum;
        }
        ln_pair_sync(pair.barrier);
        if (pair.half == 1) {
            sum = pair.xchg[lane];
            layernorm_row_values<KX>(x, cx, lane, [&](float v) { add(sum, v); });
            result = finish(warp_reduce_sum(sum));
            if (lane == 0) pair.xchg[slot] = result;
        }
        ln_pair_sync(pair.barrier);  // also: half 1 has read the partials before half 0 writes the next ones
        if (pair.half == 0) result = pair.xchg[slot];
        return result;
    }
}

// Normalizes the row at element offset `off` (= row * C) with this warp (`lane` = lane index), or with kPair
// with this warp and the other of its pair (LnRowPair):
// - x = inp1, or with kResidual x = bf16(inp1 + inp2) (fp32 add), stored to `residual` if kStoreResidual;
// - two passes over the registers: mean = sum(x) / C, then rstd = 1/sqrt(sum((x - mean)^2) / C + eps) (the
//   variance about the mean: no E[x^2] - E[x]^2 cancellation);
// - y = bf16((x - mean) * rstd * w + b): for each of the lane's chunks, on_value(y_i) for each element as
//   it is computed, then on_chunk(c, y) with the chunk's 8 values (x128) at column c. (Two hooks: the FP8
//   producer's amax sits in on_value, interleaved with the arithmetic as it was written before this code was
//   shared; folded into on_chunk it costs ptxas a few more spills in some instantiations.)
// kInp2Batch (with kResidual): the row's inp2 chunks are loaded in groups of kInp2Batch, every load of a
// group issued before the group's residual stores (kInp2Batch >= K: the whole row first). The compiler does
// not move a load above a store that may alias it, so each group is one dependent memory round trip: 1 is K
// round trips per row, K is one round trip but K more live registers. Measured on the H200 at 12288 x 1600:
// residual_layernorm_forward 0.0636 (1) -> 0.0548 ms (K). The FP8 producer, capped at 80 registers for three
// blocks per SM, spills with the whole row (K = 7) in flight; it takes smaller groups (layernorm_fp8.cu). The
// bits are the same for every kInp2Batch.
template <int K, bool kResidual, bool kStoreResidual, int kInp2Batch, bool kPair = false, class OnValue,
          class OnChunk>
__device__ __forceinline__ void layernorm_row_forward(float& mean, float& rstd, bf16* residual,
                                                      const bf16* inp1, const bf16* inp2, const bf16* weight,
                                                      const bf16* bias, size_t off, int C, int lane,
                                                      OnValue on_value, OnChunk on_chunk,
                                                      LnRowPair pair = {}) {
    constexpr int KX = kPair ? (K + 1) / 2 : K;  // chunks this warp holds: k = k0 + j, j < KX
    const int k0 = kPair ? pair.half * KX : 0;  // (half 1's last j is past the row when K is odd: predicated)
    x128 x[KX];
#pragma unroll
    for (int j = 0; j < KX; j++) {
        const int c = ((k0 + j) * 32 + lane) * x128::size;
        if (c < C) x[j] = load128cs(inp1 + off + c);
    }
    if constexpr (kResidual) {
        constexpr int G = kInp2Batch < 1 ? 1 : kInp2Batch > KX ? KX : kInp2Batch;  // chunks per group
#pragma unroll
        for (int j0 = 0; j0 < KX; j0 += G) {
            x128 y[G];
#pragma unroll
            for (int g = 0; g < G; g++) {
                const int j = j0 + g, c = ((k0 + j) * 32 + lane) * x128::size;
                if (j < KX && c < C) y[g] = load128cs(inp2 + off + c);
            }
#pragma unroll
            for (int g = 0; g < G; g++) {
                const int j = j0 + g, c = ((k0 + j) * 32 + lane) * x128::size;
                if (j < KX && c < C) {
                    x128& xj = x[j < KX ? j : 0];
#pragma unroll
                    for (int i = 0; i < x128::size; i++)
                        xj[i] = __float2bfloat16(__bfloat162float(xj[i]) + __bfloat162float(y[g][i]));
                    if constexpr (kStoreResidual) store128(residual + off + c, xj);
                }
            }
        }
    }

    // The mean, then the variance about it (both in the one-warp order; with kPair, see LnRowPair).
    const float inv_c = 1.0f / (float)C;
    const int cx = C - k0 * 256;  // the row's columns from this warp's first chunk on
    const float m = layernorm_row_stat<KX, kPair>(
        x, cx, lane, pair, kLnPairMeanSlot, [](float& sum, float v) { sum += v; },
        [&](float sum) { return sum * inv_c; });
    const float s = layernorm_row_stat<KX, kPair>(
        x, cx, lane, pair, kLnPairRstdSlot,
        [&](float& sq, float v) {
            const float d = v - m;
            sq += d * d;
        },
        [&](float sq) { return rsqrtf(sq * inv_c + kLayerNormEps); });

#pragma unroll
    for (int j = 0; j < KX; j++) {
        const int c = ((k0 + j) * 32 + lane) * x128::size;
        if (c < C) {
            const x128 w = load128ldg(weight + c);
            const x128 b = load128ldg(bias + c);
            x128 o;
#pragma unroll
            for (int i = 0; i < x128::size; i++) {
                const float n = (__bfloat162float(x[j][i]) - m) * s;
                o[i] = __float2bfloat16(n * __bfloat162float(w[i]) + __bfloat162float(b[i]));
                on_value(o[i]);
            }
            on_chunk(c, o);
        }
    }
    mean = m;
    rstd = s;
}

// Host: returns pick(std::integral_constant<int, K>{}) for the K used with rows of C elements: K = ceil(C /
// 256) up to 8 (C <= 2048; K = 7 for C = 1600), 16 up to C = 4096, 32 above (C <= kLayerNormMaxC). Every
// call must return the same type (a kernel pointer).
template <int... Ks, class Pick>
auto layernorm_pick_k_of(int K, Pick pick) {  // pick(std::integral_constant<int, K>{}) for K among Ks
    decltype(pick(std::integral_constant<int, 1>{})) picked{};
    (void)((K == Ks && (picked = pick(std::integral_constant<int, Ks>{}), true)) || ...);
    return picked;
}
// K of the kernel layernorm_pick_k picks for rows of C elements.
inline int layernorm_row_chunks(int C) {
    const int k = ceil_div(C / x128::size, 32);  // 16-byte chunks per lane
    return k >= 1 && k <= 8 ? k : k <= 16 ? 16 : 32;
}
template <class Pick>
auto layernorm_pick_k(int C, Pick pick) {
    return layernorm_pick_k_of<1, 2, 3, 4, 5, 6, 7, 8, 16, 32>(layernorm_row_chunks(C), pick);
}
