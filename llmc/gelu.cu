// GELU kernels then launchers. One thread per 8 elements (16-byte loads/stores).
#include <cstdint>

#include "llmc/gelu.cuh"

namespace {

constexpr int kGeluBlock = 256;
constexpr float kInvSqrt2 = 0.70710678118654752f;     // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

// Exact form. 0.5 (1 + erf(x/sqrt2)) = 0.5 erfc(-x/sqrt2) = Phi(x): erfc keeps full relative accuracy for
// x << 0, where 1 + erf(...) would cancel. erfcf is not replaced by an intrinsic under --use_fast_math.
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * erfcf(-x * kInvSqrt2); }
// d/dx [x Phi(x)] = Phi(x) + x phi(x). The FP8 dGELU cast (llmc/fp8.cu) evaluates the same expression.
__device__ __forceinline__ float gelu_erf_grad(float x) {
    return 0.5f * erfcf(-x * kInvSqrt2) + x * kInvSqrt2Pi * __expf(-0.5f * x * x);
}

// Tanh form. 0.5 (1 + tanh(u)) = sigmoid(2u); with e = exp(-2|u|) in (0, 1]: sigmoid(2u) = 1/(1+e) for u >= 0
// and e/(1+e) for u < 0, sigmoid(2u) (1 - sigmoid(2u)) = e/(1+e)^2. No cancellation anywhere (unlike 1 -
// tanh^2).
__device__ __forceinline__ float gelu_tanh_u(float x) { return kSqrt2OverPi * (x + kGeluCubic * x * x * x); }
__device__ __forceinline__ float gelu_tanh(float x) {
    const float u = gelu_tanh_u(x);
    const float e = __expf(-2.0f * fabsf(u));
    const float s = (u >= 0.0f ? 1.0f : e) / (1.0f + e);
    return x * s;
}
// gelu'(x) = s + 2 x s (1 - s) u' = s (1 + 2 x (1 - s) u'), 1 - s = e/(1+e) (u >= 0) or 1/(1+e) (u < 0):
// relative accuracy everywhere but at gelu's root (-0.75), and a flushed left tail gives -0 (the true sign).
// The FP8 dGELU cast (llmc/fp8.cu) evaluates the same expression; keep the two in sync.
__device__ __forceinline__ float gelu_tanh_grad(float x) {
    const float u = gelu_tanh_u(x);
    const float e = __expf(-2.0f * fabsf(u));
    const float inv = 1.0f / (1.0f + e);
    const float s = (u >= 0.0f ? 1.0f : e) * inv;
    const float one_minus_s = (u >= 0.0f ? e : 1.0f) * inv;
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    return s * (1.0f + 2.0f * x * one_minus_s * du);
}

template <bool kTanh>
__global__ void __launch_bounds__(kGeluBlock) gelu_forward_kernel(bf16* out, const bf16* inp, size_t n) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * x128::size;
    if (i >= n) return;
    const x128 x = load128cs(inp + i);  // the pre-activation is next read in backward: stream it
    x128 y;
#pragma unroll
    for (int k = 0; k < x128::size; k++) {
        const float v = __bfloat162float(x[k]);
        y[k] = __float2bfloat16(kTanh ? gelu_tanh(v) : gelu_erf(v));
    }
    store128(out + i, y);
}

template <bool kTanh>
__global__ void __launch_bounds__(kGeluBlock)
    gelu_backward_inplace_kernel(bf16* d_in_out, const bf16* inp, size_t n) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * x128::size;
    if (i >= n) return;
    const x128 x = load128cs(inp + i);
    const x128 d = load128cs(d_in_out + i);
    x128 r;
#pragma unroll
    for (int k = 0; k < x128::size; k++) {
        const float v = __bfloat162float(x[k]);
        const float g = kTanh ? gelu_tanh_grad(v) : gelu_erf_grad(v);
        r[k] = __float2bfloat16(__bfloat162float(d[k]) * g);
    }
    store128(d_in_out + i, r);
}

bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }

}  // namespace

void gelu_forward(bf16* out, const bf16* inp, size_t n, bool tanh_approx, cudaStream_t stream) {
    CHECK(n % x128::size == 0, "gelu_forward: n = %zu must be a multiple of 8", n);
    CHECK(aligned16(out) && aligned16(inp), "gelu_forward: pointers must be 16-byte aligned");
    if (n == 0) return;
    const size_t grid = (n / x128::size + kGeluBlock - 1) / kGeluBlock;
    CHECK(grid <= 0x7fffffffull, "gelu_forward: n = %zu too large", n);
    if (tanh_approx)
        gelu_forward_kernel<true><<<(unsigned)grid, kGeluBlock, 0, stream>>>(out, inp, n);
    else
        gelu_forward_kernel<false><<<(unsigned)grid, kGeluBlock, 0, stream>>>(out, inp, n);
    CHECK_LAUNCH();
}

void gelu_backward_inplace(bf16* d_in_out, const bf16* inp, size_t n, bool tanh_approx, cudaStream_t stream) {
    CHECK(n % x128::size == 0, "gelu_backward_inplace: n = %zu must be a multiple of 8", n);
    CHECK(aligned16(d_in_out) && aligned16(inp), "gelu_backward_inplace: pointers must be 16-byte aligned");
    if (n == 0) return;
    const size_t grid = (n / x128::size + kGeluBlock - 1) / kGeluBlock;
    CHECK(grid <= 0x7fffffffull, "gelu_backward_inplace: n = %zu too large", n);
    if (tanh_approx)
        gelu_backward_inplace_kernel<true><<<(unsigned)grid, kGeluBlock, 0, stream>>>(d_in_out, inp, n);
    else
        gelu_backward_inplace_kernel<false><<<(unsigned)grid, kGeluBlock, 0, stream>>>(d_in_out, inp, n);
    CHECK_LAUNCH();
}
