// Kernel benchmarks of the dev/ binaries. A benchmark is registered with BENCH(name) { ... } next to the
// tests (TEST(name)) of the same kernels; DEV_MAIN() runs the tests by default (an optional name filter as
// argv[1]) and only the benchmarks with `--bench` (an optional name filter after it). Benchmarks assert
// nothing and are never counted as tests: each timing prints one tab-separated line
//   BENCH <kernel> <shape> <ms> <throughput> <unit> <fraction of ceiling>
// (never [PASS]/[FAIL]/[SKIP], which scripts/run_tests.sh counts). `make bench-kernels` collects them into a
// table (scripts/bench_kernels.sh). Time with dev::time_ms (median of L2-flushed runs on stream 0).
#pragma once
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

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

struct Case {
    const char* name;
    std::function<void()> fn;
};
inline std::vector<Case>& registry() {
    static std::vector<Case> cases;
    return cases;
}
struct Register {
    Register(const char* name, std::function<void()> fn) { registry().push_back({name, std::move(fn)}); }
};

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

// Runs every benchmark whose name contains `filter` (argv[1] after "--bench", optional).
inline int run_all(int argc, char** argv) {
    const char* filter = argc > 1 ? argv[1] : "";
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        fprintf(stderr, "error: --bench needs a CUDA device (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "none found");
        return 1;
    }
    for (const Case& c : registry()) {
        if (std::string(c.name).find(filter) == std::string::npos) continue;
        fprintf(stderr, "bench: %s\n", c.name);
        c.fn();
        CHECK_CUDA(cudaDeviceSynchronize());
    }
    return 0;
}

}  // namespace bench

#define BENCH(name)                                                                  \
    static void bench_##name();                                                      \
    static bench::Register TEST_CONCAT_(bench_register_, name)(#name, bench_##name); \
    static void bench_##name()

// main() of a dev binary: `--bench [filter]` runs the benchmarks, anything else the tests.
#define DEV_MAIN()                                                                                  \
    int main(int argc, char** argv) {                                                               \
        if (argc > 1 && strcmp(argv[1], "--bench") == 0) return bench::run_all(argc - 1, argv + 1); \
        return testing::run_all(argc, argv);                                                        \
    }
