// Per-phase GPU time of a step (GEMMs, casts, attention, optimizer, other), for the breakdown that shows
// where FP8 wins or loses. mark(phase) records an event on the stream: the time until the next mark is
// charged to `phase`. Disabled (the default), mark() records no event, so the hot path pays nothing.
// Every mark also opens an NVTX range named after the phase (closing the previous one), so an Nsight Systems
// trace groups the kernels the way the --profile table does (NVTX calls cost nanoseconds without a tool).
#pragma once
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <vector>

#include "llmc/host/check.h"

// kPhaseComm: the compute stream idle, waiting for a collective on the communication stream (exposed
// communication; the overlapped part costs nothing here).
enum Phase { kPhaseGemm, kPhaseCast, kPhaseAttention, kPhaseOptimizer, kPhaseOther, kPhaseComm, kNumPhases };
inline const char* phase_name(int p) {
    static const char* names[kNumPhases] = {"gemm",      "fp8 cast", "attention",
                                            "optimizer", "other",    "comm wait"};
    return names[p];
}

class PhaseTimer {
  public:
    ~PhaseTimer() {
        if (nvtx_open_) nvtxRangeEnd(nvtx_range_);
        release();
    }
    void enable(bool on) { enabled_ = on; }
    bool enabled() const { return enabled_; }
    // The phase of the span being timed (the last mark's).
    Phase current() const { return used_ ? phases_[used_ - 1] : kPhaseOther; }
    void mark(Phase phase, cudaStream_t stream) {
        // start/end ranges (not push/pop): they may straddle the driver's nested "step" range
        if (nvtx_open_) nvtxRangeEnd(nvtx_range_);
        nvtx_range_ = nvtxRangeStartA(phase_name(phase));
        nvtx_open_ = true;
        if (!enabled_) return;
        if (used_ == events_.size()) {
            cudaEvent_t e;
            CHECK_CUDA(cudaEventCreate(&e));
            events_.push_back(e);
            phases_.push_back(phase);
        }
        phases_[used_] = phase;
        // Inside a stream capture an external record becomes an event node, recorded at each replay (the flag
        // is refused outside a capture).
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        CHECK_CUDA(cudaStreamIsCapturing(stream, &capture));
        if (capture == cudaStreamCaptureStatusActive)
            CHECK_CUDA(cudaEventRecordWithFlags(events_[used_++], stream, cudaEventRecordExternal));
        else
            CHECK_CUDA(cudaEventRecord(events_[used_++], stream));
    }
    // Marks recorded since the last collect (a capture's are the ones its graph records).
    size_t marks() const { return used_; }
    // Forgets the marks since the last collect (a capture's: no event of them was recorded yet).
    void discard_marks() { used_ = 0; }
    // A graph captured with `marks` marks was launched: it records events 0..marks-1, with their phases as
    // they were at the capture.
    void replayed(size_t marks) { used_ = marks; }
    // Closes the current span (call after the last kernel), synchronizes, and returns ms per phase; resets.
    std::vector<double> collect(cudaStream_t stream) {
        std::vector<double> ms(kNumPhases, 0.0);
        if (!enabled_ || used_ == 0) return ms;
        mark(kPhaseOther, stream);
        CHECK_CUDA(cudaEventSynchronize(events_[used_ - 1]));
        for (size_t i = 0; i + 1 < used_; i++) {
            float t = 0;
            CHECK_CUDA(cudaEventElapsedTime(&t, events_[i], events_[i + 1]));
            ms[phases_[i]] += t;
        }
        used_ = 0;
        return ms;
    }

  private:
    void release() {
        for (cudaEvent_t e : events_) cudaEventDestroy(e);
        events_.clear();
    }
    bool enabled_ = false;
    bool nvtx_open_ = false;
    nvtxRangeId_t nvtx_range_ = 0;
    size_t used_ = 0;
    std::vector<cudaEvent_t> events_;
    std::vector<Phase> phases_;
};
