// Data-parallel communication: one process per GPU, NCCL for every transfer between GPUs.
//
// The communicator is created from the launcher's rank/world (llmc/parallel/launch.h) and a bootstrap
// rendezvous that carries NCCL's unique id from rank 0 to the others. Collectives run on a dedicated
// communication stream so the gradient reduce-scatter overlaps the backward pass; ordering with the compute
// stream goes through events (the caller records/waits them).
//
// Failure handling: a watchdog thread checks NCCL's asynchronous error state, and a deadline the driver arms
// around every region that may wait on another rank (a step, a checkpoint). A rank that dies leaves the
// others blocked inside a collective forever; the watchdog turns that into a one-line message naming this
// rank and what it was waiting for, then exits the process (the blocked GPU work cannot be cancelled).
// With one process (world 1) nothing is created and every call is a no-op.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "llmc/parallel/launch.h"

// Ranks sharing a GPU (--ranks-per-gpu K > 1) need NCCL 2.30 or later (NCCL_MULTI_RANK_GPU_ENABLE, which the
// Communicator sets for them); "" when the NCCL this process loaded allows it, else the one-line reason.
std::string ranks_per_gpu_unsupported(int ranks_per_gpu);
constexpr int kNcclMultiRankGpuVersion = 23000;  // NCCL 2.30.0 in ncclGetVersion's numbering

class Communicator {
  public:
    // world 1: inactive. Otherwise bootstraps over `rendezvous` (throws std::runtime_error on a bootstrap
    // failure) and creates the NCCL communicator on the current CUDA device, within timeout_s; with
    // ranks_per_gpu > 1 it lets NCCL put several ranks on one GPU.
    Communicator(const LaunchInfo& launch, const Rendezvous& rendezvous, double timeout_s,
                 int ranks_per_gpu = 1);
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int rank() const { return rank_; }
    int world() const { return world_; }
    bool active() const { return world_ > 1; }
    ncclComm_t nccl() const { return nccl_; }
    cudaStream_t stream() const { return stream_; }  // the communication stream
    double timeout_s() const { return timeout_s_; }

    // Until disarm(): if the process is still in this region `seconds` from now, the watchdog reports
    // "rank R of W: ... waiting for <what>" and exits. Re-arming moves the deadline.
    void arm(double seconds, const char* what);
    void disarm();

    // In-place all-reduce (ncclSum, ncclMax, ...) of n floats on `stream` (a no-op when inactive).
    void all_reduce(float* data, size_t n, ncclRedOp_t op, cudaStream_t stream);
    // All ranks reach this point (a one-float all-reduce, synchronized), waiting at most `seconds`.
    void barrier(cudaStream_t stream, double seconds, const char* what);
    // Rank 0's `value` (a small integer) on every rank; a barrier waiting at most `seconds`.
    int broadcast_int(int value, double seconds, const char* what);
    // The maximum over the ranks of `value` (0 <= value < 2^24); a barrier.
    int max_int(int value, double seconds, const char* what);
    // The element-wise sum over the ranks of up to 8 integers (each sum < 2^24, e.g. example counts); a
    // barrier.
    std::vector<int> sum_ints(const std::vector<int>& values, double seconds, const char* what);
    // Whether every rank passed the same value (e.g. a hash of its FP8 scales); a barrier.
    bool identical_on_all_ranks(uint32_t value, double seconds);

  private:
    void watch();
    [[noreturn]] void die(const std::string& why);

    int rank_ = 0, world_ = 1;
    double timeout_s_ = 0;
    ncclComm_t nccl_ = nullptr;
    cudaStream_t stream_ = nullptr;
    float* scratch_ = nullptr;  // kScratchFloats floats for the small host-visible collectives
    static constexpr int kScratchFloats = 8;
    // Element-wise max or sum over the ranks of up to kScratchFloats integers, exact in fp32 while every
    // value and result is in [0, 2^24).
    std::vector<int> reduce_ints(const std::vector<int>& values, ncclRedOp_t op, double seconds,
                                 const char* what);
    std::atomic<double> deadline_{0};  // steady-clock seconds; 0: disarmed
    std::atomic<const char*> waiting_for_{""};
    std::atomic<bool> nccl_ready_{false}, stop_{false};
    std::thread watchdog_;
};
