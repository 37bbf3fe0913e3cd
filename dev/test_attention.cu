// Tests for llmc/kernels/attention.h (cuDNN causal flash attention): forward output and log-sum-exp stats,
// backward dQ/dK/dV, against a float64 CPU reference on the same bf16-rounded inputs; determinism; the
// GPT-1.5B attention shape (B=12, H=25, T=1024, D=64), also a benchmark (--bench).
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dev/dev_utils.h"
#include "llmc/gpu/context.h"
#include "llmc/kernels/attention.h"
#include "test/reference/attention.h"
#include "test/require_gpu.h"

namespace {

GpuContext* test_context() {
    static GpuContext ctx = create_gpu_context(0, 90);
    return &ctx;
}

using Shape = RefAttentionShape;

// Normwise limit for O, dQ, dK, dV: bf16 output rounding alone gives ~u/sqrt(3) = 2.3e-3 (uniform rounding
// error), the bf16 P / dS operands add about as much again; 1e-2 leaves margin yet catches any layout
// mistake.
constexpr double kMaxRelL2 = 1e-2;

struct DeviceBuffers {
    bf16 *qkv = nullptr, *dout = nullptr, *out = nullptr, *dqkv = nullptr;
    float* stats = nullptr;
    ~DeviceBuffers() {
        for (void* p : {(void*)qkv, (void*)dout, (void*)out, (void*)dqkv, (void*)stats})
            if (p) cudaFree(p);
    }
};

bool all_finite(const std::vector<float>& v) {
    for (float x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

// Checks forward (out, stats) and backward (dqkv) on the heads listed against the float64 reference.
void check_heads(const Shape& s, const std::vector<float>& qkv, const std::vector<float>& dout,
                 const std::vector<float>& out, const std::vector<float>& stats,
                 const std::vector<float>& dqkv, const std::vector<std::pair<int, int>>& heads) {
    const int T = s.T, D = s.D, H = s.H;
    const size_t C = (size_t)H * D;
    testing::ErrorStats c_o, c_lse, c_dq, c_dk, c_dv;
    RefAttentionHead r;
    long lse_diag_shown = 0;
    for (auto [b, h] : heads) {
        ref_attention_head(qkv, dout, s, b, h, &r);
        for (int t = 0; t < T; t++) {
            const long si = ((long)b * H + h) * T + t;
            c_lse.add(si, stats[si], r.lse[t], r.lse_bound[t]);
            if (!(std::fabs(stats[si] - r.lse[t]) <= r.lse_bound[t]) && lse_diag_shown++ < 3)
                printf(
                    "    stats[b=%d h=%d t=%d] = %.7g; reference lse %.7g (log2 units %.7g, row max %.7g)\n",
                    b, h, t, stats[si], r.lse[t], r.lse[t] / std::log(2.0), r.row_max[t]);
            for (int d = 0; d < D; d++) {
                const size_t oi = ((size_t)b * T + t) * C + (size_t)h * D + d;
                const size_t qi = ((size_t)b * T + t) * 3 * C + (size_t)h * D + d;
                c_o.add(oi, out[oi], r.o[t * D + d], r.o_bound[t * D + d]);
                c_dq.add(qi, dqkv[qi], r.dq[t * D + d], r.dq_bound[t * D + d]);
                c_dk.add(qi + C, dqkv[qi + C], r.dk[t * D + d], r.dk_bound[t * D + d]);
                c_dv.add(qi + 2 * C, dqkv[qi + 2 * C], r.dv[t * D + d], r.dv_bound[t * D + d]);
            }
        }
    }
    c_o.check("out", kMaxRelL2);
    c_lse.check("stats (log-sum-exp)");
    c_dq.check("dq", kMaxRelL2);
    c_dk.check("dk", kMaxRelL2);
    c_dv.check("dv", kMaxRelL2);
}

// Determinism (bitwise-equal reruns of forward and the deterministic backward), and the inference graph
// (no stats) launched on a second stream, checked against the reference.
void check_extras(AttentionGraphs* graphs, GpuContext* ctx, const Shape& s, const std::vector<float>& qkv,
                  const std::vector<float>& dout, const DeviceBuffers& d) {
    const int B = s.B, T = s.T, H = s.H, D = s.D;
    const size_t C = (size_t)H * D, N = (size_t)B * T;
    bf16* out2 = dev::device_alloc<bf16>(N * C);
    bf16* dqkv2 = dev::device_alloc<bf16>(N * 3 * C);
    float* stats2 = dev::device_alloc<float>((size_t)B * H * T);
    CHECK_CUDA(cudaDeviceSynchronize());
    attention_forward(graphs, ctx, out2, stats2, d.qkv, B, T, H, D, ctx->stream);
    attention_backward(graphs, ctx, dqkv2, d.dout, d.qkv, out2, stats2, B, T, H, D, ctx->stream);
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    const bool same_fwd = dev::from_device_bf16_bits(out2, N * C) == dev::from_device_bf16_bits(d.out, N * C);
    const bool same_bwd =
        dev::from_device_bf16_bits(dqkv2, N * 3 * C) == dev::from_device_bf16_bits(d.dqkv, N * 3 * C);
    printf("  reruns bitwise identical: forward %s, backward %s\n", same_fwd ? "yes" : "NO",
           same_bwd ? "yes" : "NO");
    EXPECT_TRUE(same_fwd);
    EXPECT_TRUE(same_bwd);

    cudaStream_t other;
    CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMemset(out2, 0xFF, N * C * sizeof(bf16)));
    CHECK_CUDA(cudaDeviceSynchronize());
    attention_forward(graphs, ctx, out2, nullptr, d.qkv, B, T, H, D, other);
    CHECK_CUDA(cudaStreamSynchronize(other));
    std::vector<float> out_inf = dev::from_device_bf16(out2, N * C);
    testing::ErrorStats c_inf;
    RefAttentionHead r;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            ref_attention_head(qkv, dout, s, b, h, &r);
            for (int t = 0; t < T; t++)
                for (int dd = 0; dd < D; dd++) {
                    const size_t oi = ((size_t)b * T + t) * C + (size_t)h * D + dd;
                    c_inf.add(oi, out_inf[oi], r.o[t * D + dd], r.o_bound[t * D + dd]);
                }
        }
    c_inf.check("out (inference graph)", kMaxRelL2);
    CHECK_CUDA(cudaStreamDestroy(other));
    CHECK_CUDA(cudaFree(out2));
    CHECK_CUDA(cudaFree(dqkv2));
    CHECK_CUDA(cudaFree(stats2));
}

// Random bf16 inputs at shape s: qkv [N, 3C] with q and k scaled by qk_std, dout [N, C].
void make_inputs(const Shape& s, float qk_std, std::vector<float>* qkv, std::vector<float>* dout) {
    const size_t C = (size_t)s.H * s.D, N = (size_t)s.B * s.T;
    *qkv = dev::random_normal(N * 3 * C);
    *dout = dev::random_normal(N * C);
    for (size_t n = 0; n < N; n++)
        for (size_t c = 0; c < 2 * C; c++) (*qkv)[n * 3 * C + c] *= qk_std;
    ref_round_to_bf16(*qkv);
    ref_round_to_bf16(*dout);
}

// Device copies of the inputs, and poisoned (NaN) outputs.
void upload(const Shape& s, const std::vector<float>& qkv, const std::vector<float>& dout, DeviceBuffers* d) {
    const size_t C = (size_t)s.H * s.D, N = (size_t)s.B * s.T;
    d->qkv = dev::to_device_bf16(qkv);
    d->dout = dev::to_device_bf16(dout);
    d->out = dev::device_alloc<bf16>(N * C);
    d->stats = dev::device_alloc<float>((size_t)s.B * s.H * s.T);
    d->dqkv = dev::device_alloc<bf16>(N * 3 * C);
    CHECK_CUDA(cudaDeviceSynchronize());  // poisoning runs on the legacy stream; ctx's is non-blocking
}

// Runs forward + backward at shape s on fresh random inputs, through the calls the model makes
// (attention_forward / attention_backward, graphs built on first use), and checks them. qk_std scales q and k
// (score standard deviation ~ qk_std^2): 1 gives a spread softmax, 2 a peaked one. heads empty = check
// every head. extras: check_extras() too.
void run_case(const Shape& s, float qk_std, std::vector<std::pair<int, int>> heads, bool extras) {
    REQUIRE_GPU();
    GpuContext* ctx = test_context();
    const int B = s.B, T = s.T, H = s.H, D = s.D;
    const size_t C = (size_t)H * D, N = (size_t)B * T;
    printf("  shape B=%d T=%d H=%d D=%d, q/k std %.1f\n", B, T, H, D, qk_std);
    AttentionGraphs graphs(/*deterministic_backward=*/true);

    std::vector<float> qkv, dout;
    make_inputs(s, qk_std, &qkv, &dout);
    DeviceBuffers d;
    upload(s, qkv, dout, &d);

    attention_forward(&graphs, ctx, d.out, d.stats, d.qkv, B, T, H, D, ctx->stream);
    attention_backward(&graphs, ctx, d.dqkv, d.dout, d.qkv, d.out, d.stats, B, T, H, D, ctx->stream);
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    std::vector<float> out = dev::from_device_bf16(d.out, N * C);
    std::vector<float> stats = dev::from_device(d.stats, (size_t)B * H * T);
    std::vector<float> dqkv = dev::from_device_bf16(d.dqkv, N * 3 * C);
    // Every element written (poison gone), also in heads not compared with the reference.
    EXPECT_TRUE(all_finite(out));
    EXPECT_TRUE(all_finite(stats));
    EXPECT_TRUE(all_finite(dqkv));

    if (heads.empty())
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) heads.push_back({b, h});
    check_heads(s, qkv, dout, out, stats, dqkv, heads);
    if (extras) check_extras(&graphs, ctx, s, qkv, dout, d);
}

// Forward + backward captured once into a CUDA graph (as the trainer's step is) and replayed: every replay
// gives the eager run's bytes. Between replays the host heap is churned (vectors allocated, filled, freed),
// so a captured copy from short-lived host memory would replay garbage: the cuDNN backward at T % 128 != 0
// used to take its sequence lengths that way (llmc/kernels/attention.cu).
void check_graph_replay(const Shape& s) {
    REQUIRE_GPU();
    GpuContext* ctx = test_context();
    const int B = s.B, T = s.T, H = s.H, D = s.D;
    const size_t N = (size_t)B * T, C = (size_t)H * D;
    printf("  shape B=%d T=%d H=%d D=%d, 5 graph replays\n", B, T, H, D);
    AttentionGraphs graphs(/*deterministic_backward=*/true);
    std::vector<float> qkv, dout;
    make_inputs(s, 1.0f, &qkv, &dout);
    DeviceBuffers d;
    upload(s, qkv, dout, &d);
    auto step = [&] {
        attention_forward(&graphs, ctx, d.out, d.stats, d.qkv, B, T, H, D, ctx->stream);
        attention_backward(&graphs, ctx, d.dqkv, d.dout, d.qkv, d.out, d.stats, B, T, H, D, ctx->stream);
    };
    step();  // eager: builds the graphs and sizes the workspace
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    const std::vector<float> eager_out = dev::from_device_bf16(d.out, N * C);
    const std::vector<float> eager_dqkv = dev::from_device_bf16(d.dqkv, N * 3 * C);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
    step();
    CHECK_CUDA(cudaStreamEndCapture(ctx->stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    bool same = true;
    for (int r = 0; r < 5 && same; r++) {
        for (int k = 0; k < 64; k++) {
            std::vector<int32_t> churn(4096 + 97 * k, 0x7f7f7f7f);
            asm volatile("" : : "r"(churn.data()) : "memory");
        }
        CHECK_CUDA(
            cudaMemset(d.dqkv, 0xFF, N * 3 * C * sizeof(bf16)));  // NaN: every element must be rewritten
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaGraphLaunch(exec, ctx->stream));
        CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
        same = testing::same_bits(dev::from_device_bf16(d.out, N * C), eager_out) &&
               testing::same_bits(dev::from_device_bf16(d.dqkv, N * 3 * C), eager_dqkv);
        if (!same) printf("  replay %d differs from the eager run\n", r);
    }
    EXPECT_TRUE(same);
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
}

}  // namespace

TEST(attention_B2_H4_T128_D64) { run_case({2, 128, 4, 64}, 1.0f, {}, true); }

TEST(attention_B2_H3_T256_D64_peaked) { run_case({2, 256, 3, 64}, 2.0f, {}, false); }

// T not a multiple of 128 (cuDNN <= 9.15 handles it through an internal padding mask).
TEST(attention_B3_H2_T200_D64) { run_case({3, 200, 2, 64}, 1.0f, {}, false); }

TEST(attention_B2_H4_T128_D32) { run_case({2, 128, 4, 32}, 1.0f, {}, false); }

TEST(attention_B1_H2_T64_D128) { run_case({1, 64, 2, 128}, 1.0f, {}, false); }

// Replayed CUDA graphs at T = 64 and 200 (not multiples of 128: the padding-mask backward) and 128.
TEST(attention_cuda_graph_replay) {
    check_graph_replay({8, 64, 2, 32});
    check_graph_replay({3, 200, 2, 64});
    check_graph_replay({2, 128, 4, 64});
}

// GPT-1.5B shape: checks three heads against the reference (all heads for poison).
TEST(attention_gpt1p5b) { run_case({12, 1024, 25, 64}, 1.0f, {{0, 0}, {5, 13}, {11, 24}}, false); }

// The benchmarks' inputs at the GPT-1.5B shape, on the device, and their FLOP counts (causal: QK^T and PV
// each 2*T*T*D flops per (b, h), halved by the mask; backward has 5 such products).
struct Gpt1p5bBench {
    const Shape s{12, 1024, 25, 64};
    const int B = s.B, T = s.T, H = s.H, D = s.D;
    GpuContext* ctx = test_context();
    DeviceBuffers d;
    const double fwd_flops = 2.0 * 2.0 * B * H * (double)T * T * D / 2, bwd_flops = 2.5 * fwd_flops;
    Gpt1p5bBench() {
        std::vector<float> qkv, dout;
        make_inputs(s, 1.0f, &qkv, &dout);
        upload(s, qkv, dout, &d);
    }
};

// GPT-1.5B shape, deterministic and non-deterministic backward, against the dense BF16 GEMM peak.
BENCH(attention_gpt1p5b) {
    Gpt1p5bBench b;
    const int B = b.B, T = b.T, H = b.H, D = b.D;
    GpuContext* ctx = b.ctx;
    DeviceBuffers& d = b.d;
    const double fwd_flops = b.fwd_flops, bwd_flops = b.bwd_flops;
    fprintf(stderr, "bench: %s\n", gpu_library_versions().c_str());  // the cuDNN that ran, not the headers'
    for (bool deterministic : {true, false}) {
        AttentionGraphs graphs(deterministic);
        const std::string shape =
            bench::fmt("B=%d,T=%d,H=%d,D=%d,%s", B, T, H, D, deterministic ? "det" : "nondet");
        // dev::time_ms records its events on the legacy default stream, so launch there (stream 0). Its
        // warm-up call builds the graphs (and grows the cuDNN workspace).
        auto fwd = [&] { attention_forward(&graphs, ctx, d.out, d.stats, d.qkv, B, T, H, D, 0); };
        auto bwd = [&] {
            attention_backward(&graphs, ctx, d.dqkv, d.dout, d.qkv, d.out, d.stats, B, T, H, D, 0);
        };
        const float ms_fwd = dev::time_ms(fwd);
        const float ms_bwd = dev::time_ms(bwd);
        const float ms_both = dev::time_ms([&] {
            fwd();
            bwd();
        });
        bench::report_flops("attention_forward", shape, ms_fwd, fwd_flops, bench::kPeakBf16Tflops);
        bench::report_flops("attention_backward", shape, ms_bwd, bwd_flops, bench::kPeakBf16Tflops);
        bench::report_flops("attention_forward+backward", shape, ms_both, fwd_flops + bwd_flops,
                            bench::kPeakBf16Tflops);
    }
}

// The plan choice: every plan of cuDNN's heuristics modes A, B and FALLBACK, timed on the GPT-1.5B shape
// (deterministic backward, the trainer's default). A#0 is the plan attention_forward/backward use.
BENCH(attention_plans_gpt1p5b) {
    Gpt1p5bBench b;
    const int B = b.B, T = b.T, H = b.H, D = b.D;
    GpuContext* ctx = b.ctx;
    DeviceBuffers& d = b.d;
    const double fwd_flops = b.fwd_flops, bwd_flops = b.bwd_flops;
    AttentionGraphs graphs(true);
    attention_forward(&graphs, ctx, d.out, d.stats, d.qkv, B, T, H, D, 0);  // the stats backward reads
    for (bool backward : {false, true}) {
        const std::vector<AttentionPlanTiming> plans = attention_time_plans(
            ctx, backward, true, d.qkv, d.out, d.stats, d.dout, d.dqkv, B, T, H, D, 20, 0);
        for (const AttentionPlanTiming& p : plans) {
            if (p.ms < 0) {
                fprintf(stderr, "bench: attention %s plan %s\n", backward ? "backward" : "forward",
                        p.name.c_str());
                continue;
            }
            const std::string shape = bench::fmt("B=%d,T=%d,H=%d,D=%d,det,%s,ws=%lldMB", B, T, H, D,
                                                 p.name.c_str(), (long long)(p.workspace_bytes >> 20));
            bench::report_flops(backward ? "attention_backward_plan" : "attention_forward_plan", shape, p.ms,
                                backward ? bwd_flops : fwd_flops, bench::kPeakBf16Tflops);
        }
    }
}

TEST_MAIN()
