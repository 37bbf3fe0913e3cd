// The AdamW element update shared by the AdamW kernels (llmc/kernels/adamw/adamw.cu and the FP8-weight
// variant in llmc/kernels/adamw/adamw_fp8.cu), so both compute bitwise the same master weights and moments.
// Internal to both.
#pragma once
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/kernels/adamw/adamw.cuh"

// The constants of a run; the per-step scalars (AdamWStepScalars) come by value or from device memory.
struct AdamWCoefs {
    float lerp_weight;  // 1 - beta1
    float beta2, one_minus_beta2, eps;
};
inline AdamWCoefs adamw_coefs(float beta1, float beta2, float eps) {
    return {(float)(1.0 - (double)beta1), beta2, (float)(1.0 - (double)beta2), eps};
}

template <class T>
__device__ inline Packed128<T> load128_stream(const T* address) {
    return load128cs(address);
}
template <class T>
__device__ inline void store128_stream(T* target, Packed128<T> value) {
    __stcs(reinterpret_cast<int4*>(target), *reinterpret_cast<int4*>(&value));
}

// AdamW moments are stored as FP32, or as BF16 (--adam-moments bf16: 8 bytes less traffic per parameter and
// step). The arithmetic is FP32 either way; BF16 moments are rounded to nearest when stored.
__device__ inline float moment_to_float(float x) { return x; }
__device__ inline float moment_to_float(bf16 x) { return __bfloat162float(x); }
template <class MT>
__device__ inline MT moment_from_float(float x);
template <>
__device__ inline float moment_from_float<float>(float x) {
    return x;
}
template <>
__device__ inline bf16 moment_from_float<bf16>(float x) {
    return __float2bfloat16_rn(x);
}
// 8 consecutive moments (16-byte aligned): two 16-byte accesses in FP32, one in BF16.
__device__ inline void load_moments8(const float* p, float out[8]) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const f128 x = load128_stream(p + 4 * h);
#pragma unroll
        for (int k = 0; k < 4; k++) out[4 * h + k] = x[k];
    }
}
__device__ inline void load_moments8(const bf16* p, float out[8]) {
    const x128 x = load128_stream(p);
#pragma unroll
    for (int k = 0; k < 8; k++) out[k] = __bfloat162float(x[k]);
}
__device__ inline void store_moments8(float* p, const float in[8]) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        f128 x;
#pragma unroll
        for (int k = 0; k < 4; k++) x[k] = in[4 * h + k];
        store128_stream(p + 4 * h, x);
    }
}
__device__ inline void store_moments8(bf16* p, const float in[8]) {
    x128 x;
#pragma unroll
    for (int k = 0; k < 8; k++) x[k] = __float2bfloat16_rn(in[k]);
    store128_stream(p, x);
}

// The PyTorch op sequence, IEEE-rounded sqrt and divisions (the files are built with --use_fast_math).
__device__ inline void adamw_element(float& p, float& m, float& v, float g, const AdamWCoefs& c,
                                     const AdamWStepScalars& t) {
    p = p * t.decay;
    // torch.lerp: weight < 0.5 ? start + weight * (end - start) : end - (end - start) * (1 - weight)
    const float diff = g - m;
    m = c.lerp_weight < 0.5f ? fmaf(c.lerp_weight, diff, m) : fmaf(-diff, 1.0f - c.lerp_weight, g);
    v = fmaf(c.one_minus_beta2, g * g, v * c.beta2);
    const float denom = __fdiv_rn(__fsqrt_rn(v), t.bc2_sqrt) + c.eps;
    p = fmaf(-t.step_size, __fdiv_rn(m, denom), p);
}
