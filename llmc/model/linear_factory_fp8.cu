// The FP8 model's Linears (llmc/model/linear_fp8.h): the recipe, the scratch the Linears share, the X^T
// buffers shared by the layers whose input is rebuilt in backward, and where each Linear's W and W^T live.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "llmc/kernels/cast/cast.cuh"
#include "llmc/model/gelu_mlp.h"
#include "llmc/model/linear_fp8.h"

// One GPU: nothing reads the BF16 copy of a block Linear's weight (its GEMMs read the FP8 W and W^T, cast
// from the FP32 master, which AdamW writes fused), and that copy is exactly as large as W plus W^T (2 x 1
// byte per weight): the FP8 weights live in its bytes instead of in bytes of their own (1.4 GB x 2 at
// GPT-1.5B). publish_weights() writes BF16 there and marks the weights stale: they are cast again before
// the next forward.
static __nv_fp8_storage_t* fp8_weights_in_bf16_copy(bf16* weight_OI) {
    static_assert(2 * sizeof(__nv_fp8_storage_t) == sizeof(bf16), "W and W^T fill the BF16 copy exactly");
    return reinterpret_cast<__nv_fp8_storage_t*>(weight_OI);
}

namespace {
class Fp8LinearFactory : public LinearFactory {
  public:
    Fp8LinearFactory(const LinearLayout& layout, const Fp8Config& fp8, DelayedScaling& recipe,
                     const LinearRuntime* rt, const Activations* act)
        : layout_(layout), fp8_(fp8), shared_(recipe), rt_(rt), act_(act) {
        const ModelConfig& m = layout.model;
        for (int l = 0; l < m.num_layers; l++)
            for (int kind = 0; kind < kLinearsPerLayer; kind++) {
                const LinearSpec& spec = linear_spec(kind);
                block_.push_back(std::make_unique<Fp8Linear>(
                    &shared_, rt, kLinearsPerLayer * l + kind, (int)dim_size(spec.in, m),
                    (int)dim_size(spec.out, m), layout.input_keep(kind)));
            }
        if (fp8.lm_head)  // the recipe's last slots
            lm_head_ = std::make_unique<Fp8LmHead>(&shared_, rt, m.num_layers * kLinearsPerLayer, m.channels,
                                                   m.vocab_size);
    }

    void plan(Arena* params, Arena* acts, int N) override {
        const size_t C = layout_.model.channels, F = 4 * C, V = layout_.model.vocab_size;
        acts->add("fp8 scratch", &shared_.x_rows, N * F);
        acts->add("fp8 scratch", &shared_.dy_rows, N * std::max(F, lm_head_ ? V : 0));
        acts->add("fp8 scratch", &shared_.dyT, N * F);
        acts->add("fp8 scratch", &shared_.dy_scale_inv, 1);
        acts->add("fp8 scratch", &shared_.dbias_scratch, fp8_dbias_scratch_bytes(N, (int)F));
        if (layout_.att_proj_input == InputKeep::FromInput)
            acts->add("fp8 attn-proj X^T (recomputed)", &xT_from_input_, N * C);
        if (layout_.fc_proj_input == InputKeep::FromGelu) {
            acts->add("fp8 fc-proj X^T (recomputed)", &xT_from_gelu_, N * F);
            acts->add("fp8 fc-proj dY^T (kept)", &kept_dy_.data_T_ON, N * C);
            acts->add("fp8 fc-proj dY^T (kept)", &kept_dy_.scale_inv, 1);
        }
        if (lm_head_) lm_head_->plan(params, acts, N);
        for (auto& lin : block_) lin->plan(params, acts, N, /*own_weight_bytes=*/layout_.sharded);
    }

    std::unique_ptr<Linear> make_linear(int l, int kind, const LinearParams& p) override {
        return bound_block(l, kind, p);
    }
    std::unique_ptr<GeluMlp> make_mlp(int l, const LinearParams& fc, const LinearParams& fc_proj) override {
        return make_fp8_gelu_mlp(bound_block(l, kFc, fc), bound_block(l, kFcProj, fc_proj));
    }
    std::unique_ptr<LmHead> make_lm_head(const LinearParams& p) override {
        if (!fp8_.lm_head) return make_bf16_lm_head(p, rt_, act_->bf(Act::Lnf));
        CHECK(lm_head_ != nullptr, "FP8 LM head made twice");
        lm_head_->bind(p);
        return std::move(lm_head_);
    }
    bool reads_bf16_block_inputs() const override { return false; }
    bool reads_bf16_lm_head_input() const override { return !fp8_.lm_head; }
    std::string summary() const override {
        const int linears = layout_.model.num_layers * kLinearsPerLayer + (fp8_.lm_head ? 1 : 0);
        char line[256];
        snprintf(line, sizeof line,
                 "fp8: %d scaled tensors (X, W, dY of %d Linears%s), %s, history %d, amax %s, margin %d, "
                 "forward accumulation %s",
                 linears * kFp8RolesPerLinear, linears, fp8_.lm_head ? " with the LM head" : "",
                 to_string(fp8_.format), fp8_.history_len, to_string(fp8_.amax_algo), fp8_.margin,
                 fp8_.fast_accum ? "fast" : "fp32");
        return line;
    }

  private:
    std::unique_ptr<Fp8Linear> bound_block(int l, int kind, const LinearParams& p) {
        std::unique_ptr<Fp8Linear>& lin = block_[(size_t)kLinearsPerLayer * l + kind];
        CHECK(lin != nullptr, "FP8 Linear %d of layer %d made twice", kind, l);
        const InputKeep keep = layout_.input_keep(kind);
        CHECK(!layout_.sharded || p.master_shard_OI != nullptr,
              "fp8 on several GPUs: each rank quantizes whole rows of the Linear weights, so the number of "
              "GPUs must divide %d (the rows of a [%d, %d] weight)",
              p.out, p.out, p.in);
        lin->bind(p, layout_.sharded ? nullptr : fp8_weights_in_bf16_copy(p.weight_OI),
                  keep == InputKeep::FromInput  ? xT_from_input_
                  : keep == InputKeep::FromGelu ? xT_from_gelu_
                                                : nullptr,
                  keep == InputKeep::FromGelu ? kept_dy_ : Fp8KeptDy{});
        return std::move(lin);
    }

    LinearLayout layout_;
    Fp8Config fp8_;
    Fp8Shared shared_;
    const LinearRuntime* rt_;
    const Activations* act_;
    std::vector<std::unique_ptr<Fp8Linear>> block_;  // index 4 x layer + kind, until made
    std::unique_ptr<Fp8LmHead> lm_head_;
    // One buffer each, shared by the layers (one layer's backward at a time): the X^T rebuilt in backward
    // from the attention output (attn-proj) or by the fc's dGELU cast (fc-proj), and the fc-proj's dY^T
    // waiting for the latter.
    __nv_fp8_storage_t *xT_from_input_ = nullptr, *xT_from_gelu_ = nullptr;
    Fp8KeptDy kept_dy_;
};
}  // namespace

std::unique_ptr<LinearFactory> make_fp8_linear_factory(const LinearLayout& layout, const Fp8Config& fp8,
                                                       const LinearRuntime* rt, const Activations* act,
                                                       PhaseTimer* timer,
                                                       std::unique_ptr<ScalingRecipe>* recipe) {
    const int num_linears = layout.model.num_layers * kLinearsPerLayer + (fp8.lm_head ? 1 : 0);
    auto scaling =
        std::make_unique<DelayedScaling>(fp8, fp8_linear_slot_dtypes(fp8.format, num_linears), timer);
    auto factory = std::make_unique<Fp8LinearFactory>(layout, fp8, *scaling, rt, act);
    *recipe = std::move(scaling);
    return factory;
}
