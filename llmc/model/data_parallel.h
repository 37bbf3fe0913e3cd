// The model's collectives over the data-parallel ranks (one process per GPU, llmc/parallel/comm.h), on the
// communication stream and ordered against the compute stream by events: the all-reduce of a few floats,
// the per-layer reduce-scatter of the gradients into each rank's ZeRO-1 shard, the all-gather of the new
// BF16 weights, and the gather of whole state tensors for checkpoints. With one GPU nothing is communicated.
#pragma once
#include <functional>

#include "llmc/gpu/phase_timer.h"
#include "llmc/model/params.h"
#include "llmc/parallel/comm.h"

struct GpuContext;

class DataParallelComm {
  public:
    // comm null or inactive: one GPU.
    DataParallelComm(Communicator* comm, GpuContext* ctx, const ModelParams* params, PhaseTimer* timer);
    ~DataParallelComm();
    DataParallelComm(const DataParallelComm&) = delete;
    DataParallelComm& operator=(const DataParallelComm&) = delete;

    bool sharded() const { return world_ > 1; }
    int rank() const { return rank_; }
    int world() const { return world_; }
    Communicator* comm() const { return comm_; }

    // Orders the communication stream after the work queued on the compute stream so far, and back (the
    // profile charges the wait to exposed communication).
    void comm_after_compute();
    void compute_after_comm();
    // In-place all-reduce of n floats on the communication stream, between the compute stream's work so far
    // and its next.
    void all_reduce(float* data, size_t n, ncclRedOp_t op);
    // Gradients of layer l (the per-layer tensors), or of the other tensors (wte, wpe, lnf) for l < 0:
    // afterwards this rank's chunk holds the sum over the ranks.
    void reduce_scatter_grads(int l);
    // Every rank's updated shard of the BF16 working weights to every rank, one group per layer; with
    // skip(k), not those of parameter tensor k, and more(l, gather) adds to layer l's group: gather(whole,
    // chunk) all-gathers in place the bytes of every rank's chunk of `whole` (world x chunk bytes,
    // rank-major).
    using GatherBytes = std::function<void(unsigned char* whole, size_t chunk)>;
    void gather_weights(const std::function<bool(int k)>& skip = nullptr,
                        const std::function<void(int l, const GatherBytes& gather)>& more = nullptr);
    // Every rank's n elements at `chunk` into `whole` (world x n, rank order), on the communication stream
    // alone: the caller orders it against the compute stream (comm_after_compute) and waits for it.
    void all_gather(const float* chunk, float* whole, size_t n);
    void all_gather(const bf16* chunk, bf16* whole, size_t n);

  private:
    Communicator* comm_;
    GpuContext* ctx_;
    const ModelParams* params_;
    PhaseTimer* timer_;
    int rank_ = 0, world_ = 1;
    cudaEvent_t compute_done_ = nullptr, comm_done_ = nullptr;
};
