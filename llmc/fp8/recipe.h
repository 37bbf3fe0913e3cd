// The scaling recipe of a model: everything about per-tensor scaling that lives across forward passes and
// steps, behind a few verbs the model's step calls whatever its precision. BF16 has nothing to scale
// (NoScaling: every verb does nothing); FP8 delayed scaling (DelayedScaling, Transformer Engine semantics)
// owns the scale state and its
//   - step-start snapshot: a skipped step (non-finite loss or norm) returns to it on the device;
//   - evaluation backup: an evaluation forward records amaxes (and calibrates) on the live state, which
//     end_eval puts back, so validation never changes training;
//   - step-0 calibration: each tensor's amax is taken before its first cast (current scaling once);
//   - health snapshots: staging amaxes and scales before the update, for the log;
//   - weight freshness: whether the FP8 weight copies must be cast again before the next forward.
// The casts themselves (llmc/kernels/cast/cast.cuh) and the FP8 Linear (llmc/model/linear_fp8.h) read the
// state.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "llmc/fp8/fp8_health.h"
#include "llmc/fp8/scale_state.cuh"
#include "llmc/gpu/phase_timer.h"

// One tensor of the recipe's checkpointed state (float32 on the device).
struct RecipeStateTensor {
    std::string name;
    std::vector<size_t> shape;
    float* data;
    size_t floats;
};

class ScalingRecipe {
  public:
    virtual ~ScalingRecipe() = default;
    // Host, when a training step is launched: remembers whether it calibrates.
    virtual void begin_step() {}
    // Queued at the start of a training step's first micro-step: the snapshot a skipped step returns to.
    virtual void snapshot_step_start(cudaStream_t stream) {}
    // Around an evaluation forward (no backward): afterwards the state is as it was before begin_eval.
    virtual void begin_eval(cudaStream_t stream) {}
    virtual void end_eval(cudaStream_t stream) {}
    // Several ranks: the element-wise maximum over the ranks of n device floats, in place, ordered on the
    // compute stream. Set once, before the first step; the amaxes of every update and calibration go
    // through it, so every rank casts with the same scales from the first step on.
    using AllReduceMax = std::function<void(float*, size_t)>;
    virtual void set_all_reduce_max(AllReduceMax fn) {}
    // After the optimizer step's last backward: the amax history and scales from this step's amaxes (the
    // maximum over the ranks), undone on the device when *apply_flag is 0.
    virtual void update(const int* apply_flag, cudaStream_t stream) {}
    // Step-0 calibration of one slot, once its amax has been measured into the staging row: the slot's scale
    // from that amax (the maximum over the ranks, and over this step's micro-steps so far).
    virtual void calibrate(int slot, cudaStream_t stream) {}
    // Several ranks, after casts where each rank measured its own part (its rows of the weights): the staged
    // amaxes as the maximum over the ranks now, so that every rank holds the same state between steps (and a
    // checkpoint the one a single rank would have).
    virtual void all_reduce_staged_amax(cudaStream_t stream) {}
    // Host-driven undo of the current step (one call at a time, tests): back to the step-start snapshot.
    virtual void restore(cudaStream_t stream) {}
    // Host, once the step's verdict is read: a skipped calibration step calibrates again.
    virtual void end_step(bool applied) {}
    // Fills `h` from the last update's snapshots (synchronous).
    virtual void health(Fp8Health* h) const {}

    virtual bool calibrating() const { return false; }
    virtual void set_calibrating(bool on) {}
    // The FP8 weight copies no longer match the weights (new weights, restored scales): cast them again.
    virtual bool weights_stale() const { return false; }
    virtual void set_weights_stale(bool stale) {}
    // A step that calibrates or recasts stale weights runs other kernels than the captured graph's.
    bool step_capturable() const { return !calibrating() && !weights_stale(); }

    // The state a checkpoint holds (empty for NoScaling), and the whole state as one host copy (tests).
    virtual std::vector<RecipeStateTensor> state_tensors() { return {}; }
    virtual std::vector<float> state_to_host(cudaStream_t stream) const { return {}; }
    // The scale state the casts read (null for NoScaling).
    virtual Fp8ScaleState* scales() { return nullptr; }
};

class NoScaling : public ScalingRecipe {};

class DelayedScaling : public ScalingRecipe {
  public:
    // One slot per entry of `dtypes`; `timer` (may be null) charges the update to the cast phase.
    DelayedScaling(const Fp8Config& cfg, const std::vector<Fp8Dtype>& dtypes, PhaseTimer* timer);
    ~DelayedScaling() override;
    DelayedScaling(const DelayedScaling&) = delete;
    DelayedScaling& operator=(const DelayedScaling&) = delete;

    void begin_step() override { calibrating_step_ = calibrate_; }
    void snapshot_step_start(cudaStream_t stream) override;
    void begin_eval(cudaStream_t stream) override;
    void end_eval(cudaStream_t stream) override;
    void set_all_reduce_max(AllReduceMax fn) override { all_reduce_max_ = std::move(fn); }
    void update(const int* apply_flag, cudaStream_t stream) override;
    void calibrate(int slot, cudaStream_t stream) override;
    void all_reduce_staged_amax(cudaStream_t stream) override;
    void restore(cudaStream_t stream) override;
    void end_step(bool applied) override;
    void health(Fp8Health* h) const override;

    bool calibrating() const override { return calibrate_; }
    void set_calibrating(bool on) override { calibrate_ = on; }
    bool weights_stale() const override { return weights_stale_; }
    void set_weights_stale(bool stale) override { weights_stale_ = stale; }

    std::vector<RecipeStateTensor> state_tensors() override;
    std::vector<float> state_to_host(cudaStream_t stream) const override;
    Fp8ScaleState* scales() override { return &state_; }
    const Fp8Config& config() const { return cfg_; }

  private:
    void copy_storage(float* dst, const float* src, cudaStream_t stream) const;

    Fp8Config cfg_;
    PhaseTimer* timer_;
    Fp8ScaleState state_;
    AllReduceMax all_reduce_max_;    // empty on one rank
    float* step_start_ = nullptr;    // storage at the start of the current step
    float* eval_backup_ = nullptr;   // storage before the current evaluation forward
    float* health_amax_ = nullptr;   // staging amaxes before the last update
    float* health_scale_ = nullptr;  // scales before the last update
    bool calibrate_ = true;          // until the first applied update
    bool calibrating_step_ = false;  // the step in flight started calibrating
    bool weights_stale_ = true;
    bool eval_weights_were_stale_ = false;  // the weights an evaluation casts are for it only
};
