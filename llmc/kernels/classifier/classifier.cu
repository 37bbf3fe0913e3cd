// Fused softmax / cross-entropy / dlogits (one block per row, two passes over the row: the second is served
// mostly from L2; the row code and its numerics: llmc/kernels/classifier/classifier_row.cuh) and a
// deterministic mean loss.
#include <cstdint>

#include "llmc/kernels/classifier/classifier.cuh"
#include "llmc/kernels/classifier/classifier_row.cuh"

namespace {

__device__ inline void store128cs(bf16* target, x128 value) {
    __stcs(reinterpret_cast<int4*>(target), *reinterpret_cast<int4*>(&value));
}

// ---------------------------------------------------------------------------------------------- kernels

// kStaged: the row staged in shared memory (classifier_row_stage).
template <bool kStaged>
__global__ void __launch_bounds__(512, 2)
    fused_classifier_kernel(bf16* logits_NV, float* losses_N, const int* targets_N, float dloss, int V,
                            bool write_dlogits) {
    extern __shared__ x128 row_stage[];
    bf16* row = logits_NV + (size_t)blockIdx.x * V;
    const int target = targets_N[blockIdx.x];
    const x128* stage = kStaged ? row_stage : nullptr;
    const int groups = kStaged ? classifier_row_stage(row, V, row_stage) : 0;
    const ClassifierRowStats st = classifier_row_stats(row, V, target, losses_N + blockIdx.x, stage, groups);
    if (!write_dlogits) return;
    // dlogits in place: each thread rewrites exactly the chunks it reads.
    classifier_row_dlogits(
        row, V, target, dloss, st,
        [&](int i, const float(&g)[8]) {
            x128 out;
#pragma unroll
            for (int k = 0; k < 8; k++) out[k] = __float2bfloat16_rn(g[k]);
            store128cs(row + (size_t)i * 8, out);
        },
        stage);
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
    const size_t smem = classifier_stage_bytes(V);
    const auto kernel = smem > 0 ? fused_classifier_kernel<true> : fused_classifier_kernel<false>;
    allow_dynamic_smem(kernel, smem, /*max_carveout=*/true);
    kernel<<<N, classifier_block_size(V), smem, stream>>>(logits_NV, losses_N, targets_N, dloss, V,
                                                          write_dlogits);
    CHECK_LAUNCH();
}

void mean_loss(float* out_scalar, const float* losses_N, int N, cudaStream_t stream) {
    CHECK(N > 0, "mean_loss: N = %d must be positive", N);
    mean_loss_kernel<<<1, 1024, 0, stream>>>(out_scalar, losses_N, N);
    CHECK_LAUNCH();
}
