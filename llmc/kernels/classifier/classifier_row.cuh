// The per-row softmax / cross-entropy / dlogits of the fused classifier, shared by
// llmc/kernels/classifier/classifier.cu (dlogits in BF16, in place) and
// llmc/kernels/classifier/classifier_fp8.cu (dlogits quantized to FP8). Both kernels inline this code, so the
// loss and the fp32 value of every dlogit are the same bits in both: only the final rounding (to BF16, or
// scaled to FP8) differs. Internal to those two files (not a launcher header).
//
// One block per row. Numerics: exponentials are taken base 2, exp(x - m) = exp2(x * log2e - m * log2e). The
// row maximum enters only through the rounded product mL = fl(m * log2e) (formed with __fmul_rn so the
// compiler cannot contract it into neighbouring arithmetic), and every term is exp2(fma(x, log2e, -mL)): one
// rounding per exponent, and the same mL is used for the sum, the loss and the gradient, so its rounding
// cancels exactly.
#pragma once
#include <cuda_pipeline_primitives.h>

#include "llmc/gpu/cuda_common.cuh"

constexpr float kClassifierLog2e = 1.4426950408889634f;
constexpr float kClassifierLn2 = 0.69314718055994531f;
constexpr int kClassifierUnroll = 4;  // 16-byte loads in flight per thread and pass

// The row staged in shared memory (stage[i] = 16-byte chunk i): each thread copies with cp.async exactly the
// chunks both passes give it (i = threadIdx.x + k blockDim.x), one commit group per iteration of the passes'
// loop, and reads back only those, so the whole row is in flight at once without a barrier and the second
// pass reads shared memory instead of L2. Returns the thread's number of groups.
__device__ __forceinline__ int classifier_row_stage(const bf16* row, int V, Packed128<bf16>* stage) {
    const int nvec = V / 8;
    int groups = 0;
    for (int base = threadIdx.x; base < nvec; base += kClassifierUnroll * blockDim.x) {
#pragma unroll
        for (int u = 0; u < kClassifierUnroll; u++) {
            const int i = base + u * blockDim.x;
            if (i < nvec) __pipeline_memcpy_async(stage + i, row + (size_t)i * 8, sizeof(Packed128<bf16>));
        }
        __pipeline_commit();
        groups++;
    }
    return groups;
}
// __pipeline_wait_prior with a run-time count n: waits until at most min(n, MAX) groups are in flight.
template <int MAX = 7>
__device__ __forceinline__ void classifier_wait_prior(int n) {
    if constexpr (MAX == 0) {
        __pipeline_wait_prior(0);
    } else if (n >= MAX) {
        __pipeline_wait_prior(MAX);
    } else {
        classifier_wait_prior<MAX - 1>(n);
    }
}

// The row's softmax statistics: ML = fl(max * log2e), S = sum exp2(x * log2e - ML) (block-wide, fixed
// order), and, written by thread 0, losses_N[row] = logsumexp - x[target] (NaN for a target outside [0, V)).
// Contains block barriers; x[target] is read before them, so callers may overwrite the row afterwards.
struct ClassifierRowStats {
    float ML, S;
};
// stage (not null): the row is read from there, as classifier_row_stage copies it (groups: its return value).
__device__ __forceinline__ ClassifierRowStats classifier_row_stats(const bf16* row, int V, int target,
                                                                   float* loss_out,
                                                                   const Packed128<bf16>* stage = nullptr,
                                                                   int groups = 0) {
    const int nvec = V / 8;
    const bool target_ok = target >= 0 && target < V;
    float x_target = 0.0f;
    if (threadIdx.x == 0 && target_ok) x_target = __bfloat162float(row[target]);

    // Per-thread online max m and s = sum exp2(x * log2e - fl(m * log2e)).
    float m = -INFINITY, s = 0.0f;
    int group = 0;
    for (int base = threadIdx.x; base < nvec; base += kClassifierUnroll * blockDim.x, group++) {
        x128 in[kClassifierUnroll];
        if (stage != nullptr) classifier_wait_prior(groups - 1 - group);  // this iteration's group has landed
#pragma unroll
        for (int u = 0; u < kClassifierUnroll; u++) {
            const int i = base + u * blockDim.x;
            if (i < nvec) in[u] = stage != nullptr ? stage[i] : load128(row + (size_t)i * 8);
        }
#pragma unroll
        for (int u = 0; u < kClassifierUnroll; u++) {
            const int i = base + u * blockDim.x;
            if (i >= nvec) break;
            float f[8];
            float vmax = -INFINITY;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                f[k] = __bfloat162float(in[u][k]);
                vmax = fmaxf(vmax, f[k]);
            }
            if (vmax > m) {
                s *= exp2f(__fmul_rn(m, kClassifierLog2e) - __fmul_rn(vmax, kClassifierLog2e));  // 0 at first
                m = vmax;
            }
            const float mL = __fmul_rn(m, kClassifierLog2e);
#pragma unroll
            for (int k = 0; k < 8; k++) s += exp2f(fmaf(f[k], kClassifierLog2e, -mL));
        }
    }
    // Block combine, in a fixed order: global max, then every thread rescales its sum to it.
    const float M = block_reduce_max(m);
    const float ML = __fmul_rn(M, kClassifierLog2e);
    // s == 0: thread saw no elements (m = -inf); a NaN s (NaN logits) must survive, hence no "s > 0" test.
    const float S = block_reduce_sum(s == 0.0f ? 0.0f : s * exp2f(__fmul_rn(m, kClassifierLog2e) - ML));
    if (threadIdx.x == 0) {
        // loss = (ML + log2 S - x_t * log2e) * ln2, the first two terms fused into one rounding.
        *loss_out = target_ok ? (fmaf(-x_target, kClassifierLog2e, ML) + log2f(S)) * kClassifierLn2 : NAN;
    }
    return {ML, S};
}

// Second pass: for each 8-element chunk i of the row (each thread the chunks it read in the first pass),
// g[k] = (softmax - onehot) * dloss in fp32, handed to on_chunk(i, g).
// stage (not null): the row as classifier_row_stage copied it, after classifier_row_stats waited for it all.
template <class OnChunk>
__device__ __forceinline__ void classifier_row_dlogits(const bf16* row, int V, int target, float dloss,
                                                       ClassifierRowStats st, OnChunk on_chunk,
                                                       const Packed128<bf16>* stage = nullptr) {
    const int nvec = V / 8;
    const float inv_S = 1.0f / st.S;
    for (int base = threadIdx.x; base < nvec; base += kClassifierUnroll * blockDim.x) {
        x128 in[kClassifierUnroll];
#pragma unroll
        for (int u = 0; u < kClassifierUnroll; u++) {
            const int i = base + u * blockDim.x;
            if (i < nvec) in[u] = stage != nullptr ? stage[i] : load128cs(row + (size_t)i * 8);
        }
#pragma unroll
        for (int u = 0; u < kClassifierUnroll; u++) {
            const int i = base + u * blockDim.x;
            if (i >= nvec) break;
            float g[8];
#pragma unroll
            for (int k = 0; k < 8; k++) {
                float p = exp2f(fmaf(__bfloat162float(in[u][k]), kClassifierLog2e, -st.ML)) * inv_S;
                if (i * 8 + k == target) p -= 1.0f;
                g[k] = p * dloss;
            }
            on_chunk(i, g);
        }
    }
}

// Rows staged in shared memory up to this many bytes (V = 50304: 100.6 KB), so that two blocks share an SM.
// At N = 12288, V = 50304 on an H100 the FP8 classifier went from 0.743 to 0.679 ms, bitwise the same.
constexpr size_t kClassifierStageMaxBytes = 110 * 1024;
inline size_t classifier_stage_bytes(int V) {
    return (size_t)V * sizeof(bf16) <= kClassifierStageMaxBytes ? (size_t)V * sizeof(bf16) : 0;
}

// Threads per row: one per 16-byte vector, up to 512 (<= 64 registers: two resident blocks per SM at V =
// 50304, so the rows in flight, 132 * 2 * 100 KB = 26 MB, stay in L2 for the second pass).
inline int classifier_block_size(int V) {
    const int nvec = V / 8;
    return nvec >= 512 ? 512 : ceil_div(nvec, 32) * 32;
}
