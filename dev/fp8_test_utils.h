// Helpers shared by the FP8 kernel tests (dev/test_fp8*.cu, dev/test_adamw_fp8.cu): uploading given scales,
// FP8 code comparisons (the saturation check, "within one code"), and scoped device buffers. The reference
// quantization itself is test/reference/fp8.h.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dev/dev_utils.h"
#include "llmc/fp8/scale_state.cuh"
#include "llmc/kernels/cast/cast.cuh"
#include "test/reference/fp8.h"

namespace fp8_test {

typedef __nv_fp8_storage_t fp8b;

// The casts' output over test buffers: a [rows, cols] tensor bound to slot `slot` of `st`, in format d (the
// slot's, or another on purpose; data or data_T may be null where that copy is not written).
inline Fp8Tensor tensor(const Fp8ScaleState& st, fp8b* data, fp8b* data_T, float* scale_inv, int slot,
                        int rows, int cols, Fp8Dtype d) {
    Fp8Tensor t;
    fp8_bind(&t, st, slot, rows, cols);
    t.data = data;
    t.data_T = data_T;
    t.scale_inv = scale_inv;
    t.format = d;
    return t;
}
// The tensor an amax-only pass measures: slot `slot`, rows x cols elements, no bytes.
inline Fp8Tensor amax_tensor(const Fp8ScaleState& st, int slot, int rows, int cols) {
    Fp8Tensor t;
    fp8_bind(&t, st, slot, rows, cols);
    return t;
}

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

// Position of an FP8 code on the number line (sign-magnitude: -0 and +0 are both 0; the max codes are
// 0x7E / 0x7B, the kernels never emit inf/NaN codes with SATFINITE).
inline int ordinal(uint8_t b) { return (b & 0x80) ? -(int)(b & 0x7f) : (int)(b & 0x7f); }

// Every byte within one code of the reference, and at most max_differ bytes different at all.
inline bool expect_bytes_near(const char* what, const std::vector<uint8_t>& got,
                              const std::vector<uint8_t>& ref, size_t max_differ) {
    if (got.size() != ref.size()) {
        testing::fail(__FILE__, __LINE__, std::string(what) + ": size mismatch");
        return false;
    }
    size_t differ = 0, far = 0, first_far = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        differ += got[i] != ref[i];
        if (std::abs(ordinal(got[i]) - ordinal(ref[i])) > 1 && far++ == 0) first_far = i;
    }
    printf("  %-44s %zu / %zu bytes differ (allowed %zu), %zu by more than one code\n", what, differ,
           ref.size(), max_differ, far);
    char buf[256];
    if (far) {
        snprintf(buf, sizeof buf, "%s: %zu bytes more than one code off, first at %zu: 0x%02x vs 0x%02x",
                 what, far, first_far, got[first_far], ref[first_far]);
        testing::fail(__FILE__, __LINE__, buf);
        return false;
    }
    if (differ > max_differ) {
        snprintf(buf, sizeof buf, "%s: %zu bytes differ by one code, more than %zu", what, differ,
                 max_differ);
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

// The [C, N] bytes t_CN transposed back to [N, C] (a transposed FP8 copy against its row-wise one).
inline std::vector<uint8_t> transpose_bytes(const std::vector<uint8_t>& t_CN, int N, int C) {
    std::vector<uint8_t> r((size_t)N * C);
    for (int c = 0; c < C; c++)
        for (int n = 0; n < N; n++) r[(size_t)n * C + c] = t_CN[(size_t)c * N + n];
    return r;
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
