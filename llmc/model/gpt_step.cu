// GptModel's training step (llmc/model/gpt.h): forward, backward and update, the step launched as one CUDA graph,
// and the one-call-at-a-time parts the tests use. Everything below a step's launch is queued without waiting
// for the host: tokens come from device slots staged before, the loss and gradient norm stay on the device,
// the verdict (apply or skip) is a device flag that AdamW and the FP8 state read, and the results reach the
// host in one copy at the end.
#include <chrono>

#include "llmc/fp8/adamw_fp8.cuh"
#include "llmc/model/gpt_impl.cuh"

static float* step_loss_ptr(GptModel::Impl& s) { return &s.step_scalars->loss_sum; }

void GptModel::stage_micro_batch(int k, const int* inputs_BT, const int* targets_BT) {
    Impl& s = *impl_;
    const int N = s.B * s.T, V = s.cfg.vocab_size;
    CHECK(k >= 0 && k < s.accum_steps, "stage_micro_batch: micro-step %d of %d", k, s.accum_steps);
    for (int i = 0; i < N; i++)
        CHECK(inputs_BT[i] >= 0 && inputs_BT[i] < V &&
                  (!targets_BT || (targets_BT[i] >= 0 && targets_BT[i] < V)),
              "token id out of range [0, %d) at position %d", V, i);
    // A new batch takes the other pinned buffer, once its last upload (two batches ago) is done.
    if (k == 0) {
        s.stage_buffer ^= 1;
        CHECK_CUDA(cudaEventSynchronize(s.pinned_free[s.stage_buffer]));
    }
    const size_t ints = token_slot_ints(N);
    int* host = s.pinned_tokens[s.stage_buffer] + (size_t)k * ints;
    const TokenSlot h = token_slot_at(host, N);
    memcpy(h.inputs, inputs_BT, N * sizeof(int));
    if (targets_BT) memcpy(h.targets, targets_BT, N * sizeof(int));
    // Token buckets for the deterministic embedding backward (sorted on the host, while the GPU works).
    TokenBuckets buckets;
    build_token_buckets(&buckets, inputs_BT, N);
    memcpy(h.bucket_offsets, buckets.offsets.data(), buckets.offsets.size() * sizeof(int));
    memcpy(h.bucket_positions, buckets.positions.data(), N * sizeof(int));
    memcpy(h.bucket_tokens, buckets.tokens.data(), buckets.tokens.size() * sizeof(int));
    *h.num_buckets = (int)buckets.tokens.size();
    CHECK_CUDA(
        cudaMemcpyAsync(s.slot(k).inputs, host, ints * sizeof(int), cudaMemcpyHostToDevice, s.ctx->stream));
    CHECK_CUDA(cudaEventRecord(s.pinned_free[s.stage_buffer], s.ctx->stream));
}

// The forward of micro-step k (tokens in slot k). training: records the FP8 amaxes in the training state,
// leaves dlogits for the backward and adds the loss (summed over the ranks) to the step's. Otherwise an
// evaluation pass on a throwaway copy of the FP8 state; with_targets: loss_scalar holds its loss.
static void forward_pass(GptModel::Impl& s, int k, bool training, bool with_targets) {
    const int B = s.B, T = s.T, C = s.cfg.channels, H = s.cfg.num_heads, V = s.cfg.vocab_size,
              L = s.cfg.num_layers;
    const int N = B * T, D = C / H;
    cudaStream_t st = s.ctx->stream;
    const TokenSlot tokens = s.slot(k);
    if (s.use_fp8()) {
        if (training) {
            s.fp8.scales = &s.scales;
            if (k == 0)  // the state at the start of the step (all its micro-steps)
                CHECK_CUDA(cudaMemcpyAsync(s.step_start_scales, s.scales.storage,
                                           s.scales.storage_floats * sizeof(float), cudaMemcpyDeviceToDevice,
                                           st));
            if (s.fp8_weights_stale) s.cast_fp8_weights();
        } else {  // a throwaway copy of the scale state records this pass's amaxes (and calibration)
            CHECK_CUDA(cudaMemcpyAsync(s.eval_scales.storage, s.scales.storage,
                                       s.scales.storage_floats * sizeof(float), cudaMemcpyDeviceToDevice,
                                       st));
            s.fp8.scales = &s.eval_scales;
            if (s.fp8_weights_stale) {  // cast for this pass only: training recasts with its own state
                s.cast_fp8_weights();
                s.fp8_weights_stale = true;
            }
        }
    }

    s.mark(kPhaseOther);
    encoder_forward(s.residual[0], tokens.inputs, s.param(WTE), s.param(WPE), B, T, C, st);
    LayerParams p0 = s.layer(s.params, 0);
    s.norm_into_linear(0, kQkv, nullptr, s.ln1[0], s.ln1_mean[0], s.ln1_rstd[0], s.residual[0], nullptr,
                       p0.ln1w, p0.ln1b);
    for (int l = 0; l < L; l++) {
        LayerParams p = s.layer(s.params, l);
        s.linear_forward(l, kQkv, s.qkv[l], s.ln1[l], p.qkvw, p.qkvb);
        s.mark(kPhaseAttention);
        attention_forward(s.attention_graphs.get(), s.ctx, s.atty[l], s.att_stats[l], s.qkv[l], B, T, H, D,
                          st);
        s.linear_forward(l, kAttProj, s.scratch_NC, s.atty[l], p.attprojw, p.attprojb);
        s.norm_into_linear(l, kFc, s.residual_mid[l], s.ln2[l], s.ln2_mean[l], s.ln2_rstd[l], s.residual[l],
                           s.scratch_NC, p.ln2w, p.ln2b);
        s.linear_forward(l, kFc, s.fch[l], s.ln2[l], p.fcw, p.fcb);
        s.gelu_into_linear(l, s.fch[l]);
        s.linear_forward(l, kFcProj, s.scratch_NC, s.fch_gelu, p.fcprojw, p.fcprojb);
        // The next block's ln1 (or the final LayerNorm, BF16 for the LM head) is fused with this residual
        // add.
        if (l < L - 1) {
            LayerParams next = s.layer(s.params, l + 1);
            s.norm_into_linear(l + 1, kQkv, s.residual[l + 1], s.ln1[l + 1], s.ln1_mean[l + 1],
                               s.ln1_rstd[l + 1], s.residual_mid[l], s.scratch_NC, next.ln1w, next.ln1b);
        } else {
            s.mark(kPhaseOther);
            residual_layernorm_forward(s.residual[L], s.lnf, s.lnf_mean, s.lnf_rstd, s.residual_mid[l],
                                       s.scratch_NC, s.param(LNFW), s.param(LNFB), N, C, st);
        }
    }
    s.mark(kPhaseGemm);
    matmul_forward(&s.matmul_plans, s.ctx, s.logits, s.lnf, s.param(WTE), nullptr, N, C, V, st);
    s.mark(kPhaseOther);
    s.fp8.scales = &s.scales;
    s.have_targets = training;
    if (!with_targets) return;
    // d(loss)/d(logit) for the mean over every token of the update: all micro-steps of all ranks, whose
    // gradients are summed (accumulation, then the reduce-scatter).
    const float dloss = 1.0f / ((float)N * s.accum_steps * s.world);
    fused_classifier(s.logits, s.losses, tokens.targets, dloss, N, V, true, st);
    mean_loss(s.loss_scalar, s.losses, N, st);
    if (s.sharded()) s.all_reduce(s.loss_scalar, 1, ncclSum);  // summed here, divided on the host
    if (training) step_loss_accumulate(step_loss_ptr(s), s.loss_scalar, k == 0, st);
}

// The backward of the current micro-step (s.micro, tokens in its slot); the last one of a step also
// reduce-scatters the gradients across the ranks, layer by layer, while the backward continues.
static void backward_pass(GptModel::Impl& s) {
    CHECK(s.have_targets, "backward() needs a training forward() with targets first");
    CHECK(s.micro < s.accum_steps, "backward(): %d micro-steps already, update() expected", s.micro);
    const bool accumulate = s.micro > 0;  // later micro-steps add to the gradients
    const bool reduce = s.sharded() && s.micro == s.accum_steps - 1;
    s.fp8.accumulate_grads = accumulate;
    const int B = s.B, T = s.T, C = s.cfg.channels, H = s.cfg.num_heads, V = s.cfg.vocab_size,
              L = s.cfg.num_layers;
    const int N = B * T, D = C / H;
    cudaStream_t st = s.ctx->stream;
    const TokenSlot tokens = s.slot(s.micro);
    bf16* dres = s.grad_residual;  // gradient of the residual stream at the current point
    s.mark(kPhaseOther);
    CHECK_CUDA(cudaMemsetAsync(dres, 0, (size_t)N * C * sizeof(bf16), st));

    // LM head (tied, BF16): dwte is overwritten here, the encoder backward adds the embedding part at the
    // end.
    s.mark(kPhaseGemm);
    matmul_backward(&s.matmul_plans, s.ctx, s.grad_NC, s.grad(WTE), nullptr, s.logits, s.lnf, s.param(WTE), N,
                    C, V, accumulate, s.reduce_scratch, st);
    s.mark(kPhaseOther);
    layernorm_backward(dres, s.grad(LNFW), s.grad(LNFB), s.reduce_scratch, s.grad_NC, s.residual[L],
                       s.param(LNFW), s.lnf_mean, s.lnf_rstd, N, C, st, accumulate);
    for (int l = L - 1; l >= 0; l--) {
        LayerParams p = s.layer(s.params, l);
        LayerParams g = s.layer(s.grads, l);
        // MLP: residual[l+1] = residual_mid[l] + fcproj(gelu(fc(ln2(residual_mid[l]))))
        if (s.use_fp8()) {
            if (s.options.recompute_fc_proj_input) {
                // The forward's X^T again: same pre-GELU input, same scale (scales change only in update()),
                // so bitwise the same bytes; the amax it records is the one already staged (a max: no
                // change).
                Fp8LinearBuffers& lin = s.fp8_linears[kLinearsPerLayer * l + kFcProj];
                s.mark(kPhaseCast);
                fp8_gelu_cast_transpose(lin.x.transposed_only(), s.fp8.scales, s.fch[l], N, 4 * C,
                                        s.cfg.gelu_tanh, st);
            }
            s.linear_backward(l, kFcProj, s.grad_N4C, g.fcprojw, g.fcprojb, dres, nullptr, p.fcprojw);
            // dGELU is fused into the fc layer's dY cast
            fp8_linear_backward(&s.fp8, &s.fp8_linears[kLinearsPerLayer * l + kFc], s.grad_NC, g.fcw, g.fcb,
                                s.grad_N4C, s.fch[l], N, C, 4 * C, st);
        } else {
            s.mark(kPhaseOther);
            gelu_forward(s.fch_gelu, s.fch[l], (size_t)N * 4 * C, s.cfg.gelu_tanh, st);  // recompute
            s.linear_backward(l, kFcProj, s.grad_N4C, g.fcprojw, g.fcprojb, dres, s.fch_gelu, p.fcprojw);
            s.mark(kPhaseOther);
            gelu_backward_inplace(s.grad_N4C, s.fch[l], (size_t)N * 4 * C, s.cfg.gelu_tanh, st);
            s.linear_backward(l, kFc, s.grad_NC, g.fcw, g.fcb, s.grad_N4C, s.ln2[l], p.fcw);
        }
        s.mark(kPhaseOther);
        layernorm_backward(dres, g.ln2w, g.ln2b, s.reduce_scratch, s.grad_NC, s.residual_mid[l], p.ln2w,
                           s.ln2_mean[l], s.ln2_rstd[l], N, C, st, accumulate);
        // Attention: residual_mid[l] = residual[l] + attproj(sdpa(qkv(ln1(residual[l]))))
        s.linear_backward(l, kAttProj, s.grad_NC, g.attprojw, g.attprojb, dres, s.atty[l], p.attprojw);
        bf16* dqkv = s.grad_N4C;  // [N, 3C] fits in the [N, 4C] scratch
        s.mark(kPhaseAttention);
        attention_backward(s.attention_graphs.get(), s.ctx, dqkv, s.grad_NC, s.qkv[l], s.atty[l],
                           s.att_stats[l], B, T, H, D, st);
        s.linear_backward(l, kQkv, s.grad_NC, g.qkvw, g.qkvb, dqkv, s.ln1[l], p.qkvw);
        s.mark(kPhaseOther);
        layernorm_backward(dres, g.ln1w, g.ln1b, s.reduce_scratch, s.grad_NC, s.residual[l], p.ln1w,
                           s.ln1_mean[l], s.ln1_rstd[l], N, C, st, accumulate);
        if (reduce) s.reduce_scatter_grads(l);  // layer l's gradients are final: reduce while l-1 runs
    }
    encoder_backward(s.grad(WTE), s.grad(WPE), dres, tokens.bucket_offsets, tokens.bucket_positions,
                     tokens.bucket_tokens, tokens.num_buckets, N, B, T, C, st, accumulate);
    // Rows of dwpe beyond T are not touched by this batch: their gradient is zero.
    if (T < s.cfg.max_seq_len && !accumulate)
        CHECK_CUDA(cudaMemsetAsync(s.grad(WPE) + (size_t)T * C, 0,
                                   (size_t)(s.cfg.max_seq_len - T) * C * sizeof(bf16), st));
    if (reduce) s.reduce_scatter_grads(-1);  // wte, wpe, lnf
    s.micro++;
    s.have_targets = false;
}

// After all micro-steps: the global gradient norm, the verdict (apply unless the loss or the norm is not
// finite), the FP8 scale update from the amaxes of all micro-steps and ranks, clipping and AdamW on this
// rank's shard, the all-gather of the new weights and, in FP8, their casts. A skipped step changes nothing:
// AdamW does not run and the FP8 state returns to its snapshot from the start of the step, all on the
// device. Ends with the step's scalars copied to pinned memory.
static void update_pass(GptModel::Impl& s, float grad_clip, float beta1, float beta2, float eps) {
    cudaStream_t st = s.ctx->stream;
    CHECK(s.micro == s.accum_steps, "update() after %d of %d micro-steps", s.micro, s.accum_steps);
    StepScalars* d = s.step_scalars;
    s.mark(kPhaseOptimizer);
    const int np = (int)global_norm_num_partials();
    if (!s.sharded()) {
        global_norm_squared(s.norm_partials, s.grads, s.P, st);
        grad_clip_scale(&d->grad_norm, &d->grad_scale, s.norm_partials, np, grad_clip, st);
    } else {  // each rank's shards (after the reduce-scatter), then the sum of the partials over the ranks
        s.compute_after_comm();
        for (int k = 0; k < kNumParamTensors; k++) {
            const ParamShard& sh = s.shards[k];
            global_norm_squared(s.norm_partials + (size_t)k * np, s.grads + sh.full_offset, sh.shard_numel,
                                st, sh.view);
        }
        s.all_reduce(s.norm_partials, (size_t)kNumParamTensors * np, ncclSum);
        grad_clip_scale(&d->grad_norm, &d->grad_scale, s.norm_partials, kNumParamTensors * np, grad_clip, st);
    }
    step_verdict(&d->apply, step_loss_ptr(s), &d->grad_norm, st);
    if (s.use_fp8()) {
        // one launch updates every scale
        s.mark(kPhaseCast);
        if (s.sharded()) {  // every rank updates from the amaxes of all ranks: identical scales everywhere
            s.all_reduce(fp8_staging_amax(&s.scales), s.scales.num_slots, ncclMax);
        }
        const size_t n = s.scales.num_slots;  // for the health report
        CHECK_CUDA(cudaMemcpyAsync(s.health_amax, fp8_staging_amax(&s.scales), n * sizeof(float),
                                   cudaMemcpyDeviceToDevice, st));
        CHECK_CUDA(
            cudaMemcpyAsync(s.health_scale, s.scales.scale, n * sizeof(float), cudaMemcpyDeviceToDevice, st));
        fp8_update_scales(&s.scales, s.fp8_cfg.amax_algo, s.fp8_cfg.margin, st);
        restore_if_skipped(s.scales.storage, s.step_start_scales, s.scales.storage_floats, &d->apply, st);
        s.fp8.calibrate = false;  // wait_step() sets it back if the step was skipped
    }
    s.mark(kPhaseOptimizer);
    // FP8 on one GPU: the block weights' AdamW writes their FP8 W and W^T directly (in the unused BF16
    // copies, see the constructor), with the just-updated weight scales
    const bool fused_fp8_weights = s.use_fp8() && !s.sharded();
    for (int k = 0; k < kNumParamTensors; k++) {
        const ParamShard& sh = s.shards[k];
        const bool fp8_weight = k == QKVW || k == ATTPROJW || k == FCW || k == FCPROJW;
        if (fused_fp8_weights && fp8_weight) continue;
        adamw_update(s.master + sh.shard_offset, s.params + sh.full_offset, s.adam_m + sh.shard_offset,
                     s.adam_v + sh.shard_offset, s.grads + sh.full_offset, sh.shard_numel, beta1, beta2, eps,
                     s.adamw_scalars + (s.table[k].weight_decay ? 0 : 1), &d->grad_scale, &d->apply, st,
                     sh.view);
    }
    if (fused_fp8_weights) {
        for (int l = 0; l < s.cfg.num_layers; l++)
            for (int kind = 0; kind < kLinearsPerLayer; kind++) {
                int in, out;
                s.linear_dims(kind, &in, &out);
                Fp8LinearBuffers& lin = s.fp8_linears[kLinearsPerLayer * l + kind];
                const size_t off = s.master_weight(l, kind) - s.master;  // one GPU: master is unsharded
                adamw_update_fp8_weight(s.master + off, s.adam_m + off, s.adam_v + off, s.grads + off, out,
                                        in, beta1, beta2, eps, s.adamw_scalars /* decayed */, &d->grad_scale,
                                        &d->apply, lin.w, &s.scales, st);
            }
    }
    s.gather_weights();  // every rank's updated shard to every rank
    s.micro = 0;
    // Several GPUs: W and W^T for the next step from the gathered BF16 weights, with the just-updated weight
    // scales (a skipped step: the restored scales and unchanged weights, so the same bytes as before)
    if (s.use_fp8() && s.sharded()) s.cast_fp8_weights();
    s.mark(kPhaseOther);
    s.have_targets = false;
    CHECK_CUDA(cudaMemcpyAsync(s.pinned_readback, d, sizeof(StepScalars), cudaMemcpyDeviceToHost, st));
}

// The learning rate and bias corrections of step t, to device memory before the step runs.
static void upload_adamw_scalars(GptModel::Impl& s, const AdamWSettings& a, int t) {
    s.pinned_adamw[0] = adamw_step_scalars(a.lr, a.beta1, a.beta2, a.weight_decay, t);
    s.pinned_adamw[1] = adamw_step_scalars(a.lr, a.beta1, a.beta2, 0.0f, t);
    CHECK_CUDA(cudaMemcpyAsync(s.adamw_scalars, s.pinned_adamw, 2 * sizeof(AdamWStepScalars),
                               cudaMemcpyHostToDevice, s.ctx->stream));
}

static void run_step(GptModel::Impl& s, const AdamWSettings& a, bool poison) {
    for (int k = 0; k < s.accum_steps; k++) {
        forward_pass(s, k, /*training=*/true, /*with_targets=*/true);
        backward_pass(s);
    }
    if (poison) {  // tests: NaN gradients, after the reduce-scatter that reads them
        if (s.sharded()) s.compute_after_comm();
        CHECK_CUDA(cudaMemsetAsync(s.grads, 0xFF, s.P * sizeof(bf16), s.ctx->stream));
    }
    update_pass(s, a.grad_clip, a.beta1, a.beta2, a.eps);
}

// Host state after the step's verdict is known: a skipped step keeps (or redoes) the step-0 calibration.
static StepOutcome finish_step(GptModel::Impl& s, Fp8Health* health);

void GptModel::launch_step(const AdamWSettings& a, int t, bool poison_gradients) {
    Impl& s = *impl_;
    CHECK(!s.step_in_flight, "launch_step: the previous step was not waited for (wait_step)");
    CHECK(s.micro == 0, "launch_step after %d forward/backward calls", s.micro);
    upload_adamw_scalars(s, a, t);
    s.calibrating_step = s.use_fp8() && s.fp8.calibrate;
    // Captured: after one uncaptured step (it builds the cuBLASLt/cuDNN plans and sizes the workspaces), not
    // while calibrating or recasting stale FP8 weights (different kernels), not when profiling or poisoning.
    const bool graph = s.options.cuda_graph && s.eager_steps > 0 && !poison_gradients && !s.timer.enabled() &&
                       !s.calibrating_step && !(s.use_fp8() && s.fp8_weights_stale);
    if (graph && s.step_graph && s.graph_cudnn_workspace != s.ctx->cudnn_workspace) {
        CHECK_CUDA(cudaGraphExecDestroy(s.step_graph));  // the attention workspace moved: capture again
        s.step_graph = nullptr;
    }
    if (graph && !s.step_graph) {
        cudaGraph_t captured = nullptr;
        // thread-local: the communicator's watchdog thread keeps making its own CUDA/NCCL calls meanwhile
        const auto t0 = std::chrono::steady_clock::now();
        CHECK_CUDA(cudaStreamBeginCapture(s.ctx->stream, cudaStreamCaptureModeThreadLocal));
        run_step(s, a, false);
        CHECK_CUDA(cudaStreamEndCapture(s.ctx->stream, &captured));
        CHECK_CUDA(cudaGraphInstantiate(&s.step_graph, captured, 0));
        size_t nodes = 0;
        CHECK_CUDA(cudaGraphGetNodes(captured, nullptr, &nodes));
        CHECK_CUDA(cudaGraphDestroy(captured));
        s.graph_cudnn_workspace = s.ctx->cudnn_workspace;
        printf("cuda graph: training step captured (%zu nodes, %.0f ms to capture and instantiate)\n", nodes,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (graph) {
        CHECK_CUDA(cudaGraphLaunch(s.step_graph, s.ctx->stream));
    } else {
        run_step(s, a, poison_gradients);
        s.eager_steps++;
    }
    s.step_in_flight = true;
}

StepOutcome GptModel::wait_step(Fp8Health* health) {
    Impl& s = *impl_;
    CHECK(s.step_in_flight, "wait_step: no step launched");
    s.step_in_flight = false;
    return finish_step(s, health);
}

// |x * scale| above this is clipped by more than the format's own rounding (half a step above the max: E4M3
// has 3 mantissa bits, E5M2 2), so a calibrated scale whose float rounding lands a hair above max is not
// counted as saturated.
static double fp8_clip_threshold(Fp8Dtype d) {
    return fp8_dtype_max(d) * (1.0 + (d == Fp8Dtype::E4M3 ? 1.0 / 16 : 1.0 / 8));
}

// From the snapshots the update took: saturated slots (amax * scale > fp8 max) and slots that kept their old
// scale (amax 0, inf or NaN); the scale range after the update.
static void fp8_health(GptModel::Impl& s, Fp8Health* h) {
    const int n = s.scales.num_slots;
    std::vector<float> amax(n), scale(n), after(n);
    CHECK_CUDA(cudaMemcpy(amax.data(), s.health_amax, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(scale.data(), s.health_scale, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(after.data(), s.scales.scale, n * sizeof(float), cudaMemcpyDeviceToHost));
    h->slots = n;
    h->saturated = h->fell_back = 0;
    for (int i = 0; i < n; i++) {
        if (!(std::isfinite(amax[i]) && amax[i] > 0))
            h->fell_back++;
        else if ((double)amax[i] * scale[i] > fp8_clip_threshold(s.scales.dtypes[i]))
            h->saturated++;
    }
    h->min_scale = *std::min_element(after.begin(), after.end());
    h->max_scale = *std::max_element(after.begin(), after.end());
}

static StepOutcome finish_step(GptModel::Impl& s, Fp8Health* health) {
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    const StepScalars r = *s.pinned_readback;
    StepOutcome out;
    out.loss = r.loss_sum / ((float)s.accum_steps * s.world);
    out.grad_norm = r.grad_norm;
    out.applied = r.apply != 0;
    if (s.use_fp8() && !out.applied && s.calibrating_step) {
        s.fp8.calibrate = true;      // the restored state is uncalibrated: calibrate again
        s.fp8_weights_stale = true;  // and cast the weights with calibration
    }
    if (s.use_fp8() && health && out.applied) fp8_health(s, health);
    return out;
}

float GptModel::evaluate(const int* inputs_BT, const int* targets_BT) {
    Impl& s = *impl_;
    CHECK(s.micro == 0 && !s.step_in_flight, "evaluate() inside a training step");
    stage_micro_batch(0, inputs_BT, targets_BT);
    forward_pass(s, 0, /*training=*/false, targets_BT != nullptr);
    float loss = 0;
    if (targets_BT)
        CHECK_CUDA(
            cudaMemcpyAsync(&loss, s.loss_scalar, sizeof(float), cudaMemcpyDeviceToHost, s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    return loss / s.world;
}

float GptModel::forward(const int* inputs_BT, const int* targets_BT) {
    Impl& s = *impl_;
    if (!targets_BT) return evaluate(inputs_BT, nullptr);
    CHECK(!s.step_in_flight, "forward() while a launched step runs");
    s.calibrating_step = s.micro == 0 ? s.use_fp8() && s.fp8.calibrate : s.calibrating_step;
    stage_micro_batch(s.micro, inputs_BT, targets_BT);
    forward_pass(s, s.micro, /*training=*/true, /*with_targets=*/true);
    float loss = 0;
    CHECK_CUDA(cudaMemcpyAsync(&loss, s.loss_scalar, sizeof(float), cudaMemcpyDeviceToHost, s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    return loss / s.world;
}

void GptModel::backward() { backward_pass(*impl_); }

float GptModel::update(const AdamWSettings& a, int step, Fp8Health* health) {
    Impl& s = *impl_;
    upload_adamw_scalars(s, a, step);
    update_pass(s, a.grad_clip, a.beta1, a.beta2, a.eps);
    const StepOutcome r = finish_step(s, health);
    return r.applied ? r.grad_norm : (std::isfinite(r.grad_norm) ? NAN : r.grad_norm);
}

// Puts the FP8 state back to its snapshot from the start of the step (amaxes of a bad step never reach the
// history; a step-0 calibration is undone) and recasts the weights with it on the next forward.
void GptModel::discard_step() {
    Impl& s = *impl_;
    if (s.use_fp8()) {
        CHECK_CUDA(cudaMemcpyAsync(s.scales.storage, s.step_start_scales,
                                   s.scales.storage_floats * sizeof(float), cudaMemcpyDeviceToDevice,
                                   s.ctx->stream));
        s.fp8_weights_stale = true;
    }
    s.have_targets = false;
    s.micro = 0;
    if (s.sharded()) s.compute_after_comm();  // no reduce-scatter still reading the gradients
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void GptModel::poison_gradients() {
    if (impl_->sharded()) impl_->compute_after_comm();  // after the reduce-scatter that reads them
    CHECK_CUDA(cudaMemsetAsync(impl_->grads, 0xFF, impl_->P * sizeof(bf16), impl_->ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(impl_->ctx->stream));
}
void GptModel::poison_activations() {
    impl_->act_arena.poison(impl_->ctx->stream);
    CHECK_CUDA(cudaStreamSynchronize(impl_->ctx->stream));
}
