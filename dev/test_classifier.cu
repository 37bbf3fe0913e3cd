// Tests for llmc/kernels/classifier/classifier.cuh: fused softmax / cross-entropy / dlogits against a float64
// CPU reference on the same bf16 logits, the read-only mode, determinism, mean_loss; and for its FP8 form
// (llmc/kernels/classifier/classifier_fp8.cuh: dlogits quantized with their amax) against the same reference
// and the BF16 kernel's losses, with the byte transpose (fp8_transpose) its backward uses. Benchmark
// (--bench): the bandwidth at GPT-2 size, both forms.
#include <cstring>

#include "dev/byte_budget.h"
#include "dev/dev_utils.h"
#include "dev/fp8_test_utils.h"
#include "llmc/kernels/classifier/classifier.cuh"
#include "llmc/kernels/classifier/classifier_fp8.cuh"
#include "test/reference/classifier.h"

namespace {

// Random logits with per-row scales 1..24 and a few large spikes (exercises the max subtraction: without it
// exp overflows fp32 at logits ~ 89), rounded to bf16. Every 4th row's target is its argmax, so p_target is
// close to 1 and p - 1 cancels; other targets are uniform.
void make_inputs(int N, int V, std::vector<float>* logits, std::vector<int>* targets) {
    const float scales[] = {1.0f, 5.0f, 12.0f, 20.0f};
    *logits = dev::random_normal((size_t)N * V);
    *targets = dev::random_ints(N, 0, V);
    std::vector<int> spikes = dev::random_ints(3 * N, 0, V);
    for (int n = 0; n < N; n++) {
        float* row = logits->data() + (size_t)n * V;
        const float scale = scales[n % 4] * (1.0f + 0.05f * (n % 5));
        for (int v = 0; v < V; v++) row[v] *= scale;
        for (int k = 0; k < 3; k++) row[spikes[3 * n + k]] = (k == 1 ? -4.0f : 4.0f) * scale;
        for (int v = 0; v < V; v++) row[v] = ref_bf16_round(row[v]);
        if (n % 4 == 3) (*targets)[n] = (int)(std::max_element(row, row + V) - row);
    }
}

// One case: the inputs (make_inputs), dloss = 1/N, and the float64 reference's losses and dlogits.
struct ClassifierCase {
    std::vector<float> logits;
    std::vector<int> targets;
    float dloss;
    std::vector<float> ref_losses, ref_dlogits;
    ClassifierCase(int N, int V) : dloss(1.0f / N) {
        make_inputs(N, V, &logits, &targets);
        ref_classifier(logits, targets, dloss, N, V, &ref_losses, &ref_dlogits);
    }
};

void check_classifier(int N, int V) {
    printf("  N=%d V=%d\n", N, V);
    const ClassifierCase k(N, V);
    const std::vector<float>& logits = k.logits;
    const std::vector<int>& targets = k.targets;
    const float dloss = k.dloss;
    const std::vector<float>&ref_losses = k.ref_losses, &ref_dlogits = k.ref_dlogits;

    bf16* d_logits = dev::to_device_bf16(logits);
    int* d_targets = dev::to_device(targets);
    float* d_losses = dev::device_alloc<float>(N);

    // Read-only mode first: the logits must come back bit-identical, the losses already right.
    fused_classifier(d_logits, d_losses, d_targets, dloss, N, V, false, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> untouched = dev::from_device_bf16(d_logits, (size_t)N * V);
    EXPECT_TRUE(testing::same_bits(untouched, logits));
    const std::vector<float> losses_ro = dev::from_device(d_losses, N);

    CHECK_CUDA(cudaMemset(d_losses, 0xFF, N * sizeof(float)));
    fused_classifier(d_logits, d_losses, d_targets, dloss, N, V, true, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> losses = dev::from_device(d_losses, N);
    const std::vector<float> dlogits = dev::from_device_bf16(d_logits, (size_t)N * V);

    // Loss tolerance: fp32 accumulation. The exp2 argument is one fma rounding (|arg| < 126 for any term that
    // does not underflow: rel err <= 2^-18 * ln2 = 2.6e-6 per term, and only tiny terms reach that); the sum
    // over <= 104 terms per thread (512 threads) + a 9-level tree is <= ~113 ulp = 6.7e-6 relative worst case
    // (~sqrt of that typically); log2/exp2 approx add 2^-22; float(log2e) is 1.3e-8 relative below log2e,
    // which scales the logits by 1 - 1.3e-8 and moves the loss by <= 1.3e-8 * |E_p[x] - x_t| <= 1.3e-8 * ~220
    // = 3e-6 here
    // (|logit| <= ~110). Worst-case sum < 1.5e-5 -> atol 3e-5; the final rounding of a loss up to ~110
    // is covered by rtol 1e-5.
    testing::expect_close("loss (read-only)", losses_ro, ref_losses, 3e-5, 1e-5);
    testing::expect_close("loss", losses, ref_losses, 3e-5, 1e-5);
    // The losses must not depend on whether dlogits are written (same code path up to the loss).
    EXPECT_TRUE(testing::same_bits(losses, losses_ro));
    // dlogits tolerance: bf16 output rounding is <= 2^-8 relative; the fp32 value before rounding carries
    // <= ~1e-5 relative error (see above + the 1/S and *dloss roundings), so rtol = 2^-8 + 2e-5. Non-target
    // entries: atol 1e-37 only covers fp32 flush-to-zero (exp2 of arguments below -126, products below
    // 2^-126). Target entries: p - 1 cancels when p ~ 1 and p's absolute error (<= its relative error, 1e-5
    // worst case) survives -> atol 2e-5 * dloss, checked separately so it does not blunt the rest.
    std::vector<float> got_t, ref_t, got_o, ref_o;
    for (int n = 0; n < N; n++)
        for (int v = 0; v < V; v++) {
            const size_t i = (size_t)n * V + v;
            (v == targets[n] ? got_t : got_o).push_back(dlogits[i]);
            (v == targets[n] ? ref_t : ref_o).push_back(ref_dlogits[i]);
        }
    testing::expect_close("dlogits (non-target)", got_o, ref_o, 1e-37, testing::kBf16Eps + 2e-5);
    testing::expect_close("dlogits (target)", got_t, ref_t, 2e-5 * dloss, testing::kBf16Eps + 2e-5);

    // mean_loss over the GPU losses: fp32 sum of N positive terms, <= N/1024 sequential adds + 10 tree levels
    // -> rel err <= ~(N/1024 + 10) * 2^-24 < 2e-6 for the N used here.
    float* d_mean = dev::device_alloc<float>(1);
    mean_loss(d_mean, d_losses, N, 0);
    const float mean = dev::from_device(d_mean, 1)[0];
    double ref_mean = 0;
    for (float l : losses) ref_mean += l;
    ref_mean /= N;
    testing::expect_close("mean_loss", {mean}, {(float)ref_mean}, 0.0, 2e-6);
    mean_loss(d_mean, d_losses, N, 0);
    const float mean2 = dev::from_device(d_mean, 1)[0];
    EXPECT_TRUE(memcmp(&mean, &mean2, sizeof(float)) == 0);

    CHECK_CUDA(cudaFree(d_logits));
    CHECK_CUDA(cudaFree(d_targets));
    CHECK_CUDA(cudaFree(d_losses));
    CHECK_CUDA(cudaFree(d_mean));
}

// The FP8 classifier on the same inputs: calibration pass (amax only), then the quantizing pass with the
// fitted scale (or 4x it: the target entries, the largest |g|, saturate).
void check_fp8_classifier(int N, int V, Fp8Dtype d, bool saturate) {
    using namespace fp8_test;
    printf("  N=%d V=%d %s%s\n", N, V, name(d), saturate ? " saturating" : "");
    const ClassifierCase k(N, V);
    const std::vector<float>& logits = k.logits;
    const std::vector<int>& targets = k.targets;
    const float dloss = k.dloss;
    const std::vector<float>& ref_dlogits = k.ref_dlogits;
    Allocs A;
    bf16* d_logits = A(dev::to_device_bf16(logits));
    int* d_targets = A(dev::to_device(targets));
    float* d_losses = A(dev::device_alloc<float>(N));
    fused_classifier(d_logits, d_losses, d_targets, dloss, N, V, false, 0);
    const std::vector<float> bf16_losses = dev::from_device(d_losses, N);

    Fp8ScaleState st = fp8_scale_state_create({d}, 2);
    float* staging = fp8_staging_amax(&st);
    CHECK_CUDA(cudaMemset(d_losses, 0xFF, N * sizeof(float)));
    fp8_fused_classifier_amax(d_logits, d_losses, d_targets, dloss, fp8_test::amax_tensor(st, 0, N, V), 0);
    const float amax = dev::from_device(staging, 1)[0];
    // The losses are the BF16 kernel's code: the same bits.
    EXPECT_TRUE(testing::same_bits(dev::from_device(d_losses, N), bf16_losses));
    // amax = max |g| of the fp32 g, whose relative error is <= ~2e-5 (the BF16 test's derivation; the largest
    // |g| is a target entry p - 1 ~ -1, where the absolute error 2e-5 * dloss is relative too).
    float ref_amax = 0.0f;
    for (float g : ref_dlogits) ref_amax = std::max(ref_amax, std::fabs(g));
    testing::expect_close("amax", {amax}, {ref_amax}, 0.0, 2e-5);

    float scale = fp8_compute_scale(amax, fp8_dtype_max(d), 0, 1.0f);
    if (saturate) scale *= 4.0f;
    upload_scale(&st, 0, scale);
    CHECK_CUDA(cudaMemset(staging, 0, sizeof(float)));
    CHECK_CUDA(cudaMemset(d_losses, 0xFF, N * sizeof(float)));
    fp8b* d_q = A(dev::device_alloc<fp8b>((size_t)N * V));
    float* d_sinv = A(dev::device_alloc<float>(1));
    const Fp8Tensor dy = fp8_test::tensor(st, d_q, nullptr, d_sinv, 0, N, V, d);
    fp8_fused_classifier(d_logits, d_losses, d_targets, dloss, dy, 0);
    const std::vector<uint8_t> q = dev::from_device(d_q, (size_t)N * V);
    EXPECT_TRUE(testing::same_bits(dev::from_device(d_losses, N), bf16_losses));
    EXPECT_EQ(fp8_float_bits(dev::from_device(staging, 1)[0]), fp8_float_bits(amax));  // as the amax pass
    EXPECT_EQ(fp8_float_bits(dev::from_device(d_sinv, 1)[0]), fp8_float_bits(fp8_compute_scale_inv(scale)));
    EXPECT_TRUE(testing::same_bits(dev::from_device_bf16(d_logits, (size_t)N * V), logits));  // read only

    // Against the float64 reference quantized on the CPU with the same scale. Non-target entries: a code
    // differs only where the reference lies within the GPU's fp32 error (relative <= 2e-5) of a rounding
    // midpoint; midpoints are >= 2^-4 (E4M3) / 2^-3 (E5M2) of the value apart, so at most a 2 * 2e-5 / 2^-4 =
    // 6.4e-4 fraction of them (fewer in the subnormal range, where the spacing is absolute), and never by
    // more than one code. Target entries: p - 1 cancels when p ~ 1, leaving the absolute error 2e-5 * dloss,
    // which near 0 spans many codes: their decoded value is checked instead, within that error plus half a
    // code (relative 2^-4 / 2^-3, or half the smallest subnormal 2^-10 / 2^-17 over the scale) of the
    // reference clipped to the format's range.
    std::vector<uint8_t> got_o, ref_o;
    const float fmax = fp8_dtype_max(d), half_code = d == Fp8Dtype::E4M3 ? 0.0625f : 0.125f;
    const float half_sub = (d == Fp8Dtype::E4M3 ? std::ldexp(1.0f, -10) : std::ldexp(1.0f, -17)) / scale;
    double worst_t = 0.0;
    for (int n = 0; n < N; n++)
        for (int v = 0; v < V; v++) {
            const size_t i = (size_t)n * V + v;
            if (v != targets[n]) {
                got_o.push_back(q[i]);
                ref_o.push_back(ref_fp8_quantize(ref_dlogits[i], scale, d));
                continue;
            }
            const float clipped = std::max(-fmax / scale, std::min(fmax / scale, ref_dlogits[i]));
            const double err = std::fabs((double)ref_fp8_decode(q[i], d) / scale - clipped);
            const double tol = 2e-5 * dloss + half_code * std::fabs(clipped) + half_sub;
            worst_t = std::max(worst_t, err / tol);
        }
    expect_bytes_near("dlogits (non-target) vs float64 reference", got_o, ref_o,
                      (size_t)(1e-3 * got_o.size()) + 1);
    printf("  dlogits (target): worst error %.3f of its tolerance\n", worst_t);
    EXPECT_TRUE(worst_t <= 1.0);
    const size_t sat =
        check_saturation(ref_dlogits, q, scale, d);  // every saturating element is the max code
    if (saturate) EXPECT_TRUE(sat > 0);

    // The byte transpose the LM head's wgrad reads: exactly the bytes, transposed.
    fp8b* d_qT = A(dev::device_alloc<fp8b>((size_t)N * V));
    fp8_transpose(fp8_test::tensor(st, d_q, d_qT, d_sinv, 0, N, V, d), 0);
    testing::expect_same_bits("fp8_transpose", transpose_bytes(dev::from_device(d_qT, (size_t)N * V), N, V),
                              q);
    fp8_scale_state_destroy(&st);
}

}  // namespace

TEST(classifier_fp8_dlogits) {
    check_fp8_classifier(48, 400, Fp8Dtype::E5M2, false);  // neither N nor V a multiple of the 128 tile
    check_fp8_classifier(64, 50304, Fp8Dtype::E5M2, false);
    check_fp8_classifier(32, 50304, Fp8Dtype::E5M2, true);
    check_fp8_classifier(48, 1024, Fp8Dtype::E4M3, false);
}

TEST(classifier_small_vocab) {
    check_classifier(37, 512);
    check_classifier(1000, 256);
    check_classifier(5, 16);  // fewer 16-byte vectors than one warp
}

TEST(classifier_gpt2_vocab) { check_classifier(37, 50304); }

// Two runs on the same input give bitwise identical losses and dlogits (fixed reduction order).
TEST(classifier_deterministic) {
    const int N = 64, V = 50304;
    std::vector<float> logits;
    std::vector<int> targets;
    make_inputs(N, V, &logits, &targets);
    int* d_targets = dev::to_device(targets);
    std::vector<float> out[2], loss[2];
    for (int r = 0; r < 2; r++) {
        bf16* d_logits = dev::to_device_bf16(logits);
        float* d_losses = dev::device_alloc<float>(N);
        fused_classifier(d_logits, d_losses, d_targets, 1.0f / N, N, V, true, 0);
        out[r] = dev::from_device_bf16(d_logits, (size_t)N * V);
        loss[r] = dev::from_device(d_losses, N);
        CHECK_CUDA(cudaFree(d_logits));
        CHECK_CUDA(cudaFree(d_losses));
    }
    EXPECT_TRUE(testing::same_bits(out[0], out[1]));
    EXPECT_TRUE(testing::same_bits(loss[0], loss[1]));
    CHECK_CUDA(cudaFree(d_targets));
}

// An out-of-range target yields a NaN loss (the trainer can detect it) instead of reading out of bounds; the
// valid rows are unaffected.
TEST(classifier_bad_target) {
    const int N = 3, V = 256;
    std::vector<float> logits;
    std::vector<int> targets;
    make_inputs(N, V, &logits, &targets);
    targets[0] = 5;
    targets[1] = -1;
    targets[2] = V;
    bf16* d_logits = dev::to_device_bf16(logits);
    int* d_targets = dev::to_device(targets);
    float* d_losses = dev::device_alloc<float>(N);
    fused_classifier(d_logits, d_losses, d_targets, 1.0f, N, V, true, 0);
    const std::vector<float> losses = dev::from_device(d_losses, N);
    EXPECT_TRUE(std::isfinite(losses[0]));
    EXPECT_TRUE(std::isnan(losses[1]));
    EXPECT_TRUE(std::isnan(losses[2]));
    CHECK_CUDA(cudaFree(d_logits));
    CHECK_CUDA(cudaFree(d_targets));
    CHECK_CUDA(cudaFree(d_losses));
}

// GPT-2 1.5B size: B*T = 12288 rows of V = 50304. Bytes: read + write of the bf16 logits (the second read of
// each row is meant to hit L2; if it does not, the achieved figure drops toward 2/3 of the bandwidth); the
// loss-only mode reads them once.
BENCH(fused_classifier_gpt1p5b) {
    const int N = 12288, V = 50304, R = 64;
    std::vector<float> block;
    std::vector<int> targets_r;
    make_inputs(R, V, &block, &targets_r);
    bf16* d_block = dev::to_device_bf16(block);
    bf16* d_logits = dev::device_alloc<bf16>((size_t)N * V);
    for (int n = 0; n < N; n += R)
        CHECK_CUDA(cudaMemcpy(d_logits + (size_t)n * V, d_block, (size_t)R * V * sizeof(bf16),
                              cudaMemcpyDeviceToDevice));
    int* d_targets = dev::to_device(dev::random_ints(N, 0, V));
    float* d_losses = dev::device_alloc<float>(N);
    const double bytes = 2.0 * N * V * sizeof(bf16);
    const std::string shape = bench::fmt("N=%d,V=%d", N, V);
    // Later repetitions run on the previous dlogits: finite values, same work.
    float ms =
        dev::time_ms([&] { fused_classifier(d_logits, d_losses, d_targets, 1.0f / N, N, V, true, 0); });
    bench::report_bandwidth("fused_classifier", shape, ms, bytes);
    ms = dev::time_ms([&] { fused_classifier(d_logits, d_losses, d_targets, 1.0f / N, N, V, false, 0); });
    bench::report_bandwidth("fused_classifier", shape + ",loss-only", ms, bytes / 2);
    // The FP8 LM head's path: BF16 logits read (twice, the second from L2) and E5M2 dlogits written, then
    // the byte transpose (read + write one byte each); it replaced BF16 dlogits + a cast-transpose of them.
    {
        Fp8ScaleState st = fp8_scale_state_create({Fp8Dtype::E5M2}, 2);
        fp8_test::upload_scale(&st, 0, 57344.0f * N);
        for (int n = 0; n < N; n += R)  // fresh logits (the BF16 runs above left dlogits)
            CHECK_CUDA(cudaMemcpy(d_logits + (size_t)n * V, d_block, (size_t)R * V * sizeof(bf16),
                                  cudaMemcpyDeviceToDevice));
        __nv_fp8_storage_t *d_q = dev::device_alloc<__nv_fp8_storage_t>((size_t)N * V),
                           *d_qT = dev::device_alloc<__nv_fp8_storage_t>((size_t)N * V);
        const Fp8Tensor dy = fp8_test::tensor(st, d_q, d_qT, nullptr, 0, N, V, Fp8Dtype::E5M2);
        ms = dev::time_ms([&] { fp8_fused_classifier(d_logits, d_losses, d_targets, 1.0f / N, dy, 0); });
        bench::report_budget("fp8_fused_classifier", shape + ",e5m2", ms, 3.0 * N * V, 1);
        ms = dev::time_ms([&] { fp8_transpose(dy, 0); });
        bench::report_budget("fp8_transpose", shape, ms, 2.0 * N * V, 1);
        CHECK_CUDA(cudaFree(d_q));
        CHECK_CUDA(cudaFree(d_qT));
        fp8_scale_state_destroy(&st);
    }
    CHECK_CUDA(cudaFree(d_block));
    CHECK_CUDA(cudaFree(d_logits));
    CHECK_CUDA(cudaFree(d_targets));
    CHECK_CUDA(cudaFree(d_losses));
}

TEST_MAIN()
