// GptModel's step one call at a time, for the tests (not the trainer): each part of a step separately,
// with the hooks that poison buffers. Linked into the GPU tests (build/test/libgpt_testing.a); the library
// knows nothing of it.
#pragma once
#include "llmc/model/gpt.h"

namespace gpt_testing {
// Training forward pass (one micro-step) on B x T tokens (host arrays). With targets, computes the mean
// cross-entropy loss, records the FP8 amaxes of this step and leaves dlogits ready for backward(). Returns
// the loss averaged over the ranks (synchronizes). Without targets it is model.evaluate(inputs, nullptr).
// Collective (with targets): every rank calls it.
float forward(GptModel& model, const int* inputs_BT, const int* targets_BT);
// Backward pass after forward() with targets: writes all parameter gradients (the first micro-step of an
// update overwrites them, later ones accumulate). The last micro-step also reduce-scatters them across the
// ranks, layer by layer, on the communication stream while the backward continues.
void backward(GptModel& model);
// After grad_accum_steps micro-steps: the update of launch_step (step `step`, 1-based), synchronously.
// Returns the global gradient norm, or NaN (or the non-finite norm) when the step was skipped. Collective.
float update(GptModel& model, const AdamWSettings& s, int step, Fp8Health* health = nullptr);
// Abandons the current step after any of its micro-steps (e.g. a non-finite loss): the FP8 state returns to
// where it was before the step's first forward, so the step's amaxes never enter the history.
void discard_step(GptModel& model);
// Fills every activation buffer with NaN bytes, so a kernel that reads a buffer before anything wrote it in
// this step poisons the loss.
void poison_activations(GptModel& model);
// Fills the gradient buffer with NaN (call between backward() and update()).
void poison_gradients(GptModel& model);
// launch_step with NaN gradients before the update (uncaptured): the fault-handling path. Collective.
void launch_step_with_nan_gradients(GptModel& model, const AdamWSettings& s, int t);
}  // namespace gpt_testing
