// Device-side decisions of a training step, so that a step never waits for the host (and can be replayed as a
// CUDA graph): the loss summed over the micro-steps, the verdict (apply the update, or skip a step whose loss
// or gradient norm is not finite), and undoing what a skipped step changed before the verdict was known.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

// step_loss[0] = micro_loss[0] (first micro-step of a step) or step_loss[0] + micro_loss[0].
void step_loss_accumulate(float* step_loss, const float* micro_loss, bool first, cudaStream_t stream);

// apply[0] = 1 if loss_sum[0] and norm[0] are both finite, else 0.
void step_verdict(int* apply, const float* loss_sum, const float* norm, cudaStream_t stream);

// dst[0..n) = src[0..n) when apply[0] == 0 (the step is skipped: e.g. the FP8 scale state goes back to its
// snapshot from the start of the step); nothing otherwise.
void restore_if_skipped(float* dst, const float* src, size_t n, const int* apply, cudaStream_t stream);
