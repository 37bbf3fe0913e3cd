// The FP8 Linear (llmc/model/linear.h) with per-tensor delayed scaling, and the factory that builds the FP8
// model's Linears, MLPs (llmc/model/gelu_mlp_fp8.cu) and recipe. Forward: X is quantized by its producer (a
// LayerNorm, the MLP's GELU, or a cast: row-wise for this GEMM into the shared scratch, plus the transposed
// copy X^T for the wgrad where InputKeep::Saved), with its amax in the same pass; Y = X W^T + b with
// E4M3 x E4M3. Backward: dY is cast + transposed with dbias reduced in the same pass (dGELU fused for the fc
// layer), then dgrad dX = dY W (W^T copy) and wgrad dW = dY^T X (X^T and dY^T copies), all TN, without fast
// accumulation. The GEMMs and casts: llmc/kernels/gemm/matmul.cuh, llmc/fp8/cast.cuh. W and W^T are cast once
// per optimizer step (with AdamW, fused, on one GPU).
#pragma once
#include <memory>

#include "llmc/fp8/fp8_tensor.h"
#include "llmc/fp8/recipe.h"
#include "llmc/gpu/arena.h"
#include "llmc/model/linear.h"
#include "llmc/model/lm_head.h"

// What the FP8 Linears of a model share, reserved by their factory: the recipe (scale state, step-0
// calibration, margin) and the scratch one call uses and consumes.
struct Fp8Shared {
    explicit Fp8Shared(DelayedScaling& r) : recipe(r) {}
    DelayedScaling& recipe;
    __nv_fp8_storage_t* x_rows = nullptr;   // [N, widest in-features]
    __nv_fp8_storage_t* dy_rows = nullptr;  // [N, widest out-features]: 4C, or V with the FP8 LM head
    __nv_fp8_storage_t* dyT = nullptr;      // [4C, N] (the LM head's dY^T goes over its spent logits)
    float* dy_scale_inv = nullptr;
    char* dbias_scratch = nullptr;
};

// Where a deferred wgrad's dY waits: its transposed bytes [out, N] and the scale_inv they were quantized
// with, a buffer of its own (16-byte aligned: cuBLASLt takes it as a scale pointer; the shared scratch's
// scale_inv belongs to the next cast by the time the wgrad runs).
struct Fp8KeptDy {
    __nv_fp8_storage_t* data_T_ON = nullptr;
    float* scale_inv = nullptr;
};

class Fp8GeluMlp;
class Fp8LmHead;

class Fp8Linear : public Linear {
  public:
    // FP8 Linear number `index` (its scale slots X, W, dY) [out, in], keeping `keep` of its input.
    Fp8Linear(Fp8Shared* shared, const LinearRuntime* rt, int index, int in, int out, InputKeep keep);
    // Reserves what this Linear keeps: its scale_invs (and W, W^T, own_weight_bytes) in `params`, its X^T for
    // N tokens in `activations` (InputKeep::Saved; else bind() is given the one the layers share).
    void plan(Arena* params, Arena* activations, int N, bool own_weight_bytes);
    // Once allocated: the model's weights; weight_bytes: W then W^T where plan() reserved none; rebuilt_xT:
    // the shared X^T (InputKeep other than Saved); kept: dY^T kept for the deferred wgrad (FromGelu).
    void bind(const LinearParams& p, __nv_fp8_storage_t* weight_bytes, __nv_fp8_storage_t* rebuilt_xT,
              const Fp8KeptDy& kept);

    void input_from_layernorm(bf16* residual_out_NI, float* mean_N, float* rstd_N, const bf16* inp1_NI,
                              const bf16* inp2_NI, const bf16* ln_weight_I, const bf16* ln_bias_I) override;
    void input_from(const bf16* x_NI) override;
    void forward(bf16* out_NO, const bf16* residual_NO) override;
    void backward(bf16* dinp_NI, const bf16* dout_NO, bool accumulate) override;
    void cast_weight() override;
    GatheredBytes gathered_weight_bytes() const override;
    void weights_gathered() override;
    void optimizer_step(const LinearAdamW& a) override;
    void optimizer_step_layers(Linear* const* layers, const LinearAdamW* a, int count) override;

  private:
    // The two units built over FP8 Linears use the verbs below: the MLP (the GELU fused into its casts) and
    // the LM head (its dY quantized by the loss).
    friend class Fp8GeluMlp;
    friend class Fp8LmHead;

    // The input quantized from gelu(pre_gelu_NI): row-wise only with InputKeep::FromGelu (the fc's dGELU
    // cast writes X^T in backward).
    void input_from_gelu(const bf16* pre_gelu_NI);
    // backward() with dY = dout_NO * gelu'(pre_gelu_NO). rebuilt_input (null: none): the next Linear's
    // transposed input, gelu(pre_gelu_NO) with its scale, written by the same cast.
    void backward_through_gelu(bf16* dinp_NI, const bf16* dout_NO, const bf16* pre_gelu_NO, bool accumulate,
                               const Fp8Tensor* rebuilt_input);
    // InputKeep::FromGelu: the backward in two parts around the cast that rebuilds X^T: the dY cast (dY^T
    // kept) and the dgrad, then the wgrad.
    void backward_dgrad(bf16* dinp_NI, const bf16* dout_NO, bool accumulate);
    void backward_wgrad(bool accumulate);
    const Fp8Tensor& input() const { return x_; }
    InputKeep keep() const { return keep_; }

    cudaStream_t stream() const;
    Fp8ScaleState* scales() const { return shared_->recipe.scales(); }
    // Step 0 (the recipe calibrates): the amax of tensor `t` first (amax_pass), then its slot's scale from
    // it.
    template <class AmaxPass>
    void calibrate_if_needed(const Fp8Tensor& t, AmaxPass amax_pass) {
        if (!shared_->recipe.calibrating()) return;
        amax_pass();
        shared_->recipe.calibrate(t.slot.index, stream());
    }
    void cast_dy(const Fp8Tensor& dy, const bf16* dout_NO, const bf16* pre_gelu_NO, bool accumulate,
                 const Fp8Tensor* rebuilt_input);
    void dgrad_gemm(const Fp8Tensor& dy, bf16* dinp_NI);
    void wgrad_gemm(const Fp8Tensor& dy, bool accumulate);
    Fp8Tensor kept_dy() const;
    Fp8Tensor weight_rows() const;

    Fp8Shared* shared_;
    const LinearRuntime* rt_;
    int index_;  // its number in the recipe: slots fp8_slot(index_, role)
    LinearParams p_{};
    InputKeep keep_;
    Fp8Tensor w_;   // W [out, in] and W^T [in, out]
    Fp8Tensor x_;   // the input: row-wise [N, in] in the shared scratch, X^T [in, N] for the wgrad
    Fp8Tensor dy_;  // the output gradient: [N, out] and [out, N], both in the shared scratch
    const bf16* input_x_ = nullptr;  // InputKeep::FromInput: the forward's input, read again in backward
    Fp8KeptDy kept_;                 // InputKeep::FromGelu: dY^T and its scale_inv for the deferred wgrad
};

// The FP8 LM head (--fp8-lm-head, llmc/model/lm_head.h; built in llmc/model/lm_head_fp8.cu): an FP8 Linear
// [V, C] without bias whose dY the loss kernel quantizes itself, transposed over the spent logits (the shared
// dY^T scratch need not hold N x V); W and W^T cast from the tied embedding's BF16 weight after every update.
class Fp8LmHead : public LmHead {
  public:
    // `index`: its Linear's number in the recipe (the last slots).
    Fp8LmHead(Fp8Shared* shared, const LinearRuntime* rt, int index, int C, int V);
    void plan(Arena* params, Arena* activations, int N);  // its W, W^T (own bytes) and X^T
    void bind(const LinearParams& p);                     // the tied embedding's BF16 weight

    void input_from_layernorm(bf16* residual_out_NC, float* mean_N, float* rstd_N, const bf16* inp1_NC,
                              const bf16* inp2_NC, const bf16* ln_weight_C, const bf16* ln_bias_C) override;
    void forward(bf16* logits_NV) override;
    void loss(bf16* logits_NV, float* losses_N, const int* targets_N, float dloss, bool training) override;
    void backward(bf16* dinp_NC, bool accumulate) override;
    void cast_weight() override;
    void weights_gathered() override;

  private:
    Fp8Linear linear_;
    bf16* spent_logits_ = nullptr;  // the logits its dY came from, then dY^T's bytes
};

// The FP8 MLP over two FP8 Linears (llmc/model/gelu_mlp_fp8.cu): the GELU fused into the fc-proj's input
// cast, its backward into the cast of the fc's dY.
std::unique_ptr<GeluMlp> make_fp8_gelu_mlp(std::unique_ptr<Fp8Linear> fc, std::unique_ptr<Fp8Linear> fc_proj);

// The FP8 model's Linears (one recipe slot triple each: 4 per block in LinearKind order, then the LM head
// with fp8.lm_head, else a BF16 LM head reading act's lnf) and its DelayedScaling recipe, into *recipe.
std::unique_ptr<LinearFactory> make_fp8_linear_factory(const LinearLayout& layout, const Fp8Config& fp8,
                                                       const LinearRuntime* rt, const Activations* act,
                                                       PhaseTimer* timer,
                                                       std::unique_ptr<ScalingRecipe>* recipe);
