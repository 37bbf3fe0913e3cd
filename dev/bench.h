// Kernel benchmarks of the dev/ binaries. A benchmark is registered with BENCH(name) { ... } next to the
// tests (TEST(name)) of the same kernels, in the one registry of test/testing.h; TEST_MAIN() runs the tests
// by default and only the benchmarks with `--bench` (an optional name filter after it). Benchmarks assert
// nothing and are never counted as tests: each timing prints one tab-separated line
//   BENCH <kernel> <shape> <ms> <throughput> <unit> <fraction of ceiling>
// (never [PASS]/[FAIL]/[SKIP], which scripts/run_tests.sh counts). `make bench-kernels` collects them into a
// table (scripts/bench/bench_kernels.sh). Time with dev::time_ms (median of L2-flushed runs on stream 0).
#pragma once
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "llmc/host/check.h"
#include "test/testing.h"

namespace bench {

// Ceilings of the fraction column, measured on our H200: device memory bandwidth from a large
// device-to-device copy (bytes read + written), and dense GEMM throughput from cuBLASLt 8192^3 GEMMs.
// Memory-bound kernels report GB/s against kPeakGBs; GEMMs (and attention) TFLOP/s against the BF16 or FP8
// peak.
constexpr double kPeakGBs = 4200.0;        // device copy, 4.2 TB/s
constexpr double kPeakBf16Tflops = 700.0;  // dense BF16 GEMM, large shapes
constexpr double kPeakFp8Tflops = 1255.0;  // FP8 E4M3 GEMM

// printf-style std::string (for the shape column).
inline std::string fmt(const char* f, ...) {
    char buf[256];
    va_list args;
    va_start(args, f);
    vsnprintf(buf, sizeof buf, f, args);
    va_end(args);
    return buf;
}

// One BENCH line. kernel and shape must not contain tabs or spaces.
inline void report(const std::string& kernel, const std::string& shape, double ms, double value,
                   const char* unit, double ceiling) {
    printf("BENCH\t%s\t%s\t%.4f\t%.1f\t%s\t%.3f\n", kernel.c_str(), shape.c_str(), ms, value, unit,
           value / ceiling);
    fflush(stdout);
}
// Memory-bound kernel: `bytes` read + written per call, against kPeakGBs.
inline void report_bandwidth(const std::string& kernel, const std::string& shape, double ms, double bytes) {
    report(kernel, shape, ms, bytes / (ms * 1e-3) / 1e9, "GB/s", kPeakGBs);
}
// Compute-bound kernel: `flops` per call, against `peak_tflops` (kPeakBf16Tflops or kPeakFp8Tflops).
inline void report_flops(const std::string& kernel, const std::string& shape, double ms, double flops,
                         double peak_tflops) {
    report(kernel, shape, ms, flops / (ms * 1e-3) / 1e12, "TFLOP/s", peak_tflops);
}

// Every benchmark needs a GPU: without one, the first benchmark to run exits the binary (status 1).
inline void require_device() {
    static bool checked = false;
    if (checked) return;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        fprintf(stderr, "error: --bench needs a CUDA device (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "none found");
        exit(1);
    }
    checked = true;
}

}  // namespace bench

// Registers a benchmark (testing::Kind::Bench): run with --bench, after the device check, and synchronized
// after it so that an asynchronous error is reported by the benchmark that caused it.
#define BENCH(name)                                               \
    static void bench_##name();                                   \
    static testing::Register TEST_CONCAT_(bench_register_, name)( \
        #name,                                                    \
        [] {                                                      \
            bench::require_device();                              \
            bench_##name();                                       \
            CHECK_CUDA(cudaDeviceSynchronize());                  \
        },                                                        \
        testing::Kind::Bench);                                    \
    static void bench_##name()
