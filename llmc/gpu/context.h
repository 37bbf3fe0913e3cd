// Per-process GPU state passed explicitly to every component (no globals): device properties, the stream,
// library handles and their workspaces.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

// cuDNN's handle, declared as cudnn.h declares it (an opaque struct), so that only the translation units that
// call cuDNN include its headers: the Makefile recompiles those alone when the cuDNN changes (CUDNN=newest).
struct cudnnContext;
typedef struct cudnnContext* cudnnHandle_t;

#include <cstddef>
#include <string>

struct GpuContext {
    int device = 0;
    cudaDeviceProp props{};
    cudaStream_t stream = nullptr;
    cublasLtHandle_t cublaslt = nullptr;
    void* cublaslt_workspace = nullptr;  // 32 MiB, as Transformer Engine and llm.c use on Hopper
    size_t cublaslt_workspace_size = 0;
    cudnnHandle_t cudnn = nullptr;
    void* cudnn_workspace = nullptr;  // grown on demand by the attention graphs
    size_t cudnn_workspace_size = 0;
};

// Exits with a one-line error if there is no CUDA device, it is older than `min_sm` (e.g. 80), or the binary
// has no machine code for it (built for another GPU_ARCH).
GpuContext create_gpu_context(int device, int min_sm);
void destroy_gpu_context(GpuContext* ctx);
// Returns a cuDNN workspace of at least `bytes`, reallocating (after a device sync) if needed.
void* ensure_cudnn_workspace(GpuContext* ctx, size_t bytes);
// "cuDNN 9.14.0, cuBLASLt 130100, CUDA runtime 13000": the libraries loaded at run time (which may differ
// from the headers built against, e.g. with LD_LIBRARY_PATH), for the device line and bench logs.
std::string gpu_library_versions();
// True if a CUDA device is usable (used to print a clear message instead of failing deep inside).
bool cuda_device_available(std::string* why);
