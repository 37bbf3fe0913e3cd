// Fused classifier: softmax + cross-entropy loss + dlogits in one pass over the BF16 logits (never an FP32
// copy of the whole logits tensor), and a deterministic mean of the per-row losses.
#pragma once
#include <cuda_runtime.h>

#include "llmc/gpu/cuda_common.cuh"

// For each row n of logits_NV (N rows of V, V a multiple of 8, rows 16-byte aligned):
//   losses_N[n] = logsumexp(logits[n, :]) - logits[n, targets_N[n]]      (fp32 accumulation)
// and, if write_dlogits, overwrites the row in place with
//   dlogits[n, v] = (softmax(logits[n, :])[v] - (v == target)) * dloss    (rounded to bf16)
// dloss scales the gradient: 1/N for a mean loss. A target outside [0, V) gives a NaN loss (so the caller
// sees it) and no onehot subtraction. With write_dlogits false the logits are left untouched.
void fused_classifier(bf16* logits_NV, float* losses_N, const int* targets_N, float dloss, int N, int V,
                      bool write_dlogits, cudaStream_t stream);

// out_scalar[0] = sum(losses_N) / N, summed in a fixed order by one block (bitwise reproducible).
void mean_loss(float* out_scalar, const float* losses_N, int N, cudaStream_t stream);
