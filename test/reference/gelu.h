// GELU and its derivative in float64, exact erf form x Phi(x) and the tanh approximation 0.5 x (1 + tanh u),
// u = sqrt(2/pi) (x + 0.044715 x^3), in forms without cancellation, accurate far into the left tail where
// the kernels (llmc/kernels/gelu/gelu_math.cuh) keep relative accuracy: Phi(x) = 0.5 erfc(-x/sqrt2);
// 0.5 (1 + tanh u) = sigmoid(2u) = 1 / (1 + exp(-2u)), whose s (1 - s) = (1 - tanh^2 u) / 4 is e / (1 + e)^2
// with e = exp(-2|u|). (0.5 x (1 + tanh u) cancels to exactly 0 for x < -7.2 even in float64, while the
// kernel correctly returns e.g. -1.0e-24 at x = -8.5.)
#pragma once
#include <cmath>

constexpr double kRefSqrt2OverPi = 0.79788456080286535588;

inline double ref_gelu(double x, bool tanh_form) {
    if (tanh_form) return x / (1.0 + std::exp(-2.0 * kRefSqrt2OverPi * (x + 0.044715 * x * x * x)));
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

inline double ref_gelu_grad(double x, bool tanh_form) {
    if (tanh_form) {
        const double u = kRefSqrt2OverPi * (x + 0.044715 * x * x * x);
        const double du = kRefSqrt2OverPi * (1.0 + 3 * 0.044715 * x * x);
        const double e = std::exp(-2.0 * std::fabs(u)), s = (u >= 0.0 ? 1.0 : e) / (1.0 + e);
        return s + 2.0 * x * e / ((1.0 + e) * (1.0 + e)) * du;  // s + 0.5 x (1 - tanh^2 u) u'
    }
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * phi;
}
