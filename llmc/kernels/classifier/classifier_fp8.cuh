// The fused classifier with its gradient written in FP8: the producer of the FP8 LM head's dY. Softmax,
// cross-entropy loss and dlogits in one pass over the BF16 logits (llmc/kernels/classifier/classifier.cuh),
// except that dlogits are quantized with the dY slot's delayed scale straight from fp32 into a separate [N,
// V] FP8 buffer, with their amax: no BF16 dlogits are written and read back for a cast.
//
// Semantics: losses_N bit-identical to fused_classifier's; dy.data[n, v] = saturate(g * scale) (round to
// nearest even, in dy's format), g = (softmax - onehot) * dloss the same fp32 value fused_classifier rounds
// to BF16; amax = max |g| into the slot's staging amax (one integer atomicMax per row; NaN propagates);
// dy.scale_inv (may be null) = the slot's scale_inv. The logits are not modified. V a multiple of 16,
// logits and dy.data 16-byte aligned.
#pragma once
#include "llmc/kernels/cast/cast.cuh"

// dlogits into dy.data [N, V] = [dy.rows, dy.cols], with dy's scale_inv, slot and format.
void fp8_fused_classifier(const bf16* logits_NV, float* losses_N, const int* targets_N, float dloss,
                          const Fp8Tensor& dy, cudaStream_t stream);

// Calibration (step 0): the losses and max |g| into dy's staging amax; no dlogits written.
void fp8_fused_classifier_amax(const bf16* logits_NV, float* losses_N, const int* targets_N, float dloss,
                               const Fp8Tensor& dy, cudaStream_t stream);
