// The BF16 block MLP (llmc/model/gelu_mlp.h): the GELU and its backward as separate kernels between the
// Linears' GEMMs.
#include "llmc/kernels/gelu/gelu.cuh"
#include "llmc/model/gelu_mlp.h"

namespace {
class Bf16GeluMlp : public GeluMlp {
  public:
    Bf16GeluMlp(std::unique_ptr<Linear> fc, std::unique_ptr<Linear> fc_proj, bf16* gelu_out, size_t NF,
                const LinearRuntime* rt)
        : fc_(std::move(fc)), fc_proj_(std::move(fc_proj)), gelu_out_(gelu_out), NF_(NF), rt_(rt) {}

    Linear& fc() override { return *fc_; }
    Linear& fc_proj() override { return *fc_proj_; }

    void forward(bf16* out, bf16* pre_gelu, const bf16* residual) override {
        fc_->forward(pre_gelu, nullptr);
        gelu(pre_gelu);
        fc_proj_->input_from(gelu_out_);
        fc_proj_->forward(out, residual);
    }
    void backward(bf16* dinp, const bf16* dout, bf16* dpre_gelu, const bf16* pre_gelu,
                  bool accumulate) override {
        gelu(pre_gelu);  // the fc-proj's input again (the layers share the buffer)
        fc_proj_->backward(dpre_gelu, dout, accumulate);
        rt_->mark(kPhaseOther);
        gelu_backward_inplace(dpre_gelu, pre_gelu, NF_, rt_->gelu_tanh, rt_->stream());
        fc_->backward(dinp, dpre_gelu, accumulate);
    }

  private:
    void gelu(const bf16* pre_gelu) {
        rt_->mark(kPhaseOther);
        gelu_forward(gelu_out_, pre_gelu, NF_, rt_->gelu_tanh, rt_->stream());
    }
    std::unique_ptr<Linear> fc_, fc_proj_;
    bf16* gelu_out_;
    size_t NF_;
    const LinearRuntime* rt_;
};
}  // namespace

std::unique_ptr<GeluMlp> make_bf16_gelu_mlp(std::unique_ptr<Linear> fc, std::unique_ptr<Linear> fc_proj,
                                            bf16* gelu_out_NF, size_t NF, const LinearRuntime* rt) {
    return std::make_unique<Bf16GeluMlp>(std::move(fc), std::move(fc_proj), gelu_out_NF, NF, rt);
}
