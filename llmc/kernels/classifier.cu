// Fused softmax / cross-entropy / dlogits (one block per row, two passes over the row: the second is served
// mostly from L2) and a deterministic mean loss.
//
// Numerics: exponentials are taken base 2, exp(x - m) = exp2(x * log2e - m * log2e). The row maximum enters
// only through the rounded product mL = fl(m * log2e) (formed with __fmul_rn so the compiler cannot contract
// it into neighbouring arithmetic), and every term is exp2(fma(x, log2e, -mL)): one rounding per exponent,
// and the same mL is used for the sum, the loss and the gradient, so its rounding cancels exactly.
#include <cstdint>

#include "llmc/kernels/classifier.cuh"

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.69314718055994531f;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread and pass

__device__ inline void store128cs(bf16* target, x128 value) {
    __stcs(reinterpret_cast<int4*>(target), *reinterpret_cast<int4*>(&value));
}

// ---------------------------------------------------------------------------------------------- kernels

__global__ void __launch_bounds__(512, 2)
    fused_classifier_kernel(bf16* logits_NV, float* losses_N, const int* targets_N, float dloss, int V,
                            bool write_dlogits) {
    bf16* row = logits_NV + (size_t)blockIdx.x * V;
    const int nvec = V / 8;
    const int target = targets_N[blockIdx.x];
    const bool target_ok = target >= 0 && target < V;
    // Read before any thread can overwrite the row (the block reductions below are barriers).
    float x_target = 0.0f;
    if (threadIdx.x == 0 && target_ok) x_target = __bfloat162float(row[target]);

    // Pass 1: per-thread online max m and s = sum exp2(x * log2e - fl(m * log2e)).
    float m = -INFINITY, s = 0.0f;
    for (int base = threadIdx.x; base < nvec; base += kUnroll * blockDim.x) {
        x128 in[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const int i = base + u * blockDim.x;
            if (i < nvec) in[u] = load128(row + (size_t)i * 8);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
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
                s *= exp2f(__fmul_rn(m, kLog2e) - __fmul_rn(vmax, kLog2e));  // exp2(-inf) = 0 on the first
                m = vmax;
            }
            const float mL = __fmul_rn(m, kLog2e);
#pragma unroll
            for (int k = 0; k < 8; k++) s += exp2f(fmaf(f[k], kLog2e, -mL));
        }
    }
    // Block combine, in a fixed order: global max, then every thread rescales its sum to it.
    const float M = block_reduce_max(m);
    const float ML = __fmul_rn(M, kLog2e);
    // s == 0: thread saw no elements (m = -inf); a NaN s (NaN logits) must survive, hence no "s > 0" test.
    const float S = block_reduce_sum(s == 0.0f ? 0.0f : s * exp2f(__fmul_rn(m, kLog2e) - ML));
    if (threadIdx.x == 0) {
        // loss = (ML + log2 S - x_t * log2e) * ln2, the first two terms fused into one rounding.
        losses_N[blockIdx.x] = target_ok ? (fmaf(-x_target, kLog2e, ML) + log2f(S)) * kLn2 : NAN;
    }
    if (!write_dlogits) return;

    // Pass 2: dlogits = (softmax - onehot) * dloss, in place. Each thread rewrites exactly what it read.
    const float inv_S = 1.0f / S;
    for (int base = threadIdx.x; base < nvec; base += kUnroll * blockDim.x) {
        x128 in[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const int i = base + u * blockDim.x;
            if (i < nvec) in[u] = load128cs(row + (size_t)i * 8);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const int i = base + u * blockDim.x;
            if (i >= nvec) break;
            x128 out;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                float p = exp2f(fmaf(__bfloat162float(in[u][k]), kLog2e, -ML)) * inv_S;
                if (i * 8 + k == target) p -= 1.0f;
                out[k] = __float2bfloat16_rn(p * dloss);
            }
            store128cs(row + (size_t)i * 8, out);
        }
    }
}

__global__ void __launch_bounds__(1024) mean_loss_kernel(float* out_scalar, const float* losses_N, int N) {
    float sum = 0.0f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) sum += losses_N[i];
    sum = block_reduce_sum(sum);
    if (threadIdx.x == 0) out_scalar[0] = __fdiv_rn(sum, (float)N);
}

}  // namespace

// -------------------------------------------------------------------------------------------- launchers

void fused_classifier(bf16* logits_NV, float* losses_N, const int* targets_N, float dloss, int N, int V,
                      bool write_dlogits, cudaStream_t stream) {
    CHECK(V > 0 && V % 8 == 0, "fused_classifier: V = %d must be a positive multiple of 8", V);
    CHECK(((uintptr_t)logits_NV & 15) == 0, "fused_classifier: logits must be 16-byte aligned");
    if (N <= 0) return;
    // One thread per 16-byte vector of the row, up to 512 (<= 64 registers: two resident blocks per SM at
    // V = 50304, so the rows in flight, 132 * 2 * 100 KB = 26 MB, stay in L2 for the second pass).
    const int nvec = V / 8;
    const int block = nvec >= 512 ? 512 : ceil_div(nvec, 32) * 32;
    fused_classifier_kernel<<<N, block, 0, stream>>>(logits_NV, losses_N, targets_N, dloss, V, write_dlogits);
    CHECK_LAUNCH();
}

void mean_loss(float* out_scalar, const float* losses_N, int N, cudaStream_t stream) {
    CHECK(N > 0, "mean_loss: N = %d must be positive", N);
    mean_loss_kernel<<<1, 1024, 0, stream>>>(out_scalar, losses_N, N);
    CHECK_LAUNCH();
}
