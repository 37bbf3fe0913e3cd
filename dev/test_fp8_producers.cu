// Tests for the fused FP8 producers (llmc/kernels/layernorm/layernorm_fp8.cu, llmc/kernels/gelu/gelu_fp8.cu)
// (LayerNorm with optional residual add, GELU) must write exactly the bytes of the shipped BF16 kernel
// followed by the shipped fp8_cast_transpose (run on a second slot of the same scale state with the same
// scale), the same amax (= max |y| of the BF16 output, bit for bit), residual / mean / rstd bit-identical to
// the BF16 kernel, scale_inv written, and the transposed copy equal to the row-wise copy transposed; the
// row-wise-only GELU cast the same bytes as the CPU quantization of the BF16 GELU. CPU references: LayerNorm
// replicates the kernel's fp32 formula (bit-exact bytes); GELU is evaluated in float64 (erfc / exp cannot be
// replicated bit for bit), so a few one-code differences are allowed there (bound derived below).
// Calibration: amax-only passes, then fp8_calibrate_scales, then the fused kernel. Benchmarks (--bench) at
// GPT-1.5B sizes (N = B*T = 12288, C = 1600, 4C = 6400), with the unfused sequences for comparison.
#include <cstring>

#include "dev/byte_budget.h"
#include "dev/dev_utils.h"
#include "dev/fp8_test_utils.h"
#include "llmc/kernels/cast/cast.cuh"
#include "llmc/kernels/gelu/gelu.cuh"
#include "llmc/kernels/gelu/gelu_fp8.cuh"
#include "llmc/kernels/layernorm/layernorm.cuh"
#include "llmc/kernels/layernorm/layernorm_fp8.cuh"
#include "test/reference/gelu.h"
#include "test/reference/layernorm.h"

using namespace fp8_test;
using testing::expect_same_bits;
using testing::fp32_sum_rel;

namespace {

// Slots 0/1: the fused kernels (E4M3/E5M2); slots 2/3: the reference sequence (same formats and scales).
struct Fixture {
    Fp8ScaleState st;
    Fixture() {
        st = fp8_scale_state_create({Fp8Dtype::E4M3, Fp8Dtype::E5M2, Fp8Dtype::E4M3, Fp8Dtype::E5M2}, 4);
    }
    ~Fixture() { fp8_scale_state_destroy(&st); }
    int slot(Fp8Dtype d) const { return d == Fp8Dtype::E4M3 ? 0 : 1; }
    int ref_slot(Fp8Dtype d) const { return slot(d) + 2; }
    // An output [rows, cols] on slot `s`, in the slot's format.
    Fp8Tensor out(fp8b* data, fp8b* data_T, float* sinv, int s, int rows, int cols) const {
        return tensor(st, data, data_T, sinv, s, rows, cols, st.dtypes[s]);
    }
    void reset_staging() { CHECK_CUDA(cudaMemset(fp8_staging_amax(&st), 0, st.num_slots * sizeof(float))); }
    void set_scale(Fp8Dtype d, float s) {
        upload_scale(&st, slot(d), s);
        upload_scale(&st, ref_slot(d), s);
    }
    uint32_t staged_bits(int s) { return fp8_float_bits(dev::from_device(fp8_staging_amax(&st) + s, 1)[0]); }
    float scale_of(int s) { return dev::from_device(st.scale + s, 1)[0]; }
};

// Scale fitted to the amax (largest |y| maps to ~fp8_max), or 4x that so every |y| > amax / 4 saturates.
float pick_scale(uint32_t amax, Fp8Dtype d, bool saturate) {
    const float s = fp8_compute_scale(fp8_bits_float(amax), fp8_dtype_max(d), 0, 1.0f);
    return saturate ? 4.0f * s : s;
}

// The FP8 buffers of a LayerNorm / GELU case: the reference sequence's (shipped fp8_cast_transpose of the
// BF16 kernel's y, on the reference slot) and the fused kernel's outputs (q null without row-wise output).
struct Fp8Buffers {
    fp8b *q_ref, *qT_ref, *q, *qT;
    float* sinv;
};

// Sets `scale` on both slots of format d, clears the staging amaxes, runs the shipped cast_transpose of d_y
// on the reference slot and allocates the fused kernel's outputs.
Fp8Buffers reference_cast(Fixture& f, Allocs& A, Fp8Dtype d, float scale, const bf16* d_y, int N, int C,
                          bool rowwise) {
    const size_t NC = (size_t)N * C;
    f.set_scale(d, scale);
    f.reset_staging();
    Fp8Buffers b;
    b.q_ref = A(dev::device_alloc<fp8b>(NC));
    b.qT_ref = A(dev::device_alloc<fp8b>(NC));
    fp8_cast_transpose(d_y, f.out(b.q_ref, b.qT_ref, nullptr, f.ref_slot(d), N, C), 0);
    b.q = rowwise ? A(dev::device_alloc<fp8b>(NC)) : nullptr;
    b.qT = A(dev::device_alloc<fp8b>(NC));
    b.sinv = A(dev::device_alloc<float>(1));
    return b;
}

// The fused kernel's bytes (q empty without row-wise output).
struct FusedBytes {
    std::vector<uint8_t> q, qT;
};

// After the fused kernel: its bytes against the shipped sequence `seq` bit for bit (transposed, row-wise, and
// the transposed copy against the row-wise one), both slots' staged amax = max |y| exactly, and scale_inv.
FusedBytes check_vs_shipped(const char* seq, Fixture& f, const Fp8Buffers& b, Fp8Dtype d, float scale,
                            uint32_t ref_amax, int N, int C) {
    const size_t NC = (size_t)N * C;
    FusedBytes got;
    got.qT = dev::from_device(b.qT, NC);
    expect_same_bits((std::string("transposed vs ") + seq).c_str(), got.qT, dev::from_device(b.qT_ref, NC));
    if (b.q != nullptr) {
        got.q = dev::from_device(b.q, NC);
        expect_same_bits((std::string("row-wise vs ") + seq).c_str(), got.q, dev::from_device(b.q_ref, NC));
        expect_same_bits("transposed == row-wise transposed", transpose_bytes(got.qT, N, C), got.q);
    }
    EXPECT_EQ(f.staged_bits(f.slot(d)), ref_amax);  // max |y| exactly
    EXPECT_EQ(f.staged_bits(f.ref_slot(d)), ref_amax);
    EXPECT_EQ(fp8_float_bits(dev::from_device(b.sinv, 1)[0]), fp8_float_bits(fp8_compute_scale_inv(scale)));
    return got;
}

// The fused bytes against the CPU quantization of y (`ref` names it), exactly; with `saturate` the case must
// exercise saturation.
void check_vs_cpu_quantize(const char* ref, const FusedBytes& got, bool rowwise, const std::vector<float>& y,
                           int N, int C, float scale, Fp8Dtype d, bool saturate) {
    std::vector<uint8_t> q_cpu, qT_cpu;
    ref_fp8_quantize_transpose(y, N, C, scale, d, q_cpu, qT_cpu);
    expect_same_bits((std::string("transposed vs ") + ref).c_str(), got.qT, qT_cpu);
    if (rowwise) expect_same_bits((std::string("row-wise vs ") + ref).c_str(), got.q, q_cpu);
    const size_t sat = check_saturation(y, q_cpu, scale, d);
    if (saturate) EXPECT_TRUE(sat > 0);  // the case must exercise saturation
}

// ---------------------------------------------------------------------------------------------------------
// LayerNorm
// ---------------------------------------------------------------------------------------------------------

struct LnCase {
    int N, C;
    Fp8Dtype d;
    bool residual, rowwise, saturate;
    int tile_rows = 0;      // 0: the launcher's choice
    int warps_per_row = 0;  // 1, 2 (the pair kernel where C <= 2048) or 0: the launcher's choice
};

void ln_case(const LnCase& k) {
    const int N = k.N, C = k.C;
    const size_t NC = (size_t)N * C;
    printf(" layernorm N=%d C=%d %s%s%s%s tile rows %d warps per row %d\n", N, C, name(k.d),
           k.residual ? " residual" : "", k.rowwise ? "" : " (no row-wise)", k.saturate ? " saturating" : "",
           k.tile_rows, k.warps_per_row);
    Fixture f;
    Allocs A;
    // Rows with mean 1.5 and std 2 (two-pass variance matters), LN weight ~1 and bias ~0 but random.
    std::vector<float> x1 = dev::random_normal(NC, 1.5f, 2.0f), x2, w = dev::random_normal(C, 1.0f, 0.2f),
                       b = dev::random_normal(C, 0.0f, 0.2f);
    ref_round_to_bf16(x1);
    ref_round_to_bf16(w);
    ref_round_to_bf16(b);
    std::vector<float> x = x1;  // the LayerNorm input
    if (k.residual) {
        x2 = dev::random_normal(NC);
        ref_round_to_bf16(x2);
        x = ref_residual_add(x1, x2);  // fp32 add, one bf16 rounding
    }
    bf16* d_x1 = A(dev::to_device_bf16(x1));
    bf16* d_x2 = k.residual ? A(dev::to_device_bf16(x2)) : nullptr;
    bf16* d_w = A(dev::to_device_bf16(w));
    bf16* d_b = A(dev::to_device_bf16(b));

    // Reference sequence: shipped BF16 LayerNorm, then shipped cast_transpose on the reference slot.
    bf16* d_res_ref = k.residual ? A(dev::device_alloc<bf16>(NC)) : nullptr;
    bf16* d_y_ref = A(dev::device_alloc<bf16>(NC));
    float* d_mean_ref = A(dev::device_alloc<float>(N));
    float* d_rstd_ref = A(dev::device_alloc<float>(N));
    if (k.residual)
        residual_layernorm_forward(d_res_ref, d_y_ref, d_mean_ref, d_rstd_ref, d_x1, d_x2, d_w, d_b, N, C, 0);
    else
        layernorm_forward(d_y_ref, d_mean_ref, d_rstd_ref, d_x1, d_w, d_b, N, C, 0);
    const std::vector<float> y = dev::from_device_bf16(d_y_ref, NC);
    const std::vector<float> mean_ref = dev::from_device(d_mean_ref, N),
                             rstd_ref = dev::from_device(d_rstd_ref, N);
    const uint32_t ref_amax = ref_amax_bits(y);
    const float scale = pick_scale(ref_amax, k.d, k.saturate);
    const Fp8Buffers fb = reference_cast(f, A, k.d, scale, d_y_ref, N, C, k.rowwise);

    // Fused kernel.
    bf16* d_res = k.residual ? A(dev::device_alloc<bf16>(NC)) : nullptr;
    float* d_mean = A(dev::device_alloc<float>(N));
    float* d_rstd = A(dev::device_alloc<float>(N));
    fp8_residual_layernorm_forward(d_res, f.out(fb.q, fb.qT, fb.sinv, f.slot(k.d), N, C), d_mean, d_rstd,
                                   d_x1, d_x2, d_w, d_b, 0, k.tile_rows, k.warps_per_row);
    CHECK_CUDA(cudaDeviceSynchronize());

    // 1. Against the shipped sequence: everything bit for bit.
    const FusedBytes got = check_vs_shipped("layernorm+cast_transpose", f, fb, k.d, scale, ref_amax, N, C);
    expect_same_bits("mean vs BF16 kernel", dev::from_device(d_mean, N), mean_ref);
    expect_same_bits("rstd vs BF16 kernel", dev::from_device(d_rstd, N), rstd_ref);
    if (k.residual) {
        const std::vector<uint16_t> res = dev::from_device_bf16_bits(d_res, NC);
        expect_same_bits("residual vs BF16 kernel", res, dev::from_device_bf16_bits(d_res_ref, NC));
        std::vector<uint16_t> res_cpu(NC);
        for (size_t i = 0; i < NC; i++) {
            const bf16 h = __float2bfloat16(x[i]);
            memcpy(&res_cpu[i], &h, 2);
        }
        expect_same_bits("residual vs CPU bf16(a + b)", res, res_cpu);
    }

    // 2. CPU reference. Statistics against float64 (the kernel's 1/C and rsqrtf are fast-math approximations
    // the host cannot reproduce bit for bit): mean within an fp32 sum's error over C, rstd also within
    // rsqrtf's ~2 ulp (2^-21). Then y with the kernel's statistics and its exact fp32 formula:
    // bf16(fma((x - mean) * rstd, w, b)) (nvcc contracts n * w + b into one FMA), which must reproduce the
    // BF16 kernel's y and the fused bytes bit for bit.
    double xmax = 0;
    for (float v : x) xmax = std::max(xmax, (double)std::fabs(v));
    const RefLayerNorm ref64 = ref_layernorm_forward(x, w, b, N, C);
    const std::vector<float>&mean64 = ref64.mean, &rstd64 = ref64.rstd;
    const std::vector<float> y_cpu = ref_layernorm_forward_fp32(x, w, b, mean_ref, rstd_ref, N, C);
    testing::expect_close("mean vs float64", mean_ref, mean64, fp32_sum_rel(C) * xmax, 0.0);
    testing::expect_close("rstd vs float64", rstd_ref, rstd64, 0.0, fp32_sum_rel(C) + std::ldexp(1.0, -21));
    expect_same_bits("y: CPU fp32 formula vs BF16 kernel", y_cpu, y);
    check_vs_cpu_quantize("CPU", got, k.rowwise, y_cpu, N, C, scale, k.d, k.saturate);

    // 3. Amax-only pass (calibration): the same amax, bit for bit.
    f.reset_staging();
    fp8_layernorm_amax(d_x1, d_x2, d_w, d_b, fp8_test::amax_tensor(f.st, f.slot(k.d), N, C), 0);
    EXPECT_EQ(f.staged_bits(f.slot(k.d)), ref_amax);
}

// ---------------------------------------------------------------------------------------------------------
// GELU
// ---------------------------------------------------------------------------------------------------------

// GELU inputs: N(0, 2) plus a sweep of [-12, 12] (the tails, where gelu -> 0 or x).
std::vector<float> gelu_inputs(size_t n) {
    std::vector<float> pre = dev::random_normal(n, 0.0f, 2.0f);
    const size_t sweep = std::min<size_t>(n / 4, 8192);
    for (size_t i = 0; i < sweep; i++) pre[i] = -12.0f + 24.0f * (float)i / (float)sweep;
    ref_round_to_bf16(pre);
    return pre;
}

struct GeluCase {
    int N, C;
    Fp8Dtype d;
    bool tanh_form, rowwise, saturate;
};

// Float64 CPU reference tolerance. The kernel's fp32 GELU (llmc/kernels/gelu/gelu_math.cuh; erf form:
// <= 4.3e-6 relative by an exhaustive CPU emulation over bf16 inputs, with ex2/rcp errors at 4x their bounds,
// for x >= -13 and |x| > 2^-125, below which results are flushed; tanh form: __expf of -2|u| carries the fp32
// rounding of u and of the exponent, <= ~2e-5 relative for |2u| < 150, where it does not underflow) has
// relative error delta <= 2e-5, far below bf16's 2^-8: the bf16 values agree to one bf16 ulp (rtol 2^-7, the
// ulp relative to the binade's low end), atol 1e-35 covers the fp32 flush-to-zero region. A byte then differs
// only when (a) the exact y lies within delta |y| of a bf16 rounding midpoint (probability <= 2 delta / 2^-8
// = 1e-2) AND (b) the two bf16 neighbours quantize to different FP8 codes (a code midpoint between them:
// probability ~ 2^-8 / 2^-4 = 1/16 for E4M3, 1/32 for E5M2), so <= 6.4e-4 of the elements, one code apart;
// allowed: 1e-3 of the elements + 4 (counting noise of the small cases).
void gelu_case(const GeluCase& k, bool cpu_float64) {
    const int N = k.N, C = k.C;
    const size_t NC = (size_t)N * C;
    printf(" gelu N=%d C=%d %s %s%s%s\n", N, C, name(k.d), k.tanh_form ? "tanh" : "erf",
           k.rowwise ? "" : " (no row-wise)", k.saturate ? " saturating" : "");
    Fixture f;
    Allocs A;
    const std::vector<float> pre = gelu_inputs(NC);
    bf16* d_pre = A(dev::to_device_bf16(pre));

    // Reference sequence: shipped gelu_forward, then shipped cast_transpose on the reference slot.
    bf16* d_y_ref = A(dev::device_alloc<bf16>(NC));
    gelu_forward(d_y_ref, d_pre, NC, k.tanh_form, 0);
    const std::vector<float> y = dev::from_device_bf16(d_y_ref, NC);
    const uint32_t ref_amax = ref_amax_bits(y);
    const float scale = pick_scale(ref_amax, k.d, k.saturate);
    const Fp8Buffers fb = reference_cast(f, A, k.d, scale, d_y_ref, N, C, k.rowwise);
    fp8_gelu_cast_transpose(d_pre, f.out(fb.q, fb.qT, fb.sinv, f.slot(k.d), N, C), k.tanh_form, 0);
    CHECK_CUDA(cudaDeviceSynchronize());

    // 1. Against the shipped sequence, bit for bit.
    const FusedBytes got = check_vs_shipped("gelu_forward+cast_transpose", f, fb, k.d, scale, ref_amax, N, C);

    // 2. CPU quantization of the BF16 kernel's y: exact (the quantization/transposition semantics on their
    // own).
    check_vs_cpu_quantize("CPU quantize(gelu_forward)", got, k.rowwise, y, N, C, scale, k.d, k.saturate);

    // 3. Float64 CPU GELU (tolerance derivation above).
    if (cpu_float64) {
        std::vector<float> y64(NC);
        for (size_t i = 0; i < NC; i++) y64[i] = ref_bf16_round((float)ref_gelu(pre[i], k.tanh_form));
        testing::expect_close("y vs float64 gelu", y, y64, 1e-35, 2 * testing::kBf16Eps);
        std::vector<uint8_t> q64, qT64;
        ref_fp8_quantize_transpose(y64, N, C, scale, k.d, q64, qT64);
        expect_bytes_near("transposed vs float64 CPU", got.qT, qT64, (size_t)(1e-3 * NC) + 4);
    }

    // 4. Amax-only pass (calibration).
    f.reset_staging();
    fp8_gelu_amax(d_pre, fp8_test::amax_tensor(f.st, f.slot(k.d), N, C), k.tanh_form, 0);
    EXPECT_EQ(f.staged_bits(f.slot(k.d)), ref_amax);

    // 5. Row-wise only (--recompute 1's forward): the CPU quantization of the BF16 kernel's y exactly, the
    // same amax and scale_inv.
    if (k.rowwise) {
        f.reset_staging();
        fp8b* d_q_rows = A(dev::device_alloc<fp8b>(NC));
        float* d_sinv_rows = A(dev::device_alloc<float>(1));
        fp8_gelu_cast(d_pre, f.out(d_q_rows, nullptr, d_sinv_rows, f.slot(k.d), N, C), k.tanh_form, 0);
        CHECK_CUDA(cudaDeviceSynchronize());
        std::vector<uint8_t> q_cpu, qT_cpu;
        ref_fp8_quantize_transpose(y, N, C, scale, k.d, q_cpu, qT_cpu);
        expect_same_bits("row-wise only vs CPU quantize(gelu_forward)", dev::from_device(d_q_rows, NC),
                         q_cpu);
        EXPECT_EQ(f.staged_bits(f.slot(k.d)), ref_amax);
        EXPECT_EQ(fp8_float_bits(dev::from_device(d_sinv_rows, 1)[0]),
                  fp8_float_bits(fp8_compute_scale_inv(scale)));
    }
}

}  // namespace

// Shapes: C = 80 / 144 (one 16-byte chunk per lane, most lanes idle), 768 / 1024 / 1280 / 1600 (K = 3, 4, 5,
// 7: the residual loaded 3, 2, 1 and 4 chunks a round trip; 2 blocks per SM from K = 6), 2064 (K = 9 -> the
// 16-chunk kernel, partial last chunk), 1600 at N = 12288 (GPT-1.5B: the pair kernel, 32-row tiles) and N =
// 12304 (a last 16-row tile), 3200 and 8192 (16-row tiles, > 48 KB of shared memory, register-heavy kernels).
TEST(layernorm_fp8_bit_exact) {
    const int small[][2] = {{48, 80}, {272, 144}, {272, 768}, {272, 1024}, {272, 1280}, {272, 1600}};
    for (auto& s : small)
        for (Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2})
            for (int residual = 0; residual < 2; residual++)
                for (int saturate = 0; saturate < 2; saturate++)
                    ln_case({s[0], s[1], d, (bool)residual, true, (bool)saturate});
    ln_case({48, 80, Fp8Dtype::E4M3, true, false, true});  // no row-wise output
    ln_case({80, 2064, Fp8Dtype::E4M3, true, true, true});
    ln_case({64, 3200, Fp8Dtype::E5M2, true, true, false});
    ln_case({32, 8192, Fp8Dtype::E4M3, false, true, true});
    ln_case({32, 8192, Fp8Dtype::E5M2, true, false, false});
    ln_case({12288, 1600, Fp8Dtype::E4M3, true, true, true});
    ln_case({12288, 1600, Fp8Dtype::E5M2, false, false, false});
    ln_case({12288, 1600, Fp8Dtype::E4M3, false, true, false});
    ln_case({12304, 1600, Fp8Dtype::E4M3, true, true, false});
    // Other tile heights (the benchmark's sweep): 16 to 128 rows, N = 272 leaves a partial last tile.
    for (int rows : {16, 48, 64, 128}) {
        ln_case({272, 1600, Fp8Dtype::E4M3, true, true, true, rows});
        ln_case({272, 1600, Fp8Dtype::E5M2, false, false, false, rows});
    }
    ln_case({12288, 1600, Fp8Dtype::E4M3, true, true, false, 64});
}

// A row over a pair of warps (each holding half of the row's chunks, the statistics handed between them in
// the one-warp order): bit for bit the one-warp BF16 kernel, for every K <= 8 (odd K: the second half holds
// one chunk fewer), partial chunks (C = 80, 144, 2064 falls back to the one-warp 16-chunk kernel), both
// formats, with and without residual and row-wise output, other tile heights, a partial last tile.
TEST(layernorm_fp8_pair_bit_exact) {
    const int small[][2] = {{48, 80},    {272, 144},  {272, 512},  {272, 768},
                            {272, 1024}, {272, 1280}, {272, 1600}, {64, 2048}};
    for (auto& s : small)
        for (int residual = 0; residual < 2; residual++)
            ln_case(
                {s[0], s[1], residual ? Fp8Dtype::E4M3 : Fp8Dtype::E5M2, (bool)residual, true, true, 0, 2});
    ln_case({48, 1600, Fp8Dtype::E4M3, true, false, false, 0, 2});  // no row-wise output
    ln_case({80, 2064, Fp8Dtype::E4M3, true, true, true, 0, 2});
    ln_case({12288, 1600, Fp8Dtype::E4M3, true, true, true, 0, 2});
    ln_case({12304, 768, Fp8Dtype::E5M2, true, true, false, 0, 2});
    for (int rows : {16, 48, 64}) ln_case({272, 1600, Fp8Dtype::E4M3, true, true, false, rows, 2});
    // forced one warp where the pair kernel is the default (C = 1600), and the one-wave 48-row tiles
    ln_case({272, 1600, Fp8Dtype::E4M3, true, true, true, 0, 1});
    ln_case({12288, 1600, Fp8Dtype::E5M2, true, true, false, 0, 1});
    ln_case({12288, 1600, Fp8Dtype::E4M3, false, false, false, 48, 1});
}

TEST(gelu_fp8_bit_exact) {
    const int small[][2] = {{48, 80}, {272, 144}, {144, 6400}};
    for (auto& s : small)
        for (Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2})
            for (int tanh_form = 0; tanh_form < 2; tanh_form++)
                for (int saturate = 0; saturate < 2; saturate++)
                    gelu_case({s[0], s[1], d, (bool)tanh_form, true, (bool)saturate}, true);
    gelu_case({48, 80, Fp8Dtype::E5M2, false, false, true}, true);  // no row-wise output
    gelu_case({12288, 6400, Fp8Dtype::E4M3, false, true, true}, true);
    gelu_case({12288, 6400, Fp8Dtype::E5M2, true, false, false}, true);
}

// Step-0 calibration: amax pass -> fp8_calibrate_scales -> fused kernel. The new scale must be exactly
// fp8_compute_scale(max |y|, fp8_max, margin), the fused bytes must be the CPU quantization of y with it, and
// with margin 0 the largest |y| lands on the max code (|y| * scale rounds to fp8_max), nothing beyond.
TEST(calibration) {
    for (Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2})
        for (int margin : {0, 1}) {
            const int N = 272, C = 1600;
            const size_t NC = (size_t)N * C;
            printf(" calibration %s margin %d\n", name(d), margin);
            Fixture f;
            Allocs A;
            f.set_scale(d, 3.0f);  // the old scale, replaced by the calibration
            const int slot = f.slot(d);
            std::vector<float> x1 = dev::random_normal(NC, 0.0f, 3.0f), x2 = dev::random_normal(NC),
                               w = dev::random_normal(C, 1.0f, 0.2f), b = dev::random_normal(C, 0.0f, 0.2f);
            for (auto* v : {&x1, &x2, &w, &b}) ref_round_to_bf16(*v);
            bf16 *d_x1 = A(dev::to_device_bf16(x1)), *d_x2 = A(dev::to_device_bf16(x2));
            bf16 *d_w = A(dev::to_device_bf16(w)), *d_b = A(dev::to_device_bf16(b));
            bf16* d_res = A(dev::device_alloc<bf16>(NC));
            bf16* d_y = A(dev::device_alloc<bf16>(NC));
            fp8b* d_q = A(dev::device_alloc<fp8b>(NC));
            fp8b* d_qT = A(dev::device_alloc<fp8b>(NC));
            float* d_sinv = A(dev::device_alloc<float>(1));
            for (int which = 0; which < 2; which++) {  // 0: LayerNorm (+ residual), 1: GELU (of x1)
                f.reset_staging();
                std::vector<float> y;
                if (which == 0) {
                    residual_layernorm_forward(d_res, d_y, nullptr, nullptr, d_x1, d_x2, d_w, d_b, N, C, 0);
                    y = dev::from_device_bf16(d_y, NC);
                    fp8_layernorm_amax(d_x1, d_x2, d_w, d_b, fp8_test::amax_tensor(f.st, slot, N, C), 0);
                } else {
                    gelu_forward(d_y, d_x1, NC, false, 0);
                    y = dev::from_device_bf16(d_y, NC);
                    fp8_gelu_amax(d_x1, fp8_test::amax_tensor(f.st, slot, N, C), false, 0);
                }
                const uint32_t amax = ref_amax_bits(y);
                EXPECT_EQ(f.staged_bits(slot), amax);
                const float old_scale = f.scale_of(slot);
                fp8_calibrate_scales(&f.st, slot, 1, margin, 0);
                const float scale = f.scale_of(slot);
                EXPECT_EQ(fp8_float_bits(scale),
                          fp8_float_bits(
                              fp8_compute_scale(fp8_bits_float(amax), fp8_dtype_max(d), margin, old_scale)));
                const Fp8Tensor out = f.out(d_q, d_qT, d_sinv, slot, N, C);
                if (which == 0)
                    fp8_residual_layernorm_forward(d_res, out, nullptr, nullptr, d_x1, d_x2, d_w, d_b, 0);
                else
                    fp8_gelu_cast_transpose(d_x1, out, false, 0);
                std::vector<uint8_t> q, qT;
                ref_fp8_quantize_transpose(y, N, C, scale, d, q, qT);
                const std::vector<uint8_t> got = dev::from_device(d_q, NC);
                expect_same_bits(which == 0 ? "layernorm row-wise" : "gelu row-wise", got, q);
                expect_same_bits(which == 0 ? "layernorm transposed" : "gelu transposed",
                                 dev::from_device(d_qT, NC), qT);
                EXPECT_EQ(fp8_float_bits(dev::from_device(d_sinv, 1)[0]),
                          fp8_float_bits(fp8_compute_scale_inv(scale)));
                // scale = fl(fp8_max / amax) may land one float ulp high, so amax * scale can exceed fp8_max
                // by 2^-24 relative and be clamped onto the max code it rounds to anyway; nothing beyond
                // that.
                size_t clipped_beyond_rounding = 0;
                for (float v : y)
                    clipped_beyond_rounding += std::fabs((double)v * scale) > fp8_dtype_max(d) * (1.0 + 1e-6);
                EXPECT_EQ(clipped_beyond_rounding, (size_t)0);
                check_saturation(y, q, scale, d);  // any clamped element must be exactly +-max
                int top = 0;                       // largest code magnitude present
                for (uint8_t v : got) top = std::max(top, (int)(v & 0x7f));
                if (margin == 0)
                    EXPECT_EQ(top, (int)max_code(d));
                else
                    EXPECT_TRUE(top < (int)max_code(d));
            }
        }
}

// ---- benchmarks at GPT-1.5B sizes, with the unfused sequences (BF16 kernel + cast_transpose) ----

namespace {

constexpr int kN = 12288, kC = 1600, kC4 = 6400;

// Inputs and outputs shared by the benchmarks, built on first use (kept until exit); slot 0 (E4M3, scale 64).
struct BenchBuffers {
    Fixture f;
    bf16 *a, *b2, *w, *bias, *res, *y;
    float *mean, *rstd, *sinv;
    fp8b *q, *qT;
    const int s = 0;
    // The output [N, cols] (row-wise copy: with rows), slot s.
    Fp8Tensor out(int cols, bool rows = true) const {
        return f.out(rows ? q : nullptr, qT, sinv, s, kN, cols);
    }
    BenchBuffers() {
        f.set_scale(Fp8Dtype::E4M3, 64.0f);
        std::vector<float> x = dev::random_normal((size_t)kN * kC4);
        ref_round_to_bf16(x);
        a = dev::to_device_bf16(x);
        b2 = dev::to_device_bf16(x);
        w = dev::to_device_bf16(dev::random_normal(kC, 1.0f, 0.2f));
        bias = dev::to_device_bf16(dev::random_normal(kC, 0.0f, 0.2f));
        res = dev::device_alloc<bf16>((size_t)kN * kC);
        y = dev::device_alloc<bf16>((size_t)kN * kC4);
        mean = dev::device_alloc<float>(kN);
        rstd = dev::device_alloc<float>(kN);
        q = dev::device_alloc<fp8b>((size_t)kN * kC4);
        qT = dev::device_alloc<fp8b>((size_t)kN * kC4);
        sinv = dev::device_alloc<float>(1);
    }
};
BenchBuffers& bench_buffers() {
    static BenchBuffers* b = new BenchBuffers();  // never freed: the process ends after the benchmarks
    return *b;
}

}  // namespace

// Residual LayerNorm: fused reads 2 inputs, writes the residual (bf16) + 2 FP8 copies = 8 B/elem;
// unfused: residual_layernorm_forward (4 + 4) + cast_transpose (2 + 2) = 12 B/elem.
BENCH(fp8_residual_layernorm) {
    BenchBuffers& b = bench_buffers();
    const double nc = (double)kN * kC;
    float ms = dev::time_ms([&] {
        residual_layernorm_forward(b.res, b.y, b.mean, b.rstd, b.a, b.b2, b.w, b.bias, kN, kC, 0);
        fp8_cast_transpose(b.y, b.out(kC), 0);
    });
    bench::report_bandwidth("unfused:residual_layernorm+cast_transpose", "12288x1600,e4m3", ms, 12 * nc);
    ms = dev::time_ms(
        [&] { fp8_residual_layernorm_forward(b.res, b.out(kC), b.mean, b.rstd, b.a, b.b2, b.w, b.bias, 0); });
    // ln2 of every layer, ln1 of layers 1..47 and the final LayerNorm (the FP8 LM head's input)
    bench::report_budget("fp8_residual_layernorm_forward", "12288x1600,e4m3", ms, 8 * nc, 96);
    ms = dev::time_ms([&] {
        fp8_residual_layernorm_forward(b.res, b.out(kC, false), b.mean, b.rstd, b.a, b.b2, b.w, b.bias, 0);
    });
    bench::report_bandwidth("fp8_residual_layernorm_forward", "12288x1600,e4m3,T-only", ms, 7 * nc);
    // Tile rows: the transposed copy's contiguous bytes per row and per block (shared memory: rows x C
    // bytes).
    for (int rows : {16, 32, 64, 128}) {
        ms = dev::time_ms([&] {
            fp8_residual_layernorm_forward(b.res, b.out(kC), b.mean, b.rstd, b.a, b.b2, b.w, b.bias, 0, rows);
        });
        bench::report_bandwidth("fp8_residual_layernorm_forward", bench::fmt("12288x1600,e4m3,rows=%d", rows),
                                ms, 8 * nc);
    }
    // One warp or a pair of warps per row, at GPT-1.5B's C and GPT-2 124M's (rows 0: the launcher's tiles).
    for (int C : {kC, 768})
        for (int warps : {1, 2})
            for (int rows : {0, 32, 48}) {
                ms = dev::time_ms([&] {
                    fp8_residual_layernorm_forward(b.res, b.out(C), b.mean, b.rstd, b.a, b.b2, b.w, b.bias, 0,
                                                   rows, warps);
                });
                bench::report_bandwidth("fp8_residual_layernorm_forward",
                                        bench::fmt("%dx%d,e4m3,warps/row=%d,rows=%d", kN, C, warps, rows), ms,
                                        8.0 * kN * C);
            }
}

// Plain LayerNorm: fused 2 + 2 B/elem; unfused layernorm_forward (2 + 2) + cast_transpose (2 + 2).
BENCH(fp8_layernorm) {
    BenchBuffers& b = bench_buffers();
    const double nc = (double)kN * kC;
    float ms = dev::time_ms([&] {
        layernorm_forward(b.y, b.mean, b.rstd, b.a, b.w, b.bias, kN, kC, 0);
        fp8_cast_transpose(b.y, b.out(kC), 0);
    });
    bench::report_bandwidth("unfused:layernorm+cast_transpose", "12288x1600,e4m3", ms, 8 * nc);
    ms = dev::time_ms([&] {
        fp8_residual_layernorm_forward(nullptr, b.out(kC), b.mean, b.rstd, b.a, nullptr, b.w, b.bias, 0);
    });
    bench::report_budget("fp8_residual_layernorm_forward", "12288x1600,e4m3,no-residual", ms, 4 * nc, 1);
}

BENCH(fp8_layernorm_amax) {
    BenchBuffers& b = bench_buffers();
    const double nc = (double)kN * kC;
    const float ms = dev::time_ms(
        [&] { fp8_layernorm_amax(b.a, b.b2, b.w, b.bias, fp8_test::amax_tensor(b.f.st, b.s, kN, kC), 0); });
    bench::report_bandwidth("fp8_layernorm_amax", "12288x1600,residual", ms, 4 * nc);
}

// GELU: fused 2 + 2 B/elem; unfused gelu_forward (2 + 2) + cast_transpose (2 + 2).
BENCH(fp8_gelu_cast_transpose) {
    BenchBuffers& b = bench_buffers();
    const double nc4 = (double)kN * kC4;
    for (int tanh_form = 0; tanh_form < 2; tanh_form++) {
        const char* shape = tanh_form ? "12288x6400,e4m3,tanh" : "12288x6400,e4m3,erf";
        float ms = dev::time_ms([&] {
            gelu_forward(b.y, b.a, (size_t)nc4, tanh_form, 0);
            fp8_cast_transpose(b.y, b.out(kC4), 0);
        });
        bench::report_bandwidth("unfused:gelu_forward+cast_transpose", shape, ms, 8 * nc4);
        ms = dev::time_ms([&] { fp8_gelu_cast_transpose(b.a, b.out(kC4), tanh_form, 0); });
        bench::report_bandwidth("fp8_gelu_cast_transpose", shape, ms, 4 * nc4);
    }
    const float ms = dev::time_ms([&] { fp8_gelu_cast_transpose(b.a, b.out(kC4, false), false, 0); });
    bench::report_bandwidth("fp8_gelu_cast_transpose", "12288x6400,e4m3,erf,T-only", ms, 3 * nc4);
    // Row-wise only (--recompute 1's forward): 2 + 1 B/elem.
    const float ms_rows = dev::time_ms([&] { fp8_gelu_cast(b.a, b.out(kC4), false, 0); });
    bench::report_budget("fp8_gelu_cast", "12288x6400,e4m3,erf,rows-only", ms_rows, 3 * nc4, 48);
}

BENCH(fp8_gelu_amax) {
    BenchBuffers& b = bench_buffers();
    const double nc4 = (double)kN * kC4;
    const float ms =
        dev::time_ms([&] { fp8_gelu_amax(b.a, fp8_test::amax_tensor(b.f.st, b.s, kN, kC4), false, 0); });
    bench::report_bandwidth("fp8_gelu_amax", "12288x6400,erf", ms, 2 * nc4);
}

TEST_MAIN()
