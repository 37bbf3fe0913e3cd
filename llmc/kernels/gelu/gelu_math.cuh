// GELU value and derivative, shared by every kernel that applies GELU (llmc/kernels/gelu/gelu.cu, the FP8
// dGELU cast in llmc/kernels/cast/cast.cu, the fused FP8 GELU producer in llmc/kernels/gelu/gelu_fp8.cu), so
// that all of them evaluate the very same fp32 instructions: the fused producer is bit-identical to
// gelu_forward + cast.
//
// Exact (erf) form, as PyTorch's nn.GELU(): gelu(x) = x Phi(x), Phi(x) = 0.5 (1 + erf(x/sqrt2)), and
// gelu'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi). erfcf (~40 instructions, and a second
// exponential for phi) made these kernels compute-bound; here one exp2 and one reciprocal serve both:
//   Q(x) = Phi(-|x|) = 0.5 erfc(|x|/sqrt2) = E(x) q(t),  E(x) = exp(-x^2/2) = 2^(-x^2 log2(e)/2),
//   t = 1 / (1 + kT |x|),  q = a degree-7 polynomial in t fitted to Q / E (the scaled complementary error
//   function erfcx(z)/2, z = |x|/sqrt2, which is smooth in t on (0, 1] and ~ t at large |x|),
// then Phi(x) = Q for x < 0 and 1 - Q for x >= 0 (Q <= 1/2: no cancellation), and
//   gelu(x)  = max(x, 0) - |x| q E                                   (one FFMA),
//   gelu'(x) = H + E (x / sqrt(2 pi) - sign(x) q),  H = 1 (x >= 0) or -0 (x < 0)  (one FFMA).
// Both keep full relative accuracy in the left tail (gelu -> 0 like x Q, gelu' -> x phi). The coefficients
// are a relative-error minimax fit (Lawson iteration, float64, fp32-rounded) of q(t) = Q(x) / E32(x) on
// x in [0, 13.3], where E32 uses the fp32-rounded exponent constant below (its rounding is thus absorbed;
// E underflows to 0 beyond 13.22 and then q no longer matters). Fit error 3.1e-7 relative. Cost per
// element (SASS, sm_90a): forward MUFU.RCP + MUFU.EX2 + 13 FP32 ops (9 FFMA, 3 FMUL, 1 FMNMX; erfcf was ~45
// ops and 3 MUFU), derivative the two MUFU + 17 (12 FFMA including a Newton step on t, which keeps the
// reciprocal's error out of the cancellation near gelu's root at -0.7518, 2 FMUL, 3 for the sign selects).
//
// Accuracy, exhaustive CPU emulation of these exact fp32 sequences (fmaf, flush to zero) over all 65280
// finite bf16 inputs against float64 erfc/exp, with the ex2.approx / rcp.approx results perturbed by
// +-2 ulp / +-1 ulp (their documented bounds; in brackets: 4x the bounds, +-2^-20 / +-2^-21 relative):
// clang-format off
//   Phi (as E q, 1 - E q) relative, x in [-13, inf), Phi >= 2^-126:   <= 3.1e-6 [4.3e-6]  (2^-16 = 1.5e-5)
//   gelu relative, x in [-13, inf), |x| > 2^-125:                    <= 3.1e-6 [4.3e-6]
//   gelu absolute for x < -13 and |x| <= 2^-125 (flushed ranges):    < 2^-126 (x < -13.2 gives -0; for
//     |x| <= 2^-125, |x| q flushes and gelu returns x, or 0 for subnormal x, instead of x/2)
//   gelu' absolute, everywhere:                                      <= 3.4e-7 [6.8e-7]
//   gelu' relative, x >= -13 and |x + 0.7518| >= 0.05:               <= 3.6e-6 [4.3e-6]  (2^-14 = 6.1e-5)
//   gelu' relative within 0.05 of the root (|gelu'| >= 7.7e-4 at bf16 inputs): <= 5.9e-5 [6.0e-5]
//   gelu' absolute for x < -13 (E, or E w, flushed to -0):           < 4e-38
// clang-format on
// The dominant term in the tails is the fp32 rounding of the exponent x^2 log2(e)/2 (up to 122 at x = -13:
// 2^-24 * 122 * ln 2 = 5e-6 relative in E); for bf16 inputs x^2 itself is exact. Rounded to bf16 (without
// the perturbations), every output for x > -13 and |x| > 2^-125 equals the correctly rounded float64 value
// (forward and derivative). Non-finite x gives NaN (+inf too).
//
// Tanh form (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), unchanged: cancellation-free through the
// logistic of 2u (see below).
#pragma once
#include <cuda_bf16.h>

namespace gelu_math_detail {

constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
constexpr float kNegHalfLog2e = -0.72134752044448170f;  // -log2(e) / 2: exp(-x^2/2) = 2^(x^2 * this)
// t = 1 / (1 + kT |x|); Q / E ~= kQ0 + kQ1 t + ... + kQ7 t^7.
constexpr float kT = 0.347499996f;
constexpr float kQ0 = -3.51718736e-05f, kQ1 = 0.139418855f, kQ2 = 0.131247431f, kQ3 = 0.159770459f;
constexpr float kQ4 = -0.0268317219f, kQ5 = 0.253212541f, kQ6 = -0.205565274f, kQ7 = 0.0487829372f;

// MUFU instructions, independent of --use_fast_math: 2^a (<= 2 ulp; results below 2^-126 flush to 0) and
// 1/d (<= 1 ulp).
__device__ __forceinline__ float ex2_approx(float a) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
}
__device__ __forceinline__ float rcp_approx(float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    return r;
}
// q(t) by Horner (all FMAs written out: the contraction does not depend on the compiler).
__device__ __forceinline__ float erfc_poly(float t) {
    float q = fmaf(kQ7, t, kQ6);
    q = fmaf(q, t, kQ5);
    q = fmaf(q, t, kQ4);
    q = fmaf(q, t, kQ3);
    q = fmaf(q, t, kQ2);
    q = fmaf(q, t, kQ1);
    return fmaf(q, t, kQ0);
}
// E = exp(-x^2/2) (x * x is exact for bf16 x).
__device__ __forceinline__ float gauss_exp(float x) { return ex2_approx((x * x) * kNegHalfLog2e); }

__device__ __forceinline__ float gelu_tanh_u(float x) { return kSqrt2OverPi * (x + kGeluCubic * x * x * x); }

}  // namespace gelu_math_detail

// ---- exact (erf) form ----

// x Phi(x) = max(x, 0) - |x| Q(|x|): x Q for x < 0, x (1 - Q) for x >= 0. fmaxf(x, -0) keeps the sign of a
// flushed left tail (-0); |q| (a free operand modifier) only matters at |x| > 1e4, where the polynomial's
// constant term makes q < 0 while E = 0.
__device__ __forceinline__ float gelu_erf(float x) {
    using namespace gelu_math_detail;
    const float t = rcp_approx(fmaf(kT, fabsf(x), 1.0f));
    const float q = erfc_poly(t);
    const float e = gauss_exp(x);
    return fmaf(-(fabsf(x) * fabsf(q)), e, fmaxf(x, -0.0f));
}

// Phi(x) + x phi(x) = H + E (x / sqrt(2 pi) - sign(x) q): E (q + x/sqrt(2 pi)) for x < 0 (the two terms
// cancel only at the root, -0.7518; H = -0 keeps the sign of a flushed left tail), 1 + E (x/sqrt(2 pi) - q)
// for x >= 0. Both selects use the same predicate (a subnormal x, 0 under ftz, takes the x >= 0 side: 0.5
// either way). t gets one Newton step: q's sensitivity to t (|d ln q / d ln t| ~ 2 at the root) would
// otherwise carry the reciprocal's 1 ulp into the cancellation (1.3e-4 relative instead of 5.9e-5 there).
__device__ __forceinline__ float gelu_erf_grad(float x) {
    using namespace gelu_math_detail;
    const float d = fmaf(kT, fabsf(x), 1.0f);
    float t = rcp_approx(d);
    t = fmaf(t, fmaf(-d, t, 1.0f), t);
    const float q = erfc_poly(t);
    const float e = gauss_exp(x);
    const bool pos = x >= 0.0f;
    const float w = fmaf(x, kInvSqrt2Pi, pos ? -q : q);
    return fmaf(e, w, pos ? 1.0f : -0.0f);
}

// ---- tanh form ----

// 0.5 (1 + tanh(u)) = sigmoid(2u); with e = exp(-2|u|) in (0, 1]: sigmoid(2u) = 1/(1+e) for u >= 0 and
// e/(1+e) for u < 0, sigmoid(2u) (1 - sigmoid(2u)) = e/(1+e)^2. No cancellation anywhere (unlike 1 -
// tanh^2).
__device__ __forceinline__ float gelu_tanh(float x) {
    using namespace gelu_math_detail;
    const float u = gelu_tanh_u(x);
    const float e = __expf(-2.0f * fabsf(u));
    const float s = (u >= 0.0f ? 1.0f : e) / (1.0f + e);
    return x * s;
}
// gelu'(x) = s + 2 x s (1 - s) u' = s (1 + 2 x (1 - s) u'), 1 - s = e/(1+e) (u >= 0) or 1/(1+e) (u < 0):
// relative accuracy everywhere but at gelu's root (-0.75), and a flushed left tail gives -0 (the true sign).
// (The former 1 - 2/(exp(2u) + 1) form rounded exp(2u) + 1 to 1 for x < -4.9, returning gelu' = 0 instead of
// ~ -1e-6, and lost digits from x < -3.)
__device__ __forceinline__ float gelu_tanh_grad(float x) {
    using namespace gelu_math_detail;
    const float u = gelu_tanh_u(x);
    const float e = __expf(-2.0f * fabsf(u));
    const float inv = 1.0f / (1.0f + e);
    const float s = (u >= 0.0f ? 1.0f : e) * inv;
    const float one_minus_s = (u >= 0.0f ? e : 1.0f) * inv;
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    return s * (1.0f + 2.0f * x * one_minus_s * du);
}

// y = bf16(gelu(x)) as gelu_forward stores it, back in fp32: the FP8 GELU producer's value, and the one the
// dGELU cast rebuilds from the same x (llmc/kernels/cast/cast.cu), so both quantize the same bits.
template <bool kTanh>
__device__ __forceinline__ float gelu_bf16(float x) {
    return __bfloat162float(__float2bfloat16(kTanh ? gelu_tanh(x) : gelu_erf(x)));
}
