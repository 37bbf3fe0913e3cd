// Benchmark-only cuDNN SDPA graphs at memory layouts other than the trainer's, to measure what the layout
// costs (dev/bench_attention.cu). Each graph is described with the options of llmc/kernels/attention.cu
// (BF16 I/O, FP32 softmax, scale 1/sqrt(D), causal top-left, FP32 log-sum-exp stats [B, H, T], the
// deterministic backward or not) and built the same way (heuristics mode A, its first plan). Only the
// strides and base offsets differ, over the same device buffers (qkv and dqkv hold 3 * B*T*C elements, out
// and dout B*T*C, C = H*D):
//   PackedQkv     Q, K, V (and dQ, dK, dV) read in place from [B, T, 3, H, D] rows: the trainer's layout
//   SeparateBthd  Q, K, V each a contiguous [B, T, H, D] tensor, one after the other (what a QKV GEMM with
//                 three outputs would write); O and dO [B, T, H, D]
//   SeparateBhtd  Q, K, V each a contiguous [B, H, T, D] tensor (heads outermost, what a permute gives);
//                 O and dO [B, H, T, D]
// Implemented in sdpa_layouts.cu, which includes cudnn-frontend (as attention.cu, a slow translation unit).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "llmc/gpu/context.h"

enum class SdpaLayout { PackedQkv, SeparateBthd, SeparateBhtd };

inline const char* sdpa_layout_name(SdpaLayout layout) {
    switch (layout) {
        case SdpaLayout::PackedQkv:
            return "packed_qkv";
        case SdpaLayout::SeparateBthd:
            return "separate_bthd";
        case SdpaLayout::SeparateBhtd:
            return "separate_bhtd";
    }
    return "?";
}

struct SdpaShape {
    int B, T, H, D;
};

// Where element (b, h, t, d) of Q, K or V (which = 0, 1, 2; dQ, dK, dV alike) and of O (dO alike) lives:
// base + b * stride[0] + h * stride[1] + t * stride[2] + d * stride[3] elements, dims ordered {B, H, T, D}
// as cuDNN's SDPA takes them.
struct SdpaStrides {
    int64_t qkv_base[3];
    int64_t qkv[4];
    int64_t o[4];
};

inline SdpaStrides sdpa_strides(SdpaLayout layout, SdpaShape s) {
    const int64_t T = s.T, H = s.H, D = s.D, C = H * D, N = (int64_t)s.B * T;
    switch (layout) {
        case SdpaLayout::PackedQkv:
            return {{0, C, 2 * C}, {T * 3 * C, D, 3 * C, 1}, {T * C, D, C, 1}};
        case SdpaLayout::SeparateBthd:
            return {{0, N * C, 2 * N * C}, {T * C, D, C, 1}, {T * C, D, C, 1}};
        case SdpaLayout::SeparateBhtd:
            return {{0, N * C, 2 * N * C}, {H * T * D, T * D, D, 1}, {H * T * D, T * D, D, 1}};
    }
    return {};
}

__host__ __device__ inline int64_t sdpa_offset(const int64_t* stride, int64_t base, int b, int h, int t,
                                               int d) {
    return base + b * stride[0] + h * stride[1] + t * stride[2] + d * stride[3];
}

// The device buffers a layout reads and writes (owned by the caller).
struct SdpaBuffers {
    __nv_bfloat16* qkv;
    __nv_bfloat16* out;
    __nv_bfloat16* dout;
    __nv_bfloat16* dqkv;
    float* stats;
};

// The training forward and the backward of one layout, built once.
class SdpaLayoutGraphs {
  public:
    SdpaLayoutGraphs();
    ~SdpaLayoutGraphs();
    SdpaLayoutGraphs(const SdpaLayoutGraphs&) = delete;
    SdpaLayoutGraphs& operator=(const SdpaLayoutGraphs&) = delete;

    // false, with "<step>: <frontend message>" in *why, where the frontend or cuDNN refuses the layout.
    bool build(GpuContext* ctx, SdpaLayout layout, bool deterministic, SdpaShape shape, std::string* why);
    void forward(GpuContext* ctx, const SdpaBuffers& buf, cudaStream_t stream);
    void backward(GpuContext* ctx, const SdpaBuffers& buf, cudaStream_t stream);

    struct Impl;  // the built graphs (sdpa_layouts.cu)
  private:
    std::unique_ptr<Impl> impl_;
};

// What the cudnn-frontend translation units were compiled with: "cudnn-frontend 1.23.0, cuDNN
// headers 9.14.0".
std::string sdpa_compiled_versions();
