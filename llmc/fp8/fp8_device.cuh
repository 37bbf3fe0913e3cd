// The device side of FP8 quantization, shared by every kernel that writes FP8 (the casts of
// llmc/kernels/cast/cast.cu, the LayerNorm and GELU producers, the FP8 classifier, AdamW with the weight
// cast), so that all quantize, reduce the amax and transpose with the very same instructions: a fused
// producer is bit-identical to its BF16 kernel followed by fp8_cast_transpose by construction. For .cu files
// of kernels, not a launcher header.
#pragma once
#include <cuda_pipeline_primitives.h>

#include <cstdint>
#include <type_traits>

#include "llmc/fp8/fp8_tensor.h"
#include "llmc/fp8/scale_state.cuh"
#include "llmc/gpu/cuda_common.cuh"

// ---------------------------------------------------------------------------------------------------------
// Device helpers
// ---------------------------------------------------------------------------------------------------------

// Four floats -> four saturated FP8 bytes (round to nearest even; first element in the lowest byte, i.e. at
// the lowest address).
template <__nv_fp8_interpretation_t FMT>
__device__ __forceinline__ uint32_t to_fp8x4(float a, float b, float c, float d) {
    const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, FMT);
    const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, FMT);
    return lo | (hi << 16);
}

// Eight values quantized with `scale` (fp8 = saturate(v * scale)): bytes 0-3 in .x, 4-7 in .y (the 8 bytes
// in memory order).
template <__nv_fp8_interpretation_t FMT>
__device__ __forceinline__ uint2 to_fp8x8(const float v[8], float scale) {
    return make_uint2(to_fp8x4<FMT>(v[0] * scale, v[1] * scale, v[2] * scale, v[3] * scale),
                      to_fp8x4<FMT>(v[4] * scale, v[5] * scale, v[6] * scale, v[7] * scale));
}

// Block max of |x| bits (1-D blocks, blockDim.x a multiple of 32), then one atomicMax on the float bits of
// the staging amax. Non-negative float bit patterns order like unsigned ints (NaN above +inf), so the integer
// max is the float max and keeps NaN. Contains a __syncthreads that callers rely on as the barrier publishing
// their shared-memory tile.
__device__ __forceinline__ void block_amax_atomic(uint32_t bits, float* staging) {
    __shared__ uint32_t warp_max[32];
    bits = __reduce_max_sync(0xffffffffu, bits);
    if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = bits;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t m = 0;
        for (int w = 0; w < (int)blockDim.x / 32; w++) m = max(m, warp_max[w]);
        if (m != 0) atomicMax(reinterpret_cast<unsigned int*>(staging), m);
    }
}

// 4x4 byte transpose: in[r] holds bytes (r, 0..3); out[c] gets bytes (0..3, c).
__device__ __forceinline__ void transpose4x4(const uint32_t in[4], uint32_t out[4]) {
    const uint32_t t0 = __byte_perm(in[0], in[1], 0x5140);  // a0 b0 a1 b1
    const uint32_t t1 = __byte_perm(in[0], in[1], 0x7362);  // a2 b2 a3 b3
    const uint32_t t2 = __byte_perm(in[2], in[3], 0x5140);  // c0 d0 c1 d1
    const uint32_t t3 = __byte_perm(in[2], in[3], 0x7362);  // c2 d2 c3 d3
    out[0] = __byte_perm(t0, t2, 0x5410);                   // a0 b0 c0 d0
    out[1] = __byte_perm(t0, t2, 0x7632);                   // a1 b1 c1 d1
    out[2] = __byte_perm(t1, t3, 0x5410);
    out[3] = __byte_perm(t1, t3, 0x7632);
}

// Transposed write of one 16-row x 4-column block: w[k] holds the 4 FP8 bytes of row n + k (columns
// c..c+3); writes 16 bytes (rows n..n+15) to each of the transposed rows c..c+3 of out_T [C, N].
__device__ __forceinline__ void write_transposed_16x4(__nv_fp8_storage_t* out_T, const uint32_t w[16], int c,
                                                      int n, int N) {
    uint32_t o[4][4];  // o[q][j]: transposed row c + j, bytes of rows n + 4q .. n + 4q + 3
#pragma unroll
    for (int q = 0; q < 4; q++) transpose4x4(&w[4 * q], o[q]);
#pragma unroll
    for (int j = 0; j < 4; j++)
        *reinterpret_cast<uint4*>(out_T + (size_t)(c + j) * N + n) =
            make_uint4(o[0][j], o[1][j], o[2][j], o[3][j]);
}

// ---- the 128 x 128 cast + transpose tile (fp8.cu's cast_transpose_kernel, gelu_fp8.cu's GELU) ----
// Tile of 128 rows x 128 columns per block of 256 threads. Phase 1: thread (rr = tid/16, cc = tid%16) handles
// 8 columns [cc*8, cc*8+8) of rows rr + 16 i (i < 8) with 16-byte loads (all loads of a batch issued before
// any math), quantizes them, stores 8 row-wise bytes per row and parks them in shared memory (128 rows x 33
// words, the pad word making both phases bank-conflict free). Phase 2 (ct_tile_write_transposed): thread
// (g, s) gathers the 16 x 4 byte block of rows [16s, 16s+16) and columns [4g, 4g+4) (16 word loads),
// transposes it in registers with byte permutes and writes 4 rows of the transposed output, 16 bytes each;
// lane pairs write adjacent 16-byte halves of one 32-byte sector. Partial tiles: N and C are multiples of 16,
// so 16-row segments and 8-column chunks are whole.
constexpr int kCtTile = 128;
constexpr int kCtThreads = 256;
constexpr int kCtTileWords = kCtTile / 4 + 1;

// Phase-1 coordinates of this thread in the tile of block (blockIdx.x, blockIdx.y): rows n0 + rr + 16 i
// (i < 8), columns [c, c + 8), col_ok if those lie inside the tensor.
struct CtTileCoords {
    int n0, c0, rr, cc, c;
    bool col_ok;
};
__device__ __forceinline__ CtTileCoords ct_tile_coords(int C) {
    const int tid = threadIdx.x;
    CtTileCoords t;
    t.n0 = blockIdx.y * kCtTile;
    t.c0 = blockIdx.x * kCtTile;
    t.cc = tid % 16;
    t.rr = tid / 16;
    t.c = t.c0 + t.cc * 8;
    t.col_ok = t.c < C;
    return t;
}

// Phase 1's loads staged through shared memory (the tile kernels with math between load and store): thread
// (rr, cc) reads rows rr + 16 i (i < 8), columns [c, c + 8) of INPUTS bf16 tensors in[0..INPUTS). It copies
// its own 16-byte chunks of its next STAGES rows into its own slots of `stage` ([STAGES][INPUTS][kCtThreads]
// chunks) with cp.async and reads back only those, so the loads stay in flight through the math without
// holding registers and without a barrier (one commit group per row, empty past the tile or the tensor).
// process(i, chunks) gets row i's chunks (chunks[input]) in row order; where the chunk lies outside the
// tensor (row n >= N, or !t.col_ok) nothing was copied and chunks holds stale bytes, which process must not
// use.
template <int STAGES, int INPUTS>
constexpr size_t ct_stage_bytes() {
    return (size_t)STAGES * INPUTS * kCtThreads * sizeof(Packed128<bf16>);
}
template <int STAGES, int INPUTS, class Process>
__device__ __forceinline__ void ct_staged_rows(Packed128<bf16>* stage, const CtTileCoords& t, int N, int C,
                                               const bf16* const* in, Process process) {
    const auto slot = [&](int i, int input) {
        return stage + ((i % STAGES) * INPUTS + input) * kCtThreads + threadIdx.x;
    };
    const auto fetch = [&](int i) {
        const int n = t.n0 + t.rr + 16 * i;
        if (i < 8 && t.col_ok && n < N) {
            const size_t off = (size_t)n * C + t.c;
#pragma unroll
            for (int input = 0; input < INPUTS; input++)
                __pipeline_memcpy_async(slot(i, input), in[input] + off, sizeof(Packed128<bf16>));
        }
        __pipeline_commit();
    };
#pragma unroll
    for (int i = 0; i < STAGES; i++) fetch(i);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        __pipeline_wait_prior(STAGES - 1);  // row i's group (and the ones before it) have landed
        Packed128<bf16> chunks[INPUTS];
#pragma unroll
        for (int input = 0; input < INPUTS; input++) chunks[input] = *slot(i, input);
        process(i, chunks);
        fetch(i + STAGES);  // into the slots just read (this thread's reads of them are consumed above)
    }
    __pipeline_wait_prior(0);  // the trailing groups are empty; no copy may outlive the block
}

// Element-wise (1-D grid) kernels (fp8_cast, the amax passes, fp8_gelu_cast): blocks of kEwThreads, each
// thread kEwChunks chunks of 8 elements, coalesced, loads issued first.
constexpr int kEwThreads = 256;
constexpr int kEwChunks = 4;
constexpr long kEwPerBlock = (long)kEwThreads * kEwChunks * 8;

// The 1-D grid for n elements, checked to fit a launch (`who` names the caller in the error).
inline unsigned ew_grid(long n, const char* who) {
    const long grid = (n + kEwPerBlock - 1) / kEwPerBlock;
    CHECK(grid <= 0x7fffffffL, "%s: n = %ld too large", who, n);
    return (unsigned)grid;
}

// The element-wise pass of one thread: its kEwChunks chunks of 8 elements (coalesced across the block), all
// loads issued (load(raw, idx)) before any math; then per chunk values(raw, v, amax_bits) computes the 8
// values and max-es their |bits| into amax_bits, and with kWrite their row-wise bytes are written, quantized
// with `scale`. Returns the thread's amax bits.
template <bool kWrite, __nv_fp8_interpretation_t FMT, class Raw, class Load, class Values>
__device__ __forceinline__ uint32_t ew_chunks(long n, __nv_fp8_storage_t* out, float scale, Load load,
                                              Values values) {
    const long base = (long)blockIdx.x * kEwPerBlock;
    Raw raw[kEwChunks];
#pragma unroll
    for (int i = 0; i < kEwChunks; i++) {
        const long idx = base + ((long)i * kEwThreads + threadIdx.x) * 8;
        if (idx < n) load(raw[i], idx);
    }
    uint32_t amax_bits = 0;
#pragma unroll
    for (int i = 0; i < kEwChunks; i++) {
        const long idx = base + ((long)i * kEwThreads + threadIdx.x) * 8;
        if (idx < n) {
            float v[8];
            values(raw[i], v, amax_bits);
            if constexpr (kWrite) *reinterpret_cast<uint2*>(out + idx) = to_fp8x8<FMT>(v, scale);
        }
    }
    return amax_bits;
}

// Element-wise kernels: with kWrite, the scale_inv used to out_scale_inv (may be null) by one thread, and
// the scale returned for the quantization; without (amax only) nothing is read: 0.
template <bool kWrite>
__device__ __forceinline__ float ew_scale(float* out_scale_inv, const float* scale_ptr,
                                          const float* scale_inv_ptr) {
    if constexpr (kWrite) {
        if (out_scale_inv != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *out_scale_inv = *scale_inv_ptr;
        return *scale_ptr;
    } else {
        return 0.0f;
    }
}

// The scale_inv used to out_scale_inv (may be null), by one thread of the (2-D) grid.
__device__ __forceinline__ void ct_write_scale_inv(float* out_scale_inv, const float* scale_inv_ptr) {
    if (out_scale_inv != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
        *out_scale_inv = *scale_inv_ptr;
}

// Phase 1's shared-memory store: the 8 bytes of row r, columns [cc*8, cc*8+8) of the tile.
__device__ __forceinline__ void ct_tile_park(uint32_t* tile, int r, int cc, uint2 q) {
    tile[r * kCtTileWords + cc * 2] = q.x;
    tile[r * kCtTileWords + cc * 2 + 1] = q.y;
}

// Phase 2 of the tile at rows n0.., columns c0.. (after the barrier that publishes `tile`).
__device__ __forceinline__ void ct_tile_write_transposed(__nv_fp8_storage_t* out_T, const uint32_t* tile,
                                                         int n0, int c0, int N, int C) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = (warp % 2) * 16 + lane / 2;   // 4-column group, 0..31
    const int s = (warp / 2) * 2 + (lane & 1);  // 16-row segment, 0..7
    if (16 * s < N - n0 && 4 * g < C - c0) {
        uint32_t w[16];
#pragma unroll
        for (int k = 0; k < 16; k++) w[k] = tile[(16 * s + k) * kCtTileWords + g];
        write_transposed_16x4(out_T, w, c0 + 4 * g, n0 + 16 * s, N);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Host helpers for the launchers
// ---------------------------------------------------------------------------------------------------------

template <__nv_fp8_interpretation_t F>
using Fp8FmtTag = std::integral_constant<__nv_fp8_interpretation_t, F>;

// Checks that a tensor to be written is bound to a slot of the scale state (its scale, scale_inv and amax).
inline void fp8_check_slot(const Fp8Tensor& t) {
    CHECK(t.slot.scale != nullptr && t.slot.scale_inv != nullptr && t.slot.amax != nullptr,
          "fp8 tensor not bound to a slot of the scale state (fp8_bind)");
}

// Calls fn(Fp8FmtTag<...>{}) with the tag of `format`.
template <class Fn>
void fp8_dispatch_dtype(Fp8Dtype format, Fn fn) {
    if (format == Fp8Dtype::E4M3)
        fn(Fp8FmtTag<__NV_E4M3>{});
    else
        fn(Fp8FmtTag<__NV_E5M2>{});
}

// Calls fn(Fp8FmtTag<...>{}) with the tensor's format (checks that it is bound to a slot).
template <class Fn>
void fp8_dispatch_format(const Fp8Tensor& t, Fn fn) {
    fp8_check_slot(t);
    fp8_dispatch_dtype(t.format, fn);
}

// Checks that the tensor whose amax an amax-only pass measures is bound to a slot.
inline void fp8_check_bound(const Fp8Tensor& t, const char* who) {
    CHECK(t.slot.amax != nullptr, "%s: the tensor is not bound to a slot of the scale state (fp8_bind)", who);
}

// Calls fn with out's format tag where a tensor is written (kWrite), else with E4M3's: an amax-only pass
// writes no bytes, so its kernel does not depend on a format.
template <bool kWrite, class Fn>
void fp8_dispatch_written(const Fp8Tensor& t, Fn fn) {
    if constexpr (kWrite)
        fp8_dispatch_format(t, fn);
    else
        fn(Fp8FmtTag<__NV_E4M3>{});
}

// Launches an element-wise writing kernel over out's elements (row-wise bytes and scale_inv, with its slot's
// scale and staging amax): kernel_for(format tag) is the kernel, called as (staging, inputs..., n,
// out.data, out.scale_inv, scale, scale_inv).
template <class KernelFor, class... Inputs>
void fp8_launch_elementwise(const Fp8Tensor& out, const char* who, cudaStream_t stream, KernelFor kernel_for,
                            Inputs... inputs) {
    const long n = out.numel();
    const unsigned grid = ew_grid(n, who);
    fp8_dispatch_format(out, [&](auto tag) {
        const auto kernel = kernel_for(tag);
        kernel<<<grid, kEwThreads, 0, stream>>>(out.slot.amax, inputs..., n, out.data, out.scale_inv,
                                                out.slot.scale, out.slot.scale_inv);
        CHECK_LAUNCH();
    });
}
