// Shared device-side helpers: types, 128-bit packed loads/stores, warp/block reductions.
// Shape-suffix key used across llmc/: B batch, T time, C channels, H heads, D head size (C/H),
// V vocab, L layers, N = B*T rows, OC output channels, P parameter count.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "llmc/host/check.h"

typedef __nv_bfloat16 bf16;

inline int ceil_div(long a, long b) { return (int)((a + b - 1) / b); }
// 16-byte alignment, what the vectorized (x128 / f128) loads and stores need.
inline bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }

// Streaming multiprocessors of the current device (launchers that size a grid to one wave of resident
// blocks).
inline int current_device_sms() {
    int device = 0, sms = 0;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
}

// Lets `kernel` launch with `bytes` of dynamic shared memory (0: nothing to do). A launch whose static plus
// dynamic shared memory exceeds 48 KB must have raised the kernel's limit first; `max_carveout` also asks for
// the L1/shared split that gives shared memory the most, so that several such blocks share an SM. Host cost
// only (a launch inside a captured graph does not repeat it), so it is set on every launch rather than
// remembered in a global.
template <class Kernel>
void allow_dynamic_smem(Kernel kernel, size_t bytes, bool max_carveout = false) {
    if (bytes == 0) return;
    CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    if (max_carveout)
        CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        (int)cudaSharedmemCarveoutMaxShared));
}

// 16 bytes of ElementT, loaded/stored in one instruction. Pointers must be 16-byte aligned.
template <class ElementT>
struct alignas(16) Packed128 {
    static constexpr int size = 16 / sizeof(ElementT);
    ElementT payload[size];
    __device__ ElementT& operator[](int i) { return payload[i]; }
    __device__ const ElementT& operator[](int i) const { return payload[i]; }
};
typedef Packed128<bf16> x128;
typedef Packed128<float> f128;

template <class ElementT>
__device__ inline Packed128<ElementT> load128(const ElementT* address) {
    return *reinterpret_cast<const Packed128<ElementT>*>(address);
}
// Streaming load: the data is not reused, keep it out of L1.
template <class ElementT>
__device__ inline Packed128<ElementT> load128cs(const ElementT* address) {
    Packed128<ElementT> out;
    *reinterpret_cast<int4*>(&out) = __ldcs(reinterpret_cast<const int4*>(address));
    return out;
}
template <class ElementT>
__device__ inline void store128(ElementT* target, Packed128<ElementT> value) {
    *reinterpret_cast<Packed128<ElementT>*>(target) = value;
}

__device__ inline float warp_reduce_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
    return v;
}
__device__ inline float warp_reduce_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
    return v;
}
// Block-wide sum (any blockDim.x that is a multiple of 32, up to 1024); every thread gets the result.
__device__ inline float block_reduce_sum(float v) {
    __shared__ float shared[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
    v = warp_reduce_sum(v);
    __syncthreads();  // shared[] may still be read by a previous call
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < num_warps ? shared[lane] : 0.0f;
    return warp_reduce_sum(v);
}
__device__ inline float block_reduce_max(float v) {
    __shared__ float shared[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
    v = warp_reduce_max(v);
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < num_warps ? shared[lane] : -INFINITY;
    return warp_reduce_max(v);
}
