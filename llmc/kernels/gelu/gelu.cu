// GELU kernels then launchers. One thread per 8 elements (16-byte loads/stores). The GELU math (value and
// derivative, both forms) lives in llmc/kernels/gelu/gelu_math.cuh, shared with the FP8 kernels.
#include <cstdint>

#include "llmc/kernels/gelu/gelu.cuh"
#include "llmc/kernels/gelu/gelu_math.cuh"

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

// The 1-D grid of blocks of kGeluBlock threads, one 16-byte chunk each, over n elements (checks n and the
// two pointers; `who` names the caller in the error).
static unsigned gelu_grid(const char* who, size_t n, const void* a, const void* b) {
    CHECK(n % x128::size == 0, "%s: n = %zu must be a multiple of 8", who, n);
    CHECK(aligned16(a) && aligned16(b), "%s: pointers must be 16-byte aligned", who);
    const size_t grid = (n / x128::size + kGeluBlock - 1) / kGeluBlock;
    CHECK(grid <= 0x7fffffffull, "%s: n = %zu too large", who, n);
    return (unsigned)grid;
}

void gelu_forward(bf16* out, const bf16* inp, size_t n, bool tanh_approx, cudaStream_t stream) {
    const unsigned grid = gelu_grid("gelu_forward", n, out, inp);
    if (n == 0) return;
    const auto kernel = tanh_approx ? gelu_forward_kernel<true> : gelu_forward_kernel<false>;
    kernel<<<grid, kGeluBlock, 0, stream>>>(out, inp, n);
    CHECK_LAUNCH();
}

void gelu_backward_inplace(bf16* d_in_out, const bf16* inp, size_t n, bool tanh_approx, cudaStream_t stream) {
    const unsigned grid = gelu_grid("gelu_backward_inplace", n, d_in_out, inp);
    if (n == 0) return;
    const auto kernel =
        tanh_approx ? gelu_backward_inplace_kernel<true> : gelu_backward_inplace_kernel<false>;
    kernel<<<grid, kGeluBlock, 0, stream>>>(d_in_out, inp, n);
    CHECK_LAUNCH();
}
