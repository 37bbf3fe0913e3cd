// Tests for llmc/kernels/adamw/adamw_fp8.cuh (AdamW fused with the FP8 cast of the weight it updates): on
// fresh random weights, moments and gradients, the fused kernel must give
//   - bitwise the results of the unfused pair it replaces (adamw_update with device scalars and no BF16
//     copy, then fp8_cast_transpose of the FP32 master): master, m, v, W, W^T, scale_inv and staging amax;
//   - master/m/v within the AdamW tolerances of dev/test_adamw.cu against a float64 CPU reference, and W /
//     W^T exactly the host quantization of the GPU's new master (the conversion is exact given its input),
//     the staging amax exactly max |master|;
//   - for a skipped step (apply = 0): master, m, v bitwise untouched and W the quantization of the old
//   master.
// Shapes: partial 128-row/column tiles, more tiles than one wave of blocks, and a GPT-2 1.5B fc weight.
// Benchmark (--bench): fused vs unfused at the 1.5B fc shape.
#include "dev/byte_budget.h"
#include "dev/fp8_test_utils.h"
#include "llmc/kernels/adamw/adamw_fp8.cuh"
#include "test/reference/adamw.h"

using namespace fp8_test;

namespace {

// The weight's FP8 tensor: W [OC, C] and W^T [C, OC], E4M3 (the weights' format), slot `slot`.
Fp8Tensor w_tensor(const Fp8ScaleState& st, fp8b* w, fp8b* wT, float* scale_inv, int slot, int OC, int C) {
    return tensor(st, w, wT, scale_inv, slot, OC, C, Fp8Dtype::E4M3);
}

constexpr float kLr = 1e-3f, kBeta1 = 0.9f, kBeta2 = 0.95f, kEps = 1e-8f, kWd = 0.1f;
constexpr int kStep = 3;
constexpr float kGradScale = 0.75f;

struct Inputs {
    std::vector<float> master, m, v, grads;  // grads rounded to bf16
};
Inputs random_inputs(size_t n) {
    Inputs in{dev::random_normal(n, 0.0f, 0.02f), dev::random_normal(n, 0.0f, 0.01f),
              dev::random_uniform(n, 0.01f, 0.1f), dev::random_normal(n)};
    ref_round_to_bf16(in.grads);
    return in;
}

// The state after one call on device copies of `in`: master, m, v, W, W^T, scale_inv, staging amax.
struct Outputs {
    std::vector<float> master, m, v;
    std::vector<uint8_t> w, wT;
    float scale_inv, amax;
};

Outputs run(const Inputs& in, int OC, int C, float scale, int apply, bool fused) {
    const size_t n = (size_t)OC * C;
    Allocs A;
    float *d_master = A(dev::to_device(in.master)), *d_m = A(dev::to_device(in.m)),
          *d_v = A(dev::to_device(in.v));
    bf16* d_grads = A(dev::to_device_bf16(in.grads));
    fp8b *d_w = A(dev::device_alloc<fp8b>(n)), *d_wT = A(dev::device_alloc<fp8b>(n));
    float* d_scale_inv = A(dev::device_alloc<float>(1));
    float* d_grad_scale = A(dev::to_device(std::vector<float>{kGradScale}));
    int* d_apply = A(dev::to_device(std::vector<int>{apply}));
    const AdamWStepScalars scalars = adamw_step_scalars(kLr, kBeta1, kBeta2, kWd, kStep);
    AdamWStepScalars* d_scalars = A(dev::device_alloc<AdamWStepScalars>(1));
    CHECK_CUDA(cudaMemcpy(d_scalars, &scalars, sizeof(scalars), cudaMemcpyHostToDevice));
    Fp8ScaleState st = fp8_scale_state_create({Fp8Dtype::E5M2, Fp8Dtype::E4M3}, 4);
    upload_scale(&st, 1, scale);
    if (fused) {
        adamw_update_fp8_weight(d_master, d_m, d_v, d_grads, kBeta1, kBeta2, kEps, d_scalars, d_grad_scale,
                                d_apply, w_tensor(st, d_w, d_wT, d_scale_inv, 1, OC, C), 0);
    } else {
        adamw_update(d_master, nullptr, d_m, d_v, d_grads, n, kBeta1, kBeta2, kEps, d_scalars, d_grad_scale,
                     d_apply, 0);
        fp8_cast_transpose(d_master, w_tensor(st, d_w, d_wT, d_scale_inv, 1, OC, C), 0);
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    Outputs o{dev::from_device(d_master, n),
              dev::from_device(d_m, n),
              dev::from_device(d_v, n),
              dev::from_device(reinterpret_cast<uint8_t*>(d_w), n),
              dev::from_device(reinterpret_cast<uint8_t*>(d_wT), n),
              dev::from_device(d_scale_inv, 1)[0],
              dev::from_device(fp8_staging_amax(&st) + 1, 1)[0]};
    fp8_scale_state_destroy(&st);
    return o;
}

void check_shape(int OC, int C) {
    const size_t n = (size_t)OC * C;
    printf("  OC = %d, C = %d\n", OC, C);
    const Inputs in = random_inputs(n);
    float amax0 = 0;
    for (float x : in.master) amax0 = std::max(amax0, std::fabs(x));
    const float scale = 448.0f / amax0 * 0.5f;  // delayed scaling: last step's amax, some headroom

    const Outputs fused = run(in, OC, C, scale, 1, true), unfused = run(in, OC, C, scale, 1, false);
    EXPECT_TRUE(testing::same_bits(fused.master, unfused.master));
    EXPECT_TRUE(testing::same_bits(fused.m, unfused.m));
    EXPECT_TRUE(testing::same_bits(fused.v, unfused.v));
    EXPECT_TRUE(fused.w == unfused.w);
    EXPECT_TRUE(fused.wT == unfused.wT);
    EXPECT_TRUE(testing::same_bits({fused.scale_inv, fused.amax}, {unfused.scale_inv, unfused.amax}));

    // Against the CPU: AdamW tolerances of dev/test_adamw.cu (fp32 rounding of a handful of ops relative to
    // |p| ~ 0.02 and the update ~ lr), then the exact quantization of what the GPU computed.
    Inputs ref = in;
    const RefAdamW h{kLr, kBeta1, kBeta2, kEps, kWd};
    ref_adamw_step(&ref.master, &ref.m, &ref.v, ref.grads, kGradScale, h, kStep);
    testing::expect_close("master", fused.master, ref.master, 1e-5 * kLr, 1e-6);
    testing::expect_close("m", fused.m, ref.m, 1e-6, 1e-6);
    testing::expect_close("v", fused.v, ref.v, 1e-12, 1e-6);
    std::vector<uint8_t> q, qT;
    ref_fp8_quantize_transpose(fused.master, OC, C, scale, Fp8Dtype::E4M3, q, qT);
    testing::expect_same_bits("W", fused.w, q);
    testing::expect_same_bits("W^T", fused.wT, qT);
    uint32_t got_amax = 0;
    memcpy(&got_amax, &fused.amax, 4);
    EXPECT_EQ(got_amax, ref_amax_bits(fused.master));
    EXPECT_TRUE(fused.scale_inv == fp8_compute_scale_inv(scale));

    // A skipped step: nothing moves, W is the old master quantized.
    const Outputs skipped = run(in, OC, C, scale, 0, true);
    EXPECT_TRUE(testing::same_bits(skipped.master, in.master));
    EXPECT_TRUE(testing::same_bits(skipped.m, in.m));
    EXPECT_TRUE(testing::same_bits(skipped.v, in.v));
    ref_fp8_quantize_transpose(in.master, OC, C, scale, Fp8Dtype::E4M3, q, qT);
    testing::expect_same_bits("W (skipped step)", skipped.w, q);
    testing::expect_same_bits("W^T (skipped step)", skipped.wT, qT);
}

// --adam-moments bf16: the fused kernel with BF16 moments must give bitwise the unfused pair with BF16
// moments (master, m, v, W, W^T, scale_inv, amax), for an applied and a skipped step.
void check_bf16_moments(int OC, int C) {
    const size_t n = (size_t)OC * C;
    printf("  bf16 moments: OC = %d, C = %d\n", OC, C);
    Inputs in = random_inputs(n);
    ref_round_to_bf16(in.m);
    ref_round_to_bf16(in.v);
    const float scale = 1000.0f;
    for (int apply : {1, 0}) {
        std::vector<float> out[2][3];
        std::vector<uint8_t> w[2], wT[2];
        for (int fused = 0; fused < 2; fused++) {
            Allocs A;
            float* d_master = A(dev::to_device(in.master));
            bf16 *d_m = A(dev::to_device_bf16(in.m)), *d_v = A(dev::to_device_bf16(in.v));
            bf16* d_grads = A(dev::to_device_bf16(in.grads));
            fp8b *d_w = A(dev::device_alloc<fp8b>(n)), *d_wT = A(dev::device_alloc<fp8b>(n));
            float* d_scale_inv = A(dev::device_alloc<float>(1));
            int* d_apply = A(dev::to_device(std::vector<int>{apply}));
            const AdamWStepScalars scalars = adamw_step_scalars(kLr, kBeta1, kBeta2, kWd, kStep);
            AdamWStepScalars* d_scalars = A(dev::device_alloc<AdamWStepScalars>(1));
            CHECK_CUDA(cudaMemcpy(d_scalars, &scalars, sizeof(scalars), cudaMemcpyHostToDevice));
            Fp8ScaleState st = fp8_scale_state_create({Fp8Dtype::E4M3}, 4);
            upload_scale(&st, 0, scale);
            if (fused) {
                adamw_update_fp8_weight(d_master, d_m, d_v, d_grads, kBeta1, kBeta2, kEps, d_scalars, nullptr,
                                        d_apply, w_tensor(st, d_w, d_wT, d_scale_inv, 0, OC, C), 0);
            } else {
                adamw_update(d_master, (bf16*)nullptr, d_m, d_v, d_grads, n, kBeta1, kBeta2, kEps, d_scalars,
                             nullptr, d_apply, 0);
                fp8_cast_transpose(d_master, w_tensor(st, d_w, d_wT, d_scale_inv, 0, OC, C), 0);
            }
            CHECK_CUDA(cudaDeviceSynchronize());
            out[fused][0] = dev::from_device(d_master, n);
            out[fused][1] = dev::from_device_bf16(d_m, n);
            out[fused][2] = dev::from_device_bf16(d_v, n);
            w[fused] = dev::from_device(reinterpret_cast<uint8_t*>(d_w), n);
            wT[fused] = dev::from_device(reinterpret_cast<uint8_t*>(d_wT), n);
            fp8_scale_state_destroy(&st);
        }
        for (int k = 0; k < 3; k++) EXPECT_TRUE(testing::same_bits(out[1][k], out[0][k]));
        EXPECT_TRUE(w[1] == w[0]);
        EXPECT_TRUE(wT[1] == wT[0]);
        if (apply)
            EXPECT_TRUE(!testing::same_bits(out[1][1], in.m));  // the moments did move
        else
            EXPECT_TRUE(testing::same_bits(out[1][1], in.m) && testing::same_bits(out[1][0], in.master));
    }
}

// adamw_update_fp8_weights (one launch for L layers at one stride) against one adamw_update_fp8_weight call
// per layer, each layer with its own slot and scale: bitwise the same master, moments, W, W^T, scale_inv and
// amax per layer. MT: the moments' storage.
template <class MT>
void check_grouped(int L, int OC, int C) {
    const size_t n = (size_t)OC * C, nl = n * L;
    printf("  %d layers of OC = %d, C = %d, %s moments\n", L, OC, C, sizeof(MT) == 2 ? "bf16" : "fp32");
    Inputs in = random_inputs(nl);
    if (sizeof(MT) == 2) ref_round_to_bf16(in.m), ref_round_to_bf16(in.v);
    std::vector<Fp8Dtype> formats(L, Fp8Dtype::E4M3);
    std::vector<float> scales(L);
    for (int l = 0; l < L; l++) scales[l] = 500.0f * (float)(l + 1);  // a scale of its own per layer
    const auto to_dev_moments = [](const std::vector<float>& x) {
        if constexpr (sizeof(MT) == 2)
            return dev::to_device_bf16(x);
        else
            return dev::to_device(x);
    };
    const auto from_dev_moments = [&](const MT* d) {
        if constexpr (sizeof(MT) == 2)
            return dev::from_device_bf16(d, nl);
        else
            return dev::from_device(d, nl);
    };
    std::vector<float> out[2][3];
    std::vector<uint8_t> w[2], wT[2];
    std::vector<float> scale_inv[2], amax[2];
    for (int grouped = 0; grouped < 2; grouped++) {
        Allocs A;
        float* d_master = A(dev::to_device(in.master));
        MT *d_m = A(to_dev_moments(in.m)), *d_v = A(to_dev_moments(in.v));
        bf16* d_grads = A(dev::to_device_bf16(in.grads));
        fp8b *d_w = A(dev::device_alloc<fp8b>(nl)), *d_wT = A(dev::device_alloc<fp8b>(nl));
        float* d_scale_inv = A(dev::device_alloc<float>(L));
        float* d_grad_scale = A(dev::to_device(std::vector<float>{kGradScale}));
        int* d_apply = A(dev::to_device(std::vector<int>{1}));
        const AdamWStepScalars scalars = adamw_step_scalars(kLr, kBeta1, kBeta2, kWd, kStep);
        AdamWStepScalars* d_scalars = A(dev::device_alloc<AdamWStepScalars>(1));
        CHECK_CUDA(cudaMemcpy(d_scalars, &scalars, sizeof(scalars), cudaMemcpyHostToDevice));
        Fp8ScaleState st = fp8_scale_state_create(formats, 4);
        upload_scales(&st, scales);
        const auto layer_tensor = [&](int l) {
            return w_tensor(st, d_w + l * n, d_wT + l * n, d_scale_inv + l, l, OC, C);
        };
        if (grouped) {
            AdamWFp8Layers layers;
            layers.layer_stride = n;
            for (int l = 0; l < L; l++) layers.add(layer_tensor(l));
            adamw_update_fp8_weights(d_master, d_m, d_v, d_grads, kBeta1, kBeta2, kEps, d_scalars,
                                     d_grad_scale, d_apply, layers, OC, C, Fp8Dtype::E4M3, 0);
        } else {
            for (int l = 0; l < L; l++)
                adamw_update_fp8_weight(d_master + l * n, d_m + l * n, d_v + l * n, d_grads + l * n, kBeta1,
                                        kBeta2, kEps, d_scalars, d_grad_scale, d_apply, layer_tensor(l), 0);
        }
        CHECK_CUDA(cudaDeviceSynchronize());
        out[grouped][0] = dev::from_device(d_master, nl);
        out[grouped][1] = from_dev_moments(d_m);
        out[grouped][2] = from_dev_moments(d_v);
        w[grouped] = dev::from_device(reinterpret_cast<uint8_t*>(d_w), nl);
        wT[grouped] = dev::from_device(reinterpret_cast<uint8_t*>(d_wT), nl);
        scale_inv[grouped] = dev::from_device(d_scale_inv, L);
        amax[grouped] = dev::from_device(fp8_staging_amax(&st), L);
        fp8_scale_state_destroy(&st);
    }
    for (int k = 0; k < 3; k++) EXPECT_TRUE(testing::same_bits(out[1][k], out[0][k]));
    EXPECT_TRUE(w[1] == w[0]);
    EXPECT_TRUE(wT[1] == wT[0]);
    EXPECT_TRUE(testing::same_bits(scale_inv[1], scale_inv[0]));
    EXPECT_TRUE(testing::same_bits(amax[1], amax[0]));
    EXPECT_TRUE(!testing::same_bits(out[1][1], in.m));                            // the moments did move
    for (int l = 1; l < L; l++) EXPECT_TRUE(scale_inv[1][l] != scale_inv[1][0]);  // each layer its own slot
}

}  // namespace

TEST(adamw_fp8_weight_bf16_moments) {
    check_bf16_moments(400, 208);
    check_bf16_moments(6400, 1600);
}
TEST(adamw_fp8_weight_partial_tiles) { check_shape(400, 208); }
TEST(adamw_fp8_weights_grouped) {
    check_grouped<float>(3, 400, 208);
    check_grouped<bf16>(3, 400, 208);
    check_grouped<float>(12, 768, 768);  // GPT-2 124M's attention projections
}
// More tiles (32 x 13 = 416) than one wave of resident blocks (264 on an H200), partial in both directions:
// tiles of later waves and their amax atomics.
TEST(adamw_fp8_weight_many_tiles) { check_shape(4016, 1616); }
TEST(adamw_fp8_weight_gpt1p5b_fc) { check_shape(6400, 1600); }

// Bytes: master, m, v read and written (24), grads read (2), W and W^T written (2) per weight; the unfused
// pair also writes nothing to params but reads the master again (4) in the cast. Each of GPT-1.5B's four
// Linear weights [OC, C] of a layer (qkv, attention projection, fc, MLP projection); unfused only for fc.
static void bench_adamw_fp8_weight(int OC, int C, bool unfused_too) {
    const size_t n = (size_t)OC * C;
    const Inputs in = random_inputs(n);
    Allocs A;
    float *d_master = A(dev::to_device(in.master)), *d_m = A(dev::to_device(in.m)),
          *d_v = A(dev::to_device(in.v));
    bf16* d_grads = A(dev::to_device_bf16(in.grads));
    fp8b *d_w = A(dev::device_alloc<fp8b>(n)), *d_wT = A(dev::device_alloc<fp8b>(n));
    float* d_scale_inv = A(dev::device_alloc<float>(1));
    const AdamWStepScalars scalars = adamw_step_scalars(kLr, kBeta1, kBeta2, kWd, kStep);
    AdamWStepScalars* d_scalars = A(dev::device_alloc<AdamWStepScalars>(1));
    CHECK_CUDA(cudaMemcpy(d_scalars, &scalars, sizeof(scalars), cudaMemcpyHostToDevice));
    Fp8ScaleState st = fp8_scale_state_create({Fp8Dtype::E4M3}, 4);
    upload_scale(&st, 0, 1000.0f);
    const float fused = dev::time_ms([&] {
        adamw_update_fp8_weight(d_master, d_m, d_v, d_grads, kBeta1, kBeta2, kEps, d_scalars, nullptr,
                                nullptr, w_tensor(st, d_w, d_wT, d_scale_inv, 0, OC, C), 0);
    });
    bench::report_budget("adamw_fp8_weight", bench::fmt("%dx%d,fused", OC, C), fused, 28.0 * n, 48);
    if (unfused_too) {
        const float unfused = dev::time_ms([&] {
            adamw_update(d_master, nullptr, d_m, d_v, d_grads, n, kBeta1, kBeta2, kEps, d_scalars, nullptr,
                         nullptr, 0);
            fp8_cast_transpose(d_master, w_tensor(st, d_w, d_wT, d_scale_inv, 0, OC, C), 0);
        });
        bench::report_bandwidth("adamw_fp8_weight", bench::fmt("%dx%d,unfused", OC, C), unfused, 32.0 * n);
    }
    fp8_scale_state_destroy(&st);
}
BENCH(adamw_fp8_weight_gpt1p5b) {
    bench_adamw_fp8_weight(4800, 1600, false);
    bench_adamw_fp8_weight(1600, 1600, false);
    bench_adamw_fp8_weight(6400, 1600, true);
    bench_adamw_fp8_weight(1600, 6400, false);
}

TEST_MAIN()
