#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "llmc/host/check.h"
#include "llmc/parallel/comm.h"
#include "llmc/parallel/rendezvous.h"

namespace {
double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string ranks_per_gpu_unsupported(int ranks_per_gpu) {
    if (ranks_per_gpu <= 1) return "";
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) v = 0;
    if (v >= kNcclMultiRankGpuVersion) return "";
    char msg[320];
    snprintf(msg, sizeof msg,
             "--ranks-per-gpu %d: ranks sharing a GPU need NCCL >= 2.30, this process loaded NCCL %d.%d.%d "
             "(put a newer libnccl.so.2 first in LD_LIBRARY_PATH; README \"Several GPUs\")",
             ranks_per_gpu, v / 10000, v % 10000 / 100, v % 100);
    return msg;
}

Communicator::Communicator(const LaunchInfo& launch, const Rendezvous& rendezvous, double timeout_s,
                           int ranks_per_gpu)
    : rank_(launch.rank), world_(launch.world_size), timeout_s_(timeout_s) {
    if (world_ <= 1) return;
    // NCCL refuses two ranks on one GPU unless told (it reads the variable at its first communicator)
    if (ranks_per_gpu > 1) setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", /*overwrite=*/1);
    ncclUniqueId id;
    if (rank_ == 0) CHECK_NCCL(ncclGetUniqueId(&id));
    bootstrap_broadcast(rendezvous, rank_, world_, &id, sizeof(id), timeout_s_);  // bounded; may throw
    watchdog_ = std::thread([this] { watch(); });  // from here on every wait is bounded by the watchdog
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&scratch_, kScratchFloats * sizeof(float)));
    CHECK_CUDA(cudaMemset(scratch_, 0, kScratchFloats * sizeof(float)));
    arm(timeout_s_, "the other ranks to create the NCCL communicator");
    CHECK_NCCL(ncclCommInitRank(&nccl_, world_, id, rank_));
    nccl_ready_ = true;
    barrier(stream_, timeout_s_, "the other ranks to join");
    cleanup_rendezvous(rendezvous, rank_);
}

Communicator::~Communicator() {
    if (!active()) return;
    stop_ = true;
    if (watchdog_.joinable()) watchdog_.join();
    if (nccl_) ncclCommDestroy(nccl_);
    if (scratch_) cudaFree(scratch_);
    if (stream_) cudaStreamDestroy(stream_);
}

void Communicator::arm(double seconds, const char* what) {
    if (!active()) return;
    waiting_for_ = what;
    deadline_ = now_s() + seconds;
}

void Communicator::disarm() { deadline_ = 0; }

void Communicator::die(const std::string& why) {
    fprintf(stderr, "error: rank %d of %d: %s; stopping this rank\n", rank_, world_, why.c_str());
    fflush(stderr);
    fflush(stdout);
    _exit(1);  // the GPU may be blocked in a collective that will never finish: no orderly teardown
}

void Communicator::watch() {
    while (!stop_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (nccl_ready_) {
            ncclResult_t async = ncclSuccess;
            if (ncclCommGetAsyncError(nccl_, &async) == ncclSuccess && async != ncclSuccess &&
                async != ncclInProgress)
                die(std::string("NCCL error: ") + ncclGetErrorString(async) + " (" +
                    (ncclGetLastError(nccl_) ? ncclGetLastError(nccl_) : "") + ")");
        }
        const double deadline = deadline_;
        if (deadline > 0 && now_s() > deadline) {
            char msg[256];
            snprintf(msg, sizeof(msg),
                     "no progress while waiting for %s (timeout %.0f s, --comm-timeout): another rank "
                     "stopped, died or hangs",
                     waiting_for_.load(), timeout_s_);
            die(msg);
        }
    }
}

void Communicator::all_reduce(float* data, size_t n, ncclRedOp_t op, cudaStream_t stream) {
    if (active()) CHECK_NCCL(ncclAllReduce(data, data, n, ncclFloat32, op, nccl_, stream));
}

void Communicator::barrier(cudaStream_t stream, double seconds, const char* what) {
    if (!active()) return;
    arm(seconds, what);
    CHECK_NCCL(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, nccl_, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    disarm();
}

int Communicator::broadcast_int(int value, double seconds, const char* what) {
    if (!active()) return value;
    arm(seconds, what);
    float v = rank_ == 0 ? (float)value : 0.0f;  // exact for small integers
    CHECK_CUDA(cudaMemcpyAsync(scratch_, &v, sizeof(float), cudaMemcpyHostToDevice, stream_));
    CHECK_NCCL(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, nccl_, stream_));
    CHECK_CUDA(cudaMemcpyAsync(&v, scratch_, sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    disarm();
    return (int)v;
}

std::vector<int> Communicator::reduce_ints(const std::vector<int>& values, ncclRedOp_t op, double seconds,
                                           const char* what) {
    if (!active()) return values;
    CHECK((int)values.size() <= kScratchFloats, "reduce_ints: %zu values", values.size());
    std::vector<float> v(values.begin(), values.end());
    arm(seconds, what);
    CHECK_CUDA(
        cudaMemcpyAsync(scratch_, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    CHECK_NCCL(ncclAllReduce(scratch_, scratch_, v.size(), ncclFloat32, op, nccl_, stream_));
    CHECK_CUDA(
        cudaMemcpyAsync(v.data(), scratch_, v.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    disarm();
    return std::vector<int>(v.begin(), v.end());
}

int Communicator::max_int(int value, double seconds, const char* what) {
    return reduce_ints({value}, ncclMax, seconds, what)[0];
}

std::vector<int> Communicator::sum_ints(const std::vector<int>& values, double seconds, const char* what) {
    return reduce_ints(values, ncclSum, seconds, what);
}

bool Communicator::identical_on_all_ranks(uint32_t value, double seconds) {
    const int lo = (int)(value & 0xFFFF), hi = (int)(value >> 16);
    // max(x) == x and max(65535 - x) == 65535 - x on every rank: the max equals the min
    const std::vector<int> m =
        reduce_ints({lo, hi, 0xFFFF - lo, 0xFFFF - hi}, ncclMax, seconds, "the FP8 scale check");
    return m[0] == lo && m[1] == hi && m[2] == 0xFFFF - lo && m[3] == 0xFFFF - hi;
}
