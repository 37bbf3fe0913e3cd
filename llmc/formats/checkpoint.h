// Training checkpoints: one safetensors file per checkpoint, DIR/ckpt_<step, 8 digits>.safetensors, holding
// the whole training state as full tensors (never per-rank shards, so any number of GPUs can resume it):
// clang-format off
//   master.<param>, adam_m.<param>, adam_v.<param>         F32, canonical names and shapes (llmc/model/layout.h)
//   fp8.amax_history [H, slots], fp8.scale, fp8.scale_inv  F32, FP8 runs only (staging row 0 included)
// clang-format on
// and in "__metadata__" (all strings): format "train_gpt-checkpoint", version, step (the next step to run),
// opt_step (AdamW updates done), train_data.a / train_data.b (the token source's position), fp8.calibrating,
// model (the shape signature, must match to resume), recipe (precision and FP8 recipe, must match), config
// (the run's resolved configuration as JSON, for people), and a crc32 per tensor (safetensors.h).
// Writes are atomic (temporary file, fsync, rename, fsync of the directory): a crash or kill -9 at any time
// leaves the previous checkpoints intact. Host-only.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmc/formats/dataloader.h"

// One tensor of the state in host memory (the caller owns the bytes).
struct HostTensor {
    std::string name;
    std::string dtype;  // "F32"
    std::vector<int64_t> shape;
    void* data;
    size_t bytes;
};

struct CheckpointMeta {
    int64_t step = 0;      // the next step to run
    int64_t opt_step = 0;  // AdamW updates applied so far (bias correction uses opt_step + 1 next)
    TokenPosition train_data;
    bool fp8_calibrating = false;
    std::string model;   // shape signature, e.g. "L=12 C=768 H=12 V=50304 maxT=1024 gelu=erf"
    std::string recipe;  // e.g. "bf16" or "fp8 hybrid history=1024 amax=max margin=0"
    std::string config;  // the resolved configuration (JSON), informational
};

// DIR/ckpt_00000042.safetensors
std::string checkpoint_path(const std::string& dir, int64_t step);
// Checkpoint files in `dir`, newest (highest step) first. Temporary files of interrupted writes are ignored.
std::vector<std::string> list_checkpoints(const std::string& dir);
// Writes a checkpoint for meta.step, then deletes all but the `keep` newest (keep >= 1). Throws
// std::runtime_error with a one-line message (unwritable directory, disk full, ...); the previous
// checkpoints are then untouched.
void write_checkpoint(const std::string& dir, const CheckpointMeta& meta,
                      const std::vector<HostTensor>& tensors, int keep);
// A valid checkpoint of another model or recipe: an error of the run's flags, not of the file, so resuming
// stops instead of falling back to an older checkpoint.
struct CheckpointMismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Reads checkpoint `path` into `tensors` (names, dtypes and shapes must match exactly; every checksum is
// verified) after checking that it is ours and that its model and recipe equal `expect`'s. Throws
// std::runtime_error "<path>: <what is wrong>" otherwise. The tensors may be partly overwritten on failure.
CheckpointMeta read_checkpoint(const std::string& path, const CheckpointMeta& expect,
                               const std::vector<HostTensor>& tensors);
// The header and metadata checks of read_checkpoint alone (the same code), without reading tensor data:
// fast on a multi-GB file. Returns the metadata; throws like read_checkpoint.
CheckpointMeta read_checkpoint_meta(const std::string& path, const CheckpointMeta& expect);
// What read_latest_checkpoint will start from, as far as headers tell (for the checks before the GPU): the
// newest checkpoint of `dir` whose header and metadata read; one of another model or recipe throws
// CheckpointMismatch; no checkpoint, or none that reads, throws std::runtime_error naming `dir`. Prints
// nothing (the resume itself warns about the ones it skips).
std::string find_resumable_checkpoint(const std::string& dir, const CheckpointMeta& expect);
// The configuration (config.json text) of the newest checkpoint of `dir` whose header reads as ours, whatever
// its model and recipe; "" when there is none (the resume's own checks then say what is wrong).
std::string latest_checkpoint_config(const std::string& dir);
// The newest checkpoint of `dir` that reads without error; each damaged newer one is reported on stderr as a
// one-line warning and skipped. Throws if `dir` has no checkpoint or none is valid (naming the last reason).
CheckpointMeta read_latest_checkpoint(const std::string& dir, const CheckpointMeta& expect,
                                      const std::vector<HostTensor>& tensors, std::string* path_out);
