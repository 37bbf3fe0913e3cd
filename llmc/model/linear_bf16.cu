// The BF16 Linear and its factory (llmc/model/linear.h): cuBLASLt BF16 GEMMs; the input is kept in BF16
// for the backward (a LayerNorm output per layer, the attention output as given, the MLP's GELU output
// recomputed: llmc/model/gelu_mlp_bf16.cu).
#include "llmc/fp8/recipe.h"
#include "llmc/gpu/context.h"
#include "llmc/kernels/gemm/matmul.cuh"
#include "llmc/kernels/layernorm/layernorm.cuh"
#include "llmc/model/gelu_mlp.h"
#include "llmc/model/layout.h"
#include "llmc/model/linear.h"
#include "llmc/model/lm_head.h"

void LinearRuntime::mark(Phase p) const { timer->mark(p, ctx->stream); }
cudaStream_t LinearRuntime::stream() const { return ctx->stream; }

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
    void input_from(const bf16* x) override { input_ = x; }
    void forward(bf16* out, const bf16* residual) override {
        rt_->mark(kPhaseGemm);
        matmul_forward(rt_->plans, rt_->ctx, out, input_, p_.weight_OI, p_.bias_O, p_.N, p_.in, p_.out,
                       stream(), residual);
    }

    void backward(bf16* dinp, const bf16* dout, bool accumulate) override {
        rt_->mark(kPhaseGemm);
        matmul_backward(rt_->plans, rt_->ctx, dinp, p_.dweight_OI, p_.dbias_O, dout, input_, p_.weight_OI,
                        p_.N, p_.in, p_.out, accumulate, rt_->reduce_scratch, stream());
    }

  private:
    cudaStream_t stream() const { return rt_->ctx->stream; }
    LinearParams p_;
    const LinearRuntime* rt_;
    bf16* buffer_;       // where the LayerNorm producer writes the input (null: given by input_from)
    const bf16* input_;  // what the forward read and the backward reads
};

class Bf16LinearFactory : public LinearFactory {
  public:
    Bf16LinearFactory(const LinearRuntime* rt, const Activations* act) : rt_(rt), act_(act) {}
    void plan(Arena*, Arena*, int) override {}
    std::unique_ptr<Linear> make_linear(int l, int kind, const LinearParams& p) override {
        return std::make_unique<Bf16Linear>(p, rt_, kind == kQkv ? act_->bf(Act::Ln1, l) : nullptr);
    }
    std::unique_ptr<GeluMlp> make_mlp(int l, const LinearParams& fc, const LinearParams& fc_proj) override {
        return make_bf16_gelu_mlp(std::make_unique<Bf16Linear>(fc, rt_, act_->bf(Act::Ln2, l)),
                                  std::make_unique<Bf16Linear>(fc_proj, rt_, nullptr), act_->bf(Act::GeluOut),
                                  (size_t)fc_proj.N * fc_proj.in, rt_);
    }
    std::unique_ptr<LmHead> make_lm_head(const LinearParams& p) override {
        return make_bf16_lm_head(p, rt_, act_->bf(Act::Lnf));
    }
    bool reads_bf16_block_inputs() const override { return true; }
    bool reads_bf16_lm_head_input() const override { return true; }

  private:
    const LinearRuntime* rt_;
    const Activations* act_;
};
}  // namespace

std::unique_ptr<Linear> make_bf16_linear(const LinearParams& p, const LinearRuntime* rt, bf16* input_buffer) {
    return std::make_unique<Bf16Linear>(p, rt, input_buffer);
}

std::unique_ptr<LinearFactory> make_bf16_linear_factory(const LinearRuntime* rt, const Activations* act,
                                                        std::unique_ptr<ScalingRecipe>* recipe) {
    *recipe = std::make_unique<NoScaling>();
    return std::make_unique<Bf16LinearFactory>(rt, act);
}
