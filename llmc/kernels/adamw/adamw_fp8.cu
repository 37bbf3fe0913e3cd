// AdamW + FP8 cast of a Linear weight (llmc/kernels/adamw/adamw_fp8.cuh): the 128 x 128 cast-transpose tile
// of llmc/fp8/fp8_device.cuh, with the AdamW element update (llmc/kernels/adamw/adamw_math.cuh) applied to
// each 8-column chunk before it is quantized.
#include "llmc/fp8/fp8_device.cuh"
#include "llmc/kernels/adamw/adamw_fp8.cuh"
#include "llmc/kernels/adamw/adamw_math.cuh"

namespace {

// Phase 1: thread (rr, cc) updates and quantizes rows rr + 16 i (i < 8), columns [c, c + 8) of the tile, two
// rows' loads in flight at a time (master, m, v: 96 bytes, grads: 16 bytes per row); phase 2 writes W^T.
// Layer z = blockIdx.z of the group: its master, m, v and gradient at z * layer_stride elements, its FP8
// tensor's pointers in layers (AdamWFp8Layers, by value: the kernel's parameter space).
template <__nv_fp8_interpretation_t FMT, class MT>
__global__ void __launch_bounds__(kCtThreads)
    adamw_fp8_weight_kernel(float* __restrict__ master, MT* __restrict__ m_st, MT* __restrict__ v_st,
                            const bf16* __restrict__ grads, int OC, int C, AdamWCoefs coefs,
                            const AdamWStepScalars* __restrict__ step_dev,
                            const float* __restrict__ grad_scale, const int* __restrict__ apply,
                            const __grid_constant__ AdamWFp8Layers layers) {
    const int z = blockIdx.z;
    const size_t layer0 = (size_t)z * layers.layer_stride;
    master += layer0, m_st += layer0, v_st += layer0, grads += layer0;
    __nv_fp8_storage_t* __restrict__ w = layers.w[z];
    __nv_fp8_storage_t* __restrict__ wT = layers.w_T[z];
    float* w_scale_inv = layers.w_scale_inv[z];
    float* staging = layers.staging[z];
    const float* scale_ptr = layers.scale[z];
    const float* scale_inv_ptr = layers.scale_inv[z];
    __shared__ uint32_t tile[kCtTile * kCtTileWords];
    const auto [n0, c0, rr, cc, c, col_ok] = ct_tile_coords(C);
    ct_write_scale_inv(w_scale_inv, scale_inv_ptr);  // once per layer: blocks (0, 0, z)
    const bool update = apply == nullptr || *apply != 0;
    const AdamWStepScalars t = *step_dev;
    const float gscale = grad_scale ? *grad_scale : 1.0f;
    const float scale = *scale_ptr;
    uint32_t amax_bits = 0;
    constexpr int kBatch = 2;
#pragma unroll
    for (int b = 0; b < 8; b += kBatch) {
        float p[kBatch][8], m[kBatch][8], v[kBatch][8];
        x128 g[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; i++) {
            const int n = n0 + rr + 16 * (b + i);
            if (col_ok && n < OC) {
                const size_t off = (size_t)n * C + c;
                load_moments8(master + off, p[i]);
                if (update) {
                    load_moments8(m_st + off, m[i]);
                    load_moments8(v_st + off, v[i]);
                    g[i] = load128_stream(grads + off);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < kBatch; i++) {
            const int r = rr + 16 * (b + i), n = n0 + r;
            uint2 q = make_uint2(0, 0);
            if (col_ok && n < OC) {
                const size_t off = (size_t)n * C + c;
                float val[8];
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    float& pk = p[i][k];
                    if (update)
                        adamw_element(pk, m[i][k], v[i][k], __bfloat162float(g[i][k]) * gscale, coefs, t);
                    val[k] = pk;
                    amax_bits = max(amax_bits, fp8_abs_bits(pk));
                }
                if (update) {
                    store_moments8(master + off, p[i]);
                    store_moments8(m_st + off, m[i]);
                    store_moments8(v_st + off, v[i]);
                }
                q = to_fp8x8<FMT>(val, scale);
                *reinterpret_cast<uint2*>(w + off) = q;
            }
            ct_tile_park(tile, r, cc, q);
        }
    }
    block_amax_atomic(amax_bits, staging);  // its __syncthreads also publishes tile[]
    ct_tile_write_transposed(wT, tile, n0, c0, OC, C);
}

}  // namespace

void AdamWFp8Layers::add(const Fp8Tensor& w) {
    CHECK(count < kMax, "AdamWFp8Layers: more than %d layers", kMax);
    fp8_check_slot(w);
    this->w[count] = w.data, w_T[count] = w.data_T, w_scale_inv[count] = w.scale_inv;
    staging[count] = w.slot.amax, scale[count] = w.slot.scale, scale_inv[count] = w.slot.scale_inv;
    count++;
}

// Checks and launches the kernel over `layers` (count <= AdamWFp8Layers::kMax) of [O, I] weights.
template <class MT>
void adamw_update_fp8_weights(float* master_LOI, MT* m_LOI, MT* v_LOI, const bf16* grads_LOI, float beta1,
                              float beta2, float eps, const AdamWStepScalars* step_dev,
                              const float* grad_scale, const int* apply, const AdamWFp8Layers& layers, int O,
                              int I, Fp8Dtype format, cudaStream_t stream) {
    CHECK(O > 0 && I > 0 && O % 16 == 0 && I % 16 == 0,
          "adamw_update_fp8_weight: O = %d and I = %d must be positive multiples of 16", O, I);
    CHECK(step_dev != nullptr, "adamw_update_fp8_weight: step scalars (device) required");
    CHECK(layers.count >= 1 && layers.count <= AdamWFp8Layers::kMax, "adamw_update_fp8_weight: %d layers",
          layers.count);
    CHECK(aligned16(master_LOI) && aligned16(m_LOI) && aligned16(v_LOI) && aligned16(grads_LOI) &&
              layers.layer_stride % 8 == 0,
          "adamw_update_fp8_weight: pointers must be 16-byte aligned");
    for (int l = 0; l < layers.count; l++)
        CHECK(aligned16(layers.w[l]) && aligned16(layers.w_T[l]) && layers.staging[l] != nullptr &&
                  layers.scale[l] != nullptr && layers.scale_inv[l] != nullptr,
              "adamw_update_fp8_weight: layer %d's FP8 tensor is not aligned or not bound to a slot", l);
    const dim3 grid(ceil_div(I, kCtTile), ceil_div(O, kCtTile), layers.count);
    CHECK(grid.y <= 65535, "adamw_update_fp8_weight: O = %d too large", O);
    const AdamWCoefs coefs = adamw_coefs(beta1, beta2, eps);
    fp8_dispatch_dtype(format, [&](auto tag) {
        constexpr __nv_fp8_interpretation_t FMT = decltype(tag)::value;
        adamw_fp8_weight_kernel<FMT, MT><<<grid, kCtThreads, 0, stream>>>(
            master_LOI, m_LOI, v_LOI, grads_LOI, O, I, coefs, step_dev, grad_scale, apply, layers);
        CHECK_LAUNCH();
    });
}

template <class MT>
void adamw_update_fp8_weight(float* master_OI, MT* m_OI, MT* v_OI, const bf16* grads_OI, float beta1,
                             float beta2, float eps, const AdamWStepScalars* step_dev,
                             const float* grad_scale, const int* apply, const Fp8Tensor& w,
                             cudaStream_t stream) {
    AdamWFp8Layers layers;
    layers.add(w);
    adamw_update_fp8_weights(master_OI, m_OI, v_OI, grads_OI, beta1, beta2, eps, step_dev, grad_scale, apply,
                             layers, w.rows, w.cols, w.format, stream);
}

template void adamw_update_fp8_weight<float>(float*, float*, float*, const bf16*, float, float, float,
                                             const AdamWStepScalars*, const float*, const int*,
                                             const Fp8Tensor&, cudaStream_t);
template void adamw_update_fp8_weight<bf16>(float*, bf16*, bf16*, const bf16*, float, float, float,
                                            const AdamWStepScalars*, const float*, const int*,
                                            const Fp8Tensor&, cudaStream_t);
template void adamw_update_fp8_weights<float>(float*, float*, float*, const bf16*, float, float, float,
                                              const AdamWStepScalars*, const float*, const int*,
                                              const AdamWFp8Layers&, int, int, Fp8Dtype, cudaStream_t);
template void adamw_update_fp8_weights<bf16>(float*, bf16*, bf16*, const bf16*, float, float, float,
                                             const AdamWStepScalars*, const float*, const int*,
                                             const AdamWFp8Layers&, int, int, Fp8Dtype, cudaStream_t);
