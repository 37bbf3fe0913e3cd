// FP8 delayed-scaling arithmetic shared by the GPU kernels (llmc/kernels/cast/cast.cu) and the host tests:
// per-tensor formats, the amax combine rule, scale = (fp8_max / amax) / 2^margin and scale_inv = 1 / scale,
// bit-identical on host and device, plus a host reference model of the whole amax-history/scale update
// (the recipe: README.md, "How FP8 works"; the update rule: llmc/fp8/scale_state.cuh, fp8_update_scales).
//
// Bit-exactness between host and device: the kernels are built with --use_fast_math (approximate float
// division, denormals flushed to zero), so nothing here uses float arithmetic. amaxes are combined as
// integers on their bit patterns (|x| bits: non-negative floats order like unsigned ints, NaN above +inf),
// and the scale is computed in double (IEEE on the GPU whatever the float flags) with explicit non-flushing
// float<->double conversions. A correctly rounded double quotient rounded again to float equals the correctly
// rounded float quotient (53 >= 2 * 24 + 2), so scale is exactly the IEEE float result of (fp8_max / amax) /
// 2^margin.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "llmc/host/config.h"

#ifdef __CUDACC__
#define FP8_HD __host__ __device__
#else
#define FP8_HD
#endif

// Storage format of one scaled tensor.
enum class Fp8Dtype { E4M3, E5M2 };
constexpr float kFp8E4M3Max = 448.0f;
constexpr float kFp8E5M2Max = 57344.0f;

FP8_HD inline float fp8_dtype_max(Fp8Dtype d) { return d == Fp8Dtype::E4M3 ? kFp8E4M3Max : kFp8E5M2Max; }

// Slots of one FP8 Linear: input X and weight W (E4M3), output gradient dY (E5M2 for hybrid, E4M3 otherwise).
enum Fp8Role { kFp8X = 0, kFp8W = 1, kFp8DY = 2, kFp8RolesPerLinear = 3 };
inline int fp8_slot(int linear, int role) { return kFp8RolesPerLinear * linear + role; }
inline Fp8Dtype fp8_role_dtype(Fp8Format format, int role) {
    return (role == kFp8DY && format == Fp8Format::Hybrid) ? Fp8Dtype::E5M2 : Fp8Dtype::E4M3;
}
// Formats of every slot for `num_linears` FP8 Linears, slot = fp8_slot(linear, role).
inline std::vector<Fp8Dtype> fp8_linear_slot_dtypes(Fp8Format format, int num_linears) {
    std::vector<Fp8Dtype> d;
    for (int l = 0; l < num_linears; l++)
        for (int r = 0; r < kFp8RolesPerLinear; r++) d.push_back(fp8_role_dtype(format, r));
    return d;
}

// A 32-bit value's bits as the other type (float <-> uint32_t): the device intrinsics in device code, memcpy
// on the host.
template <class To, class From>
FP8_HD inline To fp8_bit_cast(From v) {
    static_assert(sizeof(To) == sizeof(From) && sizeof(To) == 4, "fp8_bit_cast: float <-> uint32_t only");
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same<To, float>::value)
        return __uint_as_float(v);
    else
        return __float_as_uint(v);
#else
    To t;
    memcpy(&t, &v, sizeof t);
    return t;
#endif
}
FP8_HD inline uint32_t fp8_float_bits(float f) { return fp8_bit_cast<uint32_t>(f); }
FP8_HD inline float fp8_bits_float(uint32_t u) { return fp8_bit_cast<float>(u); }
// Bits of |x| (sign cleared): the key by which amaxes are compared and atomically max-ed.
FP8_HD inline uint32_t fp8_abs_bits(float x) { return fp8_float_bits(x) & 0x7fffffffu; }
// max(|a|, |b|) that propagates NaN (a NaN's |bits| exceed +inf's), unlike fmaxf which drops it, and that
// never flushes denormals.
FP8_HD inline float fp8_amax_combine(float a, float b) {
    uint32_t ua = fp8_abs_bits(a), ub = fp8_abs_bits(b);
    return fp8_bits_float(ua > ub ? ua : ub);
}
// amax usable for a new scale: finite and > 0 (denormals count as > 0).
FP8_HD inline bool fp8_amax_usable(float amax) {
    uint32_t u = fp8_float_bits(amax);
    return (u >> 31) == 0 && u != 0 && (u & 0x7f800000u) != 0x7f800000u;
}

// Exact float -> double and correctly rounded double -> float: on the device cvt without .ftz (no
// flush-to-zero under --use_fast_math), on the host plain conversions.
template <class To, class From>
FP8_HD inline To fp8_convert(From v) {
#ifdef __CUDA_ARCH__
    To r;
    if constexpr (std::is_same<To, double>::value)
        asm("cvt.f64.f32 %0, %1;" : "=d"(r) : "f"(v));
    else
        asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(v));
    return r;
#else
    return (To)v;
#endif
}
FP8_HD inline double fp8_f2d(float f) { return fp8_convert<double>(f); }
FP8_HD inline float fp8_d2f(double d) { return fp8_convert<float>(d); }

// New scale for an amax: (fp8_max / amax) / 2^margin if amax is finite and > 0, else old_scale; a result that
// overflows float becomes FLT_MAX.
FP8_HD inline float fp8_compute_scale(float amax, float fp8_max, int margin, float old_scale) {
    if (!fp8_amax_usable(amax)) return old_scale;
    const double q = fp8_f2d(fp8_max) / fp8_f2d(amax);  // both exact in double; q correctly rounded
    const double s = ldexp(q, -margin);                 // exact (no double underflow for sane margins)
    if (s >= (double)FLT_MAX) return FLT_MAX;           // float rounding would give FLT_MAX or inf
    return fp8_d2f(s);
}
// scale_inv = 1 / scale, correctly rounded (may be a float denormal when scale is near FLT_MAX).
FP8_HD inline float fp8_compute_scale_inv(float scale) { return fp8_d2f(1.0 / fp8_f2d(scale)); }

// ---- Host reference model of fp8_update_scales (llmc/fp8/scale_state.cuh), used by the host and kernel
// tests. ---- history: [H][num_slots] row-major, row 0 = staging. Per slot with a non-zero staging amax:
//   window amax = combine over all H rows (Max) or row 0 (MostRecent);
//   roll (Transformer Engine's order): new[i] = old[i+1] for 1 <= i < H-1, new[H-1] = old[0], new[0] = 0,
//   i.e. row H-1 = this step's amax, row H-1-k = k steps ago, the oldest (old row 1) dropped;
//   scale = fp8_compute_scale(amax, fp8_max, margin, scale), scale_inv = 1 / scale.
// A slot whose staging amax is 0 is left untouched (no roll, same scale).
inline void fp8_update_reference(std::vector<float>& history, std::vector<float>& scale,
                                 std::vector<float>& scale_inv, const std::vector<float>& fp8_max,
                                 int num_slots, int history_len, AmaxAlgo algo, int margin) {
    const int H = history_len;
    std::vector<float> col(H);
    for (int s = 0; s < num_slots; s++) {
        const float staged = history[s];
        if (fp8_abs_bits(staged) == 0) continue;
        float amax = fp8_bits_float(fp8_abs_bits(staged));
        for (int i = 0; i < H; i++) {
            col[i] = history[(size_t)i * num_slots + s];
            if (algo == AmaxAlgo::Max) amax = fp8_amax_combine(amax, col[i]);
        }
        for (int i = 1; i < H - 1; i++) history[(size_t)i * num_slots + s] = col[i + 1];
        if (H > 1) history[(size_t)(H - 1) * num_slots + s] = col[0];
        history[s] = 0.0f;
        scale[s] = fp8_compute_scale(amax, fp8_max[s], margin, scale[s]);
        scale_inv[s] = fp8_compute_scale_inv(scale[s]);
    }
}
