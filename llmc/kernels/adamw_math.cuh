// The AdamW element update shared by the AdamW kernels (llmc/kernels/adamw.cu and the FP8-weight variant in
// llmc/fp8/adamw_fp8.cu), so both compute bitwise the same master weights and moments. Internal to both.
#pragma once
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/kernels/adamw.cuh"

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
