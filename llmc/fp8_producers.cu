// Fused FP8 producers: LayerNorm (+ residual add) and GELU writing FP8 row-wise + transposed copies with
// amax. Kernels then launchers. See llmc/fp8_producers.cuh for the contracts.
//
// Bit-exactness with the BF16 kernels followed by fp8_cast_transpose rests on evaluating the very same fp32
// expressions in the same order (so nvcc contracts the same multiply-adds into FMAs), with the same lane ->
// element assignment wherever a reduction order matters (the LayerNorm row statistics), and on quantizing
// the bf16-rounded value exactly as llmc/fp8.cu does (float(y) * scale, then __nv_cvt_float2_to_fp8x2 with
// __NV_SATFINITE). The FP8 helpers of llmc/fp8.cu are private to that file and re-implemented here.
#include <cstdint>
#include <type_traits>

#include "llmc/fp8_producers.cuh"
#include "llmc/gelu_math.cuh"
#include "llmc/layernorm.cuh"

namespace {

typedef __nv_fp8_storage_t fp8s;

// ---------------------------------------------------------------------------------------------------------
// Shared helpers (same as llmc/fp8.cu's private ones)
// ---------------------------------------------------------------------------------------------------------

__device__ __forceinline__ x128 load128ldg(const bf16* p) {
    x128 r;
    *reinterpret_cast<int4*>(&r) = __ldg(reinterpret_cast<const int4*>(p));
    return r;
}

// Four floats -> four saturated FP8 bytes (first element in the lowest byte), as fp8.cu's to_fp8x4.
template <__nv_fp8_interpretation_t FMT>
__device__ __forceinline__ uint32_t to_fp8x4(float a, float b, float c, float d) {
    const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, FMT);
    const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, FMT);
    return lo | (hi << 16);
}

// Block max of |x| bits (1-D blocks, blockDim.x a multiple of 32), then one atomicMax on the float bits of
// the staging amax (non-negative floats order like unsigned ints, NaN above +inf). Contains a
// __syncthreads that callers use as the barrier publishing their shared-memory tile.
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

// Transposed write of one 16-row x 4-column block: w[k] holds the 4 FP8 bytes of tile row k (columns
// c..c+3); writes 16 bytes (rows n..n+15) to each of the transposed rows c..c+3 of out_T [C, N].
__device__ __forceinline__ void write_transposed_16x4(fp8s* out_T, const uint32_t w[16], int c, int n,
                                                      int N) {
    uint32_t o[4][4];  // o[q][j]: transposed row c + j, bytes of rows n + 4q .. n + 4q + 3
#pragma unroll
    for (int q = 0; q < 4; q++) transpose4x4(&w[4 * q], o[q]);
#pragma unroll
    for (int j = 0; j < 4; j++)
        *reinterpret_cast<uint4*>(out_T + (size_t)(c + j) * N + n) =
            make_uint4(o[0][j], o[1][j], o[2][j], o[3][j]);
}

// ---------------------------------------------------------------------------------------------------------
// LayerNorm -> FP8
// ---------------------------------------------------------------------------------------------------------
// Block of 8 warps for a tile of R = rows_per_block rows (32, or 16 for wide rows), warp w taking rows w,
// w + 8, ... of the tile. Per row, EXACTLY llmc/layernorm.cu's forward: lane l holds 16-byte chunks l, l+32,
// ..., l+32(K-1) of the row in registers (the per-lane sums run over the same elements in the same order,
// then the same xor-butterfly warp_reduce_sum), two-pass mean/variance, rsqrtf, y = bf16((x - m) * s * w +
// b). K only has to cover the row (chunks past it are predicated off), so any K >= ceil(C / 256) gives the
// same bits. Then y is quantized: 8 row-wise bytes per lane per chunk (a warp stores 256 contiguous bytes)
// and the same 8 bytes into the shared tile [R][C/4 + 1 words] (odd pitch; the two words are stored in an
// order that is bank-conflict free: lanes 0-15 hit even banks, lanes 16-31 odd ones). After the block barrier
// (inside the amax reduction), work item (g, s) gathers the 16 x 4 byte block of tile rows [16s, 16s+16) and
// columns [4g, 4g+4) (word g of 16 rows: conflict-free since the odd pitch maps 16s to a 16-bank shift),
// transposes it in registers and writes 16 bytes to each of 4 transposed rows; with R = 32 lane pairs
// (s = 0, 1) write the two halves of one 32-byte sector.
// kWrite = false: amax only (calibration), nothing written, no shared tile.
constexpr int kLnThreads = 256;
constexpr int kLnWarps = kLnThreads / 32;
constexpr int kLnRows32MaxC = 3072;  // 32-row tiles up to this C (98 KB of tile), 16-row tiles above

__host__ __device__ constexpr int ln_pitch_words(int C) { return C / 4 + 1; }

template <int K, bool kResidual, bool kWrite, __nv_fp8_interpretation_t FMT>
__global__ void __launch_bounds__(kLnThreads, K <= 8 ? 3 : 1)
    fp8_layernorm_kernel(bf16* __restrict__ residual, fp8s* __restrict__ out_NC, fp8s* __restrict__ out_T,
                         float* __restrict__ out_scale_inv, float* __restrict__ mean,
                         float* __restrict__ rstd, float* staging, const bf16* __restrict__ inp1,
                         const bf16* __restrict__ inp2, const bf16* __restrict__ weight,
                         const bf16* __restrict__ bias, const float* __restrict__ scale_ptr,
                         const float* __restrict__ scale_inv_ptr, int N, int C, int rows_per_block) {
    extern __shared__ uint32_t tile[];  // [rows_per_block][pitch] words (kWrite only)
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int n0 = blockIdx.x * rows_per_block;
    const int pitch = ln_pitch_words(C);
    float scale = 0.0f;
    if constexpr (kWrite) {
        scale = *scale_ptr;
        if (out_scale_inv != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *out_scale_inv = *scale_inv_ptr;
    }
    uint32_t amax_bits = 0;

    // ---- phase 1: one row per warp at a time (identical arithmetic to layernorm_forward_kernel) ----
    const float inv_c = 1.0f / (float)C;
    for (int r = warp; r < rows_per_block; r += kLnWarps) {
        const int row = n0 + r;
        if (row >= N) break;  // warp-uniform; no barrier inside the loop
        const size_t off = (size_t)row * C;

        x128 x[K];
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int c = (k * 32 + lane) * x128::size;
            if (c < C) x[k] = load128cs(inp1 + off + c);
        }
        if constexpr (kResidual) {
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int c = (k * 32 + lane) * x128::size;
                if (c < C) {
                    const x128 y = load128cs(inp2 + off + c);
#pragma unroll
                    for (int i = 0; i < x128::size; i++)
                        x[k][i] = __float2bfloat16(__bfloat162float(x[k][i]) + __bfloat162float(y[i]));
                    if constexpr (kWrite) store128(residual + off + c, x[k]);
                }
            }
        }

        float sum = 0.0f;
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int c = (k * 32 + lane) * x128::size;
            if (c < C) {
#pragma unroll
                for (int i = 0; i < x128::size; i++) sum += __bfloat162float(x[k][i]);
            }
        }
        const float m = warp_reduce_sum(sum) * inv_c;
        float sq = 0.0f;
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int c = (k * 32 + lane) * x128::size;
            if (c < C) {
#pragma unroll
                for (int i = 0; i < x128::size; i++) {
                    const float d = __bfloat162float(x[k][i]) - m;
                    sq += d * d;
                }
            }
        }
        const float s = rsqrtf(warp_reduce_sum(sq) * inv_c + kLayerNormEps);

#pragma unroll
        for (int k = 0; k < K; k++) {
            const int c = (k * 32 + lane) * x128::size;
            if (c < C) {
                const x128 w = load128ldg(weight + c);
                const x128 b = load128ldg(bias + c);
                float y[x128::size];
#pragma unroll
                for (int i = 0; i < x128::size; i++) {
                    const float n = (__bfloat162float(x[k][i]) - m) * s;
                    y[i] = __bfloat162float(
                        __float2bfloat16(n * __bfloat162float(w[i]) + __bfloat162float(b[i])));
                    amax_bits = max(amax_bits, fp8_abs_bits(y[i]));
                }
                if constexpr (kWrite) {
                    const uint32_t w0 = to_fp8x4<FMT>(y[0] * scale, y[1] * scale, y[2] * scale, y[3] * scale);
                    const uint32_t w1 = to_fp8x4<FMT>(y[4] * scale, y[5] * scale, y[6] * scale, y[7] * scale);
                    if (out_NC != nullptr) *reinterpret_cast<uint2*>(out_NC + off + c) = make_uint2(w0, w1);
                    uint32_t* t = tile + r * pitch + c / 4;
                    const bool hi = lane >= 16;  // bank-conflict-free store order (see above)
                    t[hi ? 1 : 0] = hi ? w1 : w0;
                    t[hi ? 0 : 1] = hi ? w0 : w1;
                }
            }
        }
        if constexpr (kWrite) {
            if (lane == 0) {
                if (mean != nullptr) mean[row] = m;
                if (rstd != nullptr) rstd[row] = s;
            }
        }
    }
    block_amax_atomic(amax_bits, staging);  // its __syncthreads also publishes tile[]
    if constexpr (!kWrite) return;

    // ---- phase 2: transposed tile ----
    const int segs = rows_per_block / 16;  // 1 or 2
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
// GELU -> FP8
// ---------------------------------------------------------------------------------------------------------
// GELU forward: gelu_erf / gelu_tanh of llmc/gelu_math.cuh, the very same code as llmc/gelu.cu's
// gelu_forward (dev/test_fp8_producers.cu checks bit equality with gelu_forward + fp8_cast_transpose).
// y = bf16(gelu(x)) as gelu_forward stores it, back in fp32.
template <bool kTanh>
__device__ __forceinline__ float gelu_bf16(float x) {
    return __bfloat162float(__float2bfloat16(kTanh ? gelu_tanh(x) : gelu_erf(x)));
}

// Cast + transpose as llmc/fp8.cu's cast_transpose_kernel, with GELU applied to the loaded values: tile of
// 128 rows x 128 columns per block of 256 threads. Phase 1: thread (rr = tid/16, cc = tid%16) loads 8
// columns [cc*8, cc*8+8) of rows rr + 16 i (i < 8), all 8 loads issued before any math, computes y, stores 8
// row-wise bytes per row and parks them in shared memory (128 rows x 33 words: conflict-free both ways).
// Phase 2: thread (g, s) gathers the 16 x 4 byte block of rows [16s, 16s+16) and columns [4g, 4g+4),
// transposes it in registers and writes 4 transposed rows, 16 bytes each (lane pairs fill one 32-byte
// sector). N and C multiples of 16, so 16-row segments and 8-column chunks are whole.
constexpr int kTile = 128;
constexpr int kCtThreads = 256;
constexpr int kTileWords = kTile / 4 + 1;

template <bool kTanh, __nv_fp8_interpretation_t FMT>
__global__ void __launch_bounds__(kCtThreads, 2)
    fp8_gelu_cast_transpose_kernel(fp8s* __restrict__ out_NC, fp8s* __restrict__ out_T,
                                   float* __restrict__ out_scale_inv, float* staging,
                                   const bf16* __restrict__ pre_NC, const float* __restrict__ scale_ptr,
                                   const float* __restrict__ scale_inv_ptr, int N, int C) {
    __shared__ uint32_t tile[kTile * kTileWords];
    const int tid = threadIdx.x;
    const int n0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;
    const int cc = tid % 16, rr = tid / 16;
    const int c = c0 + cc * 8;
    const bool col_ok = c < C;
    if (out_scale_inv != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && tid == 0)
        *out_scale_inv = *scale_inv_ptr;

    const float scale = *scale_ptr;
    uint32_t amax_bits = 0;
    x128 raw[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int n = n0 + rr + 16 * i;
        if (col_ok && n < N) raw[i] = load128cs(pre_NC + (size_t)n * C + c);
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int r = rr + 16 * i, n = n0 + r;
        uint32_t w0 = 0, w1 = 0;
        if (col_ok && n < N) {
            float y[8];
#pragma unroll
            for (int k = 0; k < 8; k++) {
                y[k] = gelu_bf16<kTanh>(__bfloat162float(raw[i][k]));
                amax_bits = max(amax_bits, fp8_abs_bits(y[k]));
            }
            w0 = to_fp8x4<FMT>(y[0] * scale, y[1] * scale, y[2] * scale, y[3] * scale);
            w1 = to_fp8x4<FMT>(y[4] * scale, y[5] * scale, y[6] * scale, y[7] * scale);
            if (out_NC != nullptr) *reinterpret_cast<uint2*>(out_NC + (size_t)n * C + c) = make_uint2(w0, w1);
        }
        tile[r * kTileWords + cc * 2] = w0;
        tile[r * kTileWords + cc * 2 + 1] = w1;
    }
    block_amax_atomic(amax_bits, staging);  // its __syncthreads also publishes tile[]

    const int warp = tid / 32, lane = tid % 32;
    const int g = (warp % 2) * 16 + lane / 2;   // 4-column group, 0..31
    const int s = (warp / 2) * 2 + (lane & 1);  // 16-row segment, 0..7
    if (16 * s < N - n0 && 4 * g < C - c0) {
        uint32_t w[16];
#pragma unroll
        for (int k = 0; k < 16; k++) w[k] = tile[(16 * s + k) * kTileWords + g];
        write_transposed_16x4(out_T, w, c0 + 4 * g, n0 + 16 * s, N);
    }
}

// Amax only: each thread handles 4 chunks of 8 elements (coalesced, loads issued first).
constexpr int kEwThreads = 256;
constexpr int kEwChunks = 4;
constexpr long kEwPerBlock = (long)kEwThreads * kEwChunks * 8;

template <bool kTanh>
__global__ void __launch_bounds__(kEwThreads)
    fp8_gelu_amax_kernel(float* staging, const bf16* __restrict__ pre, long n) {
    const long base = (long)blockIdx.x * kEwPerBlock;
    x128 raw[kEwChunks];
#pragma unroll
    for (int i = 0; i < kEwChunks; i++) {
        const long idx = base + ((long)i * kEwThreads + threadIdx.x) * 8;
        if (idx < n) raw[i] = load128cs(pre + idx);
    }
    uint32_t amax_bits = 0;
#pragma unroll
    for (int i = 0; i < kEwChunks; i++) {
        const long idx = base + ((long)i * kEwThreads + threadIdx.x) * 8;
        if (idx < n) {
#pragma unroll
            for (int k = 0; k < 8; k++)
                amax_bits = max(amax_bits, fp8_abs_bits(gelu_bf16<kTanh>(__bfloat162float(raw[i][k]))));
        }
    }
    block_amax_atomic(amax_bits, staging);
}

// ---------------------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------------------

template <__nv_fp8_interpretation_t F>
using FmtTag = std::integral_constant<__nv_fp8_interpretation_t, F>;

// Calls fn(FmtTag<...>{}) with the slot's format.
template <class Fn>
void dispatch_format(const Fp8ScaleState* st, int slot, Fn fn) {
    CHECK(st != nullptr && slot >= 0 && slot < st->num_slots, "fp8 slot %d out of range [0, %d)", slot,
          st ? st->num_slots : 0);
    if (st->dtypes[slot] == Fp8Dtype::E4M3)
        fn(FmtTag<__NV_E4M3>{});
    else
        fn(FmtTag<__NV_E5M2>{});
}

inline bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }

typedef void (*LnKernel)(bf16*, fp8s*, fp8s*, float*, float*, float*, float*, const bf16*, const bf16*,
                         const bf16*, const bf16*, const float*, const float*, int, int, int);

template <bool kResidual, bool kWrite, __nv_fp8_interpretation_t FMT>
LnKernel pick_ln_kernel(int C) {
    const int k = ceil_div(C / x128::size, 32);  // 16-byte chunks per lane
    switch (k) {
        case 1:
            return fp8_layernorm_kernel<1, kResidual, kWrite, FMT>;
        case 2:
            return fp8_layernorm_kernel<2, kResidual, kWrite, FMT>;
        case 3:
            return fp8_layernorm_kernel<3, kResidual, kWrite, FMT>;
        case 4:
            return fp8_layernorm_kernel<4, kResidual, kWrite, FMT>;
        case 5:
            return fp8_layernorm_kernel<5, kResidual, kWrite, FMT>;
        case 6:
            return fp8_layernorm_kernel<6, kResidual, kWrite, FMT>;
        case 7:
            return fp8_layernorm_kernel<7, kResidual, kWrite, FMT>;  // C = 1600
        case 8:
            return fp8_layernorm_kernel<8, kResidual, kWrite, FMT>;
        default:
            return k <= 16 ? fp8_layernorm_kernel<16, kResidual, kWrite, FMT>
                           : fp8_layernorm_kernel<32, kResidual, kWrite, FMT>;
    }
}

void check_ln_shape(const char* who, int N, int C) {
    CHECK(N > 0 && N % 16 == 0 && C > 0 && C % 16 == 0 && C <= kLayerNormMaxC,
          "%s: N = %d and C = %d must be positive multiples of 16, C at most %d", who, N, C, kLayerNormMaxC);
}

template <bool kWrite>
void launch_ln(bf16* residual, fp8s* out_NC, fp8s* out_T, float* out_scale_inv, float* mean, float* rstd,
               Fp8ScaleState* st, int slot, const bf16* inp1, const bf16* inp2, const bf16* weight,
               const bf16* bias, int N, int C, cudaStream_t stream) {
    const int rows = C <= kLnRows32MaxC ? 32 : 16;
    const size_t smem = kWrite ? (size_t)rows * ln_pitch_words(C) * sizeof(uint32_t) : 0;
    const int grid = ceil_div(N, rows);
    dispatch_format(st, slot, [&](auto tag) {
        constexpr __nv_fp8_interpretation_t FMT = kWrite ? decltype(tag)::value : __NV_E4M3;
        const LnKernel kernel =
            inp2 != nullptr ? pick_ln_kernel<true, kWrite, FMT>(C) : pick_ln_kernel<false, kWrite, FMT>(C);
        if (smem > 48 * 1024)
            CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        kernel<<<grid, kLnThreads, smem, stream>>>(residual, out_NC, out_T, out_scale_inv, mean, rstd,
                                                   st->amax_history + slot, inp1, inp2, weight, bias,
                                                   st->scale + slot, st->scale_inv + slot, N, C, rows);
        CHECK_LAUNCH();
    });
}

}  // namespace

void fp8_residual_layernorm_forward(bf16* residual_NC, __nv_fp8_storage_t* out_NC,
                                    __nv_fp8_storage_t* out_T_CN, float* out_scale_inv, float* mean_N,
                                    float* rstd_N, Fp8ScaleState* st, int slot, const bf16* inp1_NC,
                                    const bf16* inp2_NC, const bf16* weight_C, const bf16* bias_C, int N,
                                    int C, cudaStream_t stream) {
    check_ln_shape("fp8_residual_layernorm_forward", N, C);
    CHECK(out_T_CN != nullptr && inp1_NC != nullptr && weight_C != nullptr && bias_C != nullptr,
          "fp8_residual_layernorm_forward: out_T, inp1, weight and bias are required");
    CHECK(inp2_NC == nullptr || residual_NC != nullptr,
          "fp8_residual_layernorm_forward: the residual output is required with inp2");
    CHECK(aligned16(residual_NC) && aligned16(out_NC) && aligned16(out_T_CN) && aligned16(inp1_NC) &&
              aligned16(inp2_NC) && aligned16(weight_C) && aligned16(bias_C),
          "fp8_residual_layernorm_forward: tensors must be 16-byte aligned");
    launch_ln<true>(residual_NC, out_NC, out_T_CN, out_scale_inv, mean_N, rstd_N, st, slot, inp1_NC, inp2_NC,
                    weight_C, bias_C, N, C, stream);
}

void fp8_layernorm_amax(Fp8ScaleState* st, int slot, const bf16* inp1_NC, const bf16* inp2_NC,
                        const bf16* weight_C, const bf16* bias_C, int N, int C, cudaStream_t stream) {
    check_ln_shape("fp8_layernorm_amax", N, C);
    CHECK(inp1_NC != nullptr && weight_C != nullptr && bias_C != nullptr,
          "fp8_layernorm_amax: inp1, weight and bias are required");
    CHECK(aligned16(inp1_NC) && aligned16(inp2_NC) && aligned16(weight_C) && aligned16(bias_C),
          "fp8_layernorm_amax: tensors must be 16-byte aligned");
    launch_ln<false>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, st, slot, inp1_NC, inp2_NC,
                     weight_C, bias_C, N, C, stream);
}

void fp8_gelu_cast_transpose(__nv_fp8_storage_t* out_NC, __nv_fp8_storage_t* out_T_CN, float* out_scale_inv,
                             Fp8ScaleState* st, int slot, const bf16* pre_NC, int N, int C, bool gelu_tanh,
                             cudaStream_t stream) {
    CHECK(N > 0 && C > 0 && N % 16 == 0 && C % 16 == 0,
          "fp8_gelu_cast_transpose: N = %d and C = %d must be positive multiples of 16", N, C);
    CHECK(out_T_CN != nullptr && pre_NC != nullptr, "fp8_gelu_cast_transpose: out_T and pre are required");
    CHECK(aligned16(out_NC) && aligned16(out_T_CN) && aligned16(pre_NC),
          "fp8_gelu_cast_transpose: pointers must be 16-byte aligned");
    const dim3 grid(ceil_div(C, kTile), ceil_div(N, kTile));
    CHECK(grid.y <= 65535, "fp8_gelu_cast_transpose: N = %d too large", N);
    dispatch_format(st, slot, [&](auto tag) {
        constexpr __nv_fp8_interpretation_t FMT = decltype(tag)::value;
        auto kernel = gelu_tanh ? fp8_gelu_cast_transpose_kernel<true, FMT>
                                : fp8_gelu_cast_transpose_kernel<false, FMT>;
        kernel<<<grid, kCtThreads, 0, stream>>>(out_NC, out_T_CN, out_scale_inv, st->amax_history + slot,
                                                pre_NC, st->scale + slot, st->scale_inv + slot, N, C);
        CHECK_LAUNCH();
    });
}

void fp8_gelu_amax(Fp8ScaleState* st, int slot, const bf16* pre_NC, int N, int C, bool gelu_tanh,
                   cudaStream_t stream) {
    const long n = (long)N * C;
    CHECK(N >= 0 && C >= 0 && n % 8 == 0, "fp8_gelu_amax: N * C = %ld must be a multiple of 8", n);
    CHECK(pre_NC != nullptr && aligned16(pre_NC), "fp8_gelu_amax: pre must be non-null and 16-byte aligned");
    CHECK(st != nullptr && slot >= 0 && slot < st->num_slots, "fp8 slot %d out of range", slot);
    if (n == 0) return;
    const long grid = (n + kEwPerBlock - 1) / kEwPerBlock;
    CHECK(grid <= 0x7fffffffL, "fp8_gelu_amax: n = %ld too large", n);
    if (gelu_tanh)
        fp8_gelu_amax_kernel<true>
            <<<(unsigned)grid, kEwThreads, 0, stream>>>(st->amax_history + slot, pre_NC, n);
    else
        fp8_gelu_amax_kernel<false>
            <<<(unsigned)grid, kEwThreads, 0, stream>>>(st->amax_history + slot, pre_NC, n);
    CHECK_LAUNCH();
}
