// GptModel's parts, shared by its translation units (gpt.cu: building the model; gpt_forward.cu and
// gpt_backward.cu: the passes; gpt_update.cu: the optimizer step; gpt_launch.cu: the step as one CUDA graph;
// gpt_state.cu: weights and state in and out) and by the tests' one-call-at-a-time API. Not part of the
// API. Each part has one job: the parameters and optimizer state, the activations, the scaling recipe,
// the step runtime, the collectives, and the Linear layers whose precision was chosen when the model was
// built.
#pragma once
#include <memory>
#include <vector>

#include "llmc/fp8/recipe.h"
#include "llmc/gpu/arena.h"
#include "llmc/gpu/context.h"
#include "llmc/gpu/phase_timer.h"
#include "llmc/kernels/attention.h"
#include "llmc/kernels/gemm/matmul.cuh"
#include "llmc/model/activations.h"
#include "llmc/model/data_parallel.h"
#include "llmc/model/gelu_mlp.h"
#include "llmc/model/gpt.h"
#include "llmc/model/linear.h"
#include "llmc/model/lm_head.h"
#include "llmc/model/params.h"
#include "llmc/model/step_runtime.h"

// The per-layer slice of each LayerNorm parameter (the Linears hold their own weights).
struct LayerNormParams {
    const bf16 *ln1w, *ln1b, *ln2w, *ln2b;
};

// The one seam the tests have inside a training step (test/gpt_testing.cu sets it around a launch; the
// trainer never does). A step with hooks runs uncaptured.
struct StepTestHooks {
    virtual ~StepTestHooks() = default;
    // After the last micro-step's reduce-scatter (the compute stream already waits for it), before the update
    // reads the gradients: e.g. poison them.
    virtual void before_update(GptModel::Impl& s) const = 0;
};

struct GptModel::Impl {
    Impl(const ModelConfig& m, int B, int T, GpuContext* ctx, const DataParallel& dp,
         const StepOptions& options);

    ModelConfig cfg;
    int B, T;
    GpuContext* ctx;
    StepOptions options;
    int accum_steps;
    PhaseTimer timer;
    MatmulPlanCache matmul_plans;
    std::unique_ptr<AttentionGraphs> attention_graphs;

    ModelParams params;
    DataParallelComm dp;
    Arena param_arena, act_arena;
    Activations act;
    std::unique_ptr<ScalingRecipe> recipe;
    StepRuntime runtime;

    // The layers built once in the model's precision, by the factory that keeps what they share.
    LinearRuntime linear_runtime;
    std::unique_ptr<LinearFactory> linear_factory;
    struct Block {
        std::unique_ptr<Linear> qkv, att_proj;
        std::unique_ptr<GeluMlp> mlp;  // fc, GELU, fc-proj
    };
    std::vector<Block> blocks;
    std::unique_ptr<LmHead> lm_head;

    int micro = 0;  // backward passes since the last update
    bool have_targets = false;
    size_t peak_bytes = 0;
    const StepTestHooks* test_hooks = nullptr;  // null but in tests

    // Block l's Linear of LinearKind `kind`; fn(linear) for every block Linear in slot order (the LM head,
    // a unit of its own, comes after them).
    Linear& linear(int l, int kind) {
        Block& b = blocks[l];
        return kind == kQkv       ? *b.qkv
               : kind == kAttProj ? *b.att_proj
               : kind == kFc      ? b.mlp->fc()
                                  : b.mlp->fc_proj();
    }
    template <class Fn>
    void for_each_linear(Fn fn) {
        for (int l = 0; l < cfg.num_layers; l++)
            for (int kind = 0; kind < kLinearsPerLayer; kind++) fn(linear(l, kind));
    }
    LayerNormParams layernorm_params(int l) const {
        return {params.slice(params.params, kLn1w, l), params.slice(params.params, kLn1b, l),
                params.slice(params.params, kLn2w, l), params.slice(params.params, kLn2b, l)};
    }
    void mark(Phase p) { timer.mark(p, ctx->stream); }
    StepScalars* step_scalars() const { return act.at<StepScalars>(Act::StepScalars); }
    AdamWStepScalars* adamw_scalars() const { return act.at<AdamWStepScalars>(Act::AdamwScalars); }

    // FP8 weight copies from the current weights, when the recipe says they are stale.
    void cast_stale_weights();
    // After new weights: on several GPUs the weight amaxes staged by each rank made the ranks' maximum, and
    // every rank's new weights to every rank (DataParallelComm::gather_weights): the BF16 ones but those of
    // the tensors skip(k) names, and the rows of W the FP8 Linears quantized themselves; then (any number of
    // GPUs) each block Linear's copies made from the gathered weights (Linear::weights_gathered).
    void gather_weights(const std::function<bool(int k)>& skip);
    // BF16 working weights from this rank's master shard, then gathered from all ranks.
    void publish_weights();
};

// The passes (each queues its work on the compute stream without waiting for the host).
// Forward of micro-step k (tokens in slot k). training: records the FP8 amaxes into the training state and
// adds the loss to the step's; otherwise an evaluation pass (the recipe puts its state back afterwards).
// with_targets: the loss into LossScalar and dlogits for the backward.
void forward_pass(GptModel::Impl& s, int k, bool training, bool with_targets);
// Backward of the current micro-step; the last one also reduce-scatters the gradients layer by layer.
void backward_pass(GptModel::Impl& s);
// After all micro-steps: norm, verdict, scale update, AdamW, all-gather, step scalars to pinned memory.
void update_pass(GptModel::Impl& s, float grad_clip, float beta1, float beta2, float eps);
// The learning rate and bias corrections of step t to device memory.
void upload_adamw_scalars(GptModel::Impl& s, const AdamWSettings& a, int t);
// Host state once the step's verdict is known; synchronizes.
StepOutcome finish_step(GptModel::Impl& s, Fp8Health* health);
