// The GPT model on the GPU: built once for a precision (the recipe and the Linear layers chosen then), then
// trained step by step: stage the micro-batches, launch the step, wait for it. The parameter layout (names,
// shapes, canonical order) is llmc/model/layout.h; weights are in PyTorch's nn.Linear layout [out, in]; qkv
// output columns are [q | k | v], each C wide, head h at columns h*D .. h*D+D-1 of each part. The tests'
// one-call-at-a-time API (test/gpt_testing.h) reaches the parts through GptModelTestAccess.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "llmc/fp8/fp8_health.h"
#include "llmc/host/config.h"
#include "llmc/model/layout.h"

struct GpuContext;
class Communicator;
struct GptModelTestAccess;  // defined by the tests only

// One tensor of the training state, whole (for checkpoints): dtype as in safetensors ("F32").
struct StateTensorInfo {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    size_t bytes;
};

// Memory/speed/reproducibility options of the step (TrainConfig's --recompute, --deterministic, ...).
struct StepOptions {
    InputKeep fc_proj_input = InputKeep::Saved;   // what the fc-proj keeps of its input (fp8: its X^T)
    InputKeep att_proj_input = InputKeep::Saved;  // what the attn-proj keeps of its input (fp8: its X^T)
    bool deterministic_attention = true;
    bool fuse_residual = false;   // the residual adds in the projection GEMMs (Linear::forward's residual)
    bool cuda_graph = true;       // launch_step(): replay one captured CUDA graph per step
    bool bf16_moments = false;    // AdamW moments stored in BF16 (FP32 arithmetic)
    bool gemm_autotune = false;   // time cuBLASLt's best candidates per GEMM (llmc/kernels/gemm/matmul.cuh)
    bool gemm_variants = false;   // then the winner's variants with bitwise its output
    std::string gemm_cache_path;  // where those choices are stored and shared ("": not stored)
};

// What a training step did, read once after it completed.
struct StepOutcome {
    float loss = 0;        // mean over the micro-steps and ranks
    float grad_norm = 0;   // global, before clipping
    bool applied = false;  // false: skipped (non-finite loss or gradient norm): nothing changed
};

// Data parallelism (one process per GPU) and gradient accumulation.
struct DataParallel {
    Communicator* comm = nullptr;  // nullptr or world 1: one GPU
    int grad_accum_steps = 1;      // micro-steps (forward + backward) per update()
};

struct AdamWSettings {
    float lr, beta1, beta2, eps, weight_decay, grad_clip;  // grad_clip 0: no clipping
};

class GptModel {
  public:
    // Allocates parameters, gradients, optimizer state (one allocation) and activations for B x T
    // (another allocation). Prints the memory plan.
    // With several ranks (ZeRO-1) the FP32 master weights and AdamW moments are sharded: each rank holds
    // 1/world of every parameter slice (llmc/parallel/shard_view.h); gradients are reduce-scattered per layer
    // during the last micro-step's backward, and the updated BF16 weights all-gathered after update().
    GptModel(const ModelConfig& m, int B, int T, Precision precision, GpuContext* ctx,
             const Fp8Config& fp8 = Fp8Config(), const DataParallel& dp = DataParallel(),
             const StepOptions& options = StepOptions());
    ~GptModel();
    GptModel(const GptModel&) = delete;
    GptModel& operator=(const GptModel&) = delete;

    // GPT-2 initialization: weights N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), biases 0, LN
    // weight 1.
    void init_weights(uint64_t seed);
    // Loads all parameters (canonical order, float32) into FP32 master and BF16 working copies.
    void load_weights(const std::vector<float>& params);

    // A training step that never waits for the host, so it runs as one CUDA graph (StepOptions::cuda_graph):
    //   for every micro-step k < grad_accum_steps: stage_micro_batch(k, inputs, targets)
    //   launch_step(adamw, t); ... ; StepOutcome r = wait_step(&health);
    // stage_micro_batch checks the token ids (exits on an id out of range) and queues their upload through
    // pinned memory, double buffered: the next step's tokens may be staged before wait_step.
    // launch_step queues forward + backward of every micro-step, the global gradient norm, the verdict (skip
    // when the loss or the norm is not finite: the device then changes nothing and the FP8 state returns to
    // its snapshot), the FP8 scale update, AdamW step t (1-based: updates applied so far + 1), the all-gather
    // and the FP8 weight casts. The first step (it builds the library plans), calibration and stale FP8
    // weights run uncaptured; the first step after them is captured and every later one replays it.
    // wait_step synchronizes, reads the step's loss and norm, and fills `health` (FP8, applied steps).
    // Collective with several ranks.
    void stage_micro_batch(int k, const int* inputs_BT, const int* targets_BT);
    void launch_step(const AdamWSettings& s, int t);
    StepOutcome wait_step(Fp8Health* health = nullptr);

    // Evaluation forward (validation, text samples; between steps): the loss with targets (0 without, then
    // the logits are readable), leaving the training state untouched: FP8 amaxes, calibration and scales are
    // those of a run without this call. Collective with targets.
    float evaluate(const int* inputs_BT, const int* targets_BT);
    // The same evaluation forward with targets, returning each position's loss (B*T floats, row-major):
    // -log softmax(logits)[target] over the whole vocabulary, as the training loss. Collective.
    std::vector<float> evaluate_token_losses(const int* inputs_BT, const int* targets_BT);

    // Per-phase GPU time (see llmc/gpu/phase_timer.h): enable, run steps, collect ms per phase (and reset).
    void set_profiling(bool on);
    std::vector<double> collect_phase_ms();
    // Whether the last launched step replayed a captured graph (false: launched kernel by kernel).
    bool last_step_replayed() const;
    // One line per cuBLASLt plan built so far: the GEMM, its algorithm and how it was chosen.
    std::vector<std::string> gemm_report() const;

    // Host copies, canonical order, float32: master weights (collective with several ranks: gathered),
    // gradients (one GPU only: with several, only this rank's reduced shard is meaningful); logits of the
    // first `rows` rows (valid after an evaluate() without targets: with targets the buffer is overwritten by
    // dlogits).
    std::vector<float> weights_to_host() const;
    std::vector<float> grads_to_host() const;
    std::vector<float> logits_to_host(int rows) const;
    // Logits of one row (b * T + t) after an evaluate() without targets: V floats.
    std::vector<float> logits_row(int row) const;
    // The whole FP8 scale state (amax history rows, scale, scale_inv, fp8_max), empty in BF16.
    std::vector<float> fp8_state_to_host() const;

    // Everything on the device a run needs to continue bit-exactly, as whole tensors whatever the number of
    // ranks: FP32 master weights (one per parameter tensor, canonical names), AdamW m and v, and in FP8 the
    // amax history (staging row included), scale and scale_inv. The BF16 working weights and FP8 weight
    // copies are derived from the master.
    std::vector<StateTensorInfo> state_layout() const;
    // Gathers the state into host buffers (one per state_layout() entry, its bytes). Collective; ranks
    // other than 0 may pass nullptrs (they take part in the gather but receive nothing).
    void state_to_host(const std::vector<void*>& host);
    // Loads the state from whole host tensors (each rank takes its shards) and rebuilds the derived copies.
    void state_from_host(const std::vector<const void*>& host);
    // Host part of the FP8 state: true until the first scale update (step-0 calibration pending).
    bool fp8_calibration_pending() const;
    void set_fp8_calibration_pending(bool pending);
    size_t num_parameters() const;
    // Device memory in use, as the driver reports it: updated by update_peak_memory() (a cudaMemGetInfo).
    void update_peak_memory();
    size_t peak_memory_bytes() const;

    // The model's parts (llmc/model/gpt_impl.cuh), for its own translation units.
    struct Impl;

  private:
    friend struct GptModelTestAccess;
    Impl* impl_;
};
