// Parameter and optimizer-state layout and ZeRO-1 shards (llmc/model/params.h).
#include "llmc/model/params.h"

ModelParams::ModelParams(const ModelConfig& m, int rank, int world, bool bf16)
    : table(parameter_table(m)), bf16_moments(bf16) {
    for (const ParamTensorInfo& t : table) {
        P += t.numel;
        ParamShard sh;
        sh.full_offset = t.offset;
        sh.slices = t.slices();
        sh.slice_numel = t.slice_numel();
        if (sh.slice_numel % world != 0)
            fatal(
                "%d GPUs do not divide parameter %s (%zu elements per slice); use a number of GPUs that "
                "divides it",
                world, t.name.c_str(), sh.slice_numel);
        sh.view = ShardView::of(sh.slice_numel, rank, world);
        sh.shard_numel = sh.slices * sh.view.chunk;
        sh.shard_offset = P_shard;
        P_shard += sh.shard_numel;
        shards.push_back(sh);
    }
}

void ModelParams::plan(Arena* arena) {
    arena->add("params bf16", &params, P);
    arena->add("grads bf16", &grads, P);
    // ZeRO-1: optimizer state and master weights are this rank's shard
    arena->add("master fp32", &master, P_shard);
    if (bf16_moments) {
        arena->add("adam m bf16", &adam_m16, P_shard);
        arena->add("adam v bf16", &adam_v16, P_shard);
    } else {
        arena->add("adam m fp32", &adam_m, P_shard);
        arena->add("adam v fp32", &adam_v, P_shard);
    }
}
