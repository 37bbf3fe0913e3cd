// The FP8 LM head (llmc/model/linear_fp8.h, llmc/model/lm_head.h): an FP8 Linear over the tied embedding
// whose dY comes quantized from the loss kernel.
#include "llmc/kernels/cast/cast.cuh"
#include "llmc/kernels/classifier/classifier_fp8.cuh"
#include "llmc/model/linear_fp8.h"

Fp8LmHead::Fp8LmHead(Fp8Shared* shared, const LinearRuntime* rt, int index, int C, int V)
    : linear_(shared, rt, index, C, V, InputKeep::Saved) {}

// W and W^T always have their own bytes: the encoder reads the tied embedding's BF16 copy.
void Fp8LmHead::plan(Arena* params, Arena* activations, int N) {
    linear_.plan(params, activations, N, /*own_weight_bytes=*/true);
}
// Its master is the tied embedding's, updated by the plain AdamW: W and W^T are cast from the BF16 copy.
void Fp8LmHead::bind(const LinearParams& p) {
    LinearParams head = p;
    head.master_OI = nullptr;
    head.master_shard_OI = nullptr;
    linear_.bind(head, nullptr, nullptr, Fp8KeptDy{});
}

void Fp8LmHead::input_from_layernorm(bf16* residual_out, float* mean, float* rstd, const bf16* inp1,
                                     const bf16* inp2, const bf16* w, const bf16* b) {
    linear_.input_from_layernorm(residual_out, mean, rstd, inp1, inp2, w, b);
}
void Fp8LmHead::forward(bf16* logits) { linear_.forward(logits, nullptr); }
void Fp8LmHead::cast_weight() { linear_.cast_weight(); }
void Fp8LmHead::weights_gathered() { linear_.weights_gathered(); }

// Training: dlogits quantized by the classifier itself (calibrated first on step 0, like every producer),
// straight into dY's row-wise scratch.
void Fp8LmHead::loss(bf16* logits, float* losses, const int* targets, float dloss, bool training) {
    Fp8Linear& lin = linear_;
    if (!training)
        return lm_head_eval_loss(logits, losses, targets, dloss, lin.p_.N, lin.p_.out, lin.stream());
    lin.rt_->mark(kPhaseOther);
    lin.calibrate_if_needed(
        lin.dy_, [&] { fp8_fused_classifier_amax(logits, losses, targets, dloss, lin.dy_, lin.stream()); });
    fp8_fused_classifier(logits, losses, targets, dloss, lin.dy_, lin.stream());
    spent_logits_ = logits;
}

// dY is quantized already: its transpose goes over the logits it came from.
void Fp8LmHead::backward(bf16* dinp, bool accumulate) {
    CHECK(spent_logits_ != nullptr, "FP8 LM head: backward() without loss(training)");
    Fp8Linear& lin = linear_;
    CHECK(lin.dy_.rows == lin.p_.N && lin.dy_.cols == lin.p_.out && lin.w_.cols == lin.p_.in,
          "fp8 LM head backward: shape mismatch");
    Fp8Tensor dy = lin.dy_;
    dy.data_T = reinterpret_cast<__nv_fp8_storage_t*>(spent_logits_);
    lin.rt_->mark(kPhaseCast);
    fp8_transpose(dy, lin.stream());
    lin.dgrad_gemm(dy, dinp);
    lin.wgrad_gemm(dy, accumulate);
}
