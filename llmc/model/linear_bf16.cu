// The BF16 Linear (llmc/model/linear.h): cuBLASLt BF16 GEMMs; the input is kept in BF16 for the backward
// (a LayerNorm output per layer, the attention output as given, the GELU output recomputed).
#include "llmc/gpu/context.h"
#include "llmc/kernels/classifier.cuh"
#include "llmc/kernels/gelu.cuh"
#include "llmc/kernels/layernorm.cuh"
#include "llmc/kernels/matmul.cuh"
#include "llmc/model/linear.h"

void LinearRuntime::mark(Phase p) const { timer->mark(p, ctx->stream); }

namespace {
class Bf16Linear : public Linear {
  public:
    Bf16Linear(const LinearParams& p, const LinearRuntime* rt, bf16* input_buffer)
        : p_(p), rt_(rt), buffer_(input_buffer), input_(input_buffer) {}

    void input_from_layernorm(bf16* residual_out, float* mean, float* rstd, const bf16* inp1,
                              const bf16* inp2, const bf16* w, const bf16* b) override {
        rt_->mark(kPhaseOther);
        input_ = buffer_;
        if (inp2)
            residual_layernorm_forward(residual_out, buffer_, mean, rstd, inp1, inp2, w, b, p_.N, p_.in,
                                       stream());
        else
            layernorm_forward(buffer_, mean, rstd, inp1, w, b, p_.N, p_.in, stream());
    }
    void input_from_gelu(const bf16* pre) override {
        rt_->mark(kPhaseOther);
        input_ = buffer_;
        gelu_forward(buffer_, pre, (size_t)p_.N * p_.in, rt_->gelu_tanh, stream());
    }
    void input_from(const bf16* x) override { input_ = x; }
    void forward(bf16* out) override {
        rt_->mark(kPhaseGemm);
        matmul_forward(rt_->plans, rt_->ctx, out, input_, p_.weight_OI, p_.bias_O, p_.N, p_.in, p_.out,
                       stream());
    }

    // dlogits in BF16, in place over the logits.
    void loss_and_dlogits(bf16* logits, float* losses, const int* targets, float dloss) override {
        fused_classifier(logits, losses, targets, dloss, p_.N, p_.out, /*write_dlogits=*/true, stream());
    }
    // The GELU output is not stored per layer: recomputed into the shared buffer.
    void restore_input_from_gelu(const bf16* pre) override { input_from_gelu(pre); }
    void backward(bf16* dinp, const bf16* dout, bool accumulate) override {
        rt_->mark(kPhaseGemm);
        matmul_backward(rt_->plans, rt_->ctx, dinp, p_.dweight_OI, p_.dbias_O, dout, input_, p_.weight_OI,
                        p_.N, p_.in, p_.out, accumulate, rt_->reduce_scratch, stream());
    }
    void backward_through_gelu(bf16* dinp, bf16* dout, const bf16* pre, bool accumulate,
                               const Fp8Tensor* next_input) override {
        CHECK(next_input == nullptr, "BF16 Linear: no FP8 input to rebuild");
        rt_->mark(kPhaseOther);
        gelu_backward_inplace(dout, pre, (size_t)p_.N * p_.out, rt_->gelu_tanh, stream());
        backward(dinp, dout, accumulate);
    }

  private:
    cudaStream_t stream() const { return rt_->ctx->stream; }
    LinearParams p_;
    const LinearRuntime* rt_;
    bf16* buffer_;       // where a LayerNorm or GELU producer writes the input (null: given by input_from)
    const bf16* input_;  // what the forward read and the backward reads
};
}  // namespace

std::unique_ptr<Linear> make_bf16_linear(const LinearParams& p, const LinearRuntime* rt, bf16* input_buffer) {
    return std::make_unique<Bf16Linear>(p, rt, input_buffer);
}
