// The FP8 block MLP (llmc/model/gelu_mlp.h, llmc/model/linear_fp8.h): the GELU is fused into the cast that
// quantizes the fc-proj's input, and its backward into the cast of the fc's dY, which also rebuilds the
// fc-proj's X^T where it keeps InputKeep::FromGelu.
#include "llmc/model/gelu_mlp.h"
#include "llmc/model/linear_fp8.h"

// Named (not in an anonymous namespace): the FP8 Linear's MLP verbs are private to it and this unit.
class Fp8GeluMlp : public GeluMlp {
  public:
    Fp8GeluMlp(std::unique_ptr<Fp8Linear> fc, std::unique_ptr<Fp8Linear> fc_proj)
        : fc_(std::move(fc)), fc_proj_(std::move(fc_proj)) {}

    Linear& fc() override { return *fc_; }
    Linear& fc_proj() override { return *fc_proj_; }

    void forward(bf16* out, bf16* pre_gelu, const bf16* residual) override {
        fc_->forward(pre_gelu, nullptr);
        fc_proj_->input_from_gelu(pre_gelu);
        fc_proj_->forward(out, residual);
    }
    void backward(bf16* dinp, const bf16* dout, bf16* dpre_gelu, const bf16* pre_gelu,
                  bool accumulate) override {
        if (fc_proj_->keep() != InputKeep::FromGelu) {
            fc_proj_->backward(dpre_gelu, dout, accumulate);
            fc_->backward_through_gelu(dinp, dpre_gelu, pre_gelu, accumulate, nullptr);
            return;
        }
        // The fc-proj's wgrad waits, its dY^T kept aside, for the X^T the fc's dGELU cast writes (it reads
        // the pre-GELU tensor anyway): the forward's X^T again, from the same pre-GELU input with the same
        // scale (scales change only in the update), so bitwise the same bytes; the amax it records is the
        // one already staged (a max).
        fc_proj_->backward_dgrad(dpre_gelu, dout, accumulate);
        fc_->backward_through_gelu(dinp, dpre_gelu, pre_gelu, accumulate, &fc_proj_->input());
        fc_proj_->backward_wgrad(accumulate);
    }

  private:
    std::unique_ptr<Fp8Linear> fc_, fc_proj_;
};

std::unique_ptr<GeluMlp> make_fp8_gelu_mlp(std::unique_ptr<Fp8Linear> fc,
                                           std::unique_ptr<Fp8Linear> fc_proj) {
    return std::make_unique<Fp8GeluMlp>(std::move(fc), std::move(fc_proj));
}
