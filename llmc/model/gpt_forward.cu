// GptModel's forward pass (llmc/model/gpt_impl.cuh): the same text in both precisions; each Linear's input
// is produced by the verb that says how (LayerNorm, GELU, or the attention output as given).
#include "llmc/gpu/step_guard.cuh"
#include "llmc/kernels/attention.h"
#include "llmc/kernels/classifier/classifier.cuh"
#include "llmc/kernels/encoder.cuh"
#include "llmc/model/gpt_impl.cuh"

// The recipe's state for this pass: a training step's first micro-step snapshots it (a skipped step returns
// to it); an evaluation pass works on it and end_eval puts it back.
static void begin_forward(GptModel::Impl& s, int k, bool training) {
    if (training) {
        if (k == 0) s.recipe->snapshot_step_start(s.ctx->stream);
    } else {
        s.recipe->begin_eval(s.ctx->stream);
    }
    s.cast_stale_weights();
}

// The transformer blocks: residual[l] -> residual[l+1]. Each residual add is fused either with the LayerNorm
// that follows it (the next block's ln1, or the final one feeding the LM head), which then reads the stream
// and the projection's output, or (--fuse-residual) with the projection GEMM, whose epilogue writes the new
// residual, so that the LayerNorm reads that one tensor.
static void blocks_forward(GptModel::Impl& s) {
    const int L = s.cfg.num_layers;
    const Activations& a = s.act;
    const bool fused = s.options.fuse_residual;
    bf16* scratch = fused ? nullptr : a.bf(Act::ScratchNC);  // the projections' outputs when not fused
    const LayerNormParams ln0 = s.layernorm_params(0);
    s.blocks[0].qkv->input_from_layernorm(nullptr, a.f32(Act::Ln1Mean, 0), a.f32(Act::Ln1Rstd, 0),
                                          a.bf(Act::Residual, 0), nullptr, ln0.ln1w, ln0.ln1b);
    for (int l = 0; l < L; l++) {
        const LayerNormParams ln = s.layernorm_params(l);
        GptModel::Impl::Block& block = s.blocks[l];
        block.qkv->forward(a.bf(Act::Qkv, l), nullptr);
        s.mark(kPhaseAttention);
        attention_forward(s.attention_graphs.get(), s.ctx, a.bf(Act::Atty, l), a.f32(Act::AttStats, l),
                          a.bf(Act::Qkv, l), s.B, s.T, s.cfg.num_heads, s.cfg.channels / s.cfg.num_heads,
                          s.ctx->stream);
        block.att_proj->input_from(a.bf(Act::Atty, l));
        bf16* residual_mid = a.bf(Act::ResidualMid, l);
        const bf16* residual_in = a.bf(Act::Residual, l);
        if (fused) {
            block.att_proj->forward(residual_mid, residual_in);
            block.mlp->fc().input_from_layernorm(nullptr, a.f32(Act::Ln2Mean, l), a.f32(Act::Ln2Rstd, l),
                                                 residual_mid, nullptr, ln.ln2w, ln.ln2b);
        } else {
            block.att_proj->forward(scratch, nullptr);
            block.mlp->fc().input_from_layernorm(residual_mid, a.f32(Act::Ln2Mean, l), a.f32(Act::Ln2Rstd, l),
                                                 residual_in, scratch, ln.ln2w, ln.ln2b);
        }
        bf16* residual_out = a.bf(Act::Residual, l + 1);
        block.mlp->forward(fused ? residual_out : scratch, a.bf(Act::FchPreGelu, l),
                           fused ? residual_mid : nullptr);
        // the next LayerNorm: of residual_out as written (fused), or of residual_mid + scratch, writing it
        bf16* ln_residual_out = fused ? nullptr : residual_out;
        const bf16* ln_inp1 = fused ? residual_out : residual_mid;
        if (l + 1 < L) {
            const LayerNormParams next = s.layernorm_params(l + 1);
            s.blocks[l + 1].qkv->input_from_layernorm(ln_residual_out, a.f32(Act::Ln1Mean, l + 1),
                                                      a.f32(Act::Ln1Rstd, l + 1), ln_inp1, scratch, next.ln1w,
                                                      next.ln1b);
        } else {
            s.lm_head->input_from_layernorm(ln_residual_out, a.f32(Act::LnfMean), a.f32(Act::LnfRstd),
                                            ln_inp1, scratch, s.params.param(kLnfw), s.params.param(kLnfb));
        }
    }
}

void forward_pass(GptModel::Impl& s, int k, bool training, bool with_targets) {
    const int N = s.B * s.T;
    cudaStream_t st = s.ctx->stream;
    const TokenSlot tokens = s.runtime.slot(k);
    begin_forward(s, k, training);
    s.mark(kPhaseOther);
    encoder_forward(s.act.bf(Act::Residual, 0), tokens.inputs, s.params.param(kWte), s.params.param(kWpe),
                    s.B, s.T, s.cfg.channels, st);
    blocks_forward(s);
    s.lm_head->forward(s.act.bf(Act::Logits));
    s.mark(kPhaseOther);
    if (!training) s.recipe->end_eval(st);
    s.have_targets = training;
    if (!with_targets) return;
    // d(loss)/d(logit) for the mean over every token of the update: all micro-steps of all ranks, whose
    // gradients are summed (accumulation, then the reduce-scatter).
    const float dloss = 1.0f / ((float)N * s.accum_steps * s.dp.world());
    float* loss = s.act.f32(Act::LossScalar);
    // the loss, and in training the LM head's dY
    s.lm_head->loss(s.act.bf(Act::Logits), s.act.f32(Act::Losses), tokens.targets, dloss, training);
    mean_loss(loss, s.act.f32(Act::Losses), N, st);
    if (s.dp.sharded()) s.dp.all_reduce(loss, 1, ncclSum);  // summed here, divided on the host
    if (training) step_loss_accumulate(&s.step_scalars()->loss_sum, loss, k == 0, st);
}
