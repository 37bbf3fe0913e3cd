// Tests for llmc/kernels/global_norm.cuh: the norm against a float64 reference on the same bf16 gradients,
// both clip branches and "no clipping", NaN/inf propagation, bitwise determinism, unaligned views and tiny P,
// and a GPT-2 1.5B-size buffer; its bandwidth is a benchmark (--bench).
#include <cstring>

#include "dev/byte_budget.h"
#include "dev/dev_utils.h"
#include "llmc/kernels/global_norm.cuh"
#include "test/reference/norm.h"

namespace {

struct NormResult {
    float norm, scale;
    std::vector<float> partials;
};

NormResult run_norm(const bf16* d_grads, size_t P, float max_norm) {
    const size_t np = global_norm_num_partials();
    float* d_partials = dev::device_alloc<float>(np);
    float* d_out = dev::device_alloc<float>(2);
    global_norm_squared(d_partials, d_grads, P, 0);
    grad_clip_scale(d_out, d_out + 1, d_partials, (int)np, max_norm, 0);
    const std::vector<float> out = dev::from_device(d_out, 2);
    NormResult r{out[0], out[1], dev::from_device(d_partials, np)};
    CHECK_CUDA(cudaFree(d_partials));
    CHECK_CUDA(cudaFree(d_out));
    return r;
}

// Random bf16 gradients with magnitudes spread over several decades (as across a model's tensors).
std::vector<float> make_grads(size_t P) {
    std::vector<float> g = dev::random_normal(P);
    for (size_t i = 0; i < P; i++) g[i] *= std::ldexp(1.0f, -(int)((i / 4099) % 12));
    ref_round_to_bf16(g);
    return g;
}

// Norm tolerance: the squares are exact in fp32 (8-bit significands); a vector's 8 squares are summed in fp32
// (<= 7 roundings, 2^-24 each, relative to that positive sum), the rest in double, each partial is rounded to
// fp32 once (2^-24) and the norm once (2^-24): <= ~9 * 2^-24 = 5.4e-7 relative on norm^2, half on the norm.
// rtol 1e-5 leaves a wide margin yet catches any dropped, doubled or misindexed block (>= 1e-4 of the sum).
constexpr double kNormRtol = 1e-5;

}  // namespace

TEST(global_norm_matches_reference) {
    const size_t P = 10000019;
    const std::vector<float> g = make_grads(P);
    bf16* d_grads = dev::to_device_bf16(g);
    const double ref = ref_l2_norm(g, 0, P);
    const NormResult r = run_norm(d_grads, P, 0.0f);
    printf("  P=%zu norm %.9g reference %.9g\n", P, r.norm, ref);
    testing::expect_close("norm", {r.norm}, {(float)ref}, 0.0, kNormRtol);
    EXPECT_EQ(r.scale, 1.0f);  // max_norm 0: no clipping

    // Clipping: max_norm below the norm -> max_norm / (norm + 1e-6), computed here in fp32 from the GPU's
    // norm (the kernel uses IEEE fp32 add and divide, so it should agree to the last bit; rtol 1e-6 = 8 ulp).
    const float max_norm = (float)(ref * 0.25);
    const NormResult c = run_norm(d_grads, P, max_norm);
    const float expect_scale = max_norm / (c.norm + 1e-6f);
    testing::expect_close("clip scale", {c.scale}, {expect_scale}, 0.0, 1e-6);
    EXPECT_TRUE(c.scale < 0.26f && c.scale > 0.24f);
    // max_norm above the norm -> exactly 1.
    const NormResult n = run_norm(d_grads, P, (float)(ref * 2.0));
    EXPECT_EQ(n.scale, 1.0f);
    EXPECT_TRUE(testing::same_bits({n.norm}, {r.norm}));
    CHECK_CUDA(cudaFree(d_grads));
}

// Same input, two runs: bitwise identical partials and norm (fixed grid, fixed summation order).
TEST(global_norm_deterministic) {
    const size_t P = 10000019;
    bf16* d_grads = dev::to_device_bf16(make_grads(P));
    const NormResult a = run_norm(d_grads, P, 1.0f), b = run_norm(d_grads, P, 1.0f);
    EXPECT_TRUE(testing::same_bits({a.norm, a.scale}, {b.norm, b.scale}));
    EXPECT_TRUE(testing::same_bits(a.partials, b.partials));
    CHECK_CUDA(cudaFree(d_grads));
}

// A NaN gradient gives a NaN norm (and, as in PyTorch, a NaN clip factor); an inf gives an inf norm.
TEST(global_norm_non_finite) {
    const size_t P = 1000003;
    std::vector<float> g = make_grads(P);
    g[P / 2] = NAN;
    bf16* d_grads = dev::to_device_bf16(g);
    const NormResult r = run_norm(d_grads, P, 1.0f);
    EXPECT_TRUE(std::isnan(r.norm));
    EXPECT_TRUE(std::isnan(r.scale));
    CHECK_CUDA(cudaFree(d_grads));
    g[P / 2] = 1.0f;
    g[P - 1] = INFINITY;  // in the scalar tail
    d_grads = dev::to_device_bf16(g);
    const NormResult s = run_norm(d_grads, P, 1.0f);
    EXPECT_TRUE(std::isinf(s.norm));
    EXPECT_TRUE(s.scale == 0.0f);
    const NormResult u = run_norm(d_grads, P, 0.0f);  // no clipping: the factor stays 1, the norm reports inf
    EXPECT_TRUE(std::isinf(u.norm));
    EXPECT_EQ(u.scale, 1.0f);
    CHECK_CUDA(cudaFree(d_grads));
}

// Views that start off a 16-byte boundary (head + vectors + tail) and sizes below one vector.
TEST(global_norm_views_and_tiny) {
    const size_t total = 100000 + 16;
    const std::vector<float> g = make_grads(total);
    bf16* d_grads = dev::to_device_bf16(g);
    for (size_t offset : {1, 3, 7}) {
        for (size_t P : {(size_t)100003, (size_t)5, (size_t)1}) {
            const double ref = ref_l2_norm(g, offset, P);
            const NormResult r = run_norm(d_grads + offset, P, 0.0f);
            testing::expect_close("norm (view)", {r.norm}, {(float)ref}, 0.0, kNormRtol);
        }
    }
    CHECK_CUDA(cudaFree(d_grads));
}

// ZeRO-1 shard views (llmc/parallel/shard_view.h): the norm over rank r's chunk of every slice equals the
// reference over exactly those elements (vector path: chunk a multiple of 8; element path: chunk 125).
TEST(global_norm_shard_view) {
    struct Case {
        size_t slices, slice, world, rank;
    };
    for (Case c : {Case{48, 4800, 2, 1}, Case{3, 1000, 8, 5}, Case{1, 50304 * 16, 4, 3}}) {
        const std::vector<float> g = make_grads(c.slices * c.slice);
        bf16* d_grads = dev::to_device_bf16(g);
        const ShardView view = ShardView::of(c.slice, (int)c.rank, (int)c.world);
        double sum = 0;
        for (size_t i = 0; i < c.slices * view.chunk; i++) sum += (double)g[view.map(i)] * g[view.map(i)];
        const size_t np = global_norm_num_partials();
        float* d_partials = dev::device_alloc<float>(np);
        float* d_out = dev::device_alloc<float>(2);
        global_norm_squared(d_partials, d_grads, c.slices * view.chunk, 0, view);
        grad_clip_scale(d_out, d_out + 1, d_partials, (int)np, 0.0f, 0);
        const float norm = dev::from_device(d_out, 1)[0];
        printf("  slices %zu x %zu, rank %zu of %zu: norm %.6g, reference %.6g\n", c.slices, c.slice, c.rank,
               c.world, norm, std::sqrt(sum));
        testing::expect_close("norm (shard view)", {norm}, {(float)std::sqrt(sum)}, 0.0, kNormRtol);
        for (void* p : {(void*)d_grads, (void*)d_partials, (void*)d_out}) CHECK_CUDA(cudaFree(p));
    }
}

namespace {

// GPT-2 1.5B-size gradient buffer, every element 0x3C3C = 0.011475 (bf16).
constexpr size_t kP1p5B = 1500000000ull;
bf16* constant_grads_1p5b() {
    bf16* d_grads = nullptr;
    CHECK_CUDA(cudaMalloc(&d_grads, kP1p5B * sizeof(bf16)));
    CHECK_CUDA(cudaMemset(d_grads, 0x3C, kP1p5B * sizeof(bf16)));
    return d_grads;
}

}  // namespace

// GPT-2 1.5B size (3 GB of gradients, offsets beyond 2^31 bytes): the norm of the constant buffer is
// |x| * sqrt(P) (same tolerance argument as above).
TEST(global_norm_gpt1p5b_constant) {
    bf16* d_grads = constant_grads_1p5b();
    const NormResult r = run_norm(d_grads, kP1p5B, 0.0f);
    const float x = __bfloat162float(__ushort_as_bfloat16((unsigned short)0x3C3C));
    testing::expect_close("norm (constant)", {r.norm}, {(float)(x * std::sqrt((double)kP1p5B))}, 0.0,
                          kNormRtol);
    CHECK_CUDA(cudaFree(d_grads));
}

// Bytes = P bf16 reads.
BENCH(global_norm_gpt1p5b) {
    bf16* d_grads = constant_grads_1p5b();
    const size_t np = global_norm_num_partials();
    float* d_partials = dev::device_alloc<float>(np);
    float* d_out = dev::device_alloc<float>(2);
    const float ms = dev::time_ms([&] {
        global_norm_squared(d_partials, d_grads, kP1p5B, 0);
        grad_clip_scale(d_out, d_out + 1, d_partials, (int)np, 1.0f, 0);
    });
    bench::report_budget("global_norm_squared+grad_clip_scale", bench::fmt("P=%zu", kP1p5B), ms, 2.0 * kP1p5B,
                         1);
    CHECK_CUDA(cudaFree(d_grads));
    CHECK_CUDA(cudaFree(d_partials));
    CHECK_CUDA(cudaFree(d_out));
}

TEST_MAIN()
