// Helpers for the kernel tests in dev/: random inputs, device buffers, timing with an L2 flush. Each test
// includes the shipped llmc/ launcher (never a copy), runs it on fresh random inputs (a new seed every run,
// printed so a failure can be replayed with DEV_SEED=...) and compares against a CPU reference
// (test/reference/, ref_*) computed from the same (rounded) inputs with the checks of test/numeric.h.
// Timings are benchmarks, not tests: BENCH(name) of dev/bench.h (run a binary with --bench).
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
#include "test/numeric.h"
#include "test/reference/bf16.h"
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

// Device buffer helpers. Each allocation is poisoned (0xFF bytes = NaN in bf16/fp32) so unwritten outputs
// fail.
template <class T>
T* device_alloc(size_t n) {
    T* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, n * sizeof(T) + 16));
    CHECK_CUDA(cudaMemset(p, 0xFF, n * sizeof(T) + 16));
    return p;
}
// v rounded to bf16 into the existing device buffer d (v.size() elements).
inline void copy_to_device_bf16(__nv_bfloat16* d, const std::vector<float>& v) {
    std::vector<__nv_bfloat16> h(v.size());
    for (size_t i = 0; i < v.size(); i++) h[i] = __float2bfloat16(v[i]);
    CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
}
inline __nv_bfloat16* to_device_bf16(const std::vector<float>& v) {
    __nv_bfloat16* d = device_alloc<__nv_bfloat16>(v.size());
    copy_to_device_bf16(d, v);
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
// The raw bits of n bf16 values.
inline std::vector<uint16_t> from_device_bf16_bits(const __nv_bfloat16* d, size_t n) {
    return from_device(reinterpret_cast<const uint16_t*>(d), n);
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

// Mean time in ms of `fn` over `repeats` back-to-back runs without flushing L2 (inputs that fit stay in it,
// as a tensor just written by the kernel before it can be in a training step).
template <class Fn>
float time_ms_l2_warm(Fn fn, int repeats = 20) {
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    fn();  // warm-up
    CHECK_CUDA(cudaEventRecord(start, 0));
    for (int i = 0; i < repeats; i++) fn();
    CHECK_CUDA(cudaEventRecord(stop, 0));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    return ms / repeats;
}

}  // namespace dev
