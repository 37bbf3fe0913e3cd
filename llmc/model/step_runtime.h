// The host side of a training step that never waits inside (GptModel::launch_step): the device token slots
// of the micro-steps and their pinned staging (double buffered), the scalars the step reads back once at
// its end, and the captured CUDA graph.
#pragma once
#include <cstddef>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/kernels/adamw/adamw.cuh"

// One micro-step's tokens on the device (and in pinned host memory on their way there): inputs, targets and
// the embedding backward's token buckets (llmc/kernels/encoder.cuh), one block of token_slot_ints(N) ints.
struct TokenSlot {
    int *inputs, *targets, *bucket_offsets, *bucket_positions, *bucket_tokens, *num_buckets;
};
inline size_t token_slot_ints(size_t N) { return 5 * N + 2; }
inline TokenSlot token_slot_at(int* base, size_t N) {
    return {base, base + N, base + 2 * N, base + 3 * N + 1, base + 4 * N + 1, base + 5 * N + 1};
}

// The scalars a step reads back once, at its end (one 16-byte copy to pinned memory).
struct StepScalars {
    float loss_sum;    // sum over the micro-steps of the loss summed over the ranks
    float grad_norm;   // global, before clipping
    int apply;         // 1: the update was applied; 0: skipped (non-finite loss or norm), nothing changed
    float grad_scale;  // the clip factor
};

// One captured training step: its executable graph, the attention workspace its cuDNN kernels were captured
// with (a moved workspace means capturing again), and how many phase marks it records at each replay.
struct CapturedStep {
    cudaGraphExec_t exec = nullptr;
    const void* cudnn_workspace = nullptr;
    size_t phase_marks = 0;
};

class StepRuntime {
  public:
    StepRuntime(int accum_steps, size_t tokens_per_micro_step);
    ~StepRuntime();
    StepRuntime(const StepRuntime&) = delete;
    StepRuntime& operator=(const StepRuntime&) = delete;

    // The device slots (one block of accum_steps x token_slot_ints(N) ints in the activation allocation).
    void bind_device_slots(int* device_slots) { device_slots_ = device_slots; }
    TokenSlot slot(int k) const { return token_slot_at(device_slots_ + (size_t)k * slot_ints_, N_); }
    // Micro-step k's pinned staging slot of the next batch (k = 0 takes the other buffer, once its last
    // upload is done), and the upload of it to the device slot, queued on `stream`.
    TokenSlot pinned_slot(int k);
    void upload(int k, cudaStream_t stream);

    StepScalars* readback = nullptr;           // pinned
    AdamWStepScalars* pinned_adamw = nullptr;  // pinned: [0] decayed tensors, [1] the others
    bool in_flight = false;
    int eager_steps = 0;           // steps run uncaptured (the first builds the library plans)
    int profiled_eager_steps = 0;  // of those, with phase marks (the first creates the timer's events)
    CapturedStep graph;            // the training step
    CapturedStep profiled_graph;   // the same step with the phase marks as event nodes (--profile)
    bool last_step_replayed = false;

  private:
    int accum_steps_;
    size_t N_, slot_ints_;
    int* device_slots_ = nullptr;
    int* pinned_[2] = {nullptr, nullptr};
    cudaEvent_t pinned_free_[2] = {nullptr, nullptr};  // the last upload from each buffer
    int buffer_ = 0;
};
