// Pinned token staging and the step's readback (llmc/model/step_runtime.h).
#include "llmc/model/step_runtime.h"

StepRuntime::StepRuntime(int accum_steps, size_t N)
    : accum_steps_(accum_steps), N_(N), slot_ints_(token_slot_ints(N)) {
    const size_t bytes = accum_steps * slot_ints_ * sizeof(int);
    for (int i = 0; i < 2; i++) {
        CHECK_CUDA(cudaMallocHost(&pinned_[i], bytes));
        CHECK_CUDA(cudaEventCreateWithFlags(&pinned_free_[i], cudaEventDisableTiming));
    }
    CHECK_CUDA(cudaMallocHost(&readback, sizeof(StepScalars)));
    CHECK_CUDA(cudaMallocHost(&pinned_adamw, 2 * sizeof(AdamWStepScalars)));
}

StepRuntime::~StepRuntime() {
    for (int i = 0; i < 2; i++) {
        cudaFreeHost(pinned_[i]);
        cudaEventDestroy(pinned_free_[i]);
    }
    cudaFreeHost(readback);
    cudaFreeHost(pinned_adamw);
    for (CapturedStep* g : {&graph, &profiled_graph})
        if (g->exec) cudaGraphExecDestroy(g->exec);
}

TokenSlot StepRuntime::pinned_slot(int k) {
    CHECK(k >= 0 && k < accum_steps_, "stage_micro_batch: micro-step %d of %d", k, accum_steps_);
    if (k == 0) {  // a new batch: the other buffer, once its last upload (two batches ago) is done
        buffer_ ^= 1;
        CHECK_CUDA(cudaEventSynchronize(pinned_free_[buffer_]));
    }
    return token_slot_at(pinned_[buffer_] + (size_t)k * slot_ints_, N_);
}

void StepRuntime::upload(int k, cudaStream_t stream) {
    const int* host = pinned_[buffer_] + (size_t)k * slot_ints_;
    CHECK_CUDA(
        cudaMemcpyAsync(slot(k).inputs, host, slot_ints_ * sizeof(int), cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaEventRecord(pinned_free_[buffer_], stream));
}
