// ZeRO-1 shard addressing. A parameter tensor is `slices` equal slices of `slice_stride` elements (one per
// layer for per-layer tensors, else one); rank r of W owns `chunk` = slice_stride / W elements at
// rank_offset = r * chunk of every slice. A rank stores its optimizer state (FP32 master, AdamW m and v)
// contiguously, slice after slice; shard element i lives at full index map(i) in the gradient and parameter
// buffers. With one rank the view is the identity.
#pragma once
#include <cstddef>

#ifdef __CUDACC__
#define SHARD_VIEW_HD __host__ __device__
#else
#define SHARD_VIEW_HD
#endif

struct ShardView {
    size_t chunk = 0, slice_stride = 0, rank_offset = 0;
    bool identity = true;

    static ShardView whole() { return ShardView(); }
    static ShardView of(size_t slice_stride, int rank, int world) {
        ShardView v;
        v.chunk = slice_stride / (size_t)world;
        v.slice_stride = slice_stride;
        v.rank_offset = (size_t)rank * v.chunk;
        v.identity = world == 1;
        return v;
    }
    SHARD_VIEW_HD size_t map(size_t i) const {
        return identity ? i : (i / chunk) * slice_stride + rank_offset + i % chunk;
    }
    // Whether 8-element (16-byte bf16) vectors of the shard stay contiguous in the full buffers.
    bool vectorizable() const { return identity || (chunk % 8 == 0 && slice_stride % 8 == 0); }
};
