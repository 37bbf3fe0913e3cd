// The BF16 LM head (llmc/model/lm_head.h): a BF16 Linear reading the final LayerNorm's output from the
// model's lnf tensor, and the fused classifier writing dlogits in BF16 over the logits, which the Linear's
// backward then reads as its dY.
#include "llmc/kernels/classifier/classifier.cuh"
#include "llmc/model/linear.h"
#include "llmc/model/lm_head.h"

void lm_head_eval_loss(bf16* logits, float* losses, const int* targets, float dloss, int N, int V,
                       cudaStream_t stream) {
    fused_classifier(logits, losses, targets, dloss, N, V, /*write_dlogits=*/false, stream);
}

namespace {
class Bf16LmHead : public LmHead {
  public:
    Bf16LmHead(const LinearParams& p, const LinearRuntime* rt, bf16* lnf_NC)
        : linear_(make_bf16_linear(p, rt, lnf_NC)), rt_(rt), N_(p.N), V_(p.out) {}

    void input_from_layernorm(bf16* residual_out, float* mean, float* rstd, const bf16* inp1,
                              const bf16* inp2, const bf16* w, const bf16* b) override {
        linear_->input_from_layernorm(residual_out, mean, rstd, inp1, inp2, w, b);
    }
    void forward(bf16* logits) override { linear_->forward(logits, nullptr); }
    void loss(bf16* logits, float* losses, const int* targets, float dloss, bool training) override {
        if (!training) return lm_head_eval_loss(logits, losses, targets, dloss, N_, V_, rt_->stream());
        fused_classifier(logits, losses, targets, dloss, N_, V_, /*write_dlogits=*/true, rt_->stream());
        dlogits_ = logits;
    }
    void backward(bf16* dinp, bool accumulate) override {
        CHECK(dlogits_ != nullptr, "BF16 LM head: backward() without loss(training)");
        linear_->backward(dinp, dlogits_, accumulate);
    }

  private:
    std::unique_ptr<Linear> linear_;
    const LinearRuntime* rt_;
    int N_, V_;
    const bf16* dlogits_ = nullptr;  // the logits, overwritten by their gradient
};
}  // namespace

std::unique_ptr<LmHead> make_bf16_lm_head(const LinearParams& p, const LinearRuntime* rt, bf16* lnf_NC) {
    return std::make_unique<Bf16LmHead>(p, rt, lnf_NC);
}
