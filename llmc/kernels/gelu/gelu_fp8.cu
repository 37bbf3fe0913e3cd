// GELU quantized to FP8 in the same pass (row-wise and/or transposed, with its amax): the producer of the
// fc-projection's input. The contracts in llmc/kernels/gelu/gelu_fp8.cuh.
//
// Bit-exactness with gelu_forward followed by fp8_cast_transpose: GELU is gelu_math.cuh's gelu_bf16 (inlined
// by gelu.cu too), the quantization, amax and tile transposition are llmc/fp8/fp8_device.cuh's (inlined by
// llmc/kernels/cast/cast.cu too).
#include <cstdint>

#include "llmc/fp8/fp8_device.cuh"
#include "llmc/kernels/gelu/gelu_fp8.cuh"
#include "llmc/kernels/gelu/gelu_math.cuh"

namespace {

typedef __nv_fp8_storage_t fp8s;

// ---------------------------------------------------------------------------------------------------------
// GELU -> FP8
// ---------------------------------------------------------------------------------------------------------
// GELU forward: gelu_bf16 of llmc/kernels/gelu/gelu_math.cuh, the very same code as
// llmc/kernels/gelu/gelu.cu's gelu_forward (dev/test_fp8_producers.cu checks bit equality with gelu_forward +
// fp8_cast_transpose).

// Cast + transpose as llmc/kernels/cast/cast.cu's cast_transpose_kernel (the 128 x 128 tile of
// llmc/fp8/fp8_device.cuh), with GELU applied to the loaded values.
// Staging (ct_staged_rows of llmc/fp8/fp8_device.cuh) as the dGELU cast's: kGeluStages rows of loads a thread
// in flight through the GELU math, kGeluStagedBlocks blocks per SM; 0 stages: all 8 loads of a thread issued
// before any math, 2 blocks per SM. 4 x 3 took the 1.5B fc input (12288 x 6400) from 0.125 to 0.116 ms on an
// H100, bitwise the same (docs/performance.md, twelfth session); 4 x 4 and 8 x 4 were no faster.
constexpr int kGeluStages = 4;
constexpr int kGeluStagedBlocks = 3;
template <bool kTanh, __nv_fp8_interpretation_t FMT>
__global__ void __launch_bounds__(kCtThreads, kGeluStages > 0 ? kGeluStagedBlocks : 2)
    fp8_gelu_cast_transpose_kernel(fp8s* __restrict__ out_NC, fp8s* __restrict__ out_T,
                                   float* __restrict__ out_scale_inv, float* staging,
                                   const bf16* __restrict__ pre_NC, const float* __restrict__ scale_ptr,
                                   const float* __restrict__ scale_inv_ptr, int N, int C) {
    constexpr int STAGES = kGeluStages;
    __shared__ uint32_t tile[kCtTile * kCtTileWords];
    const CtTileCoords tc = ct_tile_coords(C);  // named (not a structured binding): the lambdas capture them
    const int n0 = tc.n0, c0 = tc.c0, rr = tc.rr, cc = tc.cc, c = tc.c;
    const bool col_ok = tc.col_ok;
    ct_write_scale_inv(out_scale_inv, scale_inv_ptr);

    const float scale = *scale_ptr;
    uint32_t amax_bits = 0;
    const auto process_row = [&](int i, const x128& raw) {
        const int r = rr + 16 * i, n = n0 + r;
        uint2 q = make_uint2(0, 0);
        if (col_ok && n < N) {
            float y[8];
#pragma unroll
            for (int k = 0; k < 8; k++) {
                y[k] = gelu_bf16<kTanh>(__bfloat162float(raw[k]));
                amax_bits = max(amax_bits, fp8_abs_bits(y[k]));
            }
            q = to_fp8x8<FMT>(y, scale);
            if (out_NC != nullptr) *reinterpret_cast<uint2*>(out_NC + (size_t)n * C + c) = q;
        }
        ct_tile_park(tile, r, cc, q);
    };
    if constexpr (STAGES == 0) {
        x128 raw[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int n = n0 + rr + 16 * i;
            if (col_ok && n < N) raw[i] = load128cs(pre_NC + (size_t)n * C + c);
        }
#pragma unroll
        for (int i = 0; i < 8; i++) process_row(i, raw[i]);
    } else {
        extern __shared__ x128 gelu_stage[];  // ct_staged_rows' slots
        const bf16* const inputs[1] = {pre_NC};
        ct_staged_rows<STAGES, 1>(gelu_stage, tc, N, C, inputs,
                                  [&](int i, const x128* chunks) { process_row(i, chunks[0]); });
    }
    block_amax_atomic(amax_bits, staging);  // its __syncthreads also publishes tile[]
    ct_tile_write_transposed(out_T, tile, n0, c0, N, C);
}

// Element-wise (kEwThreads / kEwChunks of llmc/fp8/fp8_device.cuh): the amax only (calibration), or with
// kWrite also the row-wise bytes only (the transposed copy is rebuilt in backward, --recompute >= 1), each
// element quantized as the tile kernel does (same gelu_bf16, same to_fp8x8), so the same bytes and amax.

template <bool kTanh, bool kWrite = false, __nv_fp8_interpretation_t FMT = __NV_E4M3>
__global__ void __launch_bounds__(kEwThreads)
    fp8_gelu_rows_kernel(float* staging, const bf16* __restrict__ pre, long n,
                         fp8s* __restrict__ out = nullptr, float* __restrict__ out_scale_inv = nullptr,
                         const float* __restrict__ scale_ptr = nullptr,
                         const float* __restrict__ scale_inv_ptr = nullptr) {
    const float scale = ew_scale<kWrite>(out_scale_inv, scale_ptr, scale_inv_ptr);
    const uint32_t amax_bits = ew_chunks<kWrite, FMT, x128>(
        n, out, scale, [&](x128& raw, long idx) { raw = load128cs(pre + idx); },
        [&](const x128& raw, float y[8], uint32_t& amax) {
#pragma unroll
            for (int k = 0; k < 8; k++) {
                y[k] = gelu_bf16<kTanh>(__bfloat162float(raw[k]));
                amax = max(amax, fp8_abs_bits(y[k]));
            }
        });
    block_amax_atomic(amax_bits, staging);
}

}  // namespace

void fp8_gelu_cast_transpose(const bf16* pre_NC, const Fp8Tensor& out, bool gelu_tanh, cudaStream_t stream) {
    const int N = out.rows, C = out.cols;
    CHECK(N > 0 && C > 0 && N % 16 == 0 && C % 16 == 0,
          "fp8_gelu_cast_transpose: N = %d and C = %d must be positive multiples of 16", N, C);
    CHECK(out.data_T != nullptr && pre_NC != nullptr, "fp8_gelu_cast_transpose: out_T and pre are required");
    CHECK(aligned16(out.data) && aligned16(out.data_T) && aligned16(pre_NC),
          "fp8_gelu_cast_transpose: pointers must be 16-byte aligned");
    const dim3 grid(ceil_div(C, kCtTile), ceil_div(N, kCtTile));
    CHECK(grid.y <= 65535, "fp8_gelu_cast_transpose: N = %d too large", N);
    fp8_dispatch_format(out, [&](auto tag) {
        constexpr __nv_fp8_interpretation_t FMT = decltype(tag)::value;
        auto kernel = gelu_tanh ? fp8_gelu_cast_transpose_kernel<true, FMT>
                                : fp8_gelu_cast_transpose_kernel<false, FMT>;
        constexpr size_t smem = kGeluStages > 0 ? ct_stage_bytes<kGeluStages, 1>() : 0;
        allow_dynamic_smem(kernel, smem, /*max_carveout=*/true);
        kernel<<<grid, kCtThreads, smem, stream>>>(out.data, out.data_T, out.scale_inv, out.slot.amax, pre_NC,
                                                   out.slot.scale, out.slot.scale_inv, N, C);
        CHECK_LAUNCH();
    });
}

void fp8_gelu_cast(const bf16* pre_NC, const Fp8Tensor& out, bool gelu_tanh, cudaStream_t stream) {
    const long n = out.numel();
    CHECK(out.rows > 0 && out.cols > 0 && n % 8 == 0,
          "fp8_gelu_cast: N * C = %ld must be a positive multiple of 8", n);
    CHECK(out.data != nullptr && pre_NC != nullptr && aligned16(out.data) && aligned16(pre_NC),
          "fp8_gelu_cast: out and pre must be non-null and 16-byte aligned");
    const auto kernel_for = [&](auto tag) {
        constexpr __nv_fp8_interpretation_t FMT = decltype(tag)::value;
        return gelu_tanh ? fp8_gelu_rows_kernel<true, true, FMT> : fp8_gelu_rows_kernel<false, true, FMT>;
    };
    fp8_launch_elementwise(out, "fp8_gelu_cast", stream, kernel_for, pre_NC);
}
void fp8_gelu_amax(const bf16* pre_NC, const Fp8Tensor& t, bool gelu_tanh, cudaStream_t stream) {
    const long n = t.numel();
    CHECK(t.rows >= 0 && t.cols >= 0 && n % 8 == 0, "fp8_gelu_amax: N * C = %ld must be a multiple of 8", n);
    CHECK(pre_NC != nullptr && aligned16(pre_NC), "fp8_gelu_amax: pre must be non-null and 16-byte aligned");
    fp8_check_bound(t, "fp8_gelu_amax");
    if (n == 0) return;
    const unsigned grid = ew_grid(n, "fp8_gelu_amax");
    if (gelu_tanh)
        fp8_gelu_rows_kernel<true><<<grid, kEwThreads, 0, stream>>>(t.slot.amax, pre_NC, n);
    else
        fp8_gelu_rows_kernel<false><<<grid, kEwThreads, 0, stream>>>(t.slot.amax, pre_NC, n);
    CHECK_LAUNCH();
}
