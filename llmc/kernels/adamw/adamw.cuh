// AdamW update with PyTorch semantics (torch.optim.AdamW), FP32 master weights, FP32 or BF16 moments, BF16
// gradients and a BF16 working copy of the parameters written from the new master weights.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/parallel/shard_view.h"

// One optimizer step over P parameters (any P; any alignment, 16-byte aligned views take the fast path).
// With g = grads_P * grad_scale[0] (fp32):
//   p = p * (1 - lr * weight_decay)                       (decoupled decay, applied to the old p)
//   m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//   params_P = bf16(p)  (round to nearest)
// t is the 1-based step. grad_scale is a device scalar (e.g. the grad-clip factor from grad_clip_scale(),
// so no host sync is needed); nullptr means 1. The bias corrections are formed on the host in double, as
// PyTorch does, and passed as fp32 scalars. With a shard `view` (ZeRO-1), master/m/v are the rank's P shard
// elements and grads/params the full tensor: element i reads grads_P[view.map(i)] and writes params there.
// params_P may be nullptr: the master is updated, no BF16 copy is written.
// The scalars of step t that the learning-rate schedule and the bias corrections change every step
// (decay = 1 - lr * weight_decay, step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t)), formed on
// the host in double as PyTorch does.
struct AdamWStepScalars {
    float decay, step_size, bc2_sqrt;
};
AdamWStepScalars adamw_step_scalars(float lr, float beta1, float beta2, float weight_decay, int t);

// MT, the moments' storage: float, or bf16 (rounded to nearest when stored; the arithmetic stays FP32).
template <class MT>
void adamw_update(float* master_P, bf16* params_P, MT* m_P, MT* v_P, const bf16* grads_P, size_t P, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int t, const float* grad_scale,
                  cudaStream_t stream, const ShardView& view = ShardView::whole());

// The same update with the per-step scalars read from device memory (step_dev) and an optional device flag
// `apply` (nullptr: always): apply[0] == 0 leaves everything untouched (a skipped step). Nothing here depends
// on host values that change between steps, so a training step captured as a CUDA graph replays correctly.
template <class MT>
void adamw_update(float* master_P, bf16* params_P, MT* m_P, MT* v_P, const bf16* grads_P, size_t P,
                  float beta1, float beta2, float eps, const AdamWStepScalars* step_dev,
                  const float* grad_scale, const int* apply, cudaStream_t stream,
                  const ShardView& view = ShardView::whole());
