// FP8 on the host: the very conversion the cast kernels use (x * scale, saturating to the finite range,
// round to nearest even), its exact value, the row-wise + transposed reference bytes, and amax as float bits
// (what the kernels stage; NaN propagates).
#pragma once
#include <cuda_fp8.h>

#include <cstdint>
#include <vector>

#include "llmc/fp8/fp8_scale_math.h"

inline __nv_fp8_interpretation_t ref_fp8_interp(Fp8Dtype d) {
    return d == Fp8Dtype::E4M3 ? __NV_E4M3 : __NV_E5M2;
}

inline uint8_t ref_fp8_quantize(float x, float scale, Fp8Dtype d) {
    return __nv_cvt_float_to_fp8(x * scale, __NV_SATFINITE, ref_fp8_interp(d));
}

// The value of an FP8 code (exact in float).
inline float ref_fp8_decode(uint8_t b, Fp8Dtype d) {
    if (d == Fp8Dtype::E5M2) {
        __nv_fp8_e5m2 v;
        v.__x = b;
        return (float)v;
    }
    __nv_fp8_e4m3 v;
    v.__x = b;
    return (float)v;
}

// Row-wise [N, C] and transposed [C, N] bytes of x [N, C] quantized with `scale`.
inline void ref_fp8_quantize_transpose(const std::vector<float>& x, int N, int C, float scale, Fp8Dtype d,
                                       std::vector<uint8_t>& q, std::vector<uint8_t>& qT) {
    q.resize((size_t)N * C);
    qT.resize((size_t)N * C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            const uint8_t b = ref_fp8_quantize(x[(size_t)n * C + c], scale, d);
            q[(size_t)n * C + c] = b;
            qT[(size_t)c * N + n] = b;
        }
}

// max |x| as float bits.
inline uint32_t ref_amax_bits(const std::vector<float>& x) {
    uint32_t m = 0;
    for (float v : x) m = m > fp8_abs_bits(v) ? m : fp8_abs_bits(v);
    return m;
}
