// The training state as one thing: the model's device tensors (FP32 master weights, AdamW m and v, the FP8
// amax histories and scales: GptModel::state_layout), the FP8 calibration flag, the run's progress (next
// step, AdamW updates applied) and the training data's position. A checkpoint saves exactly this, so a
// resumed run continues bit-exactly; with several GPUs the sharded tensors are gathered whole, so a
// checkpoint resumes on any number of GPUs (rank 0 writes; every rank reads). Nothing else in the trainer
// carries state across steps (the validation source restarts at every evaluation, the learning rate is a
// function of the step).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "llmc/formats/checkpoint.h"
#include "llmc/host/config.h"

class Communicator;
class GptModel;
class TokenSource;

// How long the other ranks wait for rank 0 to write a checkpoint (a large model on a slow disk).
constexpr double kCheckpointTimeoutS = 1800;

struct TrainProgress {
    int64_t step = 0;      // the next step to run
    int64_t opt_step = 0;  // AdamW updates applied (skipped bad steps do not count)
};

// "L=12 C=768 H=12 V=50304 maxT=1024 gelu=erf": what a checkpoint must match to be resumed.
std::string model_signature(const ModelConfig& m);
// "bf16", or "fp8 hybrid history=1024 amax=max margin=0".
std::string recipe_signature(const TrainConfig& cfg);

class TrainState {
  public:
    // comm: nullptr for one GPU.
    TrainState(const TrainConfig& cfg, GptModel* model, TokenSource* train_data,
               Communicator* comm = nullptr);
    // Writes a checkpoint of the current state to `dir` (keeping the newest `keep`). Throws
    // std::runtime_error with a one-line message; the previous checkpoints are then untouched. Collective:
    // every rank calls it and every rank throws if rank 0's write failed.
    void save(const std::string& dir, int keep);
    // Restores the newest valid checkpoint of `dir` into the model, the data source and `progress`.
    // Returns its path. Throws std::runtime_error (no valid checkpoint, or one of another model/recipe).
    std::string resume(const std::string& dir);

    TrainProgress progress;

  private:
    std::vector<HostTensor> host_views();  // the state tensors over host_ (allocated on first use)
    CheckpointMeta meta() const;

    const TrainConfig& cfg_;
    GptModel* model_;
    TokenSource* train_data_;
    Communicator* comm_;
    std::vector<uint8_t> host_;
};
