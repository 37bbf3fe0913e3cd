// The model's collectives (llmc/model/data_parallel.h).
#include "llmc/gpu/context.h"
#include "llmc/model/data_parallel.h"

DataParallelComm::DataParallelComm(Communicator* comm, GpuContext* ctx, const ModelParams* params,
                                   PhaseTimer* timer)
    : comm_(comm && comm->active() ? comm : nullptr), ctx_(ctx), params_(params), timer_(timer) {
    rank_ = comm_ ? comm_->rank() : 0;
    world_ = comm_ ? comm_->world() : 1;
    CHECK_CUDA(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming));
}

DataParallelComm::~DataParallelComm() {
    cudaEventDestroy(compute_done_);
    cudaEventDestroy(comm_done_);
}

void DataParallelComm::comm_after_compute() {
    CHECK_CUDA(cudaEventRecord(compute_done_, ctx_->stream));
    CHECK_CUDA(cudaStreamWaitEvent(comm_->stream(), compute_done_, 0));
}

void DataParallelComm::compute_after_comm() {
    CHECK_CUDA(cudaEventRecord(comm_done_, comm_->stream()));
    const Phase resume = timer_->current();
    timer_->mark(kPhaseComm, ctx_->stream);
    CHECK_CUDA(cudaStreamWaitEvent(ctx_->stream, comm_done_, 0));
    timer_->mark(resume, ctx_->stream);
}

void DataParallelComm::all_reduce(float* data, size_t n, ncclRedOp_t op) {
    comm_after_compute();
    comm_->all_reduce(data, n, op, comm_->stream());
    compute_after_comm();
}

void DataParallelComm::reduce_scatter_grads(int l) {
    comm_after_compute();
    CHECK_NCCL(ncclGroupStart());
    for (const ParamShard& sh : params_->shards) {
        if ((sh.slices > 1) != (l >= 0)) continue;
        bf16* base = params_->grads + sh.full_offset + (l >= 0 ? l : 0) * sh.slice_numel;
        CHECK_NCCL(ncclReduceScatter(base, base + sh.view.rank_offset, sh.view.chunk, ncclBfloat16, ncclSum,
                                     comm_->nccl(), comm_->stream()));
    }
    CHECK_NCCL(ncclGroupEnd());
}

void DataParallelComm::gather_weights(const std::function<bool(int k)>& skip,
                                      const std::function<void(int l, const GatherBytes& gather)>& more) {
    if (!sharded()) return;
    comm_after_compute();
    const GatherBytes gather = [&](unsigned char* whole, size_t chunk) {
        CHECK_NCCL(ncclAllGather(whole + (size_t)rank_ * chunk, whole, chunk, ncclUint8, comm_->nccl(),
                                 comm_->stream()));
    };
    for (int l = -1; l < (int)params_->table[kQkvw].slices(); l++) {  // the other tensors first
        CHECK_NCCL(ncclGroupStart());
        for (int k = 0; k < (int)params_->shards.size(); k++) {
            const ParamShard& sh = params_->shards[k];
            if ((sh.slices > 1) != (l >= 0) || (skip && skip(k))) continue;
            bf16* base = params_->params + sh.full_offset + (l >= 0 ? l : 0) * sh.slice_numel;
            CHECK_NCCL(ncclAllGather(base + sh.view.rank_offset, base, sh.view.chunk, ncclBfloat16,
                                     comm_->nccl(), comm_->stream()));
        }
        if (more && l >= 0) more(l, gather);
        CHECK_NCCL(ncclGroupEnd());
    }
    compute_after_comm();
}

void DataParallelComm::all_gather(const float* chunk, float* whole, size_t n) {
    CHECK_NCCL(ncclAllGather(chunk, whole, n, ncclFloat32, comm_->nccl(), comm_->stream()));
}

void DataParallelComm::all_gather(const bf16* chunk, bf16* whole, size_t n) {
    CHECK_NCCL(ncclAllGather(chunk, whole, n, ncclBfloat16, comm_->nccl(), comm_->stream()));
}
