// LayerNorm forward (plain and fused residual add), saved statistics and backward against float64 CPU
// references; benchmarks (--bench) at GPT-2 1.5B and small widths.
#include "dev/byte_budget.h"
#include "dev/dev_utils.h"
#include "llmc/kernels/layernorm/layernorm.cuh"
#include "test/reference/layernorm.h"

namespace {

using testing::fp32_sum_rel;
using testing::kBf16Eps;

double max_abs(const std::vector<float>& v) {
    double m = 0;
    for (float x : v) m = std::max(m, (double)std::fabs(x));
    return m;
}

struct LnInputs {
    std::vector<float> x, w, b;
};
// Rows with a non-zero mean (1.5) and std 2 exercise the two-pass variance; LN weight ~1 and bias ~0 as in
// training, but random so that a swapped or ignored parameter fails.
LnInputs make_inputs(int N, int C) {
    LnInputs in{dev::random_normal((size_t)N * C, 1.5f, 2.0f), dev::random_normal(C, 1.0f, 0.2f),
                dev::random_normal(C, 0.0f, 0.2f)};
    ref_round_to_bf16(in.x);
    ref_round_to_bf16(in.w);
    ref_round_to_bf16(in.b);
    return in;
}

// Tolerances of the forward (see fp32_sum_rel): mean is an fp32 sum over C; rstd adds rsqrtf's ~2 ulp;
// the output's absolute error is |w| * (rstd * dmean + |xhat| * drstd/rstd), plus one bf16 rounding (rtol
// 2^-8).
void check_forward_outputs(const char* what, const RefLayerNorm& ref, const LnInputs& in,
                           const std::vector<float>& x, bf16* d_out, float* d_mean, float* d_rstd, int N,
                           int C) {
    const double xmax = max_abs(x);
    const double rstd_rel = fp32_sum_rel(C) + std::ldexp(1.0, -21);
    const double rstd_max = max_abs(ref.rstd);
    const double out_atol =
        max_abs(in.w) * (rstd_max * fp32_sum_rel(C) * xmax + 2 * xmax * rstd_max * rstd_rel);
    std::string s(what);
    testing::expect_close((s + " out").c_str(), dev::from_device_bf16(d_out, (size_t)N * C), ref.out,
                          out_atol, kBf16Eps);
    testing::expect_close((s + " mean").c_str(), dev::from_device(d_mean, N), ref.mean,
                          fp32_sum_rel(C) * xmax, 0.0);
    testing::expect_close((s + " rstd").c_str(), dev::from_device(d_rstd, N), ref.rstd, 0.0, rstd_rel);
}

void check_forward(int N, int C) {
    printf("  N = %d, C = %d\n", N, C);
    const LnInputs in = make_inputs(N, C);
    const RefLayerNorm ref = ref_layernorm_forward(in.x, in.w, in.b, N, C);
    bf16* d_x = dev::to_device_bf16(in.x);
    bf16* d_w = dev::to_device_bf16(in.w);
    bf16* d_b = dev::to_device_bf16(in.b);
    bf16* d_out = dev::device_alloc<bf16>((size_t)N * C);
    float* d_mean = dev::device_alloc<float>(N);
    float* d_rstd = dev::device_alloc<float>(N);
    layernorm_forward(d_out, d_mean, d_rstd, d_x, d_w, d_b, N, C, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    check_forward_outputs("layernorm", ref, in, in.x, d_out, d_mean, d_rstd, N, C);

    // Without saved statistics (inference): same output.
    bf16* d_out2 = dev::device_alloc<bf16>((size_t)N * C);
    layernorm_forward(d_out2, nullptr, nullptr, d_x, d_w, d_b, N, C, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(dev::from_device_bf16(d_out2, (size_t)N * C) == dev::from_device_bf16(d_out, (size_t)N * C));

    for (void* p :
         {(void*)d_x, (void*)d_w, (void*)d_b, (void*)d_out, (void*)d_out2, (void*)d_mean, (void*)d_rstd})
        CHECK_CUDA(cudaFree(p));
}

void check_residual_forward(int N, int C) {
    printf("  N = %d, C = %d\n", N, C);
    const LnInputs in = make_inputs(N, C);  // in.x plays inp1
    std::vector<float> x2 = dev::random_normal((size_t)N * C, 0.0f, 1.0f);
    ref_round_to_bf16(x2);
    // The residual as the GPU must store it: fp32 add of two bf16 values, one rounding (bit-exact on the
    // host); and its float64 sum for the tolerance check.
    const std::vector<float> res = ref_residual_add(in.x, x2);
    std::vector<float> res_exact((size_t)N * C);
    for (size_t i = 0; i < res.size(); i++) res_exact[i] = (float)((double)in.x[i] + (double)x2[i]);
    const RefLayerNorm ref = ref_layernorm_forward(res, in.w, in.b, N, C);  // LN of the ROUNDED residual
    bf16* d_x1 = dev::to_device_bf16(in.x);
    bf16* d_x2 = dev::to_device_bf16(x2);
    bf16* d_w = dev::to_device_bf16(in.w);
    bf16* d_b = dev::to_device_bf16(in.b);
    bf16* d_res = dev::device_alloc<bf16>((size_t)N * C);
    bf16* d_out = dev::device_alloc<bf16>((size_t)N * C);
    float* d_mean = dev::device_alloc<float>(N);
    float* d_rstd = dev::device_alloc<float>(N);
    residual_layernorm_forward(d_res, d_out, d_mean, d_rstd, d_x1, d_x2, d_w, d_b, N, C, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    // The residual is one bf16 rounding of an exact (or fp32-rounded) sum: rtol 2^-8; a zero sum is exact.
    testing::expect_close("residual", dev::from_device_bf16(d_res, (size_t)N * C), res_exact, 0.0, kBf16Eps);
    check_forward_outputs("residual_layernorm", ref, in, res, d_out, d_mean, d_rstd, N, C);

    for (void* p : {(void*)d_x1, (void*)d_x2, (void*)d_w, (void*)d_b, (void*)d_res, (void*)d_out,
                    (void*)d_mean, (void*)d_rstd})
        CHECK_CUDA(cudaFree(p));
}

void check_backward(int N, int C) {
    printf("  N = %d, C = %d\n", N, C);
    const LnInputs in = make_inputs(N, C);
    // mean/rstd as the forward would save them
    const RefLayerNorm fwd = ref_layernorm_forward(in.x, in.w, in.b, N, C);
    std::vector<float> dout = dev::random_normal((size_t)N * C), dinp0 = dev::random_normal((size_t)N * C);
    ref_round_to_bf16(dout);
    ref_round_to_bf16(dinp0);

    // float64 reference using the same fp32 mean/rstd the kernel reads.
    const RefLayerNormGrads ref = ref_layernorm_backward(in.x, in.w, dout, dinp0, fwd.mean, fwd.rstd, N, C);
    const std::vector<float>& ref_dinp = ref.dinp;
    std::vector<float> ref_dw(C), ref_db(C);
    for (int c = 0; c < C; c++) ref_dw[c] = (float)ref.dweight[c], ref_db[c] = (float)ref.dbias[c];
    const double dinp_scale = ref.dinp_scale;

    bf16* d_x = dev::to_device_bf16(in.x);
    bf16* d_w = dev::to_device_bf16(in.w);
    bf16* d_dout = dev::to_device_bf16(dout);
    bf16* d_dinp = dev::to_device_bf16(dinp0);
    float* d_mean = dev::to_device(fwd.mean);
    float* d_rstd = dev::to_device(fwd.rstd);
    bf16* d_dw = dev::device_alloc<bf16>(C);
    bf16* d_db = dev::device_alloc<bf16>(C);
    float* d_scratch = dev::device_alloc<float>(layernorm_backward_scratch_bytes(N, C) / sizeof(float));
    layernorm_backward(d_dinp, d_dw, d_db, d_scratch, d_dout, d_x, d_w, d_mean, d_rstd, N, C, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> got_dinp = dev::from_device_bf16(d_dinp, (size_t)N * C);
    const std::vector<float> got_dw = dev::from_device_bf16(d_dw, C), got_db = dev::from_device_bf16(d_db, C);

    // dinp: bf16 rounding of the result (rtol); the fp32 row sums over C of dnorm and dnorm*xhat and the fp32
    // xhat carry fp32_sum_rel(C) (+ rsqrt's 2^-21) relative to the size of the terms (dinp_scale).
    testing::expect_close("dinp (accumulated)", got_dinp, ref_dinp,
                          dinp_scale * (fp32_sum_rel(C) + std::ldexp(1.0, -21)), kBf16Eps);
    // dweight/dbias: sums over N rows. rtol: the final bf16 rounding. atol: the fp32 accumulation error of N
    // terms of rms r is ~ N * 2^-24 * r = sqrt(N) * (sqrt(N) 2^-24) r <= sqrt(N) * 2^-17 r for N <= 16384;
    // atol = sqrt(N) * 2^-14 * r (8x margin), small against the typical |sum| ~ sqrt(N) r.
    const double rms_w = ref.dweight_term_rms, rms_b = ref.dbias_term_rms;
    testing::expect_close("dweight", got_dw, ref_dw, std::sqrt((double)N) * std::ldexp(rms_w, -14), kBf16Eps);
    testing::expect_close("dbias", got_db, ref_db, std::sqrt((double)N) * std::ldexp(rms_b, -14), kBf16Eps);
    const double l2_w = testing::rel_l2_error(got_dw, ref_dw), l2_b = testing::rel_l2_error(got_db, ref_db);
    printf("  dweight rel l2 %.3e  dbias rel l2 %.3e (bound 2^-8)\n", l2_w, l2_b);
    EXPECT_TRUE(l2_w <= kBf16Eps && l2_b <= kBf16Eps);

    // Determinism: the same inputs again (outputs and scratch poisoned again) give bitwise identical results.
    CHECK_CUDA(cudaMemset(d_scratch, 0xFF, layernorm_backward_scratch_bytes(N, C)));
    CHECK_CUDA(cudaMemset(d_dw, 0xFF, C * sizeof(bf16)));
    CHECK_CUDA(cudaMemset(d_db, 0xFF, C * sizeof(bf16)));
    bf16* d_dinp2 = dev::to_device_bf16(dinp0);
    layernorm_backward(d_dinp2, d_dw, d_db, d_scratch, d_dout, d_x, d_w, d_mean, d_rstd, N, C, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(dev::from_device_bf16(d_dinp2, (size_t)N * C) == got_dinp);
    EXPECT_TRUE(dev::from_device_bf16(d_dw, C) == got_dw);
    EXPECT_TRUE(dev::from_device_bf16(d_db, C) == got_db);

    // Gradient accumulation: dweight/dbias += the sums (one bf16 rounding of base + sum: the same tolerances
    // relative to the new reference).
    std::vector<float> dw0 = dev::random_normal(C, 0.0f, 4.0f), db0 = dev::random_normal(C, 0.0f, 4.0f);
    ref_round_to_bf16(dw0);
    ref_round_to_bf16(db0);
    std::vector<float> ref_dw_acc(C), ref_db_acc(C);
    for (int c = 0; c < C; c++)
        ref_dw_acc[c] = (float)(ref.dweight[c] + dw0[c]), ref_db_acc[c] = (float)(ref.dbias[c] + db0[c]);
    bf16* d_dw_acc = dev::to_device_bf16(dw0);
    bf16* d_db_acc = dev::to_device_bf16(db0);
    bf16* d_dinp3 = dev::to_device_bf16(dinp0);
    layernorm_backward(d_dinp3, d_dw_acc, d_db_acc, d_scratch, d_dout, d_x, d_w, d_mean, d_rstd, N, C, 0,
                       /*accumulate=*/true);
    CHECK_CUDA(cudaDeviceSynchronize());
    testing::expect_close("dweight (accumulate)", dev::from_device_bf16(d_dw_acc, C), ref_dw_acc,
                          std::sqrt((double)N) * std::ldexp(rms_w, -14), kBf16Eps);
    testing::expect_close("dbias (accumulate)", dev::from_device_bf16(d_db_acc, C), ref_db_acc,
                          std::sqrt((double)N) * std::ldexp(rms_b, -14), kBf16Eps);
    EXPECT_TRUE(dev::from_device_bf16(d_dinp3, (size_t)N * C) == got_dinp);  // dinp unaffected by the flag
    for (void* p : {(void*)d_dw_acc, (void*)d_db_acc, (void*)d_dinp3}) CHECK_CUDA(cudaFree(p));

    for (void* p : {(void*)d_x, (void*)d_w, (void*)d_dout, (void*)d_dinp, (void*)d_dinp2, (void*)d_mean,
                    (void*)d_rstd, (void*)d_dw, (void*)d_db, (void*)d_scratch})
        CHECK_CUDA(cudaFree(p));
}

// Each option alone and both (LayerNormBackwardOptions: bulk_loads, fixed_slots).
const LayerNormBackwardOptions kLnBackwardVariants[] = {{true, false}, {false, true}, {true, true}};
std::string ln_backward_variant_name(const LayerNormBackwardOptions& o) {
    return bench::fmt("bulk %d, slots %d", o.bulk_loads, o.fixed_slots);
}

// The backward's kernel variants (LayerNormBackwardOptions) against the per-thread loads with the loop over
// the warps, the kernel they were derived from: bit for bit (dinp, dweight, dbias), not merely close, since
// each variant claims the same fp32 operations in the same order. Shapes where the bulk loads apply (N a
// multiple of 4) and where they fall back (odd N, mean/rstd off 16-byte alignment), one and two chunks a
// thread, blocks of 1 to 8 warps (fixed slots) and more (their loop).
void check_backward_variants_bitwise(int N, int C, bool aligned_stats) {
    printf("  N = %d, C = %d%s\n", N, C, aligned_stats ? "" : ", mean/rstd 4 bytes off alignment");
    const LnInputs in = make_inputs(N, C);
    const RefLayerNorm fwd = ref_layernorm_forward(in.x, in.w, in.b, N, C);
    std::vector<float> dout = dev::random_normal((size_t)N * C), dinp0 = dev::random_normal((size_t)N * C);
    ref_round_to_bf16(dout);
    ref_round_to_bf16(dinp0);
    bf16* d_x = dev::to_device_bf16(in.x);
    bf16* d_w = dev::to_device_bf16(in.w);
    bf16* d_dout = dev::to_device_bf16(dout);
    const int off = aligned_stats ? 0 : 1;
    float* d_stats = dev::device_alloc<float>(2 * (size_t)(N + 4));
    float *d_mean = d_stats + off, *d_rstd = d_stats + N + 4 + off;
    CHECK_CUDA(cudaMemcpy(d_mean, fwd.mean.data(), N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_rstd, fwd.rstd.data(), N * sizeof(float), cudaMemcpyHostToDevice));
    float* d_scratch = dev::device_alloc<float>(layernorm_backward_scratch_bytes(N, C) / sizeof(float));
    bf16* d_dinp = dev::device_alloc<bf16>((size_t)N * C);
    bf16* d_dw = dev::device_alloc<bf16>(C);
    bf16* d_db = dev::device_alloc<bf16>(C);
    struct Out {
        std::vector<uint16_t> dinp, dw, db;  // the bf16 bits
    };
    const auto run = [&](LayerNormBackwardOptions opt) {
        dev::copy_to_device_bf16(d_dinp, dinp0);
        CHECK_CUDA(cudaMemset(d_scratch, 0xFF, layernorm_backward_scratch_bytes(N, C)));
        CHECK_CUDA(cudaMemset(d_dw, 0xFF, C * sizeof(bf16)));
        CHECK_CUDA(cudaMemset(d_db, 0xFF, C * sizeof(bf16)));
        layernorm_backward(d_dinp, d_dw, d_db, d_scratch, d_dout, d_x, d_w, d_mean, d_rstd, N, C, 0, false,
                           opt);
        CHECK_CUDA(cudaDeviceSynchronize());
        return Out{dev::from_device_bf16_bits(d_dinp, (size_t)N * C), dev::from_device_bf16_bits(d_dw, C),
                   dev::from_device_bf16_bits(d_db, C)};
    };
    const Out base = run({/*bulk_loads=*/false, /*fixed_slots=*/false});
    for (const LayerNormBackwardOptions opt : kLnBackwardVariants) {
        const Out got = run(opt);
        const bool same = got.dinp == base.dinp && got.dw == base.dw && got.db == base.db;
        if (!same) printf("  %s: not bit for bit\n", ln_backward_variant_name(opt).c_str());
        EXPECT_TRUE(same);
    }
    for (void* p : {(void*)d_x, (void*)d_w, (void*)d_dout, (void*)d_stats, (void*)d_scratch, (void*)d_dinp,
                    (void*)d_dw, (void*)d_db})
        CHECK_CUDA(cudaFree(p));
}

// Shapes: N never a multiple of the 8 rows of a forward block; C = 768 and 1600 (GPT-2 small / 1.5B); small C
// (40: 5 lanes of a warp, 128); C = 4096 (largest 1-chunk backward), 5000 and 8192 (2 chunks per thread).
const int kShapes[][2] = {{1037, 768}, {515, 1600}, {77, 128}, {9, 40}, {67, 4096}, {29, 5000}, {45, 8192}};

}  // namespace

TEST(layernorm_forward_shapes) {
    for (auto& s : kShapes) check_forward(s[0], s[1]);
}
TEST(residual_layernorm_forward_shapes) {
    for (auto& s : kShapes) check_residual_forward(s[0], s[1]);
}
TEST(layernorm_backward_shapes) {
    for (auto& s : kShapes) check_backward(s[0], s[1]);
}
TEST(layernorm_backward_variants_bit_exact) {
    const int shapes[][2] = {{1036, 768}, {516, 1600}, {76, 128},   {8, 40},       {68, 4096},  {28, 5000},
                             {44, 8192},  {1037, 768}, {515, 1600}, {12288, 1600}, {12288, 768}};
    for (auto& s : shapes) check_backward_variants_bitwise(s[0], s[1], true);
    check_backward_variants_bitwise(516, 1600, false);
}
// GPT-1.5B sizes: B*T = 12 * 1024 rows, C = 1600; and GPT-2 small width.
TEST(layernorm_forward_gpt1p5b) { check_forward(12288, 1600); }
TEST(residual_layernorm_forward_gpt1p5b) { check_residual_forward(12288, 1600); }
TEST(layernorm_backward_gpt1p5b) { check_backward(12288, 1600); }
TEST(layernorm_c768) {
    check_forward(12288, 768);
    check_backward(12288, 768);
}

// ---- benchmarks: B*T = 12288 rows, C = 1600 (GPT-2 1.5B) and 768 (GPT-2 small) ----

namespace {

struct LnBench {
    int N, C;
    bf16 *x, *x2, *w, *b, *res, *out, *dout, *dinp, *dw, *db;
    float *mean, *rstd, *scratch;
    LnBench(int N_, int C_) : N(N_), C(C_) {
        const LnInputs in = make_inputs(N, C);
        x = dev::to_device_bf16(in.x);
        x2 = dev::to_device_bf16(dev::random_normal((size_t)N * C));
        w = dev::to_device_bf16(in.w);
        b = dev::to_device_bf16(in.b);
        res = dev::device_alloc<bf16>((size_t)N * C);
        out = dev::device_alloc<bf16>((size_t)N * C);
        dout = dev::to_device_bf16(dev::random_normal((size_t)N * C));
        dinp = dev::to_device_bf16(dev::random_normal((size_t)N * C));
        dw = dev::device_alloc<bf16>(C);
        db = dev::device_alloc<bf16>(C);
        mean = dev::device_alloc<float>(N);
        rstd = dev::device_alloc<float>(N);
        layernorm_forward(out, mean, rstd, x, w, b, N, C, 0);  // statistics for the backward
        scratch = dev::device_alloc<float>(layernorm_backward_scratch_bytes(N, C) / sizeof(float));
    }
    ~LnBench() {
        for (void* p : {(void*)x, (void*)x2, (void*)w, (void*)b, (void*)res, (void*)out, (void*)dout,
                        (void*)dinp, (void*)dw, (void*)db, (void*)mean, (void*)rstd, (void*)scratch})
            CHECK_CUDA(cudaFree(p));
    }
    std::string shape() const { return bench::fmt("%dx%d", N, C); }
};

}  // namespace

// Bytes: read x, write out, write stats, read w/b.
BENCH(layernorm_forward) {
    for (int C : {1600, 768}) {
        LnBench k(12288, C);
        const double bytes = 4.0 * k.N * C + 8.0 * k.N + 4.0 * C;
        const float ms =
            dev::time_ms([&] { layernorm_forward(k.out, k.mean, k.rstd, k.x, k.w, k.b, k.N, k.C, 0); });
        bench::report_bandwidth("layernorm_forward", k.shape(), ms, bytes);
    }
}

// Bytes: read 2 inputs, write residual and out, stats, w/b.
BENCH(residual_layernorm_forward) {
    LnBench k(12288, 1600);
    const double bytes = 8.0 * k.N * k.C + 8.0 * k.N + 4.0 * k.C;
    const float ms = dev::time_ms(
        [&] { residual_layernorm_forward(k.res, k.out, k.mean, k.rstd, k.x, k.x2, k.w, k.b, k.N, k.C, 0); });
    bench::report_bandwidth("residual_layernorm_forward", k.shape(), ms, bytes);
}

// Bytes: read dout, inp, dinp, write dinp; stats; dweight/dbias (the scratch traffic is not counted). The
// default (both options), then the per-thread kernel and each option alone, for the comparison.
BENCH(layernorm_backward) {
    for (int C : {1600, 768}) {
        LnBench k(12288, C);
        const double bytes = 8.0 * k.N * C + 8.0 * k.N + 2.0 * C;
        const float ms = dev::time_ms([&] {
            layernorm_backward(k.dinp, k.dw, k.db, k.scratch, k.dout, k.x, k.w, k.mean, k.rstd, k.N, k.C, 0);
        });
        // GPT-1.5B: ln1 and ln2 of every layer and the final LayerNorm
        bench::report_budget("layernorm_backward", k.shape(), ms, bytes, C == 1600 ? 97 : 0);
        for (const LayerNormBackwardOptions opt :
             {LayerNormBackwardOptions{false, false}, LayerNormBackwardOptions{true, false},
              LayerNormBackwardOptions{false, true}}) {
            const float vms = dev::time_ms([&] {
                layernorm_backward(k.dinp, k.dw, k.db, k.scratch, k.dout, k.x, k.w, k.mean, k.rstd, k.N, k.C,
                                   0, false, opt);
            });
            bench::report_bandwidth("layernorm_backward[" + ln_backward_variant_name(opt) + "]", k.shape(),
                                    vms, bytes);
        }
    }
}

TEST_MAIN()
