// FP8 dlogits from the fused classifier (llmc/kernels/classifier/classifier_fp8.cuh). The row code is the
// BF16 kernel's (llmc/kernels/classifier/classifier_row.cuh); the quantization and amax are the cast kernels'
// (fp8_device.cuh).
#include <cstdint>

#include "llmc/fp8/fp8_device.cuh"
#include "llmc/kernels/classifier/classifier_fp8.cuh"
#include "llmc/kernels/classifier/classifier_row.cuh"

namespace {

// kWrite false: the amax only (calibration). kStaged: the row staged in shared memory (classifier_row_stage).
template <bool kWrite, __nv_fp8_interpretation_t FMT, bool kStaged>
__global__ void __launch_bounds__(512, 2)
    fp8_classifier_kernel(__nv_fp8_storage_t* out_NV, float* out_scale_inv, float* staging,
                          const float* scale_ptr, const float* scale_inv_ptr, const bf16* logits_NV,
                          float* losses_N, const int* targets_N, float dloss, int V) {
    extern __shared__ x128 row_stage[];
    const bf16* row = logits_NV + (size_t)blockIdx.x * V;
    __nv_fp8_storage_t* out = out_NV + (size_t)blockIdx.x * V;
    const int target = targets_N[blockIdx.x];
    if (kWrite && out_scale_inv != nullptr && blockIdx.x == 0 && threadIdx.x == 0)
        *out_scale_inv = *scale_inv_ptr;
    const float scale = kWrite ? *scale_ptr : 0.0f;
    const x128* stage = kStaged ? row_stage : nullptr;
    const int groups = kStaged ? classifier_row_stage(row, V, row_stage) : 0;
    const ClassifierRowStats st = classifier_row_stats(row, V, target, losses_N + blockIdx.x, stage, groups);
    uint32_t amax_bits = 0;
    classifier_row_dlogits(
        row, V, target, dloss, st,
        [&](int i, const float(&g)[8]) {
#pragma unroll
            for (int k = 0; k < 8; k++) amax_bits = max(amax_bits, fp8_abs_bits(g[k]));
            if constexpr (kWrite) *reinterpret_cast<uint2*>(out + (size_t)i * 8) = to_fp8x8<FMT>(g, scale);
        },
        stage);
    block_amax_atomic(amax_bits, staging);
}

// dy: the dlogits tensor written (kWrite), or whose amax alone is measured; [N, V] = [dy.rows, dy.cols].
template <bool kWrite>
void launch(const Fp8Tensor& dy, const bf16* logits_NV, float* losses_N, const int* targets_N, float dloss,
            cudaStream_t stream) {
    const int N = dy.rows, V = dy.cols;
    CHECK(V > 0 && V % 16 == 0, "fp8_fused_classifier: V = %d must be a positive multiple of 16", V);
    CHECK(aligned16(logits_NV) && (!kWrite || aligned16(dy.data)),
          "fp8_fused_classifier: pointers must be 16-byte aligned");
    fp8_check_bound(dy, "fp8_fused_classifier");
    if (N <= 0) return;
    fp8_dispatch_written<kWrite>(dy, [&](auto tag) {
        constexpr __nv_fp8_interpretation_t FMT = decltype(tag)::value;
        const size_t smem = classifier_stage_bytes(V);
        const auto kernel =
            smem > 0 ? fp8_classifier_kernel<kWrite, FMT, true> : fp8_classifier_kernel<kWrite, FMT, false>;
        allow_dynamic_smem(kernel, smem, /*max_carveout=*/true);
        kernel<<<N, classifier_block_size(V), smem, stream>>>(
            kWrite ? dy.data : nullptr, kWrite ? dy.scale_inv : nullptr, dy.slot.amax, dy.slot.scale,
            dy.slot.scale_inv, logits_NV, losses_N, targets_N, dloss, V);
        CHECK_LAUNCH();
    });
}

}  // namespace

void fp8_fused_classifier(const bf16* logits_NV, float* losses_N, const int* targets_N, float dloss,
                          const Fp8Tensor& dy, cudaStream_t stream) {
    CHECK(dy.data != nullptr, "fp8_fused_classifier: the output is required");
    launch<true>(dy, logits_NV, losses_N, targets_N, dloss, stream);
}

void fp8_fused_classifier_amax(const bf16* logits_NV, float* losses_N, const int* targets_N, float dloss,
                               const Fp8Tensor& dy, cudaStream_t stream) {
    launch<false>(dy, logits_NV, losses_N, targets_N, dloss, stream);
}
