// Error checking: one macro family, each failure a one-line message naming file:line and the expression.
// Exit codes: 2 (kExitUsage) for a run that cannot start because of its inputs (flags, the files and
// directories they name, the launcher's environment), all found before the GPU is touched; 1 (kExitRuntime)
// for a failure while running. User mistakes go through fatal()/fatal_usage() with a plain message.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// "error: <message>" on stderr as the last line the process prints (stdout is flushed first, so a
// terminal that interleaves both streams shows it last), then exit(code).
[[noreturn]] inline void vfatal_exit(int code, const char* fmt, va_list args) {
    fflush(stdout);
    fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    fflush(stderr);
    exit(code);
}
[[noreturn]] inline void fatal(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vfatal_exit(kExitRuntime, fmt, args);
}
[[noreturn]] inline void fatal_usage(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vfatal_exit(kExitUsage, fmt, args);
}

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fflush(stdout); /* the message's start must not precede buffered stdout */ \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
            fatal(__VA_ARGS__);                                                        \
        }                                                                              \
    } while (0)

#ifdef __CUDACC__
#include <cuda_runtime.h>
#define CHECK_CUDA(expr)                                                                              \
    do {                                                                                              \
        cudaError_t err_ = (expr);                                                                    \
        if (err_ != cudaSuccess) {                                                                    \
            if (err_ == cudaErrorMemoryAllocation)                                                    \
                fatal("%s:%d: out of GPU memory in %s (reduce --batch or --seq)", __FILE__, __LINE__, \
                      #expr);                                                                         \
            fatal("%s:%d: CUDA error %s in %s", __FILE__, __LINE__, cudaGetErrorString(err_), #expr); \
        }                                                                                             \
    } while (0)
// After every kernel launch.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())
#endif

// cuBLAS(Lt), cuDNN and NCCL all use 0 for success; the numeric status names the failure precisely.
#define CHECK_STATUS_(lib, expr)                                                              \
    do {                                                                                      \
        int st_ = (int)(expr);                                                                \
        if (st_ != 0) fatal("%s:%d: %s error %d in %s", __FILE__, __LINE__, lib, st_, #expr); \
    } while (0)
#define CHECK_CUBLAS(expr) CHECK_STATUS_("cuBLAS", expr)
#define CHECK_CUDNN(expr) CHECK_STATUS_("cuDNN", expr)
#define CHECK_NCCL(expr) CHECK_STATUS_("NCCL", expr)
