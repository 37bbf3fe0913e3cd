// The FP8 Linear (llmc/model/linear.h) with per-tensor delayed scaling: its producers write the quantized
// input (row-wise for this GEMM into the shared scratch, transposed into the saved copy for the wgrad) with
// its amax in one pass; the backward casts dY with dbias (and dGELU) fused, then FP8 dgrad and wgrad
// (llmc/fp8/fp8_linear.cuh). The weights' W and W^T are cast once per optimizer step.
#include "llmc/fp8/adamw_fp8.cuh"
#include "llmc/fp8/fp8_classifier.cuh"
#include "llmc/fp8/fp8_linear.cuh"
#include "llmc/fp8/fp8_producers.cuh"
#include "llmc/gpu/context.h"
#include "llmc/model/linear.h"

namespace {
class Fp8Linear : public Linear {
  public:
    Fp8Linear(const LinearParams& p, const LinearRuntime* rt, const Fp8LinearSetup& s)
        : p_(p),
          rt_(rt),
          recompute_input_(s.recompute_input),
          rebuild_xT_in_backward_(s.rebuild_xT_in_backward),
          kept_dy_{s.kept_dyT_ON, s.kept_dy_scale_inv},
          loss_head_(s.loss_head),
          master_(s.master_weight_OI) {
        f_.ctx = rt->ctx;
        f_.plans = rt->plans;
        f_.recipe = s.recipe;
        f_.scratch = s.scratch;
        f_.gelu_tanh = rt->gelu_tanh;
        f_.timer = rt->timer;
        fp8_linear_bind(&lin_, s.index, *s.scratch, *s.recipe->scales(), p.N, p.in, p.out);
        lin_.x.data_T = s.saved_xT_IN;
        lin_.x.scale_inv = s.x_scale_inv;
        lin_.w.data = s.fp8_weight;
        lin_.w.data_T = s.fp8_weight + (size_t)p.in * p.out;
        lin_.w.scale_inv = s.w_scale_inv;
    }

    void input_from_layernorm(bf16* residual_out, float* mean, float* rstd, const bf16* inp1,
                              const bf16* inp2, const bf16* w, const bf16* b) override {
        rt_->mark(kPhaseOther);
        fp8_calibrate_if_needed(&f_, lin_.x, stream(), [&] {
            fp8_layernorm_amax(scales(), lin_.x.slot, inp1, inp2, w, b, p_.N, p_.in, stream());
        });
        fp8_residual_layernorm_forward(inp2 ? residual_out : nullptr, lin_.x, mean, rstd, scales(), inp1,
                                       inp2, w, b, p_.N, p_.in, stream());
    }
    void input_from_gelu(const bf16* pre) override {
        rt_->mark(kPhaseOther);
        fp8_calibrate_if_needed(&f_, lin_.x, stream(), [&] {
            fp8_gelu_amax(scales(), lin_.x.slot, pre, p_.N, p_.in, rt_->gelu_tanh, stream());
        });
        // --recompute 1: row-wise only; the fc's dGELU cast writes the X^T the wgrad reads.
        if (recompute_input_)
            fp8_gelu_cast(lin_.x, scales(), pre, p_.N, p_.in, rt_->gelu_tanh, stream());
        else
            fp8_gelu_cast_transpose(lin_.x, scales(), pre, p_.N, p_.in, rt_->gelu_tanh, stream());
    }
    void input_from(const bf16* x) override {
        rt_->mark(kPhaseCast);
        fp8_calibrate_if_needed(&f_, lin_.x, stream(),
                                [&] { fp8_amax(scales(), lin_.x.slot, x, (long)p_.N * p_.in, stream()); });
        if (rebuild_xT_in_backward_) {  // --recompute 2: row-wise only; backward() rebuilds X^T from x
            fp8_cast(lin_.x, scales(), x, p_.N, p_.in, stream());
            input_x_ = x;
        } else {
            fp8_cast_transpose(lin_.x, scales(), x, p_.N, p_.in, stream());
        }
    }
    void forward(bf16* out) override {
        fp8_linear_forward_quantized(&f_, &lin_, out, p_.bias_O, p_.N, p_.in, p_.out, stream());
    }

    // The loss head: dlogits quantized by the classifier itself (calibrated first on step 0, like every
    // producer), straight into dY's row-wise scratch.
    void loss_and_dlogits(bf16* logits, float* losses, const int* targets, float dloss) override {
        CHECK(loss_head_, "loss_and_dlogits: FP8 Linear %d is not the LM head",
              lin_.x.slot / kFp8RolesPerLinear);
        rt_->mark(kPhaseOther);
        fp8_calibrate_if_needed(&f_, lin_.dy, stream(), [&] {
            fp8_fused_classifier_amax(scales(), lin_.dy.slot, logits, losses, targets, dloss, p_.N, p_.out,
                                      stream());
        });
        fp8_fused_classifier(lin_.dy, scales(), logits, losses, targets, dloss, stream());
        spent_logits_ = logits;
    }

    // --recompute 1: the forward's X^T again, from the same pre-GELU input with the same scale (scales change
    // only in the update), so bitwise the same bytes; the amax it records is the one already staged (a max).
    // The fc's dGELU cast writes it (it reads the pre-GELU tensor anyway); until then the wgrad waits, its
    // dY^T kept aside.
    void restore_input_from_gelu(const bf16* pre) override {}
    const Fp8Tensor* input_rebuilt_by_dgelu() const override { return recompute_input_ ? &lin_.x : nullptr; }
    void finish_wgrad() override {
        if (!recompute_input_) return;
        CHECK(wgrad_pending_, "FP8 Linear: finish_wgrad() without backward()");
        fp8_linear_wgrad(&f_, &lin_, p_.dweight_OI, kept_dy_, p_.N, p_.in, p_.out, wgrad_accumulate_,
                         stream());
        wgrad_pending_ = false;
    }
    void backward(bf16* dinp, const bf16* dout, bool accumulate) override {
        if (recompute_input_) {
            fp8_linear_backward_dgrad(&f_, &lin_, dinp, p_.dbias_O, dout, kept_dy_, p_.N, p_.in, p_.out,
                                      accumulate, stream());
            wgrad_pending_ = true;
            wgrad_accumulate_ = accumulate;
            return;
        }
        if (loss_head_) {  // dY is quantized already; its transpose goes over the logits it came from
            CHECK(dout != nullptr && dout == spent_logits_,
                  "FP8 LM head: backward() without loss_and_dlogits()");
            fp8_linear_backward_quantized_dy(&f_, &lin_, dinp, p_.dweight_OI,
                                             reinterpret_cast<__nv_fp8_storage_t*>(spent_logits_), p_.N,
                                             p_.in, p_.out, accumulate, stream());
            return;
        }
        if (rebuild_xT_in_backward_) {
            // The forward's X^T again: the same input with the same scale (scales change only in the
            // update), so the same bytes; the amax it stages is the one already staged (a max).
            CHECK(input_x_ != nullptr, "FP8 Linear: backward() without input_from()");
            rt_->mark(kPhaseCast);
            fp8_cast_transpose(lin_.x.transposed_only(), scales(), input_x_, p_.N, p_.in, stream());
        }
        fp8_linear_backward(&f_, &lin_, dinp, p_.dweight_OI, p_.dbias_O, dout, nullptr, p_.N, p_.in, p_.out,
                            accumulate, stream());
    }
    void backward_through_gelu(bf16* dinp, bf16* dout, const bf16* pre, bool accumulate,
                               const Fp8Tensor* next_input) override {
        fp8_linear_backward(&f_, &lin_, dinp, p_.dweight_OI, p_.dbias_O, dout, pre, p_.N, p_.in, p_.out,
                            accumulate, stream(), next_input);
    }

    // From the FP32 master on one GPU; with several the master is sharded and every rank casts the gathered
    // BF16 weight.
    void cast_weight() override {
        if (master_)
            fp8_linear_cast_weight(&f_, &lin_, master_, p_.out, p_.in, stream());
        else
            fp8_linear_cast_weight(&f_, &lin_, p_.weight_OI, p_.out, p_.in, stream());
    }
    bool fuses_adamw() const override { return master_ != nullptr; }
    void weights_gathered() override {
        if (master_) return;
        rt_->mark(kPhaseCast);
        cast_weight();
    }
    // One GPU: AdamW writes the FP32 master and the FP8 W and W^T in one pass, with the just-updated scales.
    void update_weight_fused(const FusedAdamW& a, cudaStream_t stream) override {
        if (!master_) return;
        if (a.m16_OI)
            adamw_update_fp8_weight(a.master_OI, a.m16_OI, a.v16_OI, a.grads_OI, p_.out, p_.in, a.beta1,
                                    a.beta2, a.eps, a.step, a.grad_scale, a.apply, lin_.w, scales(), stream);
        else
            adamw_update_fp8_weight(a.master_OI, a.m_OI, a.v_OI, a.grads_OI, p_.out, p_.in, a.beta1, a.beta2,
                                    a.eps, a.step, a.grad_scale, a.apply, lin_.w, scales(), stream);
    }

  private:
    cudaStream_t stream() const { return rt_->ctx->stream; }
    Fp8ScaleState* scales() const { return f_.recipe->scales(); }
    LinearParams p_;
    const LinearRuntime* rt_;
    Fp8LinearContext f_;
    Fp8LinearBuffers lin_;
    bool recompute_input_;
    bool rebuild_xT_in_backward_;
    const bf16* input_x_ = nullptr;  // rebuild_xT_in_backward_: the forward's input, read again in backward
    Fp8KeptDy
        kept_dy_;  // recompute_input_: dY^T and its scale_inv for the wgrad that waits for the rebuilt input
    bool wgrad_pending_ = false, wgrad_accumulate_ = false;
    bool loss_head_;
    bf16* spent_logits_ = nullptr;  // the loss head: the logits its dY came from, then dY^T's bytes
    const float* master_;  // one GPU: the FP32 master weight (the cast's source); null: the BF16 weight
};
}  // namespace

std::unique_ptr<Linear> make_fp8_linear(const LinearParams& p, const LinearRuntime* rt,
                                        const Fp8LinearSetup& s) {
    return std::make_unique<Fp8Linear>(p, rt, s);
}
