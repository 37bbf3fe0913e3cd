// FP8 casts: the amax-only passes of the step-0 calibration and the cast kernels (cast+transpose, +dbias,
// +dGELU). See llmc/kernels/cast/cast.cuh for the contracts.
#include <cstdint>
#include <type_traits>

#include "llmc/fp8/fp8_device.cuh"
#include "llmc/kernels/cast/cast.cuh"
#include "llmc/kernels/gelu/gelu_math.cuh"

namespace {

// ---------------------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------------------

// d/dx GELU(x): gelu_erf_grad / gelu_tanh_grad of llmc/kernels/gelu/gelu_math.cuh, the very same code as the
// BF16 GELU backward (llmc/kernels/gelu/gelu.cu). Both keep full relative accuracy (erf form <= 4.3e-6, tanh
// form ~1e-5, under
// --use_fast_math) in the left tail where gelu'(x) -> 0, which matters here: E5M2 resolves |g| down to
// 2^-17 / scale (a 2^-34 fraction of the amax at the usual scales), so a tail value computed as a difference
// of O(1) terms (0.5 (1 + erf), 1 + tanh, 1 - tanh^2) would come out as rounding noise or 0, many codes away.

// Element operation applied before quantization: identity, or g = dout * gelu'(pre).
enum ElemOp { kOpCopy = 0, kOpDgeluErf = 1, kOpDgeluTanh = 2 };
template <int OP>
__device__ inline float apply_op(float x, float pre) {
    if constexpr (OP == kOpDgeluErf) return x * gelu_erf_grad(pre);
    if constexpr (OP == kOpDgeluTanh) return x * gelu_tanh_grad(pre);
    return x;
}

// 8 consecutive input elements as loaded (16 bytes of bf16, or 32 bytes of fp32).
template <class T>
struct Raw8;
template <>
struct Raw8<bf16> {
    x128 a;
};
template <>
struct Raw8<float> {
    f128 a, b;
};
__device__ inline Raw8<bf16> load_raw8(const bf16* p) { return {load128cs(p)}; }
__device__ inline Raw8<float> load_raw8(const float* p) { return {load128cs(p), load128cs(p + 4)}; }
__device__ inline void unpack8(const Raw8<bf16>& r, float v[8]) {
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = __bfloat162float(r.a[k]);
}
__device__ inline void unpack8(const Raw8<float>& r, float v[8]) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
        v[k] = r.a[k];
        v[k + 4] = r.b[k];
    }
}

// Loads the 8-element chunk at element offset idx of the input, and of pre when OP needs it.
template <int OP, class Tin>
__device__ __forceinline__ void load_chunk(Raw8<Tin>& raw, Raw8<bf16>& raw_pre, const Tin* in,
                                           const bf16* pre, size_t idx) {
    raw = load_raw8(in + idx);
    if constexpr (OP != kOpCopy) raw_pre = load_raw8(pre + idx);
}
// The 8 values to quantize: the loaded input with OP applied.
template <int OP, class Tin>
__device__ __forceinline__ void chunk_values(const Raw8<Tin>& raw, const Raw8<bf16>& raw_pre, float v[8]) {
    unpack8(raw, v);
    if constexpr (OP != kOpCopy) {
        float p[8];
        unpack8(raw_pre, p);
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = apply_op<OP>(v[k], p[k]);
    }
}

// The dGELU cast's optional second output: bf16(gelu(pre)) quantized with another slot's scale, transposed
// only (the fc-projection's FP8 input, rebuilt in the backward from the pre-GELU tensor the cast reads
// anyway), its amax into that slot's staging.
struct GeluOutT {
    __nv_fp8_storage_t* out_T;
    float* staging;
    const float* scale_ptr;
};

// ---- cast + transpose (+ dbias partials, + dGELU, + the GELU output transposed) ----
// The 128 x 128 tile of llmc/fp8/fp8_device.cuh (kCtTile), phase 2 by ct_tile_write_transposed; with DBIAS
// the per-thread column sums of phase 1 go through shared memory and are added in a fixed order. GELU_T
// (dGELU only): a second tile for y = gelu_bf16(pre), quantized exactly as gelu_fp8.cu's GELU cast does
// (the same function of the same bf16 input, the same to_fp8x8), so with the forward's scale the same bytes.
//
// Phase 1's loads, two schedules with the same arithmetic in the same row order (so the same bytes):
// - staged (STAGES > 0: the dGELU casts, kCtDgeluStages; the bf16 casts with kCtCopyStages > 0): each thread
//   copies its own 16-byte chunks of its next STAGES rows (both inputs for the dGELU casts) into its own
//   shared-memory slots with cp.async and reads back only those, so the loads stay in flight through the math
//   without holding registers and without a barrier (as the LayerNorm backward's pipeline in
//   llmc/kernels/layernorm/layernorm.cu); one commit group per row, and kCtStagedBlocks blocks per SM.
// - registers (STAGES = 0: the fp32 casts, and the bf16 ones while kCtCopyStages is 0): all 8 rows' loads
//   issued before any math, 2 blocks per SM.
// Measured on the H200 against the register schedule (which held 2 rows of the dGELU cast in flight, at 3
// blocks, and none during its math), L2-flushed launches, two rounds: dGELU + GELU output T at [12288, 6400]
// 0.2095 -> 0.1820 ms (2 stages 0.185; 8 stages at 2 blocks 0.195), without the GELU output 0.1527 -> 0.1269.
// The bf16 casts staged 8 rows deep: 12288 x 6400 0.0886 -> 0.0854 ms, dbias 12288 x 4800 0.0746 -> 0.0717,
// the LM head's 50304 x 1600 0.0911 -> 0.0879, the smaller ones within the run's spread; bit for bit
// (dev/test_fp8, fingerprints), but the step was not faster on an H100 (GPT-1.5B fp8 +0.28 ms, 124M +0.12 ms,
// three alternated rounds), so kCtCopyStages stays 0 (docs/performance.md, 2026-12-05, fourth and thirteenth
// sessions).
constexpr int kCtDgeluStages = 4;
constexpr int kCtCopyStages = 0;
constexpr int kCtStagedBlocks = 3;
// The inputs a thread stages per row (the dGELU casts read the pre-GELU tensor too).
__host__ __device__ constexpr int ct_inputs(int op) { return op == kOpCopy ? 1 : 2; }

template <class Tin, int OP, bool DBIAS, __nv_fp8_interpretation_t FMT, bool GELU_T = false,
          __nv_fp8_interpretation_t GFMT = FMT, int STAGES = 0>
__global__ void __launch_bounds__(kCtThreads, STAGES > 0 ? kCtStagedBlocks : 2)
    cast_transpose_kernel(__nv_fp8_storage_t* __restrict__ out_NC, __nv_fp8_storage_t* __restrict__ out_T,
                          float* __restrict__ out_scale_inv, float* __restrict__ dbias_partial,
                          float* staging, const Tin* __restrict__ in_NC, const bf16* __restrict__ pre_NC,
                          const float* __restrict__ scale_ptr, const float* __restrict__ scale_inv_ptr, int N,
                          int C, GeluOutT gelu) {
    static_assert(!GELU_T || OP != kOpCopy, "the GELU output needs the pre-GELU input");
    static_assert(STAGES == 0 || (std::is_same_v<Tin, bf16> && STAGES <= 8), "staged loads: bf16, <= 8 rows");
    static_assert(STAGES > 0 || OP == kOpCopy, "the dGELU casts take the staged loads");
    __shared__ uint32_t tile[kCtTile * kCtTileWords];
    __shared__ uint32_t gelu_tile[GELU_T ? kCtTile * kCtTileWords : 1];
    const int tid = threadIdx.x;
    const CtTileCoords tc = ct_tile_coords(C);  // named (not a structured binding): the lambdas capture them
    const int n0 = tc.n0, c0 = tc.c0, rr = tc.rr, cc = tc.cc, c = tc.c;
    const bool col_ok = tc.col_ok;
    ct_write_scale_inv(out_scale_inv, scale_inv_ptr);

    const float scale = *scale_ptr;
    const float gelu_scale = GELU_T ? *gelu.scale_ptr : 0.0f;
    uint32_t amax_bits = 0, gelu_amax_bits = 0;
    float colsum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    // Row i (< 8) of this thread: tile row rr + 16 i, quantized, stored row-wise and parked in the tile(s).
    const auto process_row = [&](int i, const Raw8<Tin>& raw, const Raw8<bf16>& raw_pre) {
        const int r = rr + 16 * i, n = n0 + r;
        uint2 q = make_uint2(0, 0), gq = make_uint2(0, 0);
        if (col_ok && n < N) {
            float v[8];
            chunk_values<OP>(raw, raw_pre, v);
#pragma unroll
            for (int k = 0; k < 8; k++) {
                amax_bits = max(amax_bits, fp8_abs_bits(v[k]));
                if constexpr (DBIAS) colsum[k] += v[k];
            }
            q = to_fp8x8<FMT>(v, scale);
            if (out_NC != nullptr) *reinterpret_cast<uint2*>(out_NC + (size_t)n * C + c) = q;
            if constexpr (GELU_T) {
                float p[8], y[8];
                unpack8(raw_pre, p);
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    y[k] = gelu_bf16<OP == kOpDgeluTanh>(p[k]);
                    gelu_amax_bits = max(gelu_amax_bits, fp8_abs_bits(y[k]));
                }
                gq = to_fp8x8<GFMT>(y, gelu_scale);
            }
        }
        ct_tile_park(tile, r, cc, q);
        if constexpr (GELU_T) ct_tile_park(gelu_tile, r, cc, gq);
    };
    if constexpr (STAGES == 0) {
        Raw8<Tin> raw[8];
        const Raw8<bf16> raw_pre{};  // unused (OP == kOpCopy)
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int n = n0 + rr + 16 * i;
            if (col_ok && n < N) raw[i] = load_raw8(in_NC + (size_t)n * C + c);
        }
#pragma unroll
        for (int i = 0; i < 8; i++) process_row(i, raw[i], raw_pre);
    } else {
        extern __shared__ x128 ct_stage[];  // ct_staged_rows' slots
        constexpr int kInputs = ct_inputs(OP);
        const bf16* const inputs[2] = {in_NC, pre_NC};  // pre_NC: the dGELU casts only
        ct_staged_rows<STAGES, kInputs>(ct_stage, tc, N, C, inputs, [&](int i, const x128* chunks) {
            Raw8<bf16> raw, raw_pre;
            raw.a = chunks[0];
            if constexpr (OP != kOpCopy) raw_pre.a = chunks[1];
            process_row(i, raw, raw_pre);
        });
    }
    __shared__ float red[DBIAS ? 16 : 1][kCtTile];
    if constexpr (DBIAS) {
#pragma unroll
        for (int k = 0; k < 8; k++) red[rr][cc * 8 + k] = colsum[k];
    }
    block_amax_atomic(amax_bits, staging);  // its __syncthreads also publishes tile[], gelu_tile[] and red[]
    if constexpr (GELU_T) {
        __syncthreads();  // thread 0 has read the first reduction's per-warp maxima; the second reuses them
        block_amax_atomic(gelu_amax_bits, gelu.staging);
    }

    ct_tile_write_transposed(out_T, tile, n0, c0, N, C);  // phase 2: transposed output
    if constexpr (GELU_T) ct_tile_write_transposed(gelu.out_T, gelu_tile, n0, c0, N, C);

    if constexpr (DBIAS) {
        // Column sums of this tile in a fixed order (deterministic); partial row blockIdx.y of
        // [gridDim.y][C].
        if (tid < kCtTile && c0 + tid < C) {
            float sum = 0.0f;
#pragma unroll
            for (int r = 0; r < 16; r++) sum += red[r][tid];
            dbias_partial[(size_t)blockIdx.y * C + c0 + tid] = sum;
        }
    }
}

// ---- byte transpose of an FP8 tensor (no quantization): the same tile, phase 1 moves bytes as they are.
__global__ void __launch_bounds__(kCtThreads, 2)
    transpose_bytes_kernel(__nv_fp8_storage_t* __restrict__ out_T, const __nv_fp8_storage_t* __restrict__ in,
                           int N, int C) {
    __shared__ uint32_t tile[kCtTile * kCtTileWords];
    const auto [n0, c0, rr, cc, c, col_ok] = ct_tile_coords(C);
    uint2 q[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int n = n0 + rr + 16 * i;
        q[i] = col_ok && n < N ? __ldcs(reinterpret_cast<const uint2*>(in + (size_t)n * C + c))
                               : make_uint2(0, 0);
    }
#pragma unroll
    for (int i = 0; i < 8; i++) ct_tile_park(tile, rr + 16 * i, cc, q[i]);
    __syncthreads();
    ct_tile_write_transposed(out_T, tile, n0, c0, N, C);
}

// dbias[c] (+)= sum over `rows` partial rows, fixed order: block of 32 columns x 8 row-strided lanes.
__global__ void __launch_bounds__(256)
    dbias_reduce_kernel(bf16* dbias, const float* __restrict__ partial, int rows, int C, bool accumulate) {
    __shared__ float red[8][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c = blockIdx.x * 32 + tx;
    float sum = 0.0f;
    if (c < C)
        for (int r = ty; r < rows; r += 8) sum += partial[(size_t)r * C + c];
    red[ty][tx] = sum;
    __syncthreads();
    if (ty == 0 && c < C) {
        float total = 0.0f;
#pragma unroll
        for (int y = 0; y < 8; y++) total += red[y][tx];
        if (accumulate) total += __bfloat162float(dbias[c]);
        dbias[c] = __float2bfloat16(total);
    }
}

// ---- element-wise passes (kEwThreads / kEwChunks of llmc/fp8/fp8_device.cuh): the amax only
// (calibration), or with kWrite also the row-wise bytes (no transposed copy), each element quantized as the
// tile kernel does (same to_fp8x8 of the same values), so the row-wise bytes of cast_transpose; scale_inv
// written by one thread.

template <class Tin, int OP, bool kWrite = false, __nv_fp8_interpretation_t FMT = __NV_E4M3>
__global__ void __launch_bounds__(kEwThreads)
    elementwise_kernel(float* staging, const Tin* __restrict__ in, const bf16* __restrict__ pre, long n,
                       __nv_fp8_storage_t* __restrict__ out = nullptr,
                       float* __restrict__ out_scale_inv = nullptr,
                       const float* __restrict__ scale_ptr = nullptr,
                       const float* __restrict__ scale_inv_ptr = nullptr) {
    struct Raw {
        Raw8<Tin> in;
        Raw8<bf16> pre;
    };
    const float scale = ew_scale<kWrite>(out_scale_inv, scale_ptr, scale_inv_ptr);
    const uint32_t amax_bits = ew_chunks<kWrite, FMT, Raw>(
        n, out, scale, [&](Raw& raw, long idx) { load_chunk<OP>(raw.in, raw.pre, in, pre, idx); },
        [&](const Raw& raw, float v[8], uint32_t& amax) {
            chunk_values<OP>(raw.in, raw.pre, v);
#pragma unroll
            for (int k = 0; k < 8; k++) amax = max(amax, fp8_abs_bits(v[k]));
        });
    block_amax_atomic(amax_bits, staging);
}

// ---------------------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------------------

template <class Tin, int OP>
void launch_amax(const Fp8Tensor& t, const Tin* in, const bf16* pre, cudaStream_t stream) {
    fp8_check_bound(t, "fp8 amax");
    const long n = t.numel();
    CHECK(n % 8 == 0, "fp8 amax: n = %ld must be a multiple of 8", n);
    CHECK(aligned16(in) && aligned16(pre), "fp8 amax: pointers must be 16-byte aligned");
    if (n == 0) return;
    const unsigned grid = ew_grid(n, "fp8 amax");
    elementwise_kernel<Tin, OP><<<grid, kEwThreads, 0, stream>>>(t.slot.amax, in, pre, n);
    CHECK_LAUNCH();
}

// Launches a cast_transpose_kernel instantiation on the tile grid of [N, C], with the dynamic shared memory
// of its staged loads (none for the register schedule).
template <int OP, int STAGES, class Kernel, class... Args>
void launch_ct_kernel(Kernel kernel, int N, int C, const GeluOutT& gelu, cudaStream_t stream, Args... args) {
    const dim3 grid(ceil_div(C, kCtTile), ceil_div(N, kCtTile));
    CHECK(grid.y <= 65535, "fp8 cast_transpose: N = %d too large", N);
    const size_t smem = STAGES > 0 ? ct_stage_bytes<STAGES, ct_inputs(OP)>() : 0;
    // the static tiles plus the stages exceed the 48 KB a launch gets without asking; the carveout lets
    // kCtStagedBlocks blocks share an SM
    allow_dynamic_smem(kernel, smem, /*max_carveout=*/true);
    kernel<<<grid, kCtThreads, smem, stream>>>(args..., N, C, gelu);
    CHECK_LAUNCH();
}

// The tile kernel's launch for `out` (out.data may be null), with the optional GELU output (dGELU only). The
// dGELU casts take the staged loads.
template <class Tin, int OP, bool DBIAS>
void launch_cast_transpose(const Fp8Tensor& out, float* dbias_partial, const Tin* in_NC, const bf16* pre_NC,
                           cudaStream_t stream, const Fp8Tensor* gelu_out = nullptr) {
    const int N = out.rows, C = out.cols;
    CHECK(N > 0 && C > 0 && N % 16 == 0 && C % 16 == 0,
          "fp8 cast_transpose: N = %d and C = %d must be positive multiples of 16", N, C);
    CHECK(out.data_T != nullptr, "fp8 cast_transpose: the transposed output is required");
    CHECK(aligned16(out.data) && aligned16(out.data_T) && aligned16(in_NC) && aligned16(pre_NC),
          "fp8 cast_transpose: pointers must be 16-byte aligned");
    CHECK(OP != kOpCopy || gelu_out == nullptr, "fp8 cast: a GELU output needs the dGELU cast");
    constexpr int kStages = !std::is_same_v<Tin, bf16> ? 0 : OP == kOpCopy ? kCtCopyStages : kCtDgeluStages;
    fp8_dispatch_format(out, [&](auto tag) {
        constexpr __nv_fp8_interpretation_t FMT = decltype(tag)::value;
        if constexpr (OP != kOpCopy) {
            if (gelu_out != nullptr) {
                CHECK(gelu_out->data_T != nullptr && aligned16(gelu_out->data_T),
                      "fp8 dgelu: the GELU output's transposed copy is required, 16-byte aligned");
                CHECK(gelu_out->rows == N && gelu_out->cols == C,
                      "fp8 dgelu: the GELU output is [%d, %d], not [%d, %d]", gelu_out->rows, gelu_out->cols,
                      N, C);
                fp8_dispatch_format(*gelu_out, [&](auto gtag) {
                    constexpr __nv_fp8_interpretation_t GFMT = decltype(gtag)::value;
                    const GeluOutT gelu = {gelu_out->data_T, gelu_out->slot.amax, gelu_out->slot.scale};
                    launch_ct_kernel<OP, kStages>(
                        cast_transpose_kernel<Tin, OP, DBIAS, FMT, true, GFMT, kStages>, N, C, gelu, stream,
                        out.data, out.data_T, out.scale_inv, dbias_partial, out.slot.amax, in_NC, pre_NC,
                        out.slot.scale, out.slot.scale_inv);
                });
                return;
            }
        }
        launch_ct_kernel<OP, kStages>(cast_transpose_kernel<Tin, OP, DBIAS, FMT, false, FMT, kStages>, N, C,
                                      GeluOutT{}, stream, out.data, out.data_T, out.scale_inv, dbias_partial,
                                      out.slot.amax, in_NC, pre_NC, out.slot.scale, out.slot.scale_inv);
    });
}

void launch_dbias_reduce(bf16* dbias, const float* partial, int N, int C, bool accumulate,
                         cudaStream_t stream) {
    const int rows = ceil_div(N, kCtTile);
    dbias_reduce_kernel<<<ceil_div(C, 32), dim3(32, 8), 0, stream>>>(dbias, partial, rows, C, accumulate);
    CHECK_LAUNCH();
}

}  // namespace

void fp8_amax(const bf16* in, const Fp8Tensor& t, cudaStream_t stream) {
    launch_amax<bf16, kOpCopy>(t, in, nullptr, stream);
}
void fp8_amax(const float* in, const Fp8Tensor& t, cudaStream_t stream) {
    launch_amax<float, kOpCopy>(t, in, nullptr, stream);
}
void fp8_amax_dgelu(const bf16* dout, const bf16* pre, const Fp8Tensor& t, bool gelu_tanh,
                    cudaStream_t stream) {
    CHECK(pre != nullptr, "fp8_amax_dgelu: pre is required");
    if (gelu_tanh)
        launch_amax<bf16, kOpDgeluTanh>(t, dout, pre, stream);
    else
        launch_amax<bf16, kOpDgeluErf>(t, dout, pre, stream);
}

void fp8_cast_transpose(const bf16* in_NC, const Fp8Tensor& out, cudaStream_t stream) {
    launch_cast_transpose<bf16, kOpCopy, false>(out, nullptr, in_NC, nullptr, stream);
}
void fp8_cast_transpose(const float* in_NC, const Fp8Tensor& out, cudaStream_t stream) {
    launch_cast_transpose<float, kOpCopy, false>(out, nullptr, in_NC, nullptr, stream);
}

template <class Tin>
static void launch_cast(const Tin* in_NC, const Fp8Tensor& out, cudaStream_t stream) {
    const long n = out.numel();
    CHECK(out.rows > 0 && out.cols > 0 && n % 8 == 0,
          "fp8_cast: N * C = %ld must be a positive multiple of 8", n);
    CHECK(out.data != nullptr && in_NC != nullptr && aligned16(out.data) && aligned16(in_NC),
          "fp8_cast: pointers must be non-null and 16-byte aligned");
    const auto kernel_for = [](auto tag) {
        return elementwise_kernel<Tin, kOpCopy, true, decltype(tag)::value>;
    };
    fp8_launch_elementwise(out, "fp8_cast", stream, kernel_for, in_NC, (const bf16*)nullptr);
}
void fp8_cast(const bf16* in_NC, const Fp8Tensor& out, cudaStream_t stream) {
    launch_cast(in_NC, out, stream);
}
void fp8_cast(const float* in_NC, const Fp8Tensor& out, cudaStream_t stream) {
    launch_cast(in_NC, out, stream);
}

size_t fp8_dbias_scratch_bytes(int N, int O) { return (size_t)ceil_div(N, kCtTile) * O * sizeof(float); }

static float* dbias_partials(bf16* dbias, void* scratch) {
    CHECK(dbias != nullptr && scratch != nullptr && aligned16(scratch),
          "fp8 dbias: dbias and an aligned scratch are required");
    return static_cast<float*>(scratch);
}

void fp8_cast_transpose_dbias(const bf16* dY_NO, const Fp8Tensor& out, bf16* dbias_O, void* scratch,
                              bool accumulate, cudaStream_t stream) {
    float* partial = dbias_partials(dbias_O, scratch);
    launch_cast_transpose<bf16, kOpCopy, true>(out, partial, dY_NO, nullptr, stream);
    launch_dbias_reduce(dbias_O, partial, out.rows, out.cols, accumulate, stream);
}

void fp8_cast_transpose_dbias_dgelu(const bf16* dout_NF, const bf16* pre_NF, const Fp8Tensor& out,
                                    bf16* dbias_F, void* scratch, bool gelu_tanh, bool accumulate,
                                    cudaStream_t stream, const Fp8Tensor* gelu_out) {
    float* partial = dbias_partials(dbias_F, scratch);
    CHECK(pre_NF != nullptr, "fp8 dgelu: pre is required");
    if (gelu_tanh)
        launch_cast_transpose<bf16, kOpDgeluTanh, true>(out, partial, dout_NF, pre_NF, stream, gelu_out);
    else
        launch_cast_transpose<bf16, kOpDgeluErf, true>(out, partial, dout_NF, pre_NF, stream, gelu_out);
    launch_dbias_reduce(dbias_F, partial, out.rows, out.cols, accumulate, stream);
}

void fp8_transpose(const Fp8Tensor& t, cudaStream_t stream) {
    const int N = t.rows, C = t.cols;
    CHECK(N > 0 && C > 0 && N % 16 == 0 && C % 16 == 0,
          "fp8_transpose: N = %d and C = %d must be positive multiples of 16", N, C);
    CHECK(t.data_T != nullptr && t.data != nullptr && aligned16(t.data_T) && aligned16(t.data),
          "fp8_transpose: pointers must be non-null and 16-byte aligned");
    const dim3 grid(ceil_div(C, kCtTile), ceil_div(N, kCtTile));
    CHECK(grid.y <= 65535, "fp8_transpose: N = %d too large", N);
    transpose_bytes_kernel<<<grid, kCtThreads, 0, stream>>>(t.data_T, t.data, N, C);
    CHECK_LAUNCH();
}
