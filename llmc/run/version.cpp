// train_gpt --version (llmc/run/version.h).
#include "llmc/run/version.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <cstdio>

namespace {

// A version number as major.minor.patch: v = major * `major_unit` + minor * `minor_unit` + patch.
std::string dotted(long v, long major_unit, long minor_unit) {
    char buf[48];
    snprintf(buf, sizeof buf, "%ld.%ld.%ld", v / major_unit, v % major_unit / minor_unit, v % minor_unit);
    return buf;
}

// CUDA's numbering: major * 1000 + minor * 10.
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string row(const char* library, const std::string& built, const std::string& loaded) {
    char buf[160];
    snprintf(buf, sizeof buf, "  %-13s built with %-9s loaded %s\n", library, built.c_str(), loaded.c_str());
    return buf;
}

}  // namespace

std::string version_report(const std::string& commit) {
    std::string out = "train_gpt " + commit + "\n";
    int runtime = 0;
    const bool runtime_ok = cudaRuntimeGetVersion(&runtime) == cudaSuccess;
    out += row("CUDA runtime", cuda_version(CUDART_VERSION), runtime_ok ? cuda_version(runtime) : "?");
    int driver = 0;  // 0: no driver library could be loaded
    cudaDriverGetVersion(&driver);
    out +=
        "  CUDA driver   " +
        (driver == 0 ? std::string("none loaded (no NVIDIA driver on this machine: no GPU can be used)")
                     : "supports CUDA " + cuda_version(driver) +
                           (driver < CUDART_VERSION ? " (older than the runtime: upgrade the driver)" : "")) +
        "\n";
    out +=
        row("cuBLASLt", dotted(CUBLAS_VERSION, 10000, 100), dotted((long)cublasLtGetVersion(), 10000, 100));
    out += row("cuDNN", dotted(CUDNN_VERSION, 10000, 100), dotted((long)cudnnGetVersion(), 10000, 100));
    int nccl = 0;
    const bool nccl_ok = ncclGetVersion(&nccl) == ncclSuccess;
    out += row("NCCL", dotted(NCCL_VERSION_CODE, 10000, 100), nccl_ok ? dotted(nccl, 10000, 100) : "?");
    return out;
}
