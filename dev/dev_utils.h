// Helpers for the kernel tests in dev/: random inputs, bf16 conversion, error report, timing with an L2
// flush. Each test includes the shipped llmc/ launcher (never a copy), runs it on fresh random inputs (a new
// seed every run, printed so a failure can be replayed with DEV_SEED=...), compares against a CPU reference
// computed from the same (rounded) inputs, and prints max abs/rel error. Timings are benchmarks, not tests:
// BENCH(name) of dev/bench.h (run a binary with --bench).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dev/bench.h"
#include "llmc/host/check.h"
#include "test/testing.h"

namespace dev {

inline uint64_t run_seed() {
    static uint64_t seed = [] {
        const char* s = getenv("DEV_SEED");
        uint64_t v = s ? strtoull(s, nullptr, 10)
                       : (uint64_t)std::chrono::high_resolution_clock::now().time_since_epoch().count();
        printf("dev: random seed %llu (replay with DEV_SEED=%llu)\n", (unsigned long long)v,
               (unsigned long long)v);
        return v;
    }();
    return seed;
}
inline std::mt19937_64& rng() {
    static std::mt19937_64 g(run_seed());
    return g;
}
inline std::vector<float> random_normal(size_t n, float mean = 0.f, float stddev = 1.f) {
    std::normal_distribution<float> d(mean, stddev);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng());
    return v;
}
inline std::vector<float> random_uniform(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng());
    return v;
}
inline std::vector<int> random_ints(size_t n, int lo, int hi_exclusive) {
    std::uniform_int_distribution<int> d(lo, hi_exclusive - 1);
    std::vector<int> v(n);
    for (auto& x : v) x = d(rng());
    return v;
}

inline float bf16_round(float x) { return __bfloat162float(__float2bfloat16(x)); }
// Rounds in place to bf16-representable values, so the CPU reference sees exactly what the GPU sees.
inline void round_to_bf16(std::vector<float>& v) {
    for (auto& x : v) x = bf16_round(x);
}

// Device buffer helpers. Each allocation is poisoned (0xFF bytes = NaN in bf16/fp32) so unwritten outputs
// fail.
template <class T>
T* device_alloc(size_t n) {
    T* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, n * sizeof(T) + 16));
    CHECK_CUDA(cudaMemset(p, 0xFF, n * sizeof(T) + 16));
    return p;
}
inline __nv_bfloat16* to_device_bf16(const std::vector<float>& v) {
    std::vector<__nv_bfloat16> h(v.size());
    for (size_t i = 0; i < v.size(); i++) h[i] = __float2bfloat16(v[i]);
    __nv_bfloat16* d = device_alloc<__nv_bfloat16>(v.size());
    CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
    return d;
}
template <class T>
T* to_device(const std::vector<T>& v) {
    T* d = device_alloc<T>(v.size());
    CHECK_CUDA(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}
inline std::vector<float> from_device_bf16(const __nv_bfloat16* d, size_t n) {
    std::vector<__nv_bfloat16> h(n);
    CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = __bfloat162float(h[i]);
    return v;
}
template <class T>
std::vector<T> from_device(const T* d, size_t n) {
    std::vector<T> v(n);
    CHECK_CUDA(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

// Elementwise check |got - ref| <= atol + rtol * |ref|. Prints max abs/rel error; records a test failure
// (with the first offending index) if any element is out of tolerance or not finite.
inline bool expect_close(const char* what, const std::vector<float>& got, const std::vector<float>& ref,
                         double atol, double rtol) {
    double max_abs = 0, max_rel = 0;
    long first_bad = -1;
    if (got.size() != ref.size()) {
        testing::fail(__FILE__, __LINE__, std::string(what) + ": size mismatch");
        return false;
    }
    for (size_t i = 0; i < got.size(); i++) {
        double g = got[i], r = ref[i], err = std::fabs(g - r);
        if (!std::isfinite(g) || err > atol + rtol * std::fabs(r)) {
            if (first_bad < 0) first_bad = (long)i;
        }
        if (std::isfinite(err)) {
            max_abs = std::fmax(max_abs, err);
            max_rel = std::fmax(max_rel, err / (std::fabs(r) + 1e-6));
        }
    }
    printf("  %-28s max abs err %.3e  max rel err %.3e  (atol %.1e rtol %.1e)\n", what, max_abs, max_rel,
           atol, rtol);
    if (first_bad >= 0) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s: element %ld is %.6g, reference %.6g", what, first_bad, got[first_bad],
                 ref[first_bad]);
        testing::fail(__FILE__, __LINE__, buf);
        return false;
    }
    return true;
}

// Normwise relative error ||got - ref|| / ||ref||, for reductions where elementwise tolerances are too noisy.
// Bitwise equality of two float vectors (NaNs compare by their bits).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline double rel_l2_error(const std::vector<float>& got, const std::vector<float>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); i++) {
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    if (!std::isfinite(num)) return INFINITY;
    return std::sqrt(num / (den + 1e-30));
}

// Median time in ms of `fn` over `repeats` runs, each after flushing L2 (writes a buffer larger than L2).
template <class Fn>
float time_ms(Fn fn, int repeats = 20) {
    static void* flush = nullptr;
    const size_t flush_bytes = 256ull << 20;
    if (!flush) CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    fn();  // warm-up
    std::vector<float> times;
    for (int i = 0; i < repeats; i++) {
        CHECK_CUDA(cudaMemsetAsync(flush, i, flush_bytes, 0));
        CHECK_CUDA(cudaEventRecord(start, 0));
        fn();
        CHECK_CUDA(cudaEventRecord(stop, 0));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms);
    }
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace dev
