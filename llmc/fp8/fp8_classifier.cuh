// The fused classifier with its gradient written in FP8: the producer of the FP8 LM head's dY. Softmax,
// cross-entropy loss and dlogits in one pass over the BF16 logits (llmc/kernels/classifier.cuh), except that
// dlogits are quantized with the dY slot's delayed scale straight from fp32 into a separate [N, V] FP8
// buffer, with their amax: no BF16 dlogits are written and read back for a cast.
//
// Semantics: losses_N bit-identical to fused_classifier's; out_NV[n, v] = saturate(g * scale) (round to
// nearest even, the slot's format), g = (softmax - onehot) * dloss the same fp32 value fused_classifier
// rounds to BF16; amax = max |g| into the slot's staging amax (one integer atomicMax per row; NaN
// propagates); out_scale_inv (may be null) = the slot's scale_inv. The logits are not modified. V a multiple
// of 16, logits and out_NV 16-byte aligned.
#pragma once
#include "llmc/fp8/cast.cuh"

void fp8_fused_classifier(__nv_fp8_storage_t* out_NV, float* out_scale_inv, Fp8ScaleState* st, int slot,
                          const bf16* logits_NV, float* losses_N, const int* targets_N, float dloss, int N,
                          int V, cudaStream_t stream);

// Calibration (step 0): the losses and max |g| into the slot's staging amax; no dlogits written.
void fp8_fused_classifier_amax(Fp8ScaleState* st, int slot, const bf16* logits_NV, float* losses_N,
                               const int* targets_N, float dloss, int N, int V, cudaStream_t stream);

// The Fp8Tensor form: dlogits into dy.data (its rows N, columns V).
inline void fp8_fused_classifier(const Fp8Tensor& dy, Fp8ScaleState* st, const bf16* logits_NV,
                                 float* losses_N, const int* targets_N, float dloss, cudaStream_t stream) {
    fp8_fused_classifier(dy.data, dy.scale_inv, st, dy.slot, logits_NV, losses_N, targets_N, dloss, dy.rows,
                         dy.cols, stream);
}
