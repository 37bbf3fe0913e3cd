// Helpers shared by the FP8 kernel tests (dev/test_fp8.cu, dev/test_fp8_producers.cu): given scales, the
// host reference quantization, amax and byte comparisons, the saturation check, and scoped device buffers.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dev/dev_utils.h"
#include "llmc/fp8/cast.cuh"

namespace fp8_test {

typedef __nv_fp8_storage_t fp8b;

inline __nv_fp8_interpretation_t interp(Fp8Dtype d) { return d == Fp8Dtype::E4M3 ? __NV_E4M3 : __NV_E5M2; }
inline const char* name(Fp8Dtype d) { return d == Fp8Dtype::E4M3 ? "e4m3" : "e5m2"; }
// Largest finite code (magnitude): e4m3 0.1111.110 = 448, e5m2 0.11110.11 = 57344.
inline uint8_t max_code(Fp8Dtype d) { return d == Fp8Dtype::E4M3 ? 0x7E : 0x7B; }

// Gives slot `slot` the scale `scale` and scale_inv = fp8_compute_scale_inv(scale) (as the update kernel
// would), uploaded straight into the state's device arrays. Synchronous (ordered with the legacy stream).
inline void upload_scale(Fp8ScaleState* st, int slot, float scale) {
    CHECK(slot >= 0 && slot < st->num_slots, "upload_scale: slot %d out of range [0, %d)", slot,
          st->num_slots);
    const float inv = fp8_compute_scale_inv(scale);
    CHECK_CUDA(cudaMemcpy(st->scale + slot, &scale, sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(st->scale_inv + slot, &inv, sizeof(float), cudaMemcpyHostToDevice));
}
// upload_scale for every slot: scales[s] for slot s.
inline void upload_scales(Fp8ScaleState* st, const std::vector<float>& scales) {
    CHECK((int)scales.size() == st->num_slots, "upload_scales: %zu scales for %d slots", scales.size(),
          st->num_slots);
    for (int s = 0; s < st->num_slots; s++) upload_scale(st, s, scales[s]);
}

// The reference quantization: host emulation of the very conversion the kernels use (x * scale, saturating,
// round to nearest even).
inline uint8_t quantize(float x, float scale, Fp8Dtype d) {
    return __nv_cvt_float_to_fp8(x * scale, __NV_SATFINITE, interp(d));
}

// max |x| as float bits (what the kernels stage: NaN propagates).
inline uint32_t amax_bits(const std::vector<float>& x) {
    uint32_t m = 0;
    for (float v : x) m = std::max(m, fp8_abs_bits(v));
    return m;
}

// Position of an FP8 code on the number line (sign-magnitude: -0 and +0 are both 0; the max codes are
// 0x7E / 0x7B, the kernels never emit inf/NaN codes with SATFINITE).
inline int ordinal(uint8_t b) { return (b & 0x80) ? -(int)(b & 0x7f) : (int)(b & 0x7f); }

// Every byte equal to the reference; prints the count, fails with the first difference.
inline bool expect_bytes(const char* what, const std::vector<uint8_t>& got, const std::vector<uint8_t>& ref) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < ref.size(); i++)
        if (got[i] != ref[i] && bad++ == 0) first = i;
    printf("  %-44s %zu / %zu bytes differ\n", what, bad, ref.size());
    if (bad) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s: %zu bytes differ, first at %zu: 0x%02x vs reference 0x%02x", what, bad,
                 first, got[first], ref[first]);
        testing::fail(__FILE__, __LINE__, buf);
        return false;
    }
    return true;
}

// Saturation check: every element with |x * scale| > fp8_max must be the signed max code. Returns the count.
inline size_t check_saturation(const std::vector<float>& x, const std::vector<uint8_t>& q, float scale,
                               Fp8Dtype d) {
    size_t count = 0;
    for (size_t i = 0; i < x.size(); i++) {
        if (std::fabs(x[i] * scale) > fp8_dtype_max(d)) {
            count++;
            const uint8_t want = (x[i] < 0 ? 0x80 : 0x00) | max_code(d);
            if (q[i] != want) {
                testing::fail(__FILE__, __LINE__, "saturated element is not +-fp8_max");
                break;
            }
        }
    }
    return count;
}

// Row-wise [N, C] and transposed [C, N] reference bytes of x quantized with `scale`.
inline void quantize_ref(const std::vector<float>& x, int N, int C, float scale, Fp8Dtype d,
                         std::vector<uint8_t>& q, std::vector<uint8_t>& qT) {
    q.resize((size_t)N * C);
    qT.resize((size_t)N * C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            const uint8_t b = quantize(x[(size_t)n * C + c], scale, d);
            q[(size_t)n * C + c] = b;
            qT[(size_t)c * N + n] = b;
        }
}

// Frees the device buffers passed through it at scope exit: T* p = A(dev::device_alloc<T>(n)).
struct Allocs {
    std::vector<void*> ptrs;
    template <class T>
    T* operator()(T* p) {
        ptrs.push_back((void*)p);
        return p;
    }
    ~Allocs() {
        for (void* p : ptrs) CHECK_CUDA(cudaFree(p));
    }
};

}  // namespace fp8_test
