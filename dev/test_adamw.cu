// Tests for llmc/kernels/adamw/adamw.cuh: several AdamW steps against the float64 CPU reference (each step
// from the GPU's previous fp32 state, so the per-step error is measured), weight decay on/off, grad_scale !=
// 1, a P that is not a multiple of 8, misaligned views (head peeling and the element fallback). Benchmark
// (--bench): the bandwidth at 1.5B.
#include <cstring>

#include "dev/byte_budget.h"
#include "dev/dev_utils.h"
#include "llmc/kernels/adamw/adamw.cuh"
#include "test/reference/adamw.h"

namespace {

using Hyper = RefAdamW;  // lr 1e-3, betas (0.9, 0.95), eps 1e-8, weight decay 0.1

// Runs `steps` steps on views that start `offset_*` elements into their allocations and checks each one.
// grad_scale_value < 0: pass nullptr (scale 1).
void check_adamw(size_t P, Hyper h, float grad_scale_value, size_t offset_master, size_t offset_rest,
                 int steps) {
    printf("  P=%zu wd=%g grad_scale=%g offsets master %zu / others %zu\n", P, h.weight_decay,
           grad_scale_value, offset_master, offset_rest);
    std::vector<float> master = dev::random_normal(P, 0.0f, 0.1f);
    // Nonzero moments (a kernel that ignored them would pass a zero start), sized like a few steps of history
    // so that |mhat| / sqrt(vhat) stays O(1) and the update |u| <~ 10 lr.
    std::vector<float> m = dev::random_normal(P, 0.0f, 0.01f);
    std::vector<float> v = dev::random_uniform(P, 0.01f, 0.1f);
    std::vector<float> pad_m(offset_master, 0.0f), pad_r(offset_rest, 0.0f);
    auto with_pad = [](const std::vector<float>& pad, const std::vector<float>& x) {
        std::vector<float> out(pad);
        out.insert(out.end(), x.begin(), x.end());
        return out;
    };
    float* d_master_alloc = dev::to_device(with_pad(pad_m, master));
    float* d_m_alloc = dev::to_device(with_pad(pad_r, m));
    float* d_v_alloc = dev::to_device(with_pad(pad_r, v));
    bf16* d_params_alloc =
        dev::device_alloc<bf16>(P + offset_rest);  // poisoned: every element must be written
    bf16* d_grads_alloc = dev::device_alloc<bf16>(P + offset_rest);
    float* d_master = d_master_alloc + offset_master;
    float *d_m = d_m_alloc + offset_rest, *d_v = d_v_alloc + offset_rest;
    bf16 *d_params = d_params_alloc + offset_rest, *d_grads = d_grads_alloc + offset_rest;
    float* d_scale = grad_scale_value < 0 ? nullptr : dev::to_device(std::vector<float>{grad_scale_value});
    const float scale = grad_scale_value < 0 ? 1.0f : grad_scale_value;

    for (int t = 1; t <= steps; t++) {
        std::vector<float> grads = dev::random_normal(P);
        ref_round_to_bf16(grads);
        dev::copy_to_device_bf16(d_grads, grads);
        // Reference from the GPU's current state.
        std::vector<float> ref_master = dev::from_device(d_master, P), ref_m = dev::from_device(d_m, P),
                           ref_v = dev::from_device(d_v, P);
        ref_adamw_step(&ref_master, &ref_m, &ref_v, grads, scale, h, t);

        adamw_update(d_master, d_params, d_m, d_v, d_grads, P, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay,
                     t, d_scale, 0);
        CHECK_CUDA(cudaDeviceSynchronize());
        const std::vector<float> got_master = dev::from_device(d_master, P), got_m = dev::from_device(d_m, P),
                                 got_v = dev::from_device(d_v, P),
                                 got_params = dev::from_device_bf16(d_params, P);
        printf("  step %d\n", t);
        // master: fp32 arithmetic, PyTorch's op order. The decay product and the final fma round at 2^-24
        // relative of |p| each; the update u (|u| <~ 10 lr here) carries ~8 roundings (g*scale, m, v, sqrt,
        // two divisions, eps add, the fp32 step_size/bc2_sqrt) ~ 5e-7 relative, plus a cancellation in m of
        // at most 2^-24 * (|m| + |g|) absolute. -> rtol 1e-6 (8 ulp of p), atol 1e-5 * lr.
        testing::expect_close("master", got_master, ref_master, 1e-5 * h.lr, 1e-6);
        // m = lerp(m, g, 0.1): the fma rounds once at 2^-24 of |m| and g - m rounds at 2^-24 of |g - m|
        // scaled by 0.1; |m|, |g| <~ 4 -> absolute <= ~3e-7 where m cancels -> atol 1e-6, rtol 1e-6.
        testing::expect_close("m", got_m, ref_m, 1e-6, 1e-6);
        // v = 0.95 v + 0.05 g^2: positive terms, no cancellation, <= 4 roundings -> rtol 1e-6.
        testing::expect_close("v", got_v, ref_v, 1e-12, 1e-6);
        // params must be exactly bf16_rn(new master) ...
        size_t mismatches = 0;
        for (size_t i = 0; i < P; i++)
            if (!(got_params[i] == ref_bf16_round(got_master[i]))) mismatches++;
        if (mismatches)
            testing::fail(__FILE__, __LINE__, std::to_string(mismatches) + " params != bf16(master)");
        // ... hence within one bf16 rounding (2^-8 relative) of the reference master.
        testing::expect_close("params vs ref master", got_params, ref_master, 1e-5 * h.lr,
                              testing::kBf16Eps + 2e-6);
    }
    for (void* ptr : {(void*)d_master_alloc, (void*)d_m_alloc, (void*)d_v_alloc, (void*)d_params_alloc,
                      (void*)d_grads_alloc, (void*)d_scale})
        if (ptr) CHECK_CUDA(cudaFree(ptr));
}

// ZeRO-1 shard view: master/m/v hold rank r's chunk of every slice, grads/params are the full tensor. One
// step against the reference over the mapped gradients; params written exactly at the shard's positions
// (bf16 of the new master), every other element left as it was (the poison bytes).
void check_adamw_shard(size_t slices, size_t slice, int world, int rank) {
    const ShardView view = ShardView::of(slice, rank, world);
    const size_t P = slices * view.chunk, full = slices * slice;
    printf("  shard view: %zu slices of %zu, rank %d of %d (%zu elements)\n", slices, slice, rank, world, P);
    Hyper h;
    std::vector<float> master = dev::random_normal(P, 0.0f, 0.1f), m = dev::random_normal(P, 0.0f, 0.01f),
                       v = dev::random_uniform(P, 0.01f, 0.1f), grads_full = dev::random_normal(full);
    ref_round_to_bf16(grads_full);
    std::vector<float> grads(P);
    for (size_t i = 0; i < P; i++) grads[i] = grads_full[view.map(i)];
    float *d_master = dev::to_device(master), *d_m = dev::to_device(m), *d_v = dev::to_device(v);
    bf16* d_grads = dev::to_device_bf16(grads_full);
    bf16* d_params = dev::device_alloc<bf16>(full);  // 0xFFFF everywhere
    ref_adamw_step(&master, &m, &v, grads, 1.0f, h, 1);
    adamw_update(d_master, d_params, d_m, d_v, d_grads, P, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, 1,
                 nullptr, 0, view);
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> got_master = dev::from_device(d_master, P);
    // tolerances as in check_adamw
    testing::expect_close("master (shard)", got_master, master, 1e-5 * h.lr, 1e-6);
    testing::expect_close("m (shard)", dev::from_device(d_m, P), m, 1e-6, 1e-6);
    testing::expect_close("v (shard)", dev::from_device(d_v, P), v, 1e-12, 1e-6);
    std::vector<uint16_t> params(full);
    CHECK_CUDA(cudaMemcpy(params.data(), d_params, full * sizeof(bf16), cudaMemcpyDeviceToHost));
    std::vector<bool> mine(full, false);
    size_t wrong = 0;
    for (size_t i = 0; i < P; i++) {
        mine[view.map(i)] = true;
        const float want = ref_bf16_round(got_master[i]);
        uint32_t bits = (uint32_t)params[view.map(i)] << 16;
        float got;
        memcpy(&got, &bits, 4);
        if (!(got == want)) wrong++;
    }
    for (size_t i = 0; i < full; i++)
        if (!mine[i] && params[i] != 0xFFFF) wrong++;
    if (wrong)
        testing::fail(__FILE__, __LINE__,
                      std::to_string(wrong) + " params wrong or written outside the shard");
    for (void* p : {(void*)d_master, (void*)d_m, (void*)d_v, (void*)d_grads, (void*)d_params})
        CHECK_CUDA(cudaFree(p));
}

}  // namespace

TEST(adamw_weight_decay) { check_adamw(1000003, Hyper(), 0.37f, 0, 0, 3); }

TEST(adamw_no_weight_decay) {
    Hyper h;
    h.weight_decay = 0.0f;
    check_adamw(1000003, h, 0.37f, 0, 0, 3);
}

// Unit grad_scale through nullptr; beta1 < 0.5 takes torch.lerp's other branch.
TEST(adamw_no_scale_small_beta1) {
    Hyper h;
    h.beta1 = 0.3f;
    h.lr = 3e-3f;
    check_adamw(4099, h, -1.0f, 0, 0, 2);
}

// Views 3 elements into their buffers: a 5-element head, then the vector path, then the tail.
TEST(adamw_offset_views) { check_adamw(100003, Hyper(), 0.5f, 3, 3, 2); }

// The master view is misaligned relative to the others: every element on the scalar path.
TEST(adamw_misaligned_views) { check_adamw(100003, Hyper(), 0.5f, 1, 0, 2); }

// params_P == nullptr (FP8 on one GPU keeps no BF16 copy of the block weights): the same master/m/v.
TEST(adamw_without_bf16_copy) {
    const size_t P = 100003;
    Hyper h;
    std::vector<float> master = dev::random_normal(P, 0.0f, 0.1f), m = dev::random_normal(P, 0.0f, 0.01f),
                       v = dev::random_uniform(P, 0.01f, 0.1f), grads = dev::random_normal(P);
    ref_round_to_bf16(grads);
    float *d_master = dev::to_device(master), *d_m = dev::to_device(m), *d_v = dev::to_device(v);
    bf16* d_grads = dev::to_device_bf16(grads);
    ref_adamw_step(&master, &m, &v, grads, 1.0f, h, 1);
    adamw_update(d_master, nullptr, d_m, d_v, d_grads, P, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, 1,
                 nullptr, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    // tolerances as in check_adamw
    testing::expect_close("master (no bf16 copy)", dev::from_device(d_master, P), master, 1e-5 * h.lr, 1e-6);
    testing::expect_close("m (no bf16 copy)", dev::from_device(d_m, P), m, 1e-6, 1e-6);
    testing::expect_close("v (no bf16 copy)", dev::from_device(d_v, P), v, 1e-12, 1e-6);
    for (void* p : {(void*)d_master, (void*)d_m, (void*)d_v, (void*)d_grads}) CHECK_CUDA(cudaFree(p));
}

// The training step's form: step scalars and the apply flag in device memory (a CUDA graph replays them).
// apply = 1 must give bitwise the host-scalar update (same coefficients, same kernel path) for both weight
// decay settings; apply = 0 must leave master, m, v and the BF16 copy bitwise untouched.
TEST(adamw_device_scalars_and_skip) {
    const size_t P = 100003;
    Hyper h;
    const int t = 7;
    for (float wd : {h.weight_decay, 0.0f}) {
        std::vector<float> master = dev::random_normal(P, 0.0f, 0.1f), m = dev::random_normal(P, 0.0f, 0.01f),
                           v = dev::random_uniform(P, 0.01f, 0.1f), grads = dev::random_normal(P);
        ref_round_to_bf16(grads);
        bf16* d_grads = dev::to_device_bf16(grads);
        float* d_scale = dev::to_device(std::vector<float>{0.5f});
        const AdamWStepScalars host_scalars = adamw_step_scalars(h.lr, h.beta1, h.beta2, wd, t);
        AdamWStepScalars* d_scalars = nullptr;
        CHECK_CUDA(cudaMalloc(&d_scalars, sizeof(AdamWStepScalars)));
        CHECK_CUDA(cudaMemcpy(d_scalars, &host_scalars, sizeof(host_scalars), cudaMemcpyHostToDevice));
        std::vector<std::vector<float>> results;  // master, m, v, params of: host, device apply=1, apply=0
        for (int run = 0; run < 3; run++) {
            float *d_master = dev::to_device(master), *d_m = dev::to_device(m), *d_v = dev::to_device(v);
            bf16* d_params = dev::to_device_bf16(master);
            int* d_apply = dev::to_device(std::vector<int>{run == 1 ? 1 : 0});
            if (run == 0)
                adamw_update(d_master, d_params, d_m, d_v, d_grads, P, h.lr, h.beta1, h.beta2, h.eps, wd, t,
                             d_scale, 0);
            else
                adamw_update(d_master, d_params, d_m, d_v, d_grads, P, h.beta1, h.beta2, h.eps, d_scalars,
                             d_scale, d_apply, 0);
            CHECK_CUDA(cudaDeviceSynchronize());
            for (std::vector<float> x : {dev::from_device(d_master, P), dev::from_device(d_m, P),
                                         dev::from_device(d_v, P), dev::from_device_bf16(d_params, P)})
                results.push_back(x);
            for (void* p : {(void*)d_master, (void*)d_m, (void*)d_v, (void*)d_params, (void*)d_apply})
                CHECK_CUDA(cudaFree(p));
        }
        std::vector<float> params0 = master;
        ref_round_to_bf16(params0);
        const std::vector<std::vector<float>> start = {master, m, v, params0};
        for (int i = 0; i < 4; i++) {
            EXPECT_TRUE(testing::same_bits(results[4 + i], results[i]));  // device scalars == host scalars
            EXPECT_TRUE(testing::same_bits(results[8 + i], start[i]));    // skipped: untouched
            EXPECT_TRUE(!testing::same_bits(results[i], start[i]));       // and the update did change them
        }
        for (void* p : {(void*)d_grads, (void*)d_scale, (void*)d_scalars}) CHECK_CUDA(cudaFree(p));
    }
}

// Vector path (chunk 2400), element path (chunk 125: not a multiple of 8), one big slice (wte-like).
TEST(adamw_shard_view) {
    check_adamw_shard(48, 4800, 2, 1);
    check_adamw_shard(3, 1000, 8, 5);
    check_adamw_shard(1, 50304 * 16, 4, 3);
}

// Tiny P: fewer elements than one vector.
TEST(adamw_tiny) { check_adamw(5, Hyper(), 2.0f, 0, 0, 2); }

// --adam-moments bf16: m and v stored in BF16. Against the float64 reference run from the GPU's own (BF16)
// moments, with the new moments rounded to BF16 as the kernel stores them: master within the FP32 tolerances
// of check_adamw (its inputs are the same values); m and v within one BF16 rounding of the reference (the
// kernel rounds its FP32 result, the reference its float64 one: they can land on neighbouring BF16 values
// when the exact value is near a rounding boundary, 2^-8 relative, plus the FP32 atol of check_adamw).
// Then against the FP32-moment path from the same (BF16-representable) start: one step moves the master by
// u = lr m^ / (sqrt(v^) + eps), |u| <~ 10 lr here; BF16 storage of m and v changes u by at most (2^-9 +
// 2^-10)(1 + tiny) relative, so the masters differ by <= 10 lr x 1.5 x 2^-9 ~ 3e-2 lr: allow 5e-2 lr, which
// still fails a kernel that drops the update (10 lr) or mixes up m and v.
void check_adamw_bf16_moments(size_t P, size_t offset, int steps) {
    printf("  bf16 moments: P=%zu offset %zu\n", P, offset);
    Hyper h;
    std::vector<float> master = dev::random_normal(P + offset, 0.0f, 0.1f);
    std::vector<float> m = dev::random_normal(P + offset, 0.0f, 0.01f),
                       v = dev::random_uniform(P + offset, 0.01f, 0.1f);
    ref_round_to_bf16(m);
    ref_round_to_bf16(v);
    float* d_master_alloc = dev::to_device(master);
    bf16 *d_m_alloc = dev::to_device_bf16(m), *d_v_alloc = dev::to_device_bf16(v);
    float *d_m32_alloc = dev::to_device(m), *d_v32_alloc = dev::to_device(v),
          *d_master32_alloc = dev::to_device(master);
    bf16* d_grads = dev::device_alloc<bf16>(P);
    float* d_master = d_master_alloc + offset;
    bf16 *d_m = d_m_alloc + offset, *d_v = d_v_alloc + offset;
    float* d_half = dev::to_device(std::vector<float>{0.5f});  // grad_scale 0.5
    for (int t = 1; t <= steps; t++) {
        std::vector<float> grads = dev::random_normal(P);
        ref_round_to_bf16(grads);
        dev::copy_to_device_bf16(d_grads, grads);
        std::vector<float> ref_master = dev::from_device(d_master, P), ref_m = dev::from_device_bf16(d_m, P),
                           ref_v = dev::from_device_bf16(d_v, P);
        ref_adamw_step(&ref_master, &ref_m, &ref_v, grads, 0.5f, h, t);
        adamw_update(d_master, (bf16*)nullptr, d_m, d_v, d_grads, P, h.lr, h.beta1, h.beta2, h.eps,
                     h.weight_decay, t, d_half, 0);
        if (t == 1)  // the FP32-moment path from the same start
            adamw_update(d_master32_alloc + offset, (bf16*)nullptr, d_m32_alloc + offset,
                         d_v32_alloc + offset, d_grads, P, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, t,
                         d_half, 0);
        CHECK_CUDA(cudaDeviceSynchronize());
        const std::vector<float> got_master = dev::from_device(d_master, P);
        testing::expect_close("master (bf16 moments)", got_master, ref_master, 1e-5 * h.lr, 1e-6);
        testing::expect_close("m (bf16)", dev::from_device_bf16(d_m, P), ref_m, 1e-6, testing::kBf16Eps);
        testing::expect_close("v (bf16)", dev::from_device_bf16(d_v, P), ref_v, 1e-12, testing::kBf16Eps);
        if (t == 1)
            testing::expect_close("master: bf16 vs fp32 moments", got_master,
                                  dev::from_device(d_master32_alloc + offset, P), 5e-2 * h.lr, 0.0);
    }
    for (void* p : {(void*)d_master_alloc, (void*)d_m_alloc, (void*)d_v_alloc, (void*)d_m32_alloc,
                    (void*)d_v32_alloc, (void*)d_master32_alloc, (void*)d_grads, (void*)d_half})
        CHECK_CUDA(cudaFree(p));
}

// The vector path (aligned), the head/tail element path (3 elements in) and a P below one vector.
TEST(adamw_bf16_moments) {
    check_adamw_bf16_moments(1000003, 0, 3);
    check_adamw_bf16_moments(100003, 3, 2);
    check_adamw_bf16_moments(5, 0, 2);
}

// Median time of one update of P parameters (values irrelevant to the time: zeros, constant gradients).
// Bytes per parameter: read master, m, v (fp32) and grad (bf16), write master, m, v (fp32) and params (bf16)
// = 28.
static float adamw_update_ms(size_t P) {
    float *d_master = nullptr, *d_m = nullptr, *d_v = nullptr, *d_scale = nullptr;
    bf16 *d_params = nullptr, *d_grads = nullptr;
    CHECK_CUDA(cudaMalloc(&d_master, P * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_m, P * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_v, P * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_params, P * sizeof(bf16)));
    CHECK_CUDA(cudaMalloc(&d_grads, P * sizeof(bf16)));
    CHECK_CUDA(cudaMemset(d_master, 0, P * sizeof(float)));
    CHECK_CUDA(cudaMemset(d_m, 0, P * sizeof(float)));
    CHECK_CUDA(cudaMemset(d_v, 0, P * sizeof(float)));
    CHECK_CUDA(cudaMemset(d_grads, 0x3C, P * sizeof(bf16)));  // 0x3C3C = 0.0115
    d_scale = dev::to_device(std::vector<float>{0.5f});
    int t = 1;
    const float ms = dev::time_ms([&] {
        adamw_update(d_master, d_params, d_m, d_v, d_grads, P, 6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, t++, d_scale,
                     0);
    });
    for (void* ptr :
         {(void*)d_master, (void*)d_m, (void*)d_v, (void*)d_params, (void*)d_grads, (void*)d_scale})
        CHECK_CUDA(cudaFree(ptr));
    return ms;
}

// GPT-2 1.5B-size update (P = 1.5e9: the BF16 step's pass over every parameter).
BENCH(adamw_update_gpt1p5b) {
    const size_t P = 1500000000ull;
    bench::report_bandwidth("adamw_update", bench::fmt("P=%zu", P), adamw_update_ms(P), 28.0 * P);
}

// The FP8 step's plain pass: one launch per parameter tensor that is not a Linear weight (those update with
// their cast, test_adamw_fp8.cu), all 48 layers at once: wte, wpe, fc bias, qkv bias, six [48 x 1600]
// tensors (ln1/ln2 weight and bias, the two projections' biases) and the final LayerNorm's two.
BENCH(adamw_update_fp8_step_tensors) {
    const struct {
        size_t P;
        int per_step;
    } tensors[] = {{50304ull * 1600, 1}, {1024ull * 1600, 1}, {48ull * 6400, 1},
                   {48ull * 4800, 1},    {48ull * 1600, 6},   {1600, 2}};
    for (const auto& t : tensors)
        bench::report_budget("adamw_update", bench::fmt("P=%zu", t.P), adamw_update_ms(t.P), 28.0 * t.P,
                             t.per_step);
}

TEST_MAIN()
