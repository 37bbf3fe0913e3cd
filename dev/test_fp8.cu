// Tests for llmc/kernels/cast/cast.cu: cast kernels (cast + transpose, row-wise only) bit-exact against the
// CUDA host FP8 conversion (same saturating round-to-nearest-even), amax exactly max |x|, scale_inv written,
// dbias against float64 sums, dGELU against a float64 reference, and the delayed-scaling update against the
// host model in llmc/fp8/fp8_scale_math.h plus hand-derived cases. Benchmarks (--bench) at GPT-1.5B sizes (N
// = B*T = 12288, C = 1600, 4C = 6400).
#include <cfloat>
#include <cstring>

#include "dev/byte_budget.h"
#include "dev/dev_utils.h"
#include "dev/fp8_test_utils.h"
#include "llmc/kernels/cast/cast.cuh"
#include "llmc/kernels/gelu/gelu_fp8.cuh"
#include "llmc/kernels/layernorm/layernorm_fp8.cuh"
#include "test/reference/gelu.h"

using namespace fp8_test;

namespace {

// Values spread over many binades (N(0,1) * 2^k, k in [-12, 1]) so FP8 normals, subnormals and zeros all
// occur.
std::vector<float> wide_values(size_t n, bool bf16) {
    std::vector<float> v = dev::random_normal(n);
    std::vector<int> k = dev::random_ints(n, -12, 2);
    for (size_t i = 0; i < n; i++) v[i] = std::ldexp(v[i], k[i]);
    if (bf16) ref_round_to_bf16(v);
    return v;
}

struct Fixture {
    Fp8ScaleState st;
    Fixture() { st = fp8_scale_state_create({Fp8Dtype::E4M3, Fp8Dtype::E5M2}, 16); }
    ~Fixture() { fp8_scale_state_destroy(&st); }
    int slot(Fp8Dtype d) const { return d == Fp8Dtype::E4M3 ? 0 : 1; }
    // A cast's output [rows, cols] in format d (its slot).
    Fp8Tensor out(fp8b* data, fp8b* data_T, float* sinv, Fp8Dtype d, int rows, int cols) const {
        return tensor(st, data, data_T, sinv, slot(d), rows, cols, d);
    }
    void reset_staging() { CHECK_CUDA(cudaMemset(fp8_staging_amax(&st), 0, st.num_slots * sizeof(float))); }
    void set_scale(Fp8Dtype d, float s) { upload_scale(&st, slot(d), s); }
    uint32_t staged_bits(Fp8Dtype d) {
        float v = dev::from_device(fp8_staging_amax(&st) + slot(d), 1)[0];
        return fp8_float_bits(v);
    }
};

// One cast_transpose case: bf16 (or fp32) input, row-wise output present or not, scale fitted to the amax
// or 4x larger (so elements above amax/4 saturate).
template <class Tin>
void cast_transpose_case(int N, int C, Fp8Dtype d, bool rowwise, bool saturate) {
    const bool bf16_in = std::is_same<Tin, bf16>::value;
    printf(" N=%d C=%d %s %s%s%s\n", N, C, name(d), bf16_in ? "bf16" : "fp32",
           rowwise ? "" : " (no row-wise)", saturate ? " saturating" : "");
    Fixture f;
    Allocs A;
    std::vector<float> x = wide_values((size_t)N * C, bf16_in);
    const uint32_t ref_amax = ref_amax_bits(x);
    float scale = fp8_compute_scale(fp8_bits_float(ref_amax), fp8_dtype_max(d), 0, 1.0f);
    if (saturate) scale *= 4.0f;
    f.set_scale(d, scale);
    f.reset_staging();

    Tin* d_in = nullptr;
    if constexpr (std::is_same<Tin, bf16>::value)
        d_in = A(dev::to_device_bf16(x));
    else
        d_in = A(dev::to_device(x));
    fp8b* d_out = rowwise ? A(dev::device_alloc<fp8b>((size_t)N * C)) : nullptr;
    fp8b* d_outT = A(dev::device_alloc<fp8b>((size_t)N * C));
    float* d_sinv = A(dev::device_alloc<float>(1));
    fp8_cast_transpose(d_in, f.out(d_out, d_outT, d_sinv, d, N, C), 0);
    CHECK_CUDA(cudaDeviceSynchronize());

    std::vector<uint8_t> ref, refT;
    ref_fp8_quantize_transpose(x, N, C, scale, d, ref, refT);
    if (rowwise) testing::expect_same_bits("row-wise", dev::from_device(d_out, ref.size()), ref);
    testing::expect_same_bits("transposed", dev::from_device(d_outT, refT.size()), refT);
    EXPECT_EQ(f.staged_bits(d), ref_amax);  // amax of the pre-scale input, exact
    EXPECT_EQ(fp8_float_bits(dev::from_device(d_sinv, 1)[0]), fp8_float_bits(fp8_compute_scale_inv(scale)));
    if (saturate) EXPECT_TRUE(check_saturation(x, ref, scale, d) > 0);  // the case must exercise saturation
}

}  // namespace

TEST(cast_transpose_bit_exact) {
    const int shapes[][2] = {{16, 16}, {48, 80}, {144, 272}, {272, 144}, {1040, 1600}};
    for (auto& s : shapes)
        for (Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2}) {
            cast_transpose_case<bf16>(s[0], s[1], d, true, false);
            cast_transpose_case<bf16>(s[0], s[1], d, true, true);
        }
    cast_transpose_case<bf16>(48, 80, Fp8Dtype::E4M3, false, true);
    cast_transpose_case<bf16>(12288, 1600, Fp8Dtype::E4M3, true, true);
    cast_transpose_case<bf16>(12288, 1600, Fp8Dtype::E5M2, false, false);
}

// Row-wise only (fp8_cast: --recompute 2's forward from bf16; a rank's rows of an FP32 master weight on
// several GPUs): the bytes of the CPU quantization, exactly; amax and scale_inv as the cast_transpose cases.
// n from one 8-element chunk to several blocks with a partial last one.
TEST(cast_rows_bit_exact) {
    for (long n : {8L, 8200L, 12288L * 1600})
        for (Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2})
            for (bool saturate : {false, true})
                for (bool fp32_in : {false, true}) {
                    printf(" n=%ld %s %s%s\n", n, name(d), fp32_in ? "fp32" : "bf16",
                           saturate ? " saturating" : "");
                    Fixture f;
                    Allocs A;
                    const std::vector<float> x = wide_values((size_t)n, !fp32_in);
                    const uint32_t ref_amax = ref_amax_bits(x);
                    float scale = fp8_compute_scale(fp8_bits_float(ref_amax), fp8_dtype_max(d), 0, 1.0f);
                    if (saturate) scale *= 4.0f;
                    f.set_scale(d, scale);
                    f.reset_staging();
                    fp8b* d_out = A(dev::device_alloc<fp8b>((size_t)n));
                    float* d_sinv = A(dev::device_alloc<float>(1));
                    const Fp8Tensor out = f.out(d_out, nullptr, d_sinv, d, 1, (int)n);
                    if (fp32_in)
                        fp8_cast(A(dev::to_device(x)), out, 0);
                    else
                        fp8_cast(A(dev::to_device_bf16(x)), out, 0);
                    CHECK_CUDA(cudaDeviceSynchronize());
                    std::vector<uint8_t> ref, refT;
                    ref_fp8_quantize_transpose(x, 1, (int)n, scale, d, ref, refT);  // one row: row-wise bytes
                    testing::expect_same_bits("row-wise", dev::from_device(d_out, ref.size()), ref);
                    EXPECT_EQ(f.staged_bits(d), ref_amax);
                    EXPECT_EQ(fp8_float_bits(dev::from_device(d_sinv, 1)[0]),
                              fp8_float_bits(fp8_compute_scale_inv(scale)));
                    if (saturate) EXPECT_TRUE(check_saturation(x, ref, scale, d) > 0);
                }
}

TEST(weight_cast_transpose_fp32_master) {
    for (Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2}) {
        cast_transpose_case<float>(80, 48, d, true, true);
        cast_transpose_case<float>(4800, 1600, d, true, false);  // qkv weight [3C, C]
    }
}

// Amax only (step-0 calibration): exactly max |x| (of the pre-scale input) into the slot's staging amax, for
// bf16 and fp32 inputs, n from one chunk to several million (partial last block).
TEST(amax_only) {
    Fixture f;
    for (Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2})
        for (long n : {8L, 48L * 80, 8L * 100003, 12288L * 1600}) {
            for (int fp32 = 0; fp32 < 2; fp32++) {
                std::vector<float> x = wide_values(n, !fp32);
                const uint32_t ref_amax = ref_amax_bits(x);
                Allocs A;
                void* d_in = fp32 ? (void*)A(dev::to_device(x)) : (void*)A(dev::to_device_bf16(x));
                printf(" n=%ld slot %d %s\n", n, f.slot(d), fp32 ? "fp32" : "bf16");
                f.reset_staging();
                if (fp32)
                    fp8_amax((const float*)d_in, fp8_test::amax_tensor(f.st, f.slot(d), 1, (int)n), 0);
                else
                    fp8_amax((const bf16*)d_in, fp8_test::amax_tensor(f.st, f.slot(d), 1, (int)n), 0);
                EXPECT_EQ(f.staged_bits(d), ref_amax);
            }
        }
    // A NaN in the input must reach the staging amax (so the update keeps the old scale).
    std::vector<float> x = wide_values(4096, true);
    x[1234] = NAN;
    Allocs A;
    bf16* d_in = A(dev::to_device_bf16(x));
    f.reset_staging();
    fp8_amax(d_in, fp8_test::amax_tensor(f.st, 0, 1, (int)x.size()), 0);
    EXPECT_TRUE(std::isnan(fp8_bits_float(f.staged_bits(Fp8Dtype::E4M3))));
}

namespace {

// Reference sums in float64. Tolerance: the kernel sums in fp32 along a path of at most
// D = 8 (rows per thread) + 16 (row lanes) + ceil(rows/8) (reduce lanes) + 8 additions, so its error is at
// most D * 2^-24 * sum|x| (+ the accumulated bf16 input when accumulating); the bf16 output rounds to within
// 2^-8 relative (half an ulp of 7 stored mantissa bits is 2^-8 of the binade's low end).
double dbias_atol(const std::vector<double>& abs_sum, int N) {
    const double D = 8 + 16 + ceil_div(ceil_div(N, 128), 8) + 8 + 1;
    double m = 0;
    for (double a : abs_sum) m = std::max(m, a);
    return D * std::ldexp(1.0, -24) * m;
}

}  // namespace

TEST(cast_transpose_dbias) {
    Fixture f;
    const int shapes[][2] = {{48, 80}, {144, 272}, {12288, 1600}};
    for (auto& s : shapes)
        for (Fp8Dtype d : {Fp8Dtype::E5M2, Fp8Dtype::E4M3})
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                const int N = s[0], OC = s[1];
                printf(" N=%d OC=%d %s%s\n", N, OC, name(d), accumulate ? " accumulate" : "");
                std::vector<float> dy = dev::random_normal((size_t)N * OC);
                ref_round_to_bf16(dy);
                std::vector<float> db0 = dev::random_normal(OC);
                ref_round_to_bf16(db0);
                const uint32_t ref_amax = ref_amax_bits(dy);
                const float scale =
                    3.0f * fp8_compute_scale(fp8_bits_float(ref_amax), fp8_dtype_max(d), 0, 1.0f);
                f.set_scale(d, scale);
                f.reset_staging();
                Allocs A;
                bf16* d_dy = A(dev::to_device_bf16(dy));
                bf16* d_db = A(dev::to_device_bf16(db0));
                fp8b* d_out = A(dev::device_alloc<fp8b>((size_t)N * OC));
                fp8b* d_outT = A(dev::device_alloc<fp8b>((size_t)N * OC));
                float* d_sinv = A(dev::device_alloc<float>(1));
                void* d_scratch = A(dev::device_alloc<char>(fp8_dbias_scratch_bytes(N, OC)));
                fp8_cast_transpose_dbias(d_dy, f.out(d_out, d_outT, d_sinv, d, N, OC), d_db, d_scratch,
                                         accumulate, 0);
                std::vector<uint8_t> ref((size_t)N * OC), refT((size_t)N * OC);
                std::vector<double> sum(OC, 0.0), abs_sum(OC, 0.0);
                for (int n = 0; n < N; n++)
                    for (int c = 0; c < OC; c++) {
                        const float v = dy[(size_t)n * OC + c];
                        ref[(size_t)n * OC + c] = refT[(size_t)c * N + n] = ref_fp8_quantize(v, scale, d);
                        sum[c] += v;
                        abs_sum[c] += std::fabs(v);
                    }
                std::vector<float> ref_db(OC);
                for (int c = 0; c < OC; c++) {
                    ref_db[c] = (float)(sum[c] + (accumulate ? db0[c] : 0.0));
                    abs_sum[c] += accumulate ? std::fabs(db0[c]) : 0.0;
                }
                testing::expect_same_bits("row-wise", dev::from_device(d_out, ref.size()), ref);
                testing::expect_same_bits("transposed", dev::from_device(d_outT, refT.size()), refT);
                EXPECT_EQ(f.staged_bits(d), ref_amax);
                EXPECT_EQ(fp8_float_bits(dev::from_device(d_sinv, 1)[0]),
                          fp8_float_bits(fp8_compute_scale_inv(scale)));
                EXPECT_TRUE(check_saturation(dy, ref, scale, d) > 0);
                testing::expect_close("dbias", dev::from_device_bf16(d_db, OC), ref_db,
                                      dbias_atol(abs_sum, N), testing::kBf16Eps);
            }
}

// gelu'(x): ref_gelu_grad (test/reference/gelu.h), in forms without cancellation so the left tail (gelu' ->
// 0, which E5M2 still resolves) keeps full relative accuracy: Phi(x) = 0.5 erfc(-x/sqrt2) rather than 0.5 (1
// + erf(...)); for the tanh form s (1 - s) from e = exp(-2|u|) rather than from t = tanh u, whose 1 + t and
// 1 - t^2 are multiples of 2^-53 even in float64 (no correct digit left at x < -7, exactly 0 below -7.2).
//
// dGELU. The kernel evaluates gelu' in fp32 with llmc/kernels/gelu/gelu_math.cuh (erf form: one ex2.approx,
// one rcp.approx + Newton step and a degree-7 polynomial for erfc(x/sqrt2) exp(x^2/2); tanh form: __expf =
// ex2.approx of a rounded argument, approximate division), in cancellation-free forms like the reference.
// Emulating those instruction sequences (with ftz) on the CPU over every bf16 input, with ex2/rcp errors 4x
// their 2 ulp / 1 ulp bounds, gives: absolute error <= 1.2e-6 everywhere (erf form <= 6.8e-7; eps_g = 1e-5
// below: 8x margin); relative error <= 1.1e-5 (erf form <= 4.3e-6), except within 0.05 of gelu's root at
// -0.7518 (<= 1.2e-4, erf form <= 6.0e-5: bf16 inputs keep |gelu'| >= 6.2e-4 there) and in the far tail
// |gelu'| < 1e-36 (x < -10 tanh, x < -13.2 erf) where flush to zero returns -0 (the true sign) for both
// forms. Hence, for the quantized g * scale:
// - no byte is more than one code away: its relative error (<= 1.3e-4 with the fp32 roundings of g and of
//   g * scale) is far below the relative code spacing (>= 2^-4 for E4M3 normals, 2^-3 for E5M2, more for
//   subnormals), a saturated value stays saturated, and in the flushed tail |g * scale| < 1e-36 * |dout| *
//   2.3e4 rounds to a zero code either way.
// - a byte differs only where a rounding midpoint lies within that relative error of g * scale; midpoints
//   are >= 1/16 of the value apart, so the chance is <= 2 * 16 * 1.1e-5 = 3.5e-4 per element (+ 8e-5 from
//   the ~2% of samples next to the root): at most 0.1% of the bytes, + 4 for the small cases' counting
//   noise (the emulation differs in < 0.003%). The former kernel's tanh form 1 - 2/(exp(2u) + 1) returned
//   gelu' = +0 for x < -4.9 and lost digits from x < -3: 0.75% of the E4M3 and 1% of the E5M2 bytes
//   differed, 0.6% by many codes; its erf form's 0.5 (1 + erff) lost Phi for x < -5 (one-code misses).
// The pre-activations start with a sweep of [-12, 12], so the left tail, where E5M2 still resolves |g| down
// to 2^-17 / scale ~ 3e-10, is exercised in every case (checked: some bytes there are non-zero).
// dbias: the dbias tolerance above plus the g error, which has random sign (dout is random):
// 4 eps_g sqrt(sum dout^2). amax: eps_g * max|dout| plus fp32 rounding.
TEST(cast_transpose_dbias_dgelu) {
    Fixture f;
    const int shapes[][2] = {{48, 80}, {144, 272}, {1024, 6400}};
    for (auto& s : shapes)
        for (int tanh_form = 0; tanh_form < 2; tanh_form++)
            for (Fp8Dtype d : {Fp8Dtype::E5M2, Fp8Dtype::E4M3}) {
                const int N = s[0], C4 = s[1];
                const double eps_g = 1e-5;
                printf(" N=%d C4=%d %s %s\n", N, C4, name(d), tanh_form ? "tanh" : "erf");
                std::vector<float> dout = dev::random_normal((size_t)N * C4);
                std::vector<float> pre = dev::random_normal((size_t)N * C4, 0.0f, 2.0f);
                const size_t sweep = std::min<size_t>(pre.size() / 4, 8192);
                for (size_t i = 0; i < sweep; i++) pre[i] = -12.0f + 24.0f * (float)i / (float)sweep;
                ref_round_to_bf16(dout);
                ref_round_to_bf16(pre);
                std::vector<float> g((size_t)N * C4);
                std::vector<double> sum(C4, 0.0), abs_sum(C4, 0.0), sq_dout(C4, 0.0);
                double max_dout = 0;
                for (int n = 0; n < N; n++)
                    for (int c = 0; c < C4; c++) {
                        const size_t i = (size_t)n * C4 + c;
                        const double gd = dout[i] * ref_gelu_grad(pre[i], tanh_form);
                        g[i] = (float)gd;
                        sum[c] += gd;
                        abs_sum[c] += std::fabs(gd);
                        sq_dout[c] += (double)dout[i] * dout[i];
                        max_dout = std::max(max_dout, (double)std::fabs(dout[i]));
                    }
                const float ref_amax = fp8_bits_float(ref_amax_bits(g));
                const float scale = 2.0f * fp8_compute_scale(ref_amax, fp8_dtype_max(d), 0, 1.0f);
                f.set_scale(d, scale);
                f.reset_staging();
                Allocs A;
                bf16* d_dout = A(dev::to_device_bf16(dout));
                bf16* d_pre = A(dev::to_device_bf16(pre));
                bf16* d_db = A(dev::device_alloc<bf16>(C4));
                fp8b* d_out = A(dev::device_alloc<fp8b>((size_t)N * C4));
                fp8b* d_outT = A(dev::device_alloc<fp8b>((size_t)N * C4));
                float* d_sinv = A(dev::device_alloc<float>(1));
                void* d_scratch = A(dev::device_alloc<char>(fp8_dbias_scratch_bytes(N, C4)));
                fp8_cast_transpose_dbias_dgelu(d_dout, d_pre, f.out(d_out, d_outT, d_sinv, d, N, C4), d_db,
                                               d_scratch, tanh_form, false, 0);
                std::vector<uint8_t> got = dev::from_device(d_out, g.size());
                std::vector<uint8_t> gotT = dev::from_device(d_outT, g.size());
                size_t differ = 0, far = 0, differT = 0, tail = 0;
                std::vector<uint8_t> ref(g.size());
                for (int n = 0; n < N; n++)
                    for (int c = 0; c < C4; c++) {
                        const size_t i = (size_t)n * C4 + c;
                        ref[i] = ref_fp8_quantize(g[i], scale, d);
                        differ += got[i] != ref[i];
                        far += std::abs(ordinal(got[i]) - ordinal(ref[i])) > 1;
                        tail += pre[i] < -4.9f && ordinal(ref[i]) != 0;  // the old tanh form gave 0 there
                        differT +=
                            gotT[(size_t)c * N + n] != got[i];  // transposed copy == row-wise copy exactly
                    }
                printf("  bytes differing from the reference: %zu / %zu (more than one code: %zu)\n", differ,
                       g.size(), far);
                printf("  non-zero reference codes at pre < -4.9: %zu\n", tail);
                EXPECT_EQ(far, (size_t)0);
                EXPECT_EQ(differT, (size_t)0);
                EXPECT_TRUE(differ <= g.size() / 1000 + 4);
                if (d == Fp8Dtype::E5M2) EXPECT_TRUE(tail > 0);       // the left tail is exercised
                EXPECT_TRUE(check_saturation(g, got, scale, d) > 0);  // on the kernel's bytes
                const float amax = fp8_bits_float(f.staged_bits(d));
                EXPECT_NEAR(amax, ref_amax, eps_g * max_dout + 1e-6 * ref_amax);
                EXPECT_EQ(fp8_float_bits(dev::from_device(d_sinv, 1)[0]),
                          fp8_float_bits(fp8_compute_scale_inv(scale)));
                std::vector<float> ref_db(C4);
                double sq = 0;
                for (int c = 0; c < C4; c++) {
                    ref_db[c] = (float)sum[c];
                    sq = std::max(sq, sq_dout[c]);
                }
                testing::expect_close("dbias", dev::from_device_bf16(d_db, C4), ref_db,
                                      dbias_atol(abs_sum, N) + 4 * eps_g * std::sqrt(sq), testing::kBf16Eps);
                // Calibration pass over the same g: same amax within the same error.
                f.reset_staging();
                fp8_amax_dgelu(d_dout, d_pre, fp8_test::amax_tensor(f.st, f.slot(d), 1, (int)g.size()),
                               tanh_form, 0);
                EXPECT_NEAR(fp8_bits_float(f.staged_bits(d)), ref_amax, eps_g * max_dout + 1e-6 * ref_amax);
            }
}

// The dGELU cast with the GELU output as a second, transposed output (the fc-projection's FP8 input rebuilt
// in the backward): its dY outputs (rows, transposed, dbias, amax) must be bitwise those of the cast without
// it, and the GELU output bitwise fp8_gelu_cast_transpose's (the forward producer) with the same scale, its
// staged amax too. Exact equality is the contract (the backward's wgrad must read the bytes the forward would
// have kept), so no tolerance. Shapes: partial tiles, and an fc-sized tile grid; both GELU forms; both
// formats for each output; the scales chosen so some values of both outputs saturate.
TEST(cast_transpose_dbias_dgelu_gelu_out) {
    // Slots 0, 1: dY as E4M3 / E5M2; slots 2, 3: the GELU output as E4M3 / E5M2.
    Fp8ScaleState st =
        fp8_scale_state_create({Fp8Dtype::E4M3, Fp8Dtype::E5M2, Fp8Dtype::E4M3, Fp8Dtype::E5M2}, 16);
    const int shapes[][2] = {{48, 80}, {400, 208}, {1024, 6400}};
    for (auto& s : shapes)
        for (int tanh_form = 0; tanh_form < 2; tanh_form++)
            for (int dy_slot : {1, 0})
                for (int x_slot : {2, 3}) {
                    const int N = s[0], F = s[1];
                    const size_t n = (size_t)N * F;
                    printf(" N=%d F=%d %s dY %s, GELU output %s\n", N, F, tanh_form ? "tanh" : "erf",
                           dy_slot == 0 ? "e4m3" : "e5m2", x_slot == 2 ? "e4m3" : "e5m2");
                    std::vector<float> dout = dev::random_normal(n), pre = dev::random_normal(n, 0.0f, 3.0f);
                    ref_round_to_bf16(dout);
                    ref_round_to_bf16(pre);
                    upload_scale(&st, dy_slot, 64.0f);  // |g| > 7 saturates E4M3 (448 / 64)
                    upload_scale(&st, x_slot, x_slot == 2 ? 100.0f : 10000.0f);  // gelu > 4.5 / 5.7 saturates
                    Allocs A;
                    bf16 *d_dout = A(dev::to_device_bf16(dout)), *d_pre = A(dev::to_device_bf16(pre));
                    fp8b *d_out[2], *d_outT[2], *d_xT[2];
                    bf16* d_db[2];
                    float* d_sinv[2];
                    for (int k = 0; k < 2; k++) {
                        d_out[k] = A(dev::device_alloc<fp8b>(n));
                        d_outT[k] = A(dev::device_alloc<fp8b>(n));
                        d_xT[k] = A(dev::device_alloc<fp8b>(n));
                        d_db[k] = A(dev::device_alloc<bf16>(F));
                        d_sinv[k] = A(dev::device_alloc<float>(1));
                    }
                    void* d_scratch = A(dev::device_alloc<char>(fp8_dbias_scratch_bytes(N, F)));
                    const auto staged = [&](int slot) {
                        return fp8_float_bits(dev::from_device(fp8_staging_amax(&st) + slot, 1)[0]);
                    };
                    const auto reset = [&] {
                        CHECK_CUDA(cudaMemset(fp8_staging_amax(&st), 0, st.num_slots * sizeof(float)));
                    };
                    const auto dy = [&](int k) {
                        return tensor(st, d_out[k], d_outT[k], d_sinv[k], dy_slot, N, F, st.dtypes[dy_slot]);
                    };
                    const auto x = [&](int k) {
                        return tensor(st, nullptr, d_xT[k], nullptr, x_slot, N, F, st.dtypes[x_slot]);
                    };
                    // k = 0: the two casts as the step runs them without the rebuilt input
                    reset();
                    fp8_cast_transpose_dbias_dgelu(d_dout, d_pre, dy(0), d_db[0], d_scratch, tanh_form, false,
                                                   0);
                    fp8_gelu_cast_transpose(d_pre, x(0), tanh_form, 0);
                    const uint32_t amax_dy = staged(dy_slot), amax_x = staged(x_slot);
                    // k = 1: one cast with both outputs
                    reset();
                    const Fp8Tensor x1 = x(1);
                    fp8_cast_transpose_dbias_dgelu(d_dout, d_pre, dy(1), d_db[1], d_scratch, tanh_form, false,
                                                   0, &x1);
                    EXPECT_TRUE(
                        testing::same_bits(dev::from_device(d_out[1], n), dev::from_device(d_out[0], n)));
                    EXPECT_TRUE(
                        testing::same_bits(dev::from_device(d_outT[1], n), dev::from_device(d_outT[0], n)));
                    EXPECT_TRUE(
                        testing::same_bits(dev::from_device(d_db[1], F), dev::from_device(d_db[0], F)));
                    EXPECT_TRUE(
                        testing::same_bits(dev::from_device(d_sinv[1], 1), dev::from_device(d_sinv[0], 1)));
                    const std::vector<uint8_t> xT = dev::from_device(d_xT[1], n);
                    EXPECT_TRUE(testing::same_bits(xT, dev::from_device(d_xT[0], n)));
                    EXPECT_EQ(staged(dy_slot), amax_dy);
                    EXPECT_EQ(staged(x_slot), amax_x);
                    // The comparison can fail: the GELU output saturates somewhere and is not all zeros.
                    const uint8_t top = max_code(x_slot == 2 ? Fp8Dtype::E4M3 : Fp8Dtype::E5M2);
                    size_t saturated = 0, nonzero = 0;
                    for (uint8_t b : xT) saturated += b == top, nonzero += b != 0;
                    EXPECT_TRUE(saturated > 0 && nonzero > n / 4);
                }
    fp8_scale_state_destroy(&st);
}

// ---- the update kernel ----

namespace {

// Staging amaxes for one step: mostly normal magnitudes over a wide range, plus unused slots (0), inf, NaN,
// denormals (scale overflows to FLT_MAX) and huge values.
std::vector<float> random_staging(int S) {
    std::vector<float> v(S);
    std::vector<int> kind = dev::random_ints(S, 0, 100);
    std::vector<float> mag = dev::random_uniform(S, -30.0f, 30.0f);
    for (int s = 0; s < S; s++) {
        const int k = kind[s];
        v[s] = k < 20   ? 0.0f
               : k < 23 ? INFINITY
               : k < 26 ? NAN
               : k < 29 ? 1e-40f
               : k < 31 ? 3e38f
                        : std::exp2(mag[s]);
    }
    return v;
}

std::vector<float> download_all(const Fp8ScaleState& st) {
    return dev::from_device(st.storage, st.storage_floats);
}

// Bitwise equal to the host model, else one failure naming the step and the first differing element.
bool same_as_model(const float* a, const float* b, size_t n, const char* what, int step) {
    if (memcmp(a, b, n * sizeof(float)) == 0) return true;
    for (size_t i = 0; i < n; i++)
        if (fp8_float_bits(a[i]) != fp8_float_bits(b[i])) {
            char buf[200];
            snprintf(buf, sizeof buf, "step %d: %s[%zu] = %g, reference %g", step, what, i, a[i], b[i]);
            testing::fail(__FILE__, __LINE__, buf);
            break;
        }
    return false;
}

void update_vs_model(int S, int H, AmaxAlgo algo, int margin, int steps, bool compare_every_step) {
    printf(" slots=%d history=%d %s margin=%d steps=%d\n", S, H,
           algo == AmaxAlgo::Max ? "max" : "most_recent", margin, steps);
    std::vector<Fp8Dtype> dtypes(S);
    for (int s = 0; s < S; s++) dtypes[s] = s % 3 == 2 ? Fp8Dtype::E5M2 : Fp8Dtype::E4M3;
    Fp8ScaleState st = fp8_scale_state_create(dtypes, H);
    std::vector<float> hist((size_t)H * S, 0.0f), scale(S, 1.0f), scale_inv(S, 1.0f), fmax(S);
    for (int s = 0; s < S; s++) fmax[s] = fp8_dtype_max(dtypes[s]);
    bool saw_flt_max = false, saw_normal = false;  // the model must have exercised these outcomes
    for (int step = 0; step < steps && !testing::state().failed; step++) {
        std::vector<float> staged = random_staging(S);
        // A denormal amax in an empty window (scale overflows to FLT_MAX) in every run: with Max and a long
        // window, random draws alone miss that outcome in ~10% of the runs.
        if (step == 0) staged[0] = 1e-40f;
        std::copy(staged.begin(), staged.end(), hist.begin());
        CHECK_CUDA(
            cudaMemcpy(fp8_staging_amax(&st), staged.data(), S * sizeof(float), cudaMemcpyHostToDevice));
        fp8_update_scales(&st, algo, margin, 0);
        fp8_update_reference(hist, scale, scale_inv, fmax, S, H, algo, margin);
        for (float v : scale) {
            saw_flt_max |= v == FLT_MAX;
            saw_normal |= v != FLT_MAX && v != 1.0f;
        }
        if (compare_every_step || step == steps - 1) {
            std::vector<float> all = download_all(st);
            same_as_model(all.data(), hist.data(), hist.size(), "history", step);
            same_as_model(all.data() + hist.size(), scale.data(), S, "scale", step);
            same_as_model(all.data() + hist.size() + S, scale_inv.data(), S, "scale_inv", step);
            same_as_model(all.data() + hist.size() + 2 * S, fmax.data(), S, "fp8_max", step);
        }
    }
    EXPECT_TRUE(saw_normal);
    if (steps > 4 && S > 32) EXPECT_TRUE(saw_flt_max);
    fp8_scale_state_destroy(&st);
}

}  // namespace

// History wrap-around (more steps than rows, rows not a multiple of the kernel's 64-row tile), both
// algorithms, margins 0 and 2, slots not a multiple of the 32-slot block, the whole buffer compared bit for
// bit every step.
TEST(update_scales_vs_model) {
    for (AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent})
        for (int margin : {0, 2}) {
            update_vs_model(77, 1, algo, margin, 5, true);
            update_vs_model(77, 5, algo, margin, 13, true);
            update_vs_model(77, 67, algo, margin, 140, true);
        }
    update_vs_model(48 * 4 * 3, 1024, AmaxAlgo::Max, 0, 40, false);  // GPT-1.5B: 48 layers x 4 Linears x 3
}

TEST(update_scales_hand_cases) {
    const float inf = INFINITY;
    // slots: 0 e4m3 amax 2; 1 unused (staging 0) with a past history; 2 e5m2 amax 2; 3 denormal amax;
    // 4 inf; 5 NaN.
    std::vector<Fp8Dtype> dt = {Fp8Dtype::E4M3, Fp8Dtype::E4M3, Fp8Dtype::E5M2,
                                Fp8Dtype::E4M3, Fp8Dtype::E4M3, Fp8Dtype::E4M3};
    const int S = 6, H = 4;
    Fp8ScaleState st = fp8_scale_state_create(dt, H);
    upload_scales(&st, {1.0f, 3.0f, 1.0f, 1.0f, 5.0f, 7.0f});
    std::vector<float> hist((size_t)H * S, 0.0f);
    const float staged[S] = {2.0f, 0.0f, 2.0f, 1e-40f, inf, NAN};
    for (int s = 0; s < S; s++) hist[s] = staged[s];
    hist[1 * S + 1] = 0.5f;  // slot 1's past
    hist[2 * S + 1] = 0.25f;
    hist[3 * S + 1] = 0.125f;
    CHECK_CUDA(cudaMemcpy(st.amax_history, hist.data(), hist.size() * sizeof(float), cudaMemcpyHostToDevice));
    fp8_update_scales(&st, AmaxAlgo::Max, 0, 0);
    std::vector<float> h = dev::from_device(st.amax_history, hist.size());
    std::vector<float> sc = dev::from_device(st.scale, S), si = dev::from_device(st.scale_inv, S);
    EXPECT_EQ(sc[0], 224.0f);  // 448 / 2
    EXPECT_EQ(si[0], 1.0f / 224.0f);
    EXPECT_EQ(sc[1], 3.0f);  // unused: scale and history untouched
    EXPECT_EQ(h[0 * S + 1], 0.0f);
    EXPECT_EQ(h[1 * S + 1], 0.5f);
    EXPECT_EQ(h[2 * S + 1], 0.25f);
    EXPECT_EQ(h[3 * S + 1], 0.125f);
    EXPECT_EQ(sc[2], 28672.0f);                           // 57344 / 2
    EXPECT_EQ(sc[3], FLT_MAX);                            // 448 / 1e-40 overflows
    EXPECT_EQ(sc[4], 5.0f);                               // inf: keep
    EXPECT_EQ(sc[5], 7.0f);                               // NaN: keep
    for (int s : {0, 2, 3, 4, 5}) EXPECT_EQ(h[s], 0.0f);  // staging cleared
    EXPECT_EQ(h[3 * S + 0], 2.0f);                        // newest row = this step's amax
    EXPECT_EQ(h[3 * S + 2], 2.0f);
    EXPECT_TRUE(std::isinf(h[3 * S + 4]));
    // Next step, margin 1: slot 0 amax 2 again -> 448 / 2 / 2 = 112; slot 4 still has inf in its window.
    const float staged2[S] = {2.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    CHECK_CUDA(cudaMemcpy(st.amax_history, staged2, sizeof staged2, cudaMemcpyHostToDevice));
    fp8_update_scales(&st, AmaxAlgo::Max, 1, 0);
    sc = dev::from_device(st.scale, S);
    EXPECT_EQ(sc[0], 112.0f);
    EXPECT_EQ(sc[2], 14336.0f);  // window max 2: 57344 / 2 / 2
    EXPECT_EQ(sc[4], 5.0f);      // inf still in the window
    EXPECT_EQ(sc[5], 7.0f);      // NaN still in the window
    fp8_scale_state_destroy(&st);

    // Window length: with H = 4 an amax of 8 governs 4 steps (Max), then drops out; MostRecent follows at
    // once.
    for (AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent}) {
        Fp8ScaleState s1 = fp8_scale_state_create({Fp8Dtype::E4M3}, 4);
        const float seq[6] = {8, 1, 1, 1, 1, 1};
        const float want_max[6] = {56, 56, 56, 56, 448, 448}, want_recent[6] = {56, 448, 448, 448, 448, 448};
        for (int i = 0; i < 6; i++) {
            CHECK_CUDA(cudaMemcpy(s1.amax_history, &seq[i], sizeof(float), cudaMemcpyHostToDevice));
            fp8_update_scales(&s1, algo, 0, 0);
            EXPECT_EQ(dev::from_device(s1.scale, 1)[0], algo == AmaxAlgo::Max ? want_max[i] : want_recent[i]);
        }
        fp8_scale_state_destroy(&s1);
    }
}

TEST(calibrate_scales) {
    Fp8ScaleState st = fp8_scale_state_create({Fp8Dtype::E4M3, Fp8Dtype::E5M2, Fp8Dtype::E4M3}, 8);
    const float staged[3] = {2.0f, 4.0f, 0.0f};
    CHECK_CUDA(cudaMemcpy(fp8_staging_amax(&st), staged, sizeof staged, cudaMemcpyHostToDevice));
    fp8_calibrate_scales(&st, 1, 2, 0, 0);  // slots 1 and 2 only
    std::vector<float> sc = dev::from_device(st.scale, 3), si = dev::from_device(st.scale_inv, 3);
    std::vector<float> staging = dev::from_device(fp8_staging_amax(&st), 3);
    EXPECT_EQ(sc[0], 1.0f);      // outside the range
    EXPECT_EQ(sc[1], 14336.0f);  // 57344 / 4
    EXPECT_EQ(si[1], 1.0f / 14336.0f);
    EXPECT_EQ(sc[2], 1.0f);       // amax 0: keep
    EXPECT_EQ(staging[1], 4.0f);  // staging kept for the regular update
    fp8_scale_state_destroy(&st);
}

// ---- benchmarks at GPT-1.5B sizes (N = B*T = 12288, C = 1600, 4C = 6400) ----

namespace {

constexpr int kN = 12288, kC = 1600, kC4 = 6400;

// Inputs and outputs shared by the benchmarks, built on first use (kept until exit). Slot 0 is E4M3 (scale
// 64), slot 1 E5M2 (scale 4096).
struct BenchBuffers {
    Fixture f;
    bf16 *a, *b;  // [N, 4C] N(0, 1) values (b: the GELU input of the dGELU cast)
    float* w32;   // [4C, C] fp32 master weight
    fp8b *out, *outT;
    float* sinv;
    bf16* db;
    void* scratch;
    BenchBuffers() {
        f.set_scale(Fp8Dtype::E4M3, 64.0f);
        f.set_scale(Fp8Dtype::E5M2, 4096.0f);
        std::vector<float> x = dev::random_normal((size_t)kN * kC4);
        a = dev::to_device_bf16(x);
        b = dev::to_device_bf16(x);
        w32 = dev::to_device(std::vector<float>(x.begin(), x.begin() + (size_t)kC * kC4));
        out = dev::device_alloc<fp8b>((size_t)kN * kC4);
        outT = dev::device_alloc<fp8b>((size_t)kN * kC4);
        sinv = dev::device_alloc<float>(1);
        db = dev::device_alloc<bf16>(kC4);
        scratch = dev::device_alloc<char>(fp8_dbias_scratch_bytes(kN, kC4));
    }
};
BenchBuffers& bench_buffers() {
    static BenchBuffers* b = new BenchBuffers();  // never freed: the process ends after the benchmarks
    return *b;
}

}  // namespace

// Bytes: bf16 input read (2/elem), one FP8 byte per output copy.
BENCH(cast_transpose) {
    BenchBuffers& b = bench_buffers();
    const double nc = (double)kN * kC, nc4 = (double)kN * kC4;
    const Fp8Dtype e4 = Fp8Dtype::E4M3;
    float ms = dev::time_ms([&] { fp8_cast_transpose(b.a, b.f.out(b.out, b.outT, b.sinv, e4, kN, kC), 0); });
    bench::report_bandwidth("fp8_cast_transpose", "12288x1600,e4m3", ms, nc * 2 + 2 * nc);
    ms = dev::time_ms([&] { fp8_cast_transpose(b.a, b.f.out(nullptr, b.outT, b.sinv, e4, kN, kC), 0); });
    // the attention projection's X^T, rebuilt in backward (--recompute 2)
    bench::report_budget("fp8_cast_transpose", "12288x1600,e4m3,T-only", ms, nc * 2 + nc, 48);
    // its row-wise copy in forward
    ms = dev::time_ms([&] { fp8_cast(b.a, b.f.out(b.out, nullptr, b.sinv, e4, kN, kC), 0); });
    bench::report_budget("fp8_cast", "12288x1600,e4m3,rows-only", ms, nc * 2 + nc, 48);
    ms = dev::time_ms([&] { fp8_cast_transpose(b.a, b.f.out(b.out, b.outT, b.sinv, e4, kN, kC4), 0); });
    bench::report_bandwidth("fp8_cast_transpose", "12288x6400,e4m3", ms, nc4 * 2 + 2 * nc4);
}

// dY of the attention and MLP projections ([N, C], twice a layer) and of qkv ([N, 3C]).
BENCH(cast_transpose_dbias) {
    BenchBuffers& b = bench_buffers();
    for (const int OC : {kC, 3 * kC}) {
        const double n_oc = (double)kN * OC;
        const float ms = dev::time_ms([&] {
            fp8_cast_transpose_dbias(b.a, b.f.out(b.out, b.outT, b.sinv, Fp8Dtype::E5M2, kN, OC), b.db,
                                     b.scratch, false, 0);
        });
        bench::report_budget("fp8_cast_transpose_dbias", bench::fmt("12288x%d,e5m2", OC), ms,
                             n_oc * 2 + 2 * n_oc, OC == kC ? 96 : 48);
    }
}

// Bytes: dout and pre read (2 + 2), two FP8 copies written.
BENCH(cast_transpose_dbias_dgelu) {
    BenchBuffers& b = bench_buffers();
    const double nc4 = (double)kN * kC4;
    for (int tanh_form = 0; tanh_form < 2; tanh_form++) {
        const float ms = dev::time_ms([&] {
            fp8_cast_transpose_dbias_dgelu(b.a, b.b, b.f.out(b.out, b.outT, b.sinv, Fp8Dtype::E5M2, kN, kC4),
                                           b.db, b.scratch, tanh_form, false, 0);
        });
        bench::report_bandwidth("fp8_cast_transpose_dbias_dgelu",
                                tanh_form ? "12288x6400,e5m2,tanh" : "12288x6400,e5m2,erf", ms,
                                nc4 * 4 + 2 * nc4);
    }
    // --recompute 1: also the GELU output's E4M3 X^T (slot 0), a third FP8 copy.
    fp8b* gelu_out_T = dev::device_alloc<fp8b>((size_t)kN * kC4);
    const Fp8Tensor gelu_out = b.f.out(nullptr, gelu_out_T, nullptr, Fp8Dtype::E4M3, kN, kC4);
    const float ms = dev::time_ms([&] {
        fp8_cast_transpose_dbias_dgelu(b.a, b.b, b.f.out(b.out, b.outT, b.sinv, Fp8Dtype::E5M2, kN, kC4),
                                       b.db, b.scratch, false, false, 0, &gelu_out);
    });
    bench::report_budget("fp8_cast_transpose_dbias_dgelu", "12288x6400,e5m2,erf,gelu-out-T", ms,
                         nc4 * 4 + 3 * nc4, 48);
    CHECK_CUDA(cudaFree(gelu_out_T));
}

// FP32 master weight [4C, C]: 4 bytes read, two FP8 copies written per element.
BENCH(weight_cast_transpose_fp32) {
    BenchBuffers& b = bench_buffers();
    const float ms = dev::time_ms(
        [&] { fp8_cast_transpose(b.w32, b.f.out(b.out, b.outT, b.sinv, Fp8Dtype::E4M3, kC4, kC), 0); });
    bench::report_bandwidth("fp8_cast_transpose", "6400x1600,fp32,e4m3", ms, (double)kC4 * kC * (4 + 2));
}

// The FP8 LM head's W and W^T, cast from the tied embedding's BF16 weight [V, C] after each update.
BENCH(lm_head_weight_cast_transpose) {
    BenchBuffers& b = bench_buffers();
    const int V = 50304;
    const double vc = (double)V * kC;
    bf16* w = dev::device_alloc<bf16>((size_t)vc);
    CHECK_CUDA(cudaMemset(w, 0x3C, (size_t)vc * sizeof(bf16)));  // 0x3C3C = 0.0115: timing only
    fp8b *q = dev::device_alloc<fp8b>((size_t)vc), *qT = dev::device_alloc<fp8b>((size_t)vc);
    const float ms =
        dev::time_ms([&] { fp8_cast_transpose(w, b.f.out(q, qT, b.sinv, Fp8Dtype::E4M3, V, kC), 0); });
    bench::report_budget("fp8_cast_transpose", "50304x1600,e4m3", ms, vc * 2 + 2 * vc, 1);
    for (void* p : {(void*)w, (void*)q, (void*)qT}) CHECK_CUDA(cudaFree(p));
}

// Calibration passes: read only.
BENCH(amax) {
    BenchBuffers& b = bench_buffers();
    const double nc = (double)kN * kC, nc4 = (double)kN * kC4;
    float ms = dev::time_ms([&] { fp8_amax(b.a, fp8_test::amax_tensor(b.f.st, 0, 1, (int)nc), 0); });
    bench::report_bandwidth("fp8_amax", "12288x1600,bf16", ms, nc * 2);
    ms = dev::time_ms(
        [&] { fp8_amax_dgelu(b.a, b.b, fp8_test::amax_tensor(b.f.st, 1, 1, (int)nc4), false, 0); });
    bench::report_bandwidth("fp8_amax_dgelu", "12288x6400,erf", ms, nc4 * 4);
}

// GPT-1.5B's 48 layers x 4 Linears x 3 slots, history 1024, with the staging upload: the whole state read
// and written.
BENCH(update_scales) {
    Fp8ScaleState big = fp8_scale_state_create(fp8_linear_slot_dtypes(Fp8Format::Hybrid, 48 * 4), 1024);
    std::vector<float> ones(big.num_slots, 1.0f);
    const float ms = dev::time_ms([&] {
        CHECK_CUDA(
            cudaMemcpyAsync(fp8_staging_amax(&big), ones.data(), ones.size() * 4, cudaMemcpyHostToDevice, 0));
        fp8_update_scales(&big, AmaxAlgo::Max, 0, 0);
    });
    bench::report_budget("fp8_update_scales", bench::fmt("%dslots,history1024,+upload", big.num_slots), ms,
                         2.0 * big.storage_floats * 4, 1);
    fp8_scale_state_destroy(&big);
}

TEST_MAIN()
