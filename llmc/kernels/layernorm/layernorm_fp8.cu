// LayerNorm (+ residual add) quantized to FP8 in the same pass, row-wise and transposed with its amax: the
// producer of the qkv and fc inputs (and of the FP8 LM head's). Kernels then launchers; the contracts in
// llmc/kernels/layernorm/layernorm_fp8.cuh.
//
// Bit-exactness with layernorm_forward followed by fp8_cast_transpose rests on evaluating the very same fp32
// expressions in the same order (so nvcc contracts the same multiply-adds into FMAs), with the same lane ->
// element assignment where the row statistics' reduction order matters, and on quantizing the bf16-rounded
// value exactly as llmc/kernels/cast/cast.cu does: the per-row LayerNorm is layernorm_row.cuh (inlined by
// layernorm.cu too), the quantization, amax and transposition helpers are llmc/fp8/fp8_device.cuh (inlined by
// cast.cu too).
#include <cstdint>

#include "llmc/fp8/fp8_device.cuh"
#include "llmc/kernels/layernorm/layernorm.cuh"
#include "llmc/kernels/layernorm/layernorm_fp8.cuh"
#include "llmc/kernels/layernorm/layernorm_row.cuh"

namespace {

typedef __nv_fp8_storage_t fp8s;

// ---------------------------------------------------------------------------------------------------------
// LayerNorm -> FP8
// ---------------------------------------------------------------------------------------------------------
// Block of 8 warps for a tile of R = rows_per_block rows (a multiple of 16: ln_tile_rows), warp w taking rows
// w, w + 8, ... of the tile (kPair: pair p = w / 2 taking rows p, p + 4, ..., each warp half of every row).
// Per row, EXACTLY llmc/kernels/layernorm/layernorm.cu's forward (the same layernorm_row_forward of
// llmc/kernels/layernorm/layernorm_row.cuh: lane l holds 16-byte chunks l, l+32, ..., l+32(K-1) of the row in
// registers, two-pass mean/variance, rsqrtf, y = bf16((x - m) * s * w + b); any K >= ceil(C / 256) gives the
// same bits). Then y is quantized: 8 row-wise bytes per lane per chunk (a warp stores 256 contiguous bytes)
// and the same 8 bytes into the shared tile [R][C/4 + 1 words] (odd pitch; the two words are stored in an
// order that is bank-conflict free: lanes 0-15 hit even banks, lanes 16-31 odd ones). After the block barrier
// (inside the amax reduction), work item (g, s) gathers the 16 x 4 byte block of tile rows [16s, 16s+16) and
// columns [4g, 4g+4) (word g of 16 rows: conflict-free since the odd pitch maps 16s to a 16-bank shift),
// transposes it in registers and writes 16 bytes to each of 4 transposed rows; with R = 32 (GPT-1.5B, pair
// kernel) lane pairs (s = 0, 1) write the two halves of one 32-byte sector (R = 48, the one-warp kernel's
// one-wave tiles at C = 1600: three 16-byte pieces of a transposed row, 1.5 sectors). kWrite = false: amax
// only (calibration), nothing written, no shared tile.
constexpr int kLnThreads = 256;
constexpr int kLnWarps = kLnThreads / 32;
constexpr int kLnRows32MaxC = 3072;  // 32-row tiles up to this C (98 KB of tile), 16-row tiles above

// Per K (16-byte chunks a lane holds of a row): the inp2 chunks loaded per dependent round trip
// (layernorm_row_forward's kInp2Batch) and the blocks per SM the registers are capped for. Measured on the
// H200 (bitwise the same outputs, L2-flushed launches, residual + E4M3, 1 chunk a trip at 3 blocks per SM
// first): 16384 x 768 (K = 3) 0.0450 -> 0.0383 ms with the whole row; 16384 x 1024 (K = 4) 0.0565 -> 0.0521
// with 2 (0.0644 with 4: spills); 12288 x 1280 (K = 5, no spills at 3 blocks, 384 blocks in one wave) 0.0441,
// slower with 4 at 2 blocks (0.0486): kept. 12288 x 1600 (K = 7, 80 registers at 3 blocks: 72 bytes of
// spills) 0.0770, slower with more chunks at 3 blocks (0.094 at 2, 0.155 at 7); at 2 blocks per SM (128
// registers) with one-wave tiles (ln_tile_rows) 0.0756 with 1, 0.0702 with 4, 0.0690 with 5 (4 spills 8
// bytes, 5 spills 4; taken: 4); 16384 x 1600 0.1229 -> 0.0820 (64-row tiles). K = 6 and 8 (spills at 3
// blocks, no GPT-2 size) follow K = 7 unmeasured. In the GPT-1.5B step: -0.56 ms (60 steps, 3 alternated
// rounds); 124M: -0.07 ms, within the noise.
// kPair (a row over the two warps of a pair, each holding half of its chunks: LnRowPair in layernorm_row.cuh)
// takes the tuning of its half row, KX = ceil(K / 2). pair(K): whether the launcher's default is the pair
// kernel for rows of K chunks (K <= 8: a pair kernel exists). Measured on the H200 (L2-flushed launches,
// residual + E4M3, bitwise the one-warp outputs): 12288 x 1600 (K = 7) one warp 0.0700 ms (48-row tiles, 2
// blocks per SM, 128 registers) -> pair 0.0634 ms (32-row tiles, 3 blocks per SM, 80 registers: 24 warps and
// rows in flight per SM instead of 16), in the GPT-1.5B fp8 step -0.9 / -0.4 ms (two alternated rounds);
// 12288 x 768 (K = 3, already 3 blocks per SM) 0.0274 -> 0.0294 ms, in the 124M step +0.1 to +0.3 ms: the
// four pair barriers a row cost more than the registers give there. K = 4, 5, 6, 8 not measured: one warp.
struct LnTuning {
    static constexpr int inp2_batch(int K) { return K <= 3 ? K : K == 4 ? 2 : K == 5 ? 1 : K <= 8 ? 4 : 1; }
    static constexpr int min_blocks(int K) { return K <= 5 ? 3 : K <= 8 ? 2 : 1; }
    static constexpr int row_chunks(int K, bool pair) { return pair ? (K + 1) / 2 : K; }
    static constexpr bool pair(int K) { return K == 7; }
};
constexpr int kLnPairMaxK = 8;  // pair kernels exist for rows of K <= 8 chunks (C <= 2048)

__host__ __device__ constexpr int ln_pitch_words(int C) { return C / 4 + 1; }
constexpr size_t ln_tile_bytes(int rows, int C) {
    return (size_t)rows * ln_pitch_words(C) * sizeof(uint32_t);
}
constexpr size_t ln_smem_bytes(int rows, int C, bool pair) {
    return ln_tile_bytes(rows, C) + (pair ? (size_t)(kLnWarps / 2) * kLnPairXchgFloats * sizeof(float) : 0);
}
constexpr size_t kLnTileMaxBytes = 227 * 1024;      // the most shared memory one block may take on Hopper
constexpr size_t kLnTwoTilesMaxBytes = 226 * 1024;  // two blocks' tiles on one SM (228 KB less 1 KB each)

template <int K, bool kResidual, bool kWrite, __nv_fp8_interpretation_t FMT, bool kPair = false,
          int kInp2Batch = LnTuning::inp2_batch(LnTuning::row_chunks(K, kPair)),
          int kMinBlocks = LnTuning::min_blocks(LnTuning::row_chunks(K, kPair))>
__global__ void __launch_bounds__(kLnThreads, kMinBlocks)
    fp8_layernorm_kernel(bf16* __restrict__ residual, fp8s* __restrict__ out_NC, fp8s* __restrict__ out_T,
                         float* __restrict__ out_scale_inv, float* __restrict__ mean,
                         float* __restrict__ rstd, float* staging, const bf16* __restrict__ inp1,
                         const bf16* __restrict__ inp2, const bf16* __restrict__ weight,
                         const bf16* __restrict__ bias, const float* __restrict__ scale_ptr,
                         const float* __restrict__ scale_inv_ptr, int N, int C, int rows_per_block) {
    extern __shared__ uint32_t tile[];        // [rows_per_block][pitch] words (kWrite only), then kPair: xchg
    constexpr int kRowWarps = kPair ? 2 : 1;  // warps per row
    constexpr int kRowGroups = kLnWarps / kRowWarps;  // rows in flight per block
    static_assert(!kPair || kRowGroups <= 15, "a named barrier (1..15) per pair");
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int group = warp / kRowWarps;  // this warp's row group (the warp itself, or its pair)
    const int pitch = ln_pitch_words(C);
    LnRowPair pair{};
    if constexpr (kPair)  // each pair's exchange floats after the tile; named barriers 1..4
        pair = {warp % 2, 1 + group,
                reinterpret_cast<float*>(tile + rows_per_block * pitch) + kLnPairXchgFloats * group};
    const int n0 = blockIdx.x * rows_per_block;
    float scale = 0.0f;
    if constexpr (kWrite) {
        scale = *scale_ptr;
        if (out_scale_inv != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *out_scale_inv = *scale_inv_ptr;
    }
    uint32_t amax_bits = 0;

    // ---- phase 1: one row per warp (or pair) at a time (layernorm_row_forward, as the BF16 kernel) ----
    for (int r = group; r < rows_per_block; r += kRowGroups) {
        const int row = n0 + r;
        if (row >= N) break;  // uniform over the warp (and its pair): the pair's barriers stay matched
        const size_t off = (size_t)row * C;
        // y: amax of every value, then (kWrite) the chunk's 8 row-wise bytes and its tile words.
        const auto on_value = [&](bf16 y) { amax_bits = max(amax_bits, fp8_abs_bits(__bfloat162float(y))); };
        const auto on_chunk = [&](int c, const x128& o) {
            if constexpr (kWrite) {
                float y[x128::size];
#pragma unroll
                for (int i = 0; i < x128::size; i++) y[i] = __bfloat162float(o[i]);
                const uint2 q = to_fp8x8<FMT>(y, scale);
                if (out_NC != nullptr) *reinterpret_cast<uint2*>(out_NC + off + c) = q;
                uint32_t* t = tile + r * pitch + c / 4;
                const bool hi = lane >= 16;  // bank-conflict-free store order (see above)
                t[hi ? 1 : 0] = hi ? q.y : q.x;
                t[hi ? 0 : 1] = hi ? q.x : q.y;
            }
        };
        float m, s;
        layernorm_row_forward<K, kResidual, kResidual && kWrite, kInp2Batch, kPair>(
            m, s, residual, inp1, inp2, weight, bias, off, C, lane, on_value, on_chunk, pair);
        if constexpr (kWrite) {
            if (lane == 0 && pair.half == 0) {
                if (mean != nullptr) mean[row] = m;
                if (rstd != nullptr) rstd[row] = s;
            }
        }
    }
    block_amax_atomic(amax_bits, staging);  // its __syncthreads also publishes tile[]
    if constexpr (!kWrite) return;

    // ---- phase 2: transposed tile ----
    const int segs = rows_per_block / 16;  // 16-row segments of the tile
    const int items = (C / 4) * segs;
    for (int it = threadIdx.x; it < items; it += kLnThreads) {
        const int g = it / segs, sg = it - g * segs;
        const int n = n0 + 16 * sg;
        if (n >= N) continue;  // N is a multiple of 16: a segment is either whole or absent
        uint32_t w[16];
#pragma unroll
        for (int k = 0; k < 16; k++) w[k] = tile[(16 * sg + k) * pitch + g];
        write_transposed_16x4(out_T, w, 4 * g, n, N);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------------------

typedef void (*LnKernel)(bf16*, fp8s*, fp8s*, float*, float*, float*, float*, const bf16*, const bf16*,
                         const bf16*, const bf16*, const float*, const float*, int, int, int);

// pair: the row over a pair of warps (only where K <= kLnPairMaxK and kWrite; elsewhere the one-warp kernel).
template <bool kResidual, bool kWrite, __nv_fp8_interpretation_t FMT>
LnKernel pick_ln_kernel(int C, bool pair) {
    return layernorm_pick_k(C, [pair](auto k) {
        constexpr int K = decltype(k)::value;
        if constexpr (kWrite && K <= kLnPairMaxK)
            if (pair) return fp8_layernorm_kernel<K, kResidual, kWrite, FMT, true>;
        return fp8_layernorm_kernel<K, kResidual, kWrite, FMT>;
    });
}
// The launcher's choice for rows of C: warps_per_row 1 or 2 as given, 0: LnTuning::pair.
bool ln_pair(int C, int warps_per_row) {
    const int K = layernorm_row_chunks(C);
    return K <= kLnPairMaxK && (warps_per_row == 2 || (warps_per_row == 0 && LnTuning::pair(K)));
}

void check_ln_shape(const char* who, int N, int C) {
    CHECK(N > 0 && N % 16 == 0 && C > 0 && C % 16 == 0 && C <= kLayerNormMaxC,
          "%s: N = %d and C = %d must be positive multiples of 16, C at most %d", who, N, C, kLayerNormMaxC);
}

// Rows per block. Kernels capped at 2 blocks per SM (the one-warp kernels at 1280 < C <= 2048) take the
// fewest rows (a multiple of 16) that put every block in one wave, when two such tiles fit an SM's shared
// memory: a partial second wave costs more than longer blocks (12288 x 1600: 32 rows, 1.45 waves of 264
// blocks, 0.0737 ms; 48 rows, 256 blocks, 0.0702 ms). Otherwise 32 rows up to kLnRows32MaxC, else 16 (the
// pair kernel at 12288 x 1600: 32 rows, 384 blocks in one wave of 3 per SM).
int ln_tile_rows(int N, int C, bool pair) {
    if (LnTuning::min_blocks(LnTuning::row_chunks(layernorm_row_chunks(C), pair)) == 2) {
        const int rows = 16 * ceil_div(ceil_div(N, 2 * current_device_sms()), 16);
        if (2 * ln_smem_bytes(rows, C, pair) <= kLnTwoTilesMaxBytes) return rows;
    }
    return C <= kLnRows32MaxC ? 32 : 16;
}

// t: the FP8 tensor written (kWrite), or whose amax alone is measured. tile_rows: rows per block (a multiple
// of 16; 0: ln_tile_rows). warps_per_row: 1, 2 (the pair kernel, where there is one) or 0 (LnTuning::pair).
template <bool kWrite>
void launch_ln(bf16* residual, const Fp8Tensor& t, float* mean, float* rstd, const bf16* inp1,
               const bf16* inp2, const bf16* weight, const bf16* bias, cudaStream_t stream, int tile_rows = 0,
               int warps_per_row = 0) {
    const int N = t.rows, C = t.cols;
    const bool pair = kWrite && ln_pair(C, warps_per_row);
    const int rows = tile_rows > 0 ? tile_rows : ln_tile_rows(N, C, pair);
    CHECK(rows % 16 == 0 && ln_smem_bytes(rows, C, pair) <= kLnTileMaxBytes,
          "fp8 LayerNorm: %d tile rows (a multiple of 16 whose tile fits %zu KB of shared memory at C = %d)",
          rows, kLnTileMaxBytes / 1024, C);
    fp8_check_bound(t, "fp8 LayerNorm");
    const size_t smem = kWrite ? ln_smem_bytes(rows, C, pair) : 0;
    const int grid = ceil_div(N, rows);
    fp8_dispatch_written<kWrite>(t, [&](auto tag) {
        constexpr __nv_fp8_interpretation_t FMT = decltype(tag)::value;
        const LnKernel kernel = inp2 != nullptr ? pick_ln_kernel<true, kWrite, FMT>(C, pair)
                                                : pick_ln_kernel<false, kWrite, FMT>(C, pair);
        allow_dynamic_smem(kernel, smem);
        kernel<<<grid, kLnThreads, smem, stream>>>(
            residual, kWrite ? t.data : nullptr, kWrite ? t.data_T : nullptr, kWrite ? t.scale_inv : nullptr,
            mean, rstd, t.slot.amax, inp1, inp2, weight, bias, t.slot.scale, t.slot.scale_inv, N, C, rows);
        CHECK_LAUNCH();
    });
}

}  // namespace

void fp8_residual_layernorm_forward(bf16* residual_NC, const Fp8Tensor& out, float* mean_N, float* rstd_N,
                                    const bf16* inp1_NC, const bf16* inp2_NC, const bf16* weight_C,
                                    const bf16* bias_C, cudaStream_t stream, int tile_rows,
                                    int warps_per_row) {
    check_ln_shape("fp8_residual_layernorm_forward", out.rows, out.cols);
    CHECK(out.data_T != nullptr && inp1_NC != nullptr && weight_C != nullptr && bias_C != nullptr,
          "fp8_residual_layernorm_forward: out_T, inp1, weight and bias are required");
    CHECK(inp2_NC == nullptr || residual_NC != nullptr,
          "fp8_residual_layernorm_forward: the residual output is required with inp2");
    CHECK(aligned16(residual_NC) && aligned16(out.data) && aligned16(out.data_T) && aligned16(inp1_NC) &&
              aligned16(inp2_NC) && aligned16(weight_C) && aligned16(bias_C),
          "fp8_residual_layernorm_forward: tensors must be 16-byte aligned");
    CHECK(warps_per_row >= 0 && warps_per_row <= 2, "fp8_residual_layernorm_forward: %d warps per row",
          warps_per_row);
    launch_ln<true>(residual_NC, out, mean_N, rstd_N, inp1_NC, inp2_NC, weight_C, bias_C, stream, tile_rows,
                    warps_per_row);
}

void fp8_layernorm_amax(const bf16* inp1_NC, const bf16* inp2_NC, const bf16* weight_C, const bf16* bias_C,
                        const Fp8Tensor& t, cudaStream_t stream) {
    check_ln_shape("fp8_layernorm_amax", t.rows, t.cols);
    CHECK(inp1_NC != nullptr && weight_C != nullptr && bias_C != nullptr,
          "fp8_layernorm_amax: inp1, weight and bias are required");
    CHECK(aligned16(inp1_NC) && aligned16(inp2_NC) && aligned16(weight_C) && aligned16(bias_C),
          "fp8_layernorm_amax: tensors must be 16-byte aligned");
    launch_ln<false>(nullptr, t, nullptr, nullptr, inp1_NC, inp2_NC, weight_C, bias_C, stream);
}
