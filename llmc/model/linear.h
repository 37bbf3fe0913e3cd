// A Linear layer of the model, out_NO = x_NI W_OI^T + b_O, whose precision is chosen once, when the model is
// built: GptModel's constructor picks the factory (make_bf16_linear_factory / make_fp8_linear_factory in
// llmc/model/linear_fp8.h) that builds every Linear, the block MLPs (llmc/model/gelu_mlp.h) and the scaling
// recipe. A Linear owns how its input is produced (a LayerNorm, or a given BF16 tensor: in FP8 the producer
// writes the quantized input, its transposed copy and amax in the same pass), what it keeps for its backward
// (InputKeep, llmc/host/config.h) and its backward. The model's passes call the same verbs in both
// precisions.
#pragma once
#include <memory>
#include <string>

#include "llmc/gpu/arena.h"
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/gpu/phase_timer.h"
#include "llmc/host/config.h"
#include "llmc/kernels/adamw/adamw.cuh"
#include "llmc/model/activations.h"
#include "llmc/model/layout.h"

struct GpuContext;
struct MatmulPlanCache;
class ScalingRecipe;
class GeluMlp;
class LmHead;

// Where a Linear's parameters and gradients live (the model's flat buffers) and its shape.
struct LinearParams {
    bf16* weight_OI;  // BF16 working weight [out, in]
    bf16* dweight_OI;
    const bf16* bias_O;  // null: no bias
    bf16* dbias_O;
    const float* master_OI;  // the FP32 master weight, whole on one GPU (null: sharded over several)
    int N, in, out;          // rows (tokens) and features
    // Several GPUs: this rank's rows [shard_row0, shard_row0 + shard_rows) of the weight, whose FP32 master
    // values are its ZeRO-1 shard of this layer (master_shard_OI; null on one GPU).
    const float* master_shard_OI = nullptr;
    int shard_row0 = 0, shard_rows = 0;
};

// What every Linear of a model shares.
struct LinearRuntime {
    GpuContext* ctx;
    MatmulPlanCache* plans;
    PhaseTimer* timer;
    float* reduce_scratch;  // dbias partial sums
    bool gelu_tanh;
    void mark(Phase p) const;
    cudaStream_t stream() const;
};

// One AdamW step of a Linear's weight (its slice of the master weight, moments and gradient).
struct LinearAdamW {
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
    // The producers of the input: exactly one runs before each forward() (the MLP's GELU feeds its fc-proj).
    // (Residual add +) LayerNorm: residual_out_NI = inp1 + inp2 when inp2 is given, LayerNorm of it.
    virtual void input_from_layernorm(bf16* residual_out_NI, float* mean_N, float* rstd_N,
                                      const bf16* inp1_NI, const bf16* inp2_NI, const bf16* ln_weight_I,
                                      const bf16* ln_bias_I) = 0;
    virtual void input_from(const bf16* x_NI) = 0;  // kept (not copied) until the backward
    // out_NO = x W^T + b, + residual_NO when given (the residual stream's add in the GEMM's epilogue, one
    // rounding of the FP32 sum; out_NO then is the next residual and must not alias residual_NO).
    virtual void forward(bf16* out_NO, const bf16* residual_NO) = 0;
    // dinp_NI = dY W (null: not needed), dW = dY^T x, db = sum dY (accumulate: += for gradient accumulation).
    virtual void backward(bf16* dinp_NI, const bf16* dout_NO, bool accumulate) = 0;

    // Lower-precision weight copies (FP8: W and W^T) from the weights, when they changed.
    virtual void cast_weight() {}
    // After the new weights were gathered from all ranks (the BF16 ones, and gathered_weight_bytes()): the
    // copies made from them.
    virtual void weights_gathered() {}
    // Where updates_own_weight(): AdamW on this Linear's weight (its rank's rows on several GPUs), fused with
    // or followed by its FP8 cast. The other weights are updated by the model's plain AdamW pass over every
    // parameter tensor.
    virtual void optimizer_step(const LinearAdamW& a) {}
    // optimizer_step of `count` Linears of this one's kind (this one among them), a[l] for layers[l]: one
    // call each, unless the precision has a launch for all (FP8 on one GPU).
    virtual void optimizer_step_layers(Linear* const* layers, const LinearAdamW* a, int count) {
        for (int l = 0; l < count; l++) layers[l]->optimizer_step(a[l]);
    }
    // Several GPUs, FP8: this rank's rows of the quantized weight (W [out, in] bytes, rank-major), which
    // every rank all-gathers in place with the BF16 weights before weights_gathered(); none otherwise.
    struct GatheredBytes {
        unsigned char* whole = nullptr;  // world x chunk bytes
        size_t chunk = 0;
    };
    virtual GatheredBytes gathered_weight_bytes() const { return {}; }
    bool updates_own_weight() const { return updates_own_weight_; }

  protected:
    bool updates_own_weight_ = false;
};

// The model's Linears as the factories build them: the model's shape and what the step keeps.
struct LinearLayout {
    ModelConfig model;
    InputKeep fc_proj_input, att_proj_input;
    bool sharded;  // several GPUs: the FP32 master is sharded (FP8: each rank casts its rows, then gathers)
    // What the Linear of LinearKind `kind` keeps of its input.
    InputKeep input_keep(int kind) const {
        return kind == kFcProj ? fc_proj_input : kind == kAttProj ? att_proj_input : InputKeep::Saved;
    }
};

// Builds the model's Linears in one precision. Before the allocations plan() reserves what the Linears own
// and share for N tokens (per model in `params`, per batch in `activations`; the memory check also calls it
// on probe arenas that are never allocated, to size other batches); after them the make_* calls build each
// layer over the model's weights.
class LinearFactory {
  public:
    virtual ~LinearFactory() = default;
    virtual void plan(Arena* params, Arena* activations, int N) = 0;
    // Layer l's qkv or attn-proj (LinearKind `kind`), its MLP, the LM head (llmc/model/lm_head.h).
    virtual std::unique_ptr<Linear> make_linear(int l, int kind, const LinearParams& p) = 0;
    virtual std::unique_ptr<GeluMlp> make_mlp(int l, const LinearParams& fc, const LinearParams& fc_proj) = 0;
    virtual std::unique_ptr<LmHead> make_lm_head(const LinearParams& p) = 0;

    // What the model's activation table keeps for these layers (llmc/model/activations.h): the BF16 inputs
    // of the block Linears (ln1, ln2, the GELU output) and of the LM head (lnf), which BF16 layers read in
    // backward and FP8 layers keep as FP8 copies of their own.
    virtual bool reads_bf16_block_inputs() const = 0;
    virtual bool reads_bf16_lm_head_input() const = 0;
    // One line on what was built, printed once the layers are (empty: nothing to say).
    virtual std::string summary() const { return ""; }
};

// BF16: the input each Linear keeps for its backward is a model tensor of `act` (the LayerNorm outputs
// ln1, ln2, lnf; the attention output as given; the MLP's GELU output, recomputed in backward), read when
// the Linears are made. The recipe is NoScaling.
std::unique_ptr<LinearFactory> make_bf16_linear_factory(const LinearRuntime* rt, const Activations* act,
                                                        std::unique_ptr<ScalingRecipe>* recipe);
// One BF16 Linear; input_buffer_NI: where its LayerNorm producer writes (null: given by input_from).
std::unique_ptr<Linear> make_bf16_linear(const LinearParams& p, const LinearRuntime* rt,
                                         bf16* input_buffer_NI);
// The BF16 LM head (llmc/model/lm_head_bf16.cu); its LayerNorm writes lnf_NC.
std::unique_ptr<LmHead> make_bf16_lm_head(const LinearParams& p, const LinearRuntime* rt, bf16* lnf_NC);
