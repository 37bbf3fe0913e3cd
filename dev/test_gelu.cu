// GELU forward/backward (exact erf form and tanh approximation) against float64 CPU references.
#include "dev/dev_utils.h"
#include "llmc/gelu.cuh"

namespace {

// rtol for a bf16 result computed in fp32: bf16 rounding (8 significant bits: up to 2^-8 relative, just
// above a power of two) + the fp32 evaluation. The latter, from a CPU emulation of the compiled fast-math
// sequences (ex2.approx, rcp.approx, erfcf, ftz) over every bf16 input with ex2/rcp errors at 4x their
// bounds: <= 1.1e-5 relative, except gelu' within 0.05 of its root at -0.75 (two O(1) terms cancel:
// <= 1.2e-4, bf16 inputs keep |gelu'| >= 6.2e-4 there); 2^-12 = 2.4e-4 covers it.
constexpr double kRtol = 1.0 / 256 + 1.0 / 4096;
// atol: only for results the fp32 flush-to-zero of --use_fast_math drops. exp(-2|u|) (tanh form, x < -9.9)
// and erfc / exp(-x^2/2) (erf form, x < -13) are flushed once below 2^-126, so the lost forward values are
// |x| 2^-126 / (1 or 2) < 16 * 2^-126 = 2^-122 (~1.9e-37), and the lost gradients |d| |gelu'| with
// |gelu'| < |1 + 2 x u'| 2^-126 < 230 * 2^-126 < 2^-118 (tanh form at x ~ -10; erf form x phi < 2^-123):
// 2^-116 |d| (4x). Any real loss of accuracy (e.g. a tail computed as 1 + tanh(u) in fp32, which is 0 for
// x < -4.9) exceeds these by many orders of magnitude.
const double kFwdAtol = std::ldexp(1.0, -122);
const double kBwdAtolPerUnitD = std::ldexp(1.0, -116);
constexpr double kSqrt2OverPi = 0.79788456080286535588;

// float64 references in forms without cancellation, accurate far into the tails where the kernels keep
// relative accuracy: Phi(x) = 0.5 erfc(-x/sqrt2); 0.5 (1 + tanh u) = sigmoid(2u) = 1 / (1 + exp(-2u)), whose
// s (1 - s) = (1 - tanh^2 u) / 4 is e / (1 + e)^2 with e = exp(-2|u|). (0.5 x (1 + tanh u) cancels to exactly
// 0 for x < -7.2 even in float64, while the kernel correctly returns e.g. -1.0e-24 at x = -8.5.)
double gelu_ref(double x, bool tanh_approx) {
    if (tanh_approx) return x / (1.0 + std::exp(-2.0 * kSqrt2OverPi * (x + 0.044715 * x * x * x)));
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}
double gelu_grad_ref(double x, bool tanh_approx) {
    if (tanh_approx) {
        const double u = kSqrt2OverPi * (x + 0.044715 * x * x * x);
        const double du = kSqrt2OverPi * (1.0 + 3 * 0.044715 * x * x);
        const double e = std::exp(-2.0 * std::fabs(u)), s = (u >= 0.0 ? 1.0 : e) / (1.0 + e);
        return s + 2.0 * x * e / ((1.0 + e) * (1.0 + e)) * du;  // s + 0.5 x (1 - tanh^2 u) u'
    }
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * phi;
}

// Inputs: a dense sweep of [-12, 12] (the tails, where 1 + erf(x) or 1 + tanh(u) would cancel, and the
// flush-to-zero boundaries) followed by N(0, 3^2) samples; all bf16-exact.
std::vector<float> gelu_inputs(size_t n) {
    std::vector<float> x = dev::random_normal(n, 0.0f, 3.0f);
    const size_t sweep = std::min<size_t>(n, 8192);
    for (size_t i = 0; i < sweep; i++) x[i] = -12.0f + 24.0f * (float)i / (float)sweep;
    dev::round_to_bf16(x);
    return x;
}

void check_gelu(size_t n, bool tanh_approx, bool timing) {
    printf("  n = %zu, %s form\n", n, tanh_approx ? "tanh" : "erf");
    const std::vector<float> x = gelu_inputs(n);
    std::vector<float> d = dev::random_normal(n);
    dev::round_to_bf16(d);

    std::vector<float> ref_y(n), ref_dx(n);
    double max_d = 0;
    for (size_t i = 0; i < n; i++) {
        ref_y[i] = (float)gelu_ref(x[i], tanh_approx);
        ref_dx[i] = (float)(d[i] * gelu_grad_ref(x[i], tanh_approx));
        max_d = std::max(max_d, (double)std::fabs(d[i]));
    }

    bf16* d_x = dev::to_device_bf16(x);
    bf16* d_y = dev::device_alloc<bf16>(n);
    gelu_forward(d_y, d_x, n, tanh_approx, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    // Tolerances: see kRtol / kFwdAtol above.
    dev::expect_close("gelu forward", dev::from_device_bf16(d_y, n), ref_y, kFwdAtol, kRtol);

    bf16* d_d = dev::to_device_bf16(d);
    gelu_backward_inplace(d_d, d_x, n, tanh_approx, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    dev::expect_close("gelu backward (d * gelu')", dev::from_device_bf16(d_d, n), ref_dx,
                      kBwdAtolPerUnitD * max_d, kRtol);

    // In place forward (out aliases inp) gives the same result.
    bf16* d_z = dev::to_device_bf16(x);
    gelu_forward(d_z, d_z, n, tanh_approx, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    dev::expect_close("gelu forward in place", dev::from_device_bf16(d_z, n), ref_y, kFwdAtol, kRtol);

    if (timing) {
        const double bytes_fwd = 4.0 * n, bytes_bwd = 6.0 * n;  // bf16: read x (+ d), write y (d)
        const float ms_fwd = dev::time_ms([&] { gelu_forward(d_y, d_x, n, tanh_approx, 0); });
        const float ms_bwd = dev::time_ms([&] { gelu_backward_inplace(d_d, d_x, n, tanh_approx, 0); });
        printf("  timing n = %zu: forward %.1f us (%.0f GB/s), backward %.1f us (%.0f GB/s)\n", n,
               ms_fwd * 1e3, bytes_fwd / (ms_fwd * 1e-3) / 1e9, ms_bwd * 1e3,
               bytes_bwd / (ms_bwd * 1e-3) / 1e9);
    }
    CHECK_CUDA(cudaFree(d_x));
    CHECK_CUDA(cudaFree(d_y));
    CHECK_CUDA(cudaFree(d_d));
    CHECK_CUDA(cudaFree(d_z));
}

// n/8 = 12345 threads: not a multiple of the 256-thread block.
constexpr size_t kSmallN = 8 * 12345;
// GPT-1.5B MLP activation: N = B*T = 12288 rows of 4C = 6400.
constexpr size_t kLargeN = (size_t)12288 * 6400;

}  // namespace

TEST(gelu_erf_small) { check_gelu(kSmallN, false, false); }
TEST(gelu_tanh_small) { check_gelu(kSmallN, true, false); }
TEST(gelu_erf_gpt1p5b) { check_gelu(kLargeN, false, true); }
TEST(gelu_tanh_gpt1p5b) { check_gelu(kLargeN, true, true); }

TEST_MAIN()
