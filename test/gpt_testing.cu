// The one-call-at-a-time test API (test/gpt_testing.h).
#include <cmath>

#include "llmc/model/gpt_impl.cuh"
#include "test/gpt_testing.h"

// The tests' way into the model's parts (befriended by GptModel; the library never defines it).
struct GptModelTestAccess {
    static GptModel::Impl& parts(GptModel& model) { return *model.impl_; }
};

namespace gpt_testing {
namespace {

GptModel::Impl& parts(GptModel& model) { return GptModelTestAccess::parts(model); }

// NaN bytes over every gradient; the compute stream must already be ordered after the reduce-scatter.
void fill_gradients_with_nan(GptModel::Impl& s) {
    CHECK_CUDA(cudaMemsetAsync(s.params.grads, 0xFF, s.params.P * sizeof(bf16), s.ctx->stream));
}

struct PoisonGradients final : StepTestHooks {
    void before_update(GptModel::Impl& s) const override { fill_gradients_with_nan(s); }
};

}  // namespace

float forward(GptModel& model, const int* inputs_BT, const int* targets_BT) {
    GptModel::Impl& s = parts(model);
    if (!targets_BT) return model.evaluate(inputs_BT, nullptr);
    CHECK(!s.runtime.in_flight, "forward() while a launched step runs");
    if (s.micro == 0) s.recipe->begin_step();
    model.stage_micro_batch(s.micro, inputs_BT, targets_BT);
    forward_pass(s, s.micro, /*training=*/true, /*with_targets=*/true);
    float loss = 0;
    CHECK_CUDA(cudaMemcpyAsync(&loss, s.act.f32(Act::LossScalar), sizeof(float), cudaMemcpyDeviceToHost,
                               s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    return loss / s.dp.world();
}

void backward(GptModel& model) { backward_pass(parts(model)); }

float update(GptModel& model, const AdamWSettings& a, int step, Fp8Health* health) {
    GptModel::Impl& s = parts(model);
    upload_adamw_scalars(s, a, step);
    update_pass(s, a.grad_clip, a.beta1, a.beta2, a.eps);
    const StepOutcome r = finish_step(s, health);
    return r.applied ? r.grad_norm : (std::isfinite(r.grad_norm) ? NAN : r.grad_norm);
}

// Puts the FP8 state back to its snapshot from the start of the step (amaxes of a bad step never reach the
// history; a step-0 calibration is undone) and recasts the weights with it on the next forward.
void discard_step(GptModel& model) {
    GptModel::Impl& s = parts(model);
    s.recipe->restore(s.ctx->stream);
    s.have_targets = false;
    s.micro = 0;
    if (s.dp.sharded()) s.dp.compute_after_comm();  // no reduce-scatter still reading the gradients
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void poison_gradients(GptModel& model) {
    GptModel::Impl& s = parts(model);
    if (s.dp.sharded()) s.dp.compute_after_comm();  // after the reduce-scatter that reads them
    fill_gradients_with_nan(s);
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

// The step's test hook is set for this launch only (launch_step queues the whole step before returning).
void launch_step_with_nan_gradients(GptModel& model, const AdamWSettings& a, int t) {
    GptModel::Impl& s = parts(model);
    const PoisonGradients poison;
    s.test_hooks = &poison;
    model.launch_step(a, t);
    s.test_hooks = nullptr;
}

void poison_activations(GptModel& model) {
    GptModel::Impl& s = parts(model);
    s.act_arena.fill_nan(s.ctx->stream);
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

}  // namespace gpt_testing
