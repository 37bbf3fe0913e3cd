// The LM head as one unit: the final LayerNorm as its input producer, logits_NV = lnf_NC wte_VC^T (the
// Linear over the tied token embedding, no bias), the softmax cross-entropy over the logits, and the
// backward from the loss to the LayerNorm's output. Built by the model's LinearFactory (llmc/model/linear.h):
// BF16 (llmc/model/lm_head_bf16.cu: dlogits in BF16 over the logits), or FP8 with --fp8-lm-head
// (llmc/model/lm_head_fp8.cu: the recipe's last slots; dY quantized by the loss kernel itself). The
// embedding's AdamW is the plain one (the encoder reads its BF16 copy): the head only casts what it reads.
#pragma once
#include "llmc/gpu/cuda_common.cuh"

class LmHead {
  public:
    virtual ~LmHead() = default;
    // lnf = LayerNorm(inp1_NC + inp2_NC) with residual_out_NC = the sum (the last block's residual add).
    virtual void input_from_layernorm(bf16* residual_out_NC, float* mean_N, float* rstd_N,
                                      const bf16* inp1_NC, const bf16* inp2_NC, const bf16* ln_weight_C,
                                      const bf16* ln_bias_C) = 0;
    virtual void forward(bf16* logits_NV) = 0;
    // losses_N[n] = the row's cross-entropy. training: also the gradient (softmax - onehot) * dloss, kept for
    // backward() in the form it reads (BF16 in place over the logits, or FP8 quantized with dY's scale);
    // otherwise the logits are left as they are.
    virtual void loss(bf16* logits_NV, float* losses_N, const int* targets_N, float dloss, bool training) = 0;
    // After loss(training): dinp_NC = dY W, dW (+)= dY^T lnf (accumulate: += for gradient accumulation).
    virtual void backward(bf16* dinp_NC, bool accumulate) = 0;
    // The FP8 head's W and W^T from the tied embedding's BF16 weight: when it changed, and after the new
    // weights were gathered from all ranks.
    virtual void cast_weight() {}
    virtual void weights_gathered() {}
};

// The loss without dlogits (evaluation), the same in both precisions: the BF16 classifier over the logits.
void lm_head_eval_loss(bf16* logits_NV, float* losses_N, const int* targets_N, float dloss, int N, int V,
                       cudaStream_t stream);
