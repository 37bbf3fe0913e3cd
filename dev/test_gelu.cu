// GELU forward/backward (exact erf form and tanh approximation) against the float64 CPU references of
// test/reference/gelu.h; benchmarks (--bench) at the GPT-1.5B MLP size.
#include <cstring>

#include "dev/dev_utils.h"
#include "llmc/kernels/gelu/gelu.cuh"
#include "test/reference/gelu.h"

namespace {

// rtol for a bf16 result computed in fp32: bf16 rounding (8 significant bits: up to 2^-8 relative, just
// above a power of two) + the fp32 evaluation (llmc/kernels/gelu/gelu_math.cuh). The latter, from CPU
// emulations of the compiled fast-math sequences (ex2.approx, rcp.approx, ftz) over every bf16 input with
// ex2/rcp errors at 4x their bounds: erf form <= 4.3e-6 relative (value and derivative), tanh form <= 1.1e-5,
// except gelu' within 0.05 of its root at -0.75 (two O(1) terms cancel: erf form <= 6.0e-5, tanh form
// <= 1.2e-4; bf16 inputs keep |gelu'| >= 6.2e-4 there); 2^-12 = 2.4e-4 covers it.
constexpr double kRtol = testing::kBf16Eps + 0x1p-12;
// atol: only for results the fp32 flush-to-zero of --use_fast_math drops. Tanh form: exp(-2|u|) (x < -9.9)
// is flushed once below 2^-126, so the lost forward values are |x| 2^-126 / (1 or 2) < 16 * 2^-126 =
// 2^-122 (~1.9e-37), and the lost gradients |d| |gelu'| with |gelu'| < |1 + 2 x u'| 2^-126 < 230 * 2^-126 <
// 2^-118 (x ~ -10). Erf form: a result below 2^-126 (gelu for x < -13.1: |x| q E; gelu' = E w for x < -13.2,
// |w| < 5.3) is flushed, so the loss is < 2^-126 (gelu) and < 5.3 * 2^-126 < 2^-123 (gelu'); for |x| <=
// 2^-125 the forward returns x (|x| q flushes) instead of x/2: off by < 2^-126. Hence 2^-122 (forward) and
// 2^-116 |d| (4x the gradient bound). Any real loss of accuracy (e.g. a tail computed as 1 + tanh(u) in
// fp32, which is 0 for x < -4.9) exceeds these by many orders of magnitude.
const double kFwdAtol = std::ldexp(1.0, -122);
const double kBwdAtolPerUnitD = std::ldexp(1.0, -116);
// Inputs: a dense sweep of [-12, 12] (the tails, where 1 + erf(x) or 1 + tanh(u) would cancel, and the
// flush-to-zero boundaries) followed by N(0, 3^2) samples; all bf16-exact.
std::vector<float> gelu_inputs(size_t n) {
    std::vector<float> x = dev::random_normal(n, 0.0f, 3.0f);
    const size_t sweep = std::min<size_t>(n, 8192);
    for (size_t i = 0; i < sweep; i++) x[i] = -12.0f + 24.0f * (float)i / (float)sweep;
    ref_round_to_bf16(x);
    return x;
}

void check_gelu(size_t n, bool tanh_approx) {
    printf("  n = %zu, %s form\n", n, tanh_approx ? "tanh" : "erf");
    const std::vector<float> x = gelu_inputs(n);
    std::vector<float> d = dev::random_normal(n);
    ref_round_to_bf16(d);

    std::vector<float> ref_y(n), ref_dx(n);
    double max_d = 0;
    for (size_t i = 0; i < n; i++) {
        ref_y[i] = (float)ref_gelu(x[i], tanh_approx);
        ref_dx[i] = (float)(d[i] * ref_gelu_grad(x[i], tanh_approx));
        max_d = std::max(max_d, (double)std::fabs(d[i]));
    }

    bf16* d_x = dev::to_device_bf16(x);
    bf16* d_y = dev::device_alloc<bf16>(n);
    gelu_forward(d_y, d_x, n, tanh_approx, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    // Tolerances: see kRtol / kFwdAtol above.
    testing::expect_close("gelu forward", dev::from_device_bf16(d_y, n), ref_y, kFwdAtol, kRtol);

    bf16* d_d = dev::to_device_bf16(d);
    gelu_backward_inplace(d_d, d_x, n, tanh_approx, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    testing::expect_close("gelu backward (d * gelu')", dev::from_device_bf16(d_d, n), ref_dx,
                          kBwdAtolPerUnitD * max_d, kRtol);

    // In place forward (out aliases inp) gives the same result.
    bf16* d_z = dev::to_device_bf16(x);
    gelu_forward(d_z, d_z, n, tanh_approx, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    testing::expect_close("gelu forward in place", dev::from_device_bf16(d_z, n), ref_y, kFwdAtol, kRtol);

    CHECK_CUDA(cudaFree(d_x));
    CHECK_CUDA(cudaFree(d_y));
    CHECK_CUDA(cudaFree(d_d));
    CHECK_CUDA(cudaFree(d_z));
}

// Every bf16 value in [-13, 13] (33k values: all binades down to the subnormals, both signs, +-0, the
// cancellation region around gelu's root, the left tail down to where the erf form's results approach
// fp32's underflow), padded to a multiple of 8 with 1.0. Backward with d = 1 (exact), so its output is
// bf16(gelu'(x)) itself. Besides the elementwise tolerances above, the outputs must equal the correctly
// rounded float64 value except where that value lies within the fp32 error delta |y| of a bf16 rounding
// midpoint: midpoints are >= 2^-8 |y| apart, so that is at most a fraction 256 delta of the elements
// (delta <= 1.1e-5 for both forms: 0.3%; allowed: 0.6% = 512 delta), plus the ~26 values within 0.05 of the
// root (larger delta there), plus a few at the flush boundaries: allowed n / 170 + 30. Elements with
// |x| <= 2^-125 or a float64 value below 2^-126 (flushed, covered by atol) are not counted. The CPU
// emulation of the erf form has no such difference at all.
void check_gelu_all_bf16(bool tanh_approx) {
    std::vector<float> x;
    for (uint32_t b = 0; b < 0x10000; b++) {
        const uint32_t bits = b << 16;
        float v;
        memcpy(&v, &bits, sizeof v);
        if (std::isfinite(v) && std::fabs(v) <= 13.0f) x.push_back(v);
    }
    while (x.size() % 8 != 0) x.push_back(1.0f);
    const size_t n = x.size();
    printf("  %zu bf16 inputs in [-13, 13], %s form\n", n, tanh_approx ? "tanh" : "erf");
    std::vector<float> ref_y(n), ref_g(n);
    for (size_t i = 0; i < n; i++) {
        ref_y[i] = (float)ref_gelu(x[i], tanh_approx);
        ref_g[i] = (float)ref_gelu_grad(x[i], tanh_approx);
    }
    bf16* d_x = dev::to_device_bf16(x);
    bf16* d_y = dev::device_alloc<bf16>(n);
    bf16* d_g = dev::to_device_bf16(std::vector<float>(n, 1.0f));
    gelu_forward(d_y, d_x, n, tanh_approx, 0);
    gelu_backward_inplace(d_g, d_x, n, tanh_approx, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> y = dev::from_device_bf16(d_y, n), g = dev::from_device_bf16(d_g, n);
    testing::expect_close("gelu forward, all bf16", y, ref_y, kFwdAtol, kRtol);
    testing::expect_close("gelu', all bf16", g, ref_g, kBwdAtolPerUnitD, kRtol);
    size_t diff_y = 0, diff_g = 0, counted = 0;
    for (size_t i = 0; i < n; i++) {
        if (std::fabs(x[i]) <= std::ldexp(1.0f, -125)) continue;
        counted++;
        if (std::fabs(ref_y[i]) >= std::ldexp(1.0f, -126)) diff_y += y[i] != ref_bf16_round(ref_y[i]);
        if (std::fabs(ref_g[i]) >= std::ldexp(1.0f, -126)) diff_g += g[i] != ref_bf16_round(ref_g[i]);
    }
    printf("  outputs != correctly rounded float64: forward %zu, gelu' %zu (of %zu)\n", diff_y, diff_g,
           counted);
    EXPECT_TRUE(diff_y <= counted / 170 + 30);
    EXPECT_TRUE(diff_g <= counted / 170 + 30);
    CHECK_CUDA(cudaFree(d_x));
    CHECK_CUDA(cudaFree(d_y));
    CHECK_CUDA(cudaFree(d_g));
}

// n/8 = 12345 threads: not a multiple of the 256-thread block.
constexpr size_t kSmallN = 8 * 12345;
// GPT-1.5B MLP activation: N = B*T = 12288 rows of 4C = 6400.
constexpr size_t kLargeN = (size_t)12288 * 6400;

}  // namespace

TEST(gelu_erf_all_bf16) { check_gelu_all_bf16(false); }
TEST(gelu_tanh_all_bf16) { check_gelu_all_bf16(true); }
TEST(gelu_erf_small) { check_gelu(kSmallN, false); }
TEST(gelu_tanh_small) { check_gelu(kSmallN, true); }
TEST(gelu_erf_gpt1p5b) { check_gelu(kLargeN, false); }
TEST(gelu_tanh_gpt1p5b) { check_gelu(kLargeN, true); }

// bf16 bytes: forward reads x and writes y (4 per element), backward reads x and d and writes d (6).
BENCH(gelu_gpt1p5b) {
    const size_t n = kLargeN;
    bf16* d_x = dev::to_device_bf16(gelu_inputs(n));
    bf16* d_y = dev::device_alloc<bf16>(n);
    bf16* d_d = dev::to_device_bf16(dev::random_normal(n));
    for (bool tanh_approx : {false, true}) {
        const std::string shape = tanh_approx ? "12288x6400,tanh" : "12288x6400,erf";
        const float ms_fwd = dev::time_ms([&] { gelu_forward(d_y, d_x, n, tanh_approx, 0); });
        bench::report_bandwidth("gelu_forward", shape, ms_fwd, 4.0 * n);
        // Repetitions multiply d by gelu' again: the values change, the work does not.
        const float ms_bwd = dev::time_ms([&] { gelu_backward_inplace(d_d, d_x, n, tanh_approx, 0); });
        bench::report_bandwidth("gelu_backward_inplace", shape, ms_bwd, 6.0 * n);
    }
    CHECK_CUDA(cudaFree(d_x));
    CHECK_CUDA(cudaFree(d_y));
    CHECK_CUDA(cudaFree(d_d));
}

TEST_MAIN()
