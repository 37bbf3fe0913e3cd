#include <cudnn.h>

#include "llmc/gpu/context.h"
#include "llmc/host/check.h"

namespace {

// Why cudaGetDeviceCount failed, in words that say what to do. cudart reports a missing driver library as
// "CUDA driver version is insufficient" (error 35), which reads as "upgrade the driver": the driver's version
// is 0 when none could be loaded.
std::string device_count_error(cudaError_t err) {
    if (err != cudaErrorInsufficientDriver) return cudaGetErrorString(err);
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (driver == 0) return "no NVIDIA driver loaded: this machine has no GPU or no driver installed";
    char buf[160];
    snprintf(buf, sizeof buf,
             "the NVIDIA driver supports CUDA %d.%d, older than this build's CUDA %d.%d: "
             "upgrade the driver",
             driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    return buf;
}

// An empty kernel, compiled with the same GPU_ARCH as every kernel of the binary: whether the binary holds
// machine code (or PTX) this GPU can run is asked of it before the first real launch, which would otherwise
// fail inside some kernel's launcher with cudart's "no kernel image is available".
__global__ void kernel_image_probe() {}

}  // namespace

bool cuda_device_available(std::string* why) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        if (why) *why = err != cudaSuccess ? device_count_error(err) : "no CUDA device found";
        cudaGetLastError();  // clear the sticky-free error so later calls start clean
        return false;
    }
    return true;
}

GpuContext create_gpu_context(int device, int min_sm) {
    std::string why;
    if (!cuda_device_available(&why))
        fatal("no usable CUDA device (%s); train_gpt needs an NVIDIA GPU", why.c_str());
    GpuContext ctx;
    ctx.device = device;
    CHECK_CUDA(cudaSetDevice(device));
    CHECK_CUDA(cudaGetDeviceProperties(&ctx.props, device));
    int sm = ctx.props.major * 10 + ctx.props.minor;
    if (sm < min_sm)
        fatal("GPU %s has compute capability %d.%d; this needs sm_%d or newer", ctx.props.name,
              ctx.props.major, ctx.props.minor, min_sm);
    cudaFuncAttributes probe;
    const cudaError_t image = cudaFuncGetAttributes(&probe, kernel_image_probe);
    if (image == cudaErrorNoKernelImageForDevice || image == cudaErrorInvalidDeviceFunction)
        fatal(
            "this build has no machine code for GPU %s (sm_%d): it was compiled for another GPU_ARCH (by "
            "default Hopper's sm_90a); rebuild with make clean && make GPU_ARCH=\"-gencode "
            "arch=compute_%d,code=sm_%d\"",
            ctx.props.name, sm, sm, sm);
    CHECK_CUDA(image);
    CHECK_CUDA(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
    CHECK_CUBLAS(cublasLtCreate(&ctx.cublaslt));
    ctx.cublaslt_workspace_size = 32ull << 20;
    CHECK_CUDA(cudaMalloc(&ctx.cublaslt_workspace, ctx.cublaslt_workspace_size));
    CHECK_CUDNN(cudnnCreate(&ctx.cudnn));
    CHECK_CUDNN(cudnnSetStream(ctx.cudnn, ctx.stream));
    return ctx;
}

std::string gpu_library_versions() {
    const size_t dnn = cudnnGetVersion();  // e.g. 91400 = 9.14.0 (major * 10000 + minor * 100 + patch)
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    char buf[128];
    snprintf(buf, sizeof buf, "cuDNN %zu.%zu.%zu, cuBLASLt %zu, CUDA runtime %d", dnn / 10000,
             dnn / 100 % 100, dnn % 100, cublasLtGetVersion(), runtime);
    return buf;
}

void* ensure_cudnn_workspace(GpuContext* ctx, size_t bytes) {
    if (bytes > ctx->cudnn_workspace_size) {
        CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
        if (ctx->cudnn_workspace) CHECK_CUDA(cudaFree(ctx->cudnn_workspace));
        CHECK_CUDA(cudaMalloc(&ctx->cudnn_workspace, bytes));
        ctx->cudnn_workspace_size = bytes;
    }
    return ctx->cudnn_workspace;
}

void destroy_gpu_context(GpuContext* ctx) {
    if (ctx->cudnn_workspace) cudaFree(ctx->cudnn_workspace);
    if (ctx->cublaslt_workspace) cudaFree(ctx->cublaslt_workspace);
    if (ctx->cudnn) cudnnDestroy(ctx->cudnn);
    if (ctx->cublaslt) cublasLtDestroy(ctx->cublaslt);
    if (ctx->stream) cudaStreamDestroy(ctx->stream);
    *ctx = GpuContext();
}
