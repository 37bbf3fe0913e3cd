// GELU kernels then launchers. One thread per 8 elements (16-byte loads/stores). The GELU math (value and
// derivative, both forms) lives in llmc/kernels/gelu_math.cuh, shared with the FP8 kernels.
#include <cstdint>

#include "llmc/kernels/gelu.cuh"
#include "llmc/kernels/gelu_math.cuh"

namespace {

constexpr int kGeluBlock = 256;

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
