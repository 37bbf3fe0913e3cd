// Host tests of the shared test machinery: the CPU references of test/reference/ (against closed forms,
// hand cases and finite differences, so a reference that the kernel tests trust is itself checked on every
// machine) and the checks of test/numeric.h (that they fail when they should, and that the format units are
// the rounding errors the conversions really make).
#include <cuda_fp16.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "test/numeric.h"
#include "test/reference/adamw.h"
#include "test/reference/attention.h"
#include "test/reference/bf16.h"
#include "test/reference/classifier.h"
#include "test/reference/encoder.h"
#include "test/reference/fp8.h"
#include "test/reference/gelu.h"
#include "test/reference/gemm.h"
#include "test/reference/layernorm.h"
#include "test/reference/norm.h"
#include "test/testing.h"

namespace {

std::vector<float> randn(size_t n, uint32_t seed, float stddev = 1.0f) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, stddev);
    std::vector<float> v(n);
    for (float& x : v) x = d(gen);
    return v;
}

// Runs a check in a scratch test state: true if it recorded a failure (the caller's state is kept).
bool records_failure(const std::function<void()>& check) {
    const testing::State saved = testing::state();
    testing::state() = testing::State();
    check();
    const bool failed = testing::state().failed;
    testing::state() = saved;
    return failed;
}

// Largest |fl(x) - x| / |x| of a rounding over x = 1 + k/n, k < n (one binade: the relative error repeats
// in every binade of normal numbers).
double max_rel_rounding(const std::function<double(float)>& round, int n = 1 << 16) {
    double m = 0;
    for (int k = 0; k < n; k++) {
        const float x = 1.0f + (float)k / n;
        m = std::max(m, std::fabs(round(x) - x) / x);
    }
    return m;
}

}  // namespace

// Each format's unit u bounds the relative rounding error of its conversion, tightly: the largest error,
// u / (1 + u), is made at the first midpoint 1 + u.
TEST(format_units_are_the_rounding_errors) {
    const double bf16 = max_rel_rounding([](float x) { return ref_bf16_round(x); });
    const double fp16 = max_rel_rounding([](float x) { return __half2float(__float2half_rn(x)); });
    const double e4m3 = max_rel_rounding(
        [](float x) { return ref_fp8_decode(ref_fp8_quantize(x, 1.0f, Fp8Dtype::E4M3), Fp8Dtype::E4M3); });
    const double e5m2 = max_rel_rounding(
        [](float x) { return ref_fp8_decode(ref_fp8_quantize(x, 1.0f, Fp8Dtype::E5M2), Fp8Dtype::E5M2); });
    printf("  max relative rounding: bf16 %.4e fp16 %.4e e4m3 %.4e e5m2 %.4e\n", bf16, fp16, e4m3, e5m2);
    const double got[] = {bf16, fp16, e4m3, e5m2};
    const double unit[] = {testing::kBf16Eps, testing::kFp16Eps, testing::kE4m3Eps, testing::kE5m2Eps};
    for (int i = 0; i < 4; i++) {
        EXPECT_TRUE(got[i] <= unit[i]);
        EXPECT_NEAR(got[i], unit[i] / (1 + unit[i]), 1e-3 * unit[i]);
    }
}

TEST(expect_close_fails_out_of_tolerance_and_on_non_finite) {
    const std::vector<float> ref = {1.0f, -2.0f, 0.0f};
    EXPECT_TRUE(!records_failure([&] { testing::expect_close("exact", ref, ref, 0.0, 0.0); }));
    EXPECT_TRUE(!records_failure([&] {
        testing::expect_close("in", {1.001f, -2.0f, 0.0f}, ref, 0.0, 2e-3);
    }));
    EXPECT_TRUE(records_failure([&] { testing::expect_close("out", {1.01f, -2.0f, 0.0f}, ref, 0.0, 2e-3); }));
    EXPECT_TRUE(records_failure([&] {
        testing::expect_close("atol", {1.0f, -2.0f, 1e-3f}, ref, 1e-4, 1.0);
    }));
    EXPECT_TRUE(records_failure([&] { testing::expect_close("nan", {1.0f, NAN, 0.0f}, ref, 1e9, 1e9); }));
    EXPECT_TRUE(records_failure([&] {
        testing::expect_close("inf", {1.0f, -2.0f, INFINITY}, ref, 1e9, 1e9);
    }));
    EXPECT_TRUE(records_failure([&] { testing::expect_close("size", {1.0f, -2.0f}, ref, 1e9, 1e9); }));
    EXPECT_TRUE(records_failure([&] { testing::expect_close("nan ref", ref, {1.0f, NAN, 0.0f}, 1e9, 1e9); }));
}

TEST(error_stats_normwise_limit) {
    testing::ErrorStats s;
    s.add(0, 3.0 + 0.03, 3.0, 1.0);
    s.add(1, 4.0, 4.0, 1.0);
    EXPECT_NEAR(s.rel_l2(), 0.03 / 5.0, 1e-12);
    EXPECT_TRUE(!records_failure([&] { s.check("within", 1e-2); }));
    EXPECT_TRUE(records_failure([&] { s.check("above", 1e-3); }));
    EXPECT_TRUE(!records_failure([&] { s.check("no limit"); }));
}

TEST(rel_l2_error_cases) {
    const std::vector<float> zero(3, 0.0f), ref = {3.0f, 0.0f, 4.0f};
    EXPECT_EQ(testing::rel_l2_error(zero, zero), 0.0);
    EXPECT_TRUE(std::isinf(testing::rel_l2_error(std::vector<float>{0.0f, 1e-20f, 0.0f}, zero)));
    EXPECT_NEAR(testing::rel_l2_error(std::vector<float>{3.0f, 0.5f, 4.0f}, ref), 0.1, 1e-12);
    EXPECT_TRUE(std::isinf(testing::rel_l2_error(std::vector<float>{NAN, 0.0f, 4.0f}, ref)));
    EXPECT_TRUE(std::isinf(testing::rel_l2_error(std::vector<float>{3.0f}, ref)));  // size mismatch
    EXPECT_NEAR(testing::max_abs_error(ref.data(), zero.data(), 3), 4.0, 0.0);
    EXPECT_TRUE(std::isnan(testing::max_abs_error(std::vector<float>{NAN}.data(), zero.data(), 1)));
}

TEST(bitwise_equality) {
    EXPECT_TRUE(testing::same_bits({1.0f, NAN}, {1.0f, NAN}));
    EXPECT_TRUE(!testing::same_bits({0.0f}, {-0.0f}));
    EXPECT_TRUE(!testing::same_bits({1.0f}, {1.0f, 1.0f}));
    EXPECT_EQ(testing::count_bit_diffs(std::vector<float>{1, 2, 3}, std::vector<float>{1, 5, 3}), (size_t)1);
    EXPECT_EQ(testing::count_bit_diffs(std::vector<int>{1}, std::vector<int>{1, 2, 3}), (size_t)3);
    const std::vector<uint8_t> a = {1, 2, 3}, b = {1, 7, 3};
    EXPECT_TRUE(!records_failure([&] { testing::expect_same_bits("same", a, a); }));
    EXPECT_TRUE(records_failure([&] { testing::expect_same_bits("differ", a, b); }));
    testing::State saved = testing::state();
    testing::state() = testing::State();
    testing::expect_same_bits("differ", a, b);
    const std::string why = testing::state().why;
    testing::state() = saved;
    EXPECT_CONTAINS(why, "first at 1: 0x02 vs reference 0x07");
    EXPECT_TRUE(testing::hex_bits(1.0f) == "0x3f800000");
}

TEST(ref_gemm_hand_case) {
    // A [2, 3], B [2, 3]: out = A B^T.
    const std::vector<double> A = {1, 2, 3, -1, 0, 2}, B = {4, 5, 6, 1, 1, 1};
    const RefGemm r = ref_gemm(A, B, 2, 2, 3);
    const double want[] = {32, 6, 8, 1};
    for (int i = 0; i < 4; i++) EXPECT_NEAR(r.val[i], want[i], 0.0);
    EXPECT_NEAR(r.unit[0], std::sqrt(14.0) * std::sqrt(77.0) / std::sqrt(3.0), 1e-12);
}

// Forward: each row normalized (mean 0, variance v / (v + eps) with w = 1, b = 0), then w and b applied;
// the fp32 formula from the same statistics agrees to one bf16 rounding. Backward: the gradients of
// sum(dout * out) by central differences of the float64 forward.
TEST(ref_layernorm_forward_and_backward) {
    const int N = 3, C = 8;
    std::vector<float> x = randn(N * C, 1, 2.0f), w = randn(C, 2, 0.3f), b = randn(C, 3, 0.3f);
    for (float& v : x) v += 1.5f;
    for (float& v : w) v += 1.0f;
    const RefLayerNorm plain =
        ref_layernorm_forward(x, std::vector<float>(C, 1.0f), std::vector<float>(C, 0.0f), N, C);
    for (int n = 0; n < N; n++) {
        double m = 0, v = 0, mx = 0;
        for (int c = 0; c < C; c++) m += plain.out[n * C + c], mx += x[n * C + c];
        for (int c = 0; c < C; c++) v += (double)plain.out[n * C + c] * plain.out[n * C + c];
        EXPECT_NEAR(m / C, 0.0, 1e-6);
        EXPECT_NEAR(v / C, 1.0, 1e-4);
        EXPECT_NEAR(plain.mean[n], mx / C, 1e-6);
    }
    const RefLayerNorm fwd = ref_layernorm_forward(x, w, b, N, C);
    testing::expect_close("fp32 formula vs float64",
                          ref_layernorm_forward_fp32(x, w, b, fwd.mean, fwd.rstd, N, C), fwd.out, 1e-6,
                          testing::kBf16Eps);

    const std::vector<float> dout = randn(N * C, 4), dinp0(N * C, 0.0f);
    const RefLayerNormGrads g = ref_layernorm_backward(x, w, dout, dinp0, fwd.mean, fwd.rstd, N, C);
    auto loss = [&](const std::vector<float>& xx, const std::vector<float>& ww,
                    const std::vector<float>& bb) {
        const RefLayerNorm r = ref_layernorm_forward(xx, ww, bb, N, C);
        double l = 0;
        for (int i = 0; i < N * C; i++) l += (double)dout[i] * r.out[i];
        return l;
    };
    const float h = 1e-2f;
    for (int i = 0; i < N * C; i++) {
        std::vector<float> xp = x, xm = x;
        xp[i] += h, xm[i] -= h;
        EXPECT_NEAR(g.dinp[i], (loss(xp, w, b) - loss(xm, w, b)) / (xp[i] - xm[i]), 2e-3);
    }
    for (int c = 0; c < C; c++) {
        std::vector<float> wp = w, wm = w, bp = b, bm = b;
        wp[c] += h, wm[c] -= h, bp[c] += h, bm[c] -= h;
        EXPECT_NEAR(g.dweight[c], (loss(x, wp, b) - loss(x, wm, b)) / (wp[c] - wm[c]), 2e-3);
        EXPECT_NEAR(g.dbias[c], (loss(x, w, bp) - loss(x, w, bm)) / (bp[c] - bm[c]), 2e-3);
    }
    // dinp0 is added, and the residual add rounds once to bf16.
    const RefLayerNormGrads g1 =
        ref_layernorm_backward(x, w, dout, std::vector<float>(N * C, 1.0f), fwd.mean, fwd.rstd, N, C);
    for (int i = 0; i < N * C; i++) EXPECT_NEAR(g1.dinp[i], g.dinp[i] + 1.0, 1e-6);
    EXPECT_EQ(ref_residual_add({1.0f}, {0x1p-9f})[0], 1.0f);  // 1 + 2^-9 is a tie: to even
    EXPECT_EQ(ref_residual_add({1.0f}, {0x1p-8f + 0x1p-12f})[0], 1.0f + 0x1p-7f);
}

// Values of Phi and of the tanh form at 1, the derivative by central differences over [-8, 8] (relative,
// so the left tail counts), and the tail itself: no cancellation to 0.
TEST(ref_gelu_values_and_derivative) {
    EXPECT_NEAR(ref_gelu(1.0, false), 0.8413447460685429, 1e-15);
    EXPECT_NEAR(ref_gelu(1.0, true), 0.8411919906082768, 1e-15);
    EXPECT_EQ(ref_gelu(0.0, false), 0.0);
    for (bool tanh_form : {false, true}) {
        for (double x = -8.0; x <= 8.0; x += 0.37) {
            const double h = 1e-5, fd = (ref_gelu(x + h, tanh_form) - ref_gelu(x - h, tanh_form)) / (2 * h);
            const double g = ref_gelu_grad(x, tanh_form);
            EXPECT_NEAR(g, fd, 1e-6 * std::fabs(g) + 1e-9);
        }
        EXPECT_TRUE(ref_gelu(-8.5, tanh_form) < 0.0 && ref_gelu(-8.5, tanh_form) > -1e-12);
        EXPECT_TRUE(ref_gelu_grad(-8.5, tanh_form) < 0.0);
    }
}

// First step from zero moments: mhat = g, vhat = g^2, so p <- p (1 - lr wd) - lr g / (|g| + eps).
TEST(ref_adamw_first_step) {
    const RefAdamW h;
    std::vector<float> master = {0.5f, -0.25f, 0.0f}, m(3, 0.0f), v(3, 0.0f);
    const std::vector<float> grads = {2.0f, -4.0f, 0.0f};
    ref_adamw_step(&master, &m, &v, grads, 0.5f, h, 1);
    const double decay = 1.0 - (double)h.lr * h.weight_decay;
    EXPECT_NEAR(master[0], 0.5 * decay - h.lr * 1.0 / (1.0 + h.eps), 1e-7);
    EXPECT_NEAR(master[1], -0.25 * decay + h.lr * 2.0 / (2.0 + h.eps), 1e-7);
    EXPECT_EQ(master[2], 0.0f);
    EXPECT_NEAR(m[0], (1.0 - h.beta1) * 1.0, 1e-7);
    EXPECT_NEAR(v[1], (1.0 - h.beta2) * 4.0, 1e-7);
}

TEST(ref_classifier_uniform_and_sums) {
    const int N = 2, V = 5;
    std::vector<float> logits(N * V, 3.0f), losses, dlogits;
    ref_classifier(logits, {1, 4}, 0.5f, N, V, &losses, &dlogits);
    EXPECT_NEAR(losses[0], std::log(5.0), 1e-6);
    EXPECT_NEAR(dlogits[1], (0.2 - 1.0) * 0.5, 1e-7);
    EXPECT_NEAR(dlogits[0], 0.2 * 0.5, 1e-7);
    logits = randn(N * V, 5, 30.0f);  // large logits: the max subtraction keeps it finite
    ref_classifier(logits, {0, 3}, 1.0f, N, V, &losses, &dlogits);
    for (int n = 0; n < N; n++) {
        double sum = 0;
        for (int v = 0; v < V; v++) sum += dlogits[n * V + v];
        EXPECT_NEAR(sum, 0.0, 1e-6);
        EXPECT_TRUE(std::isfinite(losses[n]) && losses[n] >= 0.0f);
    }
}

TEST(ref_encoder_forward_and_backward) {
    const int T = 2, C = 2, V = 3;
    const std::vector<float> wte = {1, 2, 3, 4, 5, 6}, wpe = {10, 20, 30, 40};
    const std::vector<int> tokens = {2, 0, 2, 2};  // B = 2
    const std::vector<float> out = ref_encoder_forward(wte, wpe, tokens, T, C);
    const std::vector<float> want = {15, 26, 31, 42, 15, 26, 35, 46};
    EXPECT_TRUE(out == want);
    const std::vector<float> dout = {1, 2, 3, 4, 5, 6, 7, 8};
    const RefEncoderGrads g = ref_encoder_backward(dout, tokens, T, C, V);
    EXPECT_TRUE(g.dwte == (std::vector<double>{3, 4, 0, 0, 13, 16}));
    EXPECT_TRUE(g.dwpe == (std::vector<double>{6, 8, 10, 12}));
    EXPECT_TRUE(g.present == (std::vector<char>{1, 0, 1}));
}

TEST(ref_l2_norm_of_a_range) { EXPECT_NEAR(ref_l2_norm({9, 3, 4, 9}, 1, 2), 5.0, 0.0); }

TEST(ref_fp8_conversions) {
    EXPECT_EQ(ref_fp8_quantize(1000.0f, 1.0f, Fp8Dtype::E4M3), 0x7E);  // saturates to 448
    EXPECT_EQ(ref_fp8_quantize(-1e6f, 1.0f, Fp8Dtype::E5M2), 0xFB);    // -57344
    EXPECT_EQ(ref_fp8_decode(0x7E, Fp8Dtype::E4M3), 448.0f);
    EXPECT_EQ(ref_fp8_decode(0x7B, Fp8Dtype::E5M2), 57344.0f);
    EXPECT_EQ(ref_fp8_decode(ref_fp8_quantize(0.75f, 4.0f, Fp8Dtype::E4M3), Fp8Dtype::E4M3), 3.0f);
    std::vector<uint8_t> q, qT;
    ref_fp8_quantize_transpose({1, 2, 3, 4, 5, 6}, 2, 3, 1.0f, Fp8Dtype::E4M3, q, qT);
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 3; c++) {
            EXPECT_EQ(ref_fp8_decode(q[n * 3 + c], Fp8Dtype::E4M3), (float)(n * 3 + c + 1));
            EXPECT_EQ(qT[c * 2 + n], q[n * 3 + c]);
        }
    EXPECT_EQ(ref_amax_bits({1.0f, -3.0f, 2.0f}), fp8_float_bits(3.0f));
    EXPECT_TRUE(std::isnan(fp8_bits_float(ref_amax_bits({1.0f, NAN, -INFINITY}))));
}

// One head: T = 1 attends to itself only (o = v, lse = score); the gradients by central differences of
// sum(dout * o) in float64; every bound positive.
TEST(ref_attention_head_gradients) {
    const RefAttentionShape s{2, 3, 2, 4};
    const size_t C = (size_t)s.H * s.D, N = (size_t)s.B * s.T;
    std::vector<float> qkv = randn(N * 3 * C, 6), dout = randn(N * C, 7);
    const int b = 1, h = 1;
    RefAttentionHead r;
    ref_attention_head(qkv, dout, s, b, h, &r);
    auto at = [&](int t, int part, int d) {
        return ((size_t)b * s.T + t) * 3 * C + part * C + (size_t)h * s.D + d;
    };
    double score0 = 0;
    for (int d = 0; d < s.D; d++) score0 += (double)qkv[at(0, 0, d)] * qkv[at(0, 1, d)];
    EXPECT_NEAR(r.lse[0], score0 / std::sqrt((double)s.D), 1e-12);
    for (int d = 0; d < s.D; d++) EXPECT_NEAR(r.o[d], qkv[at(0, 2, d)], 1e-12);
    auto loss = [&](const std::vector<float>& x) {
        RefAttentionHead rr;
        ref_attention_head(x, dout, s, b, h, &rr);
        double l = 0;
        for (int t = 0; t < s.T; t++)
            for (int d = 0; d < s.D; d++)
                l += (double)dout[((size_t)b * s.T + t) * C + (size_t)h * s.D + d] * rr.o[t * s.D + d];
        return l;
    };
    const std::vector<double>* grads[3] = {&r.dq, &r.dk, &r.dv};
    for (int part = 0; part < 3; part++)
        for (int t = 0; t < s.T; t++)
            for (int d = 0; d < s.D; d++) {
                std::vector<float> xp = qkv, xm = qkv;
                xp[at(t, part, d)] += 1e-3f, xm[at(t, part, d)] -= 1e-3f;
                const double fd = (loss(xp) - loss(xm)) / ((double)xp[at(t, part, d)] - xm[at(t, part, d)]);
                EXPECT_NEAR((*grads[part])[t * s.D + d], fd, 1e-5);
            }
    for (double bound : r.o_bound) EXPECT_TRUE(bound > 0);
    for (double bound : r.dq_bound) EXPECT_TRUE(bound > 0);
}

TEST_MAIN()
