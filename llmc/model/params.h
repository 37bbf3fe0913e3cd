// The model's parameters and optimizer state in one device allocation, laid out by the parameter table
// (llmc/model/layout.h): BF16 working weights and gradients (whole, canonical order) and this rank's ZeRO-1
// shard of the FP32 master weights and AdamW moments (FP32, or BF16 with --adam-moments bf16)
// (llmc/parallel/shard_view.h).
#pragma once
#include <vector>

#include "llmc/gpu/arena.h"
#include "llmc/model/layout.h"
#include "llmc/parallel/shard_view.h"

// Where a parameter tensor's ZeRO-1 shard lives: in the full gradient/BF16 buffers at full_offset, in this
// rank's master/m/v buffers at shard_offset (shard_numel elements), addressed through `view`.
struct ParamShard {
    size_t full_offset, slices, slice_numel, shard_offset, shard_numel;
    ShardView view;
};

struct ModelParams {
    // Plans the shards of every tensor; exits with a one-line error when `world` does not divide a slice.
    ModelParams(const ModelConfig& m, int rank, int world, bool bf16_moments = false);
    // Adds the buffers to `arena` (allocated by the caller).
    void plan(Arena* arena);

    std::vector<ParamTensorInfo> table;
    std::vector<ParamShard> shards;  // per parameter tensor, canonical order
    size_t P = 0;                    // parameters
    size_t P_shard = 0;              // master/m/v elements on this rank
    bf16* params = nullptr;          // working weights, canonical order
    bf16* grads = nullptr;
    float* master = nullptr;  // this rank's shard (P_shard), as the moments
    bool bf16_moments = false;
    float *adam_m = nullptr, *adam_v = nullptr;     // FP32 moments (null with bf16_moments)
    bf16 *adam_m16 = nullptr, *adam_v16 = nullptr;  // BF16 moments (null without)

    // fn(m, v) with the moment buffers in their storage type (float* or bf16*).
    template <class Fn>
    void with_moments(Fn&& fn) const {
        if (bf16_moments)
            fn(adam_m16, adam_v16);
        else
            fn(adam_m, adam_v);
    }
    size_t moment_bytes() const { return bf16_moments ? sizeof(bf16) : sizeof(float); }

    bf16* param(int id) const { return params + table[id].offset; }
    bf16* grad(int id) const { return grads + table[id].offset; }
    // Layer l's slice of per-layer tensor `id` (l = 0 for the others) in a buffer of the canonical layout.
    template <class T>
    T* slice(T* base, int id, int l) const {
        return base + table[id].offset + (size_t)l * table[id].slice_numel();
    }
};

// This rank's chunk of layer l's slice of tensor `id` in a sharded buffer (master, m, v: P_shard elements);
// on one GPU the same as slice(). The chunk is the elements [view.rank_offset, + view.chunk) of the slice.
template <class T>
T* shard_slice(const ModelParams& p, T* shard_base, int id, int l) {
    const ParamShard& sh = p.shards[id];
    return shard_base + sh.shard_offset + (size_t)l * sh.view.chunk;
}
