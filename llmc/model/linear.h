// A Linear layer of the model, out_NO = x_NI W_OI^T + b_O, whose precision is chosen once, when the model is
// built (make_bf16_linear / make_fp8_linear). It owns how its input is produced (a LayerNorm, a GELU, or a
// given BF16 tensor: in FP8 the producer writes the quantized input, its transposed copy and amax in the
// same pass), what it keeps for its backward, and its backward (with dGELU and dbias fused where FP8 can).
// The model's forward and backward passes call the same verbs in both precisions.
#pragma once
#include <memory>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/gpu/phase_timer.h"
#include "llmc/kernels/adamw.cuh"

struct GpuContext;
struct MatmulPlanCache;
class DelayedScaling;
struct Fp8Scratch;
struct Fp8Tensor;

// Where a Linear's parameters and gradients live (the model's flat buffers) and its shape.
struct LinearParams {
    const bf16* weight_OI;  // BF16 working weight [out, in]
    bf16* dweight_OI;
    const bf16* bias_O;  // null: no bias
    bf16* dbias_O;
    int N, in, out;  // rows (tokens) and features
};

// What every Linear of a model shares.
struct LinearRuntime {
    GpuContext* ctx;
    MatmulPlanCache* plans;
    PhaseTimer* timer;
    float* reduce_scratch;  // dbias partial sums
    bool gelu_tanh;
    void mark(Phase p) const;
};

// The AdamW step of one weight whose update is fused with its FP8 cast (one GPU, FP8 block weights).
struct FusedAdamW {
    float *master_OI, *m_OI, *v_OI;  // FP32 moments, or
    bf16 *m16_OI, *v16_OI;           // BF16 moments (the other pair null)
    const bf16* grads_OI;
    float beta1, beta2, eps;
    const AdamWStepScalars* step;
    const float* grad_scale;
    const int* apply;
};

class Linear {
  public:
    virtual ~Linear() = default;
    // The producers of the input: exactly one runs before each forward().
    // (Residual add +) LayerNorm: residual_out_NI = inp1 + inp2 when inp2 is given, LayerNorm of it.
    virtual void input_from_layernorm(bf16* residual_out_NI, float* mean_N, float* rstd_N,
                                      const bf16* inp1_NI, const bf16* inp2_NI, const bf16* ln_weight_I,
                                      const bf16* ln_bias_I) = 0;
    virtual void input_from_gelu(const bf16* pre_gelu_NI) = 0;
    virtual void input_from(const bf16* x_NI) = 0;  // kept (not copied) until the backward
    virtual void forward(bf16* out_NO) = 0;
    // The LM head: its output logits_NO feeds the softmax cross-entropy. losses_N[n] = the row's loss; the
    // gradient (softmax - onehot) * dloss becomes this Linear's dY in the form its backward reads: BF16 in
    // place over the logits, or (FP8 loss head) quantized with dY's scale into the FP8 scratch. backward()
    // is then called with dout_NO = logits_NO.
    virtual void loss_and_dlogits(bf16* logits_NO, float* losses_N, const int* targets_N, float dloss) = 0;

    // The backward's input where the forward did not keep it: rebuilt from the pre-GELU tensor (BF16), or
    // (FP8) left to the dGELU cast of the Linear before: input_rebuilt_by_dgelu() names where it goes, and
    // backward() leaves the weight gradient to finish_wgrad(), after that cast.
    virtual void restore_input_from_gelu(const bf16* pre_gelu_NI) = 0;
    virtual const Fp8Tensor* input_rebuilt_by_dgelu() const { return nullptr; }
    virtual void finish_wgrad() {}
    // dinp_NI = dY W (null: not needed), dW = dY^T x, db = sum dY (accumulate: += for gradient accumulation).
    virtual void backward(bf16* dinp_NI, const bf16* dout_NO, bool accumulate) = 0;
    // The same with dY = dout_NO * gelu'(pre_gelu_NO): this Linear's output went through a GELU (dout_NO may
    // be overwritten). next_input (FP8; null: none): the next Linear's transposed FP8 input,
    // gelu(pre_gelu_NO) quantized with its scale, written by the same cast.
    virtual void backward_through_gelu(bf16* dinp_NI, bf16* dout_NO, const bf16* pre_gelu_NO, bool accumulate,
                                       const Fp8Tensor* next_input) = 0;

    // Lower-precision weight copies (FP8: W and W^T) from the weights, when they changed.
    virtual void cast_weight() {}
    // AdamW fused with that cast, where the Linear was built so (fuses_adamw(); the others' weights are
    // updated by the plain AdamW pass).
    virtual bool fuses_adamw() const { return false; }
    virtual void update_weight_fused(const FusedAdamW& a, cudaStream_t stream) {}
    // After the new BF16 weights were gathered from all ranks: the copies that are cast from them.
    virtual void weights_gathered() {}
};

std::unique_ptr<Linear> make_bf16_linear(const LinearParams& p, const LinearRuntime* rt,
                                         bf16* input_buffer_NI);

// FP8 Linear number `index` (its three scale slots X, W, dY). saved_xT_IN: where the transposed FP8 input is
// kept for the backward. recompute_input: the GELU-fed Linear has it rebuilt by the fc's dGELU cast instead,
// keeping its dY^T in kept_dyT_ON (out x N bytes) and that dY's scale_inv in kept_dy_scale_inv (one float,
// 16-byte aligned) for the weight gradient that waits for it.
// rebuild_xT_in_backward: the Linear fed by input_from(x) keeps no X^T across the step: its forward writes
// the row-wise copy only and its backward rebuilds X^T from x (still held: the attention output) with the
// same scale, so the same bytes, into saved_xT_IN (one buffer shared by the layers).
//
// master_weight_OI: one GPU, the FP32 master the weights are cast from (null: cast from the BF16 weights,
// which every rank has whole after the all-gather). fp8_weight: W and W^T bytes (2 x in x out).
// loss_head: the LM head, whose dY comes quantized from loss_and_dlogits; its backward transposes it into the
// spent logits buffer (so the shared dY^T scratch need not hold N x V).
struct Fp8LinearSetup {
    int index;
    DelayedScaling* recipe;
    const Fp8Scratch* scratch;
    __nv_fp8_storage_t* saved_xT_IN;
    bool recompute_input;
    bool rebuild_xT_in_backward = false;
    __nv_fp8_storage_t* kept_dyT_ON = nullptr;
    float* kept_dy_scale_inv = nullptr;
    const float* master_weight_OI;
    __nv_fp8_storage_t* fp8_weight;
    float* w_scale_inv;
    float* x_scale_inv;
    bool loss_head = false;
};
std::unique_ptr<Linear> make_fp8_linear(const LinearParams& p, const LinearRuntime* rt,
                                        const Fp8LinearSetup& s);
