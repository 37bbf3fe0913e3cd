// The global gradient norm in float64: sqrt(sum of squares) of x[begin, begin + n).
#pragma once
#include <cmath>
#include <vector>

inline double ref_l2_norm(const std::vector<float>& x, size_t begin, size_t n) {
    double sum = 0;
    for (size_t i = begin; i < begin + n; i++) sum += (double)x[i] * x[i];
    return std::sqrt(sum);
}
