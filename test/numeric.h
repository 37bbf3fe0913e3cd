// How every test compares numbers (host, kernel and model tests alike): the rounding units that tolerances
// are derived from, elementwise and normwise error measures, and bitwise equality. Failures are recorded in
// the test state of test/testing.h; each check also prints one line of its measured error, so tolerances
// can be judged against real numbers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "test/testing.h"

namespace testing {

// Unit roundoff u = 2^-p of each format, p = significant bits including the implicit one. Round to nearest
// moves a normal value x in [2^e, 2^(e+1)) by at most half the spacing 2^(e+1-p), so |fl(x) - x| <= u |x|,
// reached just above a power of two. A tolerance for a result stored in a format is a multiple of its u plus
// the error of the arithmetic before that rounding (derived next to each check).
constexpr double kFp32Eps = 0x1p-24;  // 24 bits (23 stored)
constexpr double kBf16Eps = 0x1p-8;   // 8 bits (7 stored)
constexpr double kFp16Eps = 0x1p-11;  // 11 bits (10 stored)
constexpr double kE4m3Eps = 0x1p-4;   // 4 bits (3 stored)
constexpr double kE5m2Eps = 0x1p-3;   // 3 bits (2 stored)

// Relative error we allow for an fp32 sum of n terms of one sign-consistent scale: the roundings add up like
// a random walk, sqrt(n) * 2^-24, times 4 for margin.
inline double fp32_sum_rel(int n) { return 4.0 * std::sqrt((double)n) * kFp32Eps; }

// |a - ref| / |ref|.
inline double rel_error(double a, double ref) { return std::fabs(a - ref) / std::fabs(ref); }

// ||got - ref|| / ||ref|| from the two sums of squares: infinite when an error is not finite, or when ref is
// all zero and got is not.
inline double rel_l2_of(double sq_err, double sq_ref) {
    if (!std::isfinite(sq_err)) return INFINITY;
    if (sq_ref > 0) return std::sqrt(sq_err / sq_ref);
    return sq_err == 0 ? 0.0 : INFINITY;
}

// Normwise relative error ||got - ref|| / ||ref|| of n elements (for results where elementwise tolerances
// are too noisy: reductions, whole gradient tensors).
template <class T, class U>
double rel_l2_error(const T* got, const U* ref, size_t n) {
    double sq_err = 0, sq_ref = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)got[i] - (double)ref[i];
        sq_err += d * d;
        sq_ref += (double)ref[i] * (double)ref[i];
    }
    return rel_l2_of(sq_err, sq_ref);
}
template <class T, class U>
double rel_l2_error(const std::vector<T>& got, const std::vector<U>& ref) {
    if (got.size() != ref.size()) return INFINITY;
    return rel_l2_error(got.data(), ref.data(), got.size());
}

// max |got - ref| over n elements; NaN if any difference is NaN.
template <class T, class U>
double max_abs_error(const T* got, const U* ref, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = std::fabs((double)got[i] - (double)ref[i]);
        if (std::isnan(d)) return NAN;
        m = std::fmax(m, d);
    }
    return m;
}

// Accumulates |got - ref| against a bound per element: the first element out of its bound or not finite,
// the largest error, relative error and error/bound, and the normwise error.
struct ErrorStats {
    long first_bad = -1;
    double bad_got = 0, bad_ref = 0, bad_bound = 0;
    double max_abs = 0, max_rel = 0, max_ratio = 0, sq_err = 0, sq_ref = 0;

    void add(long index, double got, double ref, double bound) {
        const double err = std::fabs(got - ref);
        if ((!std::isfinite(got) || !(err <= bound)) && first_bad < 0)
            first_bad = index, bad_got = got, bad_ref = ref, bad_bound = bound;
        if (std::isfinite(err)) {
            max_abs = std::fmax(max_abs, err);
            max_rel = std::fmax(max_rel, err / (std::fabs(ref) + 1e-6));
            max_ratio = std::fmax(max_ratio, err / (bound + 1e-300));
        }
        sq_err += std::isfinite(err) ? err * err : INFINITY;
        sq_ref += ref * ref;
    }
    double rel_l2() const { return rel_l2_of(sq_err, sq_ref); }

    // Prints one line for `what` (with `note` appended) and records a failure for the first element out of
    // its bound, else for a normwise error above max_rel_l2 (max_rel_l2 <= 0: no normwise limit).
    bool check(const std::string& what, double max_rel_l2 = 0, const std::string& note = "") const {
        printf("  %-34s max abs err %.3e  max rel err %.3e  max err/bound %.3f  rel l2 %.3e%s\n",
               what.c_str(), max_abs, max_rel, max_ratio, rel_l2(), note.c_str());
        char buf[320];
        if (first_bad >= 0) {
            snprintf(buf, sizeof buf, "%s: element %ld is %.6g, reference %.6g (bound %.3g)", what.c_str(),
                     first_bad, bad_got, bad_ref, bad_bound);
            fail(__FILE__, __LINE__, buf);
            return false;
        }
        if (max_rel_l2 > 0 && !(rel_l2() <= max_rel_l2)) {
            snprintf(buf, sizeof buf, "%s: normwise relative error %.3e above %.3e", what.c_str(), rel_l2(),
                     max_rel_l2);
            fail(__FILE__, __LINE__, buf);
            return false;
        }
        return true;
    }
};

// Elementwise |got - ref| <= atol + rtol * |ref|, every element finite. Prints max abs/rel error; records a
// test failure naming the first offending element.
template <class T, class U>
bool expect_close(const std::string& what, const std::vector<T>& got, const std::vector<U>& ref, double atol,
                  double rtol) {
    if (got.size() != ref.size()) {
        fail(__FILE__, __LINE__,
             what + ": size " + std::to_string(got.size()) + ", reference " + std::to_string(ref.size()));
        return false;
    }
    ErrorStats s;
    for (size_t i = 0; i < got.size(); i++)
        s.add((long)i, (double)got[i], (double)ref[i], atol + rtol * std::fabs((double)ref[i]));
    char note[64];
    snprintf(note, sizeof note, "  (atol %.1e rtol %.1e)", atol, rtol);
    return s.check(what, 0, note);
}
inline bool expect_close(const std::string& what, const std::vector<float>& got,
                         const std::vector<float>& ref, double atol, double rtol) {
    return expect_close<float, float>(what, got, ref, atol, rtol);
}

// ---- bitwise equality (NaNs compare by their bits, -0 differs from +0) ----

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    static_assert(std::is_trivially_copyable<T>::value, "bitwise comparison of a trivially copyable type");
    return a.size() == b.size() && (a.empty() || memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return same_bits<float>(a, b);
}

// Positions where a and b differ bitwise (a size mismatch counts as all of the larger).
template <class T>
size_t count_bit_diffs(const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() != b.size()) return std::max(a.size(), b.size());
    size_t n = 0;
    for (size_t i = 0; i < a.size(); i++) n += memcmp(&a[i], &b[i], sizeof(T)) != 0;
    return n;
}

// The bits of v as hex ("0x7e" for a byte, "0x3f800000" for 1.0f).
template <class T>
std::string hex_bits(const T& v) {
    static_assert(sizeof(T) <= 8, "hex_bits of a scalar");
    uint64_t u = 0;
    memcpy(&u, &v, sizeof(T));
    char buf[24];
    snprintf(buf, sizeof buf, "0x%0*llx", (int)(2 * sizeof(T)), (unsigned long long)u);
    return buf;
}

// Every element bitwise equal to the reference; prints the count, records a failure with the first
// difference.
template <class T>
bool expect_same_bits(const std::string& what, const std::vector<T>& got, const std::vector<T>& ref) {
    if (got.size() != ref.size()) {
        fail(__FILE__, __LINE__,
             what + ": size " + std::to_string(got.size()) + ", reference " + std::to_string(ref.size()));
        return false;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < ref.size(); i++)
        if (memcmp(&got[i], &ref[i], sizeof(T)) != 0 && bad++ == 0) first = i;
    printf("  %-44s %zu / %zu differ (bitwise)\n", what.c_str(), bad, ref.size());
    if (bad == 0) return true;
    fail(__FILE__, __LINE__,
         what + ": " + std::to_string(bad) + " of " + std::to_string(ref.size()) +
             " differ bitwise, first at " + std::to_string(first) + ": " + hex_bits(got[first]) +
             " vs reference " + hex_bits(ref[first]));
    return false;
}

}  // namespace testing
