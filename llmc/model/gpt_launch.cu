// GptModel's training step as the driver runs it (llmc/model/gpt.h): stage the micro-batches, launch the step
// (replayed as one captured CUDA graph after the first), wait for it. Everything below a launch is queued
// without waiting for the host: tokens come from device slots staged before, the loss and gradient norm stay
// on the device, the verdict (apply or skip) is a device flag that AdamW and the recipe read, and the results
// reach the host in one copy at the end.
#include <chrono>

#include "llmc/kernels/encoder.cuh"
#include "llmc/model/gpt_impl.cuh"

void GptModel::stage_micro_batch(int k, const int* inputs_BT, const int* targets_BT) {
    Impl& s = *impl_;
    const int N = s.B * s.T, V = s.cfg.vocab_size;
    for (int i = 0; i < N; i++)
        CHECK(inputs_BT[i] >= 0 && inputs_BT[i] < V &&
                  (!targets_BT || (targets_BT[i] >= 0 && targets_BT[i] < V)),
              "token id out of range [0, %d) at position %d", V, i);
    const TokenSlot h = s.runtime.pinned_slot(k);
    memcpy(h.inputs, inputs_BT, N * sizeof(int));
    if (targets_BT) memcpy(h.targets, targets_BT, N * sizeof(int));
    // Token buckets for the deterministic embedding backward (sorted on the host, while the GPU works).
    TokenBuckets buckets;
    build_token_buckets(&buckets, inputs_BT, N);
    memcpy(h.bucket_offsets, buckets.offsets.data(), buckets.offsets.size() * sizeof(int));
    memcpy(h.bucket_positions, buckets.positions.data(), N * sizeof(int));
    memcpy(h.bucket_tokens, buckets.tokens.data(), buckets.tokens.size() * sizeof(int));
    *h.num_buckets = (int)buckets.tokens.size();
    s.runtime.upload(k, s.ctx->stream);
}

// Every micro-step's forward and backward, then the update. Test hooks (uncaptured steps only) see the
// gradients after the reduce-scatter that reads them.
static void run_step(GptModel::Impl& s, const AdamWSettings& a) {
    for (int k = 0; k < s.accum_steps; k++) {
        forward_pass(s, k, /*training=*/true, /*with_targets=*/true);
        backward_pass(s);
    }
    if (s.test_hooks) {
        if (s.dp.sharded()) s.dp.compute_after_comm();
        s.test_hooks->before_update(s);
    }
    update_pass(s, a.grad_clip, a.beta1, a.beta2, a.eps);
}

// Captures one step into `into` (thread-local: the communicator's watchdog thread keeps making its own
// CUDA/NCCL calls meanwhile). With the phase timer on, its marks become event nodes of the graph: they are
// recorded at every replay, not now.
static void capture_step(GptModel::Impl& s, const AdamWSettings& a, CapturedStep* into) {
    cudaGraph_t captured = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_CUDA(cudaStreamBeginCapture(s.ctx->stream, cudaStreamCaptureModeThreadLocal));
    run_step(s, a);
    CHECK_CUDA(cudaStreamEndCapture(s.ctx->stream, &captured));
    CHECK_CUDA(cudaGraphInstantiate(&into->exec, captured, 0));
    size_t nodes = 0;
    CHECK_CUDA(cudaGraphGetNodes(captured, nullptr, &nodes));
    CHECK_CUDA(cudaGraphDestroy(captured));
    into->cudnn_workspace = s.ctx->cudnn_workspace;
    into->phase_marks = s.timer.marks();
    s.timer.discard_marks();
    printf("cuda graph: training step captured%s (%zu nodes, %.0f ms to capture and instantiate)\n",
           s.timer.enabled() ? " with its phase marks" : "", nodes,
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

void GptModel::launch_step(const AdamWSettings& a, int t) {
    Impl& s = *impl_;
    StepRuntime& r = s.runtime;
    CHECK(!r.in_flight, "launch_step: the previous step was not waited for (wait_step)");
    CHECK(s.micro == 0, "launch_step after %d forward/backward calls", s.micro);
    upload_adamw_scalars(s, a, t);
    s.recipe->begin_step();
    // Captured: after one uncaptured step (it builds the cuBLASLt/cuDNN plans and sizes the workspaces; when
    // profiling, one more that creates the timer's events), not while the recipe runs other kernels
    // (calibration, stale weights), not in tests. Profiling replays its own capture, so --profile times the
    // step the training loop replays.
    const bool profiling = s.timer.enabled();
    const bool graph = s.options.cuda_graph && r.eager_steps > 0 && !s.test_hooks &&
                       s.recipe->step_capturable() && (!profiling || r.profiled_eager_steps > 0);
    CapturedStep& captured = profiling ? r.profiled_graph : r.graph;
    if (graph && captured.exec && captured.cudnn_workspace != s.ctx->cudnn_workspace) {
        CHECK_CUDA(cudaGraphExecDestroy(captured.exec));  // the attention workspace moved: capture again
        captured.exec = nullptr;
    }
    if (graph && !captured.exec) capture_step(s, a, &captured);
    if (graph) {
        CHECK_CUDA(cudaGraphLaunch(captured.exec, s.ctx->stream));
        if (profiling) s.timer.replayed(captured.phase_marks);
    } else {
        run_step(s, a);
        r.eager_steps++;
        if (profiling) r.profiled_eager_steps++;
    }
    r.last_step_replayed = graph;
    r.in_flight = true;
}

StepOutcome GptModel::wait_step(Fp8Health* health) {
    Impl& s = *impl_;
    CHECK(s.runtime.in_flight, "wait_step: no step launched");
    s.runtime.in_flight = false;
    return finish_step(s, health);
}

StepOutcome finish_step(GptModel::Impl& s, Fp8Health* health) {
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    const StepScalars r = *s.runtime.readback;
    StepOutcome out;
    out.loss = r.loss_sum / ((float)s.accum_steps * s.dp.world());
    out.grad_norm = r.grad_norm;
    out.applied = r.apply != 0;
    s.recipe->end_step(out.applied);
    if (health && out.applied) s.recipe->health(health);
    return out;
}

float GptModel::evaluate(const int* inputs_BT, const int* targets_BT) {
    Impl& s = *impl_;
    CHECK(s.micro == 0 && !s.runtime.in_flight, "evaluate() inside a training step");
    stage_micro_batch(0, inputs_BT, targets_BT);
    forward_pass(s, 0, /*training=*/false, targets_BT != nullptr);
    float loss = 0;
    if (targets_BT)
        CHECK_CUDA(cudaMemcpyAsync(&loss, s.act.f32(Act::LossScalar), sizeof(float), cudaMemcpyDeviceToHost,
                                   s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    return loss / s.dp.world();
}

std::vector<float> GptModel::evaluate_token_losses(const int* inputs_BT, const int* targets_BT) {
    CHECK(targets_BT, "evaluate_token_losses() needs targets");
    evaluate(inputs_BT, targets_BT);  // its forward wrote the per-position losses (Act::Losses)
    const Impl& s = *impl_;
    std::vector<float> losses((size_t)s.B * s.T);
    CHECK_CUDA(cudaMemcpyAsync(losses.data(), s.act.f32(Act::Losses), losses.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    return losses;
}
