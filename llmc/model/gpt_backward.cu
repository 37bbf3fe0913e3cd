// GptModel's backward pass (llmc/model/gpt_impl.cuh): the same text in both precisions. The last micro-step
// of a step reduce-scatters each layer's gradients as soon as they are final, while the layers below run.
#include "llmc/kernels/attention.h"
#include "llmc/kernels/encoder.cuh"
#include "llmc/kernels/layernorm/layernorm.cuh"
#include "llmc/model/gpt_impl.cuh"

// One block, from the gradient of its output (dres, the residual stream's) to that of its input (dres
// again: the LayerNorm backwards add into it).
static void block_backward(GptModel::Impl& s, int l, bf16* dres, bool accumulate) {
    const int B = s.B, T = s.T, C = s.cfg.channels, H = s.cfg.num_heads, N = B * T;
    const Activations& a = s.act;
    const ModelParams& p = s.params;
    cudaStream_t st = s.ctx->stream;
    bf16 *grad_NC = a.bf(Act::GradNC), *grad_NF = a.bf(Act::GradNF);
    float* scratch = a.f32(Act::ReduceScratch);
    const LayerNormParams ln = s.layernorm_params(l);
    // MLP: residual[l+1] = residual_mid[l] + mlp(ln2(residual_mid[l]))
    s.blocks[l].mlp->backward(grad_NC, dres, grad_NF, a.bf(Act::FchPreGelu, l), accumulate);
    s.mark(kPhaseOther);
    layernorm_backward(dres, p.slice(p.grads, kLn2w, l), p.slice(p.grads, kLn2b, l), scratch, grad_NC,
                       a.bf(Act::ResidualMid, l), ln.ln2w, a.f32(Act::Ln2Mean, l), a.f32(Act::Ln2Rstd, l), N,
                       C, st, accumulate);
    // Attention: residual_mid[l] = residual[l] + attproj(sdpa(qkv(ln1(residual[l]))))
    s.blocks[l].att_proj->backward(grad_NC, dres, accumulate);
    bf16* dqkv = grad_NF;  // [N, 3C] fits in the [N, F] scratch
    s.mark(kPhaseAttention);
    attention_backward(s.attention_graphs.get(), s.ctx, dqkv, grad_NC, a.bf(Act::Qkv, l), a.bf(Act::Atty, l),
                       a.f32(Act::AttStats, l), B, T, H, C / H, st);
    s.blocks[l].qkv->backward(grad_NC, dqkv, accumulate);
    s.mark(kPhaseOther);
    layernorm_backward(dres, p.slice(p.grads, kLn1w, l), p.slice(p.grads, kLn1b, l), scratch, grad_NC,
                       a.bf(Act::Residual, l), ln.ln1w, a.f32(Act::Ln1Mean, l), a.f32(Act::Ln1Rstd, l), N, C,
                       st, accumulate);
}

void backward_pass(GptModel::Impl& s) {
    CHECK(s.have_targets, "backward() needs a training forward() with targets first");
    CHECK(s.micro < s.accum_steps, "backward(): %d micro-steps already, update() expected", s.micro);
    const bool accumulate = s.micro > 0;  // later micro-steps add to the gradients
    const bool reduce = s.dp.sharded() && s.micro == s.accum_steps - 1;
    const int B = s.B, T = s.T, C = s.cfg.channels, L = s.cfg.num_layers, N = B * T;
    const Activations& a = s.act;
    const ModelParams& p = s.params;
    cudaStream_t st = s.ctx->stream;
    const TokenSlot tokens = s.runtime.slot(s.micro);
    bf16* dres = a.bf(Act::GradResidual);  // gradient of the residual stream at the current point
    s.mark(kPhaseOther);
    CHECK_CUDA(cudaMemsetAsync(dres, 0, (size_t)N * C * sizeof(bf16), st));

    // LM head (tied): dwte is overwritten here, the encoder backward adds the embedding part at the end.
    s.lm_head->backward(a.bf(Act::GradNC), accumulate);
    s.mark(kPhaseOther);
    layernorm_backward(dres, p.grad(kLnfw), p.grad(kLnfb), a.f32(Act::ReduceScratch), a.bf(Act::GradNC),
                       a.bf(Act::Residual, L), p.param(kLnfw), a.f32(Act::LnfMean), a.f32(Act::LnfRstd), N, C,
                       st, accumulate);
    for (int l = L - 1; l >= 0; l--) {
        block_backward(s, l, dres, accumulate);
        if (reduce) s.dp.reduce_scatter_grads(l);  // layer l's gradients are final: reduce while l-1 runs
    }
    encoder_backward(p.grad(kWte), p.grad(kWpe), dres, tokens.bucket_offsets, tokens.bucket_positions,
                     tokens.bucket_tokens, tokens.num_buckets, N, B, T, C, st, accumulate);
    // Rows of dwpe beyond T are not touched by this batch: their gradient is zero.
    if (T < s.cfg.max_seq_len && !accumulate)
        CHECK_CUDA(cudaMemsetAsync(p.grad(kWpe) + (size_t)T * C, 0,
                                   (size_t)(s.cfg.max_seq_len - T) * C * sizeof(bf16), st));
    if (reduce) s.dp.reduce_scatter_grads(-1);  // wte, wpe, lnf
    s.micro++;
    s.have_targets = false;
}
