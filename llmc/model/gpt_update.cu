// GptModel's optimizer step (llmc/model/gpt_impl.cuh): after all micro-steps, the global gradient norm, the
// verdict (apply unless the loss or the norm is not finite), the scaling recipe's update from the amaxes of
// all micro-steps and ranks, clipping and AdamW on this rank's shard, the all-gather of the new weights and
// the weight copies cast from them. A skipped step changes nothing: AdamW does not run and the recipe
// returns to its snapshot from the start of the step, all on the device. Ends with the step's scalars
// copied to pinned memory.
#include <vector>

#include "llmc/gpu/step_guard.cuh"
#include "llmc/kernels/adamw/adamw.cuh"
#include "llmc/kernels/global_norm.cuh"
#include "llmc/model/gpt_impl.cuh"

// The global gradient norm and the clip factor into the step scalars: on several GPUs each rank's shards
// (after the reduce-scatter), then the sum of the partials over the ranks.
static void gradient_norm(GptModel::Impl& s, float grad_clip) {
    cudaStream_t st = s.ctx->stream;
    StepScalars* d = s.step_scalars();
    const ModelParams& p = s.params;
    float* partials = s.act.f32(Act::NormPartials);
    const int np = (int)global_norm_num_partials();
    if (!s.dp.sharded()) {
        global_norm_squared(partials, p.grads, p.P, st);
        grad_clip_scale(&d->grad_norm, &d->grad_scale, partials, np, grad_clip, st);
        return;
    }
    s.dp.compute_after_comm();
    for (int k = 0; k < kNumParamTensors; k++) {
        const ParamShard& sh = p.shards[k];
        global_norm_squared(partials + (size_t)k * np, p.grads + sh.full_offset, sh.shard_numel, st, sh.view);
    }
    s.dp.all_reduce(partials, (size_t)kNumParamTensors * np, ncclSum);
    grad_clip_scale(&d->grad_norm, &d->grad_scale, partials, kNumParamTensors * np, grad_clip, st);
}

// Parameter tensor k's AdamW is its Linears' own (optimizer_step), not the plain pass's.
static bool updated_by_its_linears(GptModel::Impl& s, int k) {
    return is_block_linear_weight(k) && s.linear(0, param_spec(k).linear).updates_own_weight();
}

// Linear `kind` of layer l's AdamW step: this rank's chunk of its master and moments (on one GPU the whole
// weight) and the same elements of its gradient.
static LinearAdamW linear_adamw(GptModel::Impl& s, int l, int kind, float beta1, float beta2, float eps) {
    const ModelParams& p = s.params;
    const int w = linear_spec(kind).weight;
    const bool b16 = p.bf16_moments;
    return {shard_slice(p, p.master, w, l),
            b16 ? nullptr : shard_slice(p, p.adam_m, w, l),
            b16 ? nullptr : shard_slice(p, p.adam_v, w, l),
            b16 ? shard_slice(p, p.adam_m16, w, l) : nullptr,
            b16 ? shard_slice(p, p.adam_v16, w, l) : nullptr,
            p.slice(p.grads, w, l) + p.shards[w].view.rank_offset,
            beta1,
            beta2,
            eps,
            s.adamw_scalars() /* decayed */,
            &s.step_scalars()->grad_scale,
            &s.step_scalars()->apply};
}

// AdamW on this rank's shard of every tensor (all layers at once), then the Linears that update their own
// weight, fused with its cast (with the just-updated scales), one kind of Linear at a time.
static void adamw_all(GptModel::Impl& s, float beta1, float beta2, float eps) {
    cudaStream_t st = s.ctx->stream;
    StepScalars* d = s.step_scalars();
    const ModelParams& p = s.params;
    for (int k = 0; k < kNumParamTensors; k++) {
        if (updated_by_its_linears(s, k)) continue;
        const ParamShard& sh = p.shards[k];
        p.with_moments([&](auto* m, auto* v) {
            adamw_update(p.master + sh.shard_offset, p.params + sh.full_offset, m + sh.shard_offset,
                         v + sh.shard_offset, p.grads + sh.full_offset, sh.shard_numel, beta1, beta2, eps,
                         s.adamw_scalars() + (p.table[k].weight_decay ? 0 : 1), &d->grad_scale, &d->apply, st,
                         sh.view);
        });
    }
    const int L = s.cfg.num_layers;
    std::vector<Linear*> layers(L);
    std::vector<LinearAdamW> a(L);
    for (int kind = 0; kind < kLinearsPerLayer; kind++) {
        if (!s.linear(0, kind).updates_own_weight()) continue;
        for (int l = 0; l < L; l++) {
            layers[l] = &s.linear(l, kind);
            a[l] = linear_adamw(s, l, kind, beta1, beta2, eps);
        }
        s.linear(0, kind).optimizer_step_layers(layers.data(), a.data(), L);
    }
}

void update_pass(GptModel::Impl& s, float grad_clip, float beta1, float beta2, float eps) {
    cudaStream_t st = s.ctx->stream;
    CHECK(s.micro == s.accum_steps, "update() after %d of %d micro-steps", s.micro, s.accum_steps);
    StepScalars* d = s.step_scalars();
    s.mark(kPhaseOptimizer);
    gradient_norm(s, grad_clip);
    step_verdict(&d->apply, &d->loss_sum, &d->grad_norm, st);
    s.recipe->update(&d->apply, st);
    s.mark(kPhaseOptimizer);
    adamw_all(s, beta1, beta2, eps);
    // every rank's updated shard to every rank: the BF16 weights, and the rows of W that FP8 Linears updating
    // their own weight quantized (instead of their BF16 weights, which nothing reads then); then the copies
    // made from them (several GPUs: the FP8 Linears' W^T; the FP8 LM head's W and W^T from the BF16
    // embedding), with the just-updated weight scales (a skipped step: the restored scales and unchanged
    // weights, so the same bytes as before)
    s.gather_weights([&](int k) { return updated_by_its_linears(s, k); });
    s.lm_head->weights_gathered();
    s.micro = 0;
    s.mark(kPhaseOther);
    s.have_targets = false;
    CHECK_CUDA(cudaMemcpyAsync(s.runtime.readback, d, sizeof(StepScalars), cudaMemcpyDeviceToHost, st));
}

void upload_adamw_scalars(GptModel::Impl& s, const AdamWSettings& a, int t) {
    AdamWStepScalars* pinned = s.runtime.pinned_adamw;
    pinned[0] = adamw_step_scalars(a.lr, a.beta1, a.beta2, a.weight_decay, t);
    pinned[1] = adamw_step_scalars(a.lr, a.beta1, a.beta2, 0.0f, t);
    CHECK_CUDA(cudaMemcpyAsync(s.adamw_scalars(), pinned, 2 * sizeof(AdamWStepScalars),
                               cudaMemcpyHostToDevice, s.ctx->stream));
}
