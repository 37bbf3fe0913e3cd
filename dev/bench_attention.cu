// Attention alone: cuDNN's causal SDPA forward and backward at the trainer's shapes (GPT-2 124M: B=16, H=12;
// GPT-2 1.5B: B=12, H=25; T=1024, D=64), through the trainer's own entry points (llmc/kernels/attention.h),
// the deterministic backward and the non-deterministic one; then what the memory layout costs: the same SDPA
// with Q, K, V as separate contiguous tensors against the packed rows (dev/sdpa_layouts.h). A benchmark, not
// a test (no [PASS]/[FAIL] lines): BENCH lines as dev/bench.h writes them, then a short table.
// FLOPs (the honest count, causal): forward 2 * 2*B*H*T*T*D / 2 (QK^T and PV, half of each masked away),
// backward 2.5x forward (five such products: S recomputed, dV, dP, dQ, dK).
// Time: CUDA events on the context's stream; per sample `launches` back-to-back calls after warm-up calls
// (--flush: one call after writing 256 MiB, so nothing of the inputs is left in L2), median of the samples.
// Usage: bench_attention [--shape gpt2_124m|gpt2_1p5b|B,T,H,D] [--samples N] [--launches N] [--flush]
//                        [--plans] [--no-layouts] [--chunks]
// --shape B,T,H,D times another shape (its step rows count one layer): the same kernels at longer sequences,
// where published SDPA tables are measured, tell the shape's cost apart from the trainer's use of cuDNN.
// scripts/bench/bench_attention.sh runs it built against two cudnn-frontends and with two cuDNNs.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dev/bench.h"
#include "dev/sdpa_layouts.h"
#include "llmc/gpu/context.h"
#include "llmc/host/check.h"
#include "llmc/kernels/attention.h"

namespace {

struct ModelShape {
    const char* name;
    SdpaShape s;
    int layers;
};
const ModelShape kShapes[] = {{"gpt2_124m", {16, 1024, 12, 64}, 12}, {"gpt2_1p5b", {12, 1024, 25, 64}, 48}};

struct Options {
    std::vector<std::string> shapes;
    std::vector<ModelShape> custom;  // --shape B,T,H,D
    int samples = 9, launches = 10;
    bool flush = false, plans = false, layouts = true, chunks = false;
};

Options parse_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--shape" && has_value) {
            o.shapes.push_back(argv[++i]);
        } else if (a == "--samples" && has_value) {
            o.samples = std::max(1, atoi(argv[++i]));
        } else if (a == "--launches" && has_value) {
            o.launches = std::max(1, atoi(argv[++i]));
        } else if (a == "--flush") {
            o.flush = true;
        } else if (a == "--plans") {
            o.plans = true;
        } else if (a == "--no-layouts") {
            o.layouts = false;
        } else if (a == "--chunks") {
            o.chunks = true;
        } else {
            fatal_usage(
                "bench_attention: unknown argument '%s' (usage: bench_attention [--shape "
                "gpt2_124m|gpt2_1p5b] "
                "[--samples N] [--launches N] [--flush] [--plans] [--no-layouts] [--chunks])",
                a.c_str());
        }
    }
    std::vector<std::string> named;  // the model shapes asked for (none given and no B,T,H,D: both)
    for (const std::string& name : o.shapes) {
        bool known = false;
        for (const ModelShape& m : kShapes) known |= name == m.name;
        SdpaShape c{};
        char tail = 0;
        if (known) {
            named.push_back(name);
        } else if (sscanf(name.c_str(), "%d,%d,%d,%d%c", &c.B, &c.T, &c.H, &c.D, &tail) == 4 && c.B > 0 &&
                   c.T > 0 && c.T % 128 == 0 && c.H > 0 && (c.D == 64 || c.D == 128)) {
            o.custom.push_back({"custom", c, 1});
        } else {
            fatal_usage(
                "bench_attention: unknown --shape '%s' (gpt2_124m, gpt2_1p5b, or B,T,H,D with T a "
                "multiple of 128 and D 64 or 128)",
                name.c_str());
        }
    }
    o.shapes = named;
    if (o.flush) o.launches = 1;
    return o;
}

// Median over samples of the mean time of `launches` back-to-back calls, in ms (the file header says how).
class Timer {
  public:
    Timer(const Options& o, cudaStream_t stream) : opt_(o), stream_(stream) {
        CHECK_CUDA(cudaEventCreate(&start_));
        CHECK_CUDA(cudaEventCreate(&stop_));
        if (o.flush) CHECK_CUDA(cudaMalloc(&flush_, kFlushBytes));
    }
    ~Timer() {
        cudaEventDestroy(start_);
        cudaEventDestroy(stop_);
        if (flush_) cudaFree(flush_);
    }
    template <class Fn>
    float median_ms(Fn fn) {
        for (int i = 0; i < 3; i++) fn();  // warm-up (the first call builds the graphs)
        std::vector<float> times;
        for (int s = 0; s < opt_.samples; s++) {
            if (flush_) CHECK_CUDA(cudaMemsetAsync(flush_, s, kFlushBytes, stream_));
            CHECK_CUDA(cudaEventRecord(start_, stream_));
            for (int i = 0; i < opt_.launches; i++) fn();
            CHECK_CUDA(cudaEventRecord(stop_, stream_));
            CHECK_CUDA(cudaEventSynchronize(stop_));
            float ms = 0;
            CHECK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
            times.push_back(ms / opt_.launches);
        }
        std::sort(times.begin(), times.end());
        return times[times.size() / 2];
    }

  private:
    static constexpr size_t kFlushBytes = 256ull << 20;
    const Options& opt_;
    cudaStream_t stream_;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
    void* flush_ = nullptr;
};

__device__ uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Standard normal values (Box-Muller on a counter hash): never zeros, which can time faster than real data.
__global__ void fill_normal_bf16(__nv_bfloat16* p, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint64_t h = splitmix64(seed * 0x632BE59BD9B4E019ull + i);
        const float u1 = ((float)(h >> 40) + 0.5f) * (1.0f / 16777216.0f);
        const float u2 = ((float)(h & 0xFFFFFF) + 0.5f) * (1.0f / 16777216.0f);
        p[i] = __float2bfloat16(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
    }
}

// Copies Q, K, V (count 3, strides .qkv) or O (count 1, strides .o) from one layout to another.
__global__ void relayout(const __nv_bfloat16* src, __nv_bfloat16* dst, SdpaStrides from, SdpaStrides to,
                         SdpaShape s, int count) {
    const size_t n = (size_t)count * s.B * s.H * s.T * s.D;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i;
        const int d = r % s.D, t = (r /= s.D) % s.T, h = (r /= s.T) % s.H, b = (r /= s.H) % s.B,
                  which = (int)(r / s.B);
        const bool o = count == 1;
        dst[sdpa_offset(o ? to.o : to.qkv, o ? 0 : to.qkv_base[which], b, h, t, d)] =
            src[sdpa_offset(o ? from.o : from.qkv, o ? 0 : from.qkv_base[which], b, h, t, d)];
    }
}

struct DeviceSet {  // one set of the buffers SDPA reads and writes
    SdpaBuffers buf{};
    explicit DeviceSet(SdpaShape s) {
        const size_t nc = (size_t)s.B * s.T * s.H * s.D;
        CHECK_CUDA(cudaMalloc(&buf.qkv, 3 * nc * sizeof(__nv_bfloat16)));
        CHECK_CUDA(cudaMalloc(&buf.dqkv, 3 * nc * sizeof(__nv_bfloat16)));
        CHECK_CUDA(cudaMalloc(&buf.out, nc * sizeof(__nv_bfloat16)));
        CHECK_CUDA(cudaMalloc(&buf.dout, nc * sizeof(__nv_bfloat16)));
        CHECK_CUDA(cudaMalloc(&buf.stats, (size_t)s.B * s.H * s.T * sizeof(float)));
    }
    ~DeviceSet() {
        for (void* p : {(void*)buf.qkv, (void*)buf.dqkv, (void*)buf.out, (void*)buf.dout, (void*)buf.stats})
            cudaFree(p);
    }
    DeviceSet(const DeviceSet&) = delete;
    DeviceSet& operator=(const DeviceSet&) = delete;
};

double forward_flops(SdpaShape s) { return 2.0 * 2.0 * s.B * s.H * (double)s.T * s.T * s.D / 2; }
double backward_flops(SdpaShape s) { return 2.5 * forward_flops(s); }

// The table's shape column: the model's name, or B,T,H,D for a --shape given by its sizes.
std::string short_name(const ModelShape& m) {
    if (strcmp(m.name, "custom") != 0) return m.name;
    return bench::fmt("%d,%d,%d,%d", m.s.B, m.s.T, m.s.H, m.s.D);
}

std::string shape_label(const ModelShape& m) {
    return bench::fmt("%s:B=%d,T=%d,H=%d,D=%d", m.name, m.s.B, m.s.T, m.s.H, m.s.D);
}

std::string tflops(double flops, float ms) { return bench::fmt("%6.1f", flops / (ms * 1e-3) / 1e12); }

// The libcudnn*.so files this process has mapped (which cuDNN really ran: LD_LIBRARY_PATH can change it).
std::string mapped_cudnn_libraries() {
    std::ifstream maps("/proc/self/maps");
    std::set<std::string> paths;
    for (std::string line; std::getline(maps, line);) {
        const size_t slash = line.find('/');
        if (slash != std::string::npos && line.find("libcudnn", slash) != std::string::npos)
            paths.insert(line.substr(slash));
    }
    std::string out;
    for (const std::string& p : paths) out += (out.empty() ? "" : " ") + p;
    return out.empty() ? "(none mapped)" : out;
}

// FNV-1a over the bytes of device buffers: the same hash from two runs means bitwise the same outputs.
uint64_t hash_device(std::initializer_list<std::pair<const void*, size_t>> buffers) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (auto [ptr, bytes] : buffers) {
        std::vector<unsigned char> host(bytes);
        CHECK_CUDA(cudaMemcpy(host.data(), ptr, bytes, cudaMemcpyDeviceToHost));
        for (unsigned char c : host) h = (h ^ c) * 0x100000001b3ull;
    }
    return h;
}

struct Row {  // one line of the closing table
    std::string shape, what;
    float ms;
    double flops;
};

// The trainer's entry points: forward, deterministic and non-deterministic backward, and per step. Leaves the
// forward's output and the deterministic backward's dQKV in `d` (the layouts are checked against them), and
// that dQKV's hash in *dqkv_hash unless it is null (the chunked backward compares with it).
void bench_entry_points(GpuContext* ctx, const ModelShape& m, DeviceSet& d, Timer& timer,
                        std::vector<Row>* rows, uint64_t* dqkv_hash) {
    const SdpaShape s = m.s;
    const SdpaBuffers& b = d.buf;
    AttentionGraphs det(true), nondet(false);
    auto fwd = [&] { attention_forward(&det, ctx, b.out, b.stats, b.qkv, s.B, s.T, s.H, s.D, ctx->stream); };
    auto bwd = [&](AttentionGraphs* g) {
        attention_backward(g, ctx, b.dqkv, b.dout, b.qkv, b.out, b.stats, s.B, s.T, s.H, s.D, ctx->stream);
    };
    const float ms_fwd = timer.median_ms(fwd);
    const float ms_nondet = timer.median_ms([&] { bwd(&nondet); });
    const float ms_det = timer.median_ms([&] { bwd(&det); });  // last: its dQKV stays for the check
    const std::string label = shape_label(m);
    const size_t nc = (size_t)s.B * s.T * s.H * s.D;
    const uint64_t hash =
        hash_device({{b.out, nc * 2}, {b.stats, (size_t)s.B * s.H * s.T * 4}, {b.dqkv, 3 * nc * 2}});
    if (dqkv_hash) *dqkv_hash = hash_device({{b.dqkv, 3 * nc * 2}});
    printf("HASH\t%s\t%016llx\t(FNV-1a of O, stats and the deterministic dQKV: equal = bitwise the same)\n",
           label.c_str(), (unsigned long long)hash);
    const double ff = forward_flops(s), bf = backward_flops(s), L = m.layers;
    bench::report_flops("attention_forward", label, ms_fwd, ff, bench::kPeakBf16Tflops);
    bench::report_flops("attention_backward_det", label, ms_det, bf, bench::kPeakBf16Tflops);
    bench::report_flops("attention_backward_nondet", label, ms_nondet, bf, bench::kPeakBf16Tflops);
    bench::report_flops("attention_step_det", label, L * (ms_fwd + ms_det), L * (ff + bf),
                        bench::kPeakBf16Tflops);
    bench::report_flops("attention_step_nondet", label, L * (ms_fwd + ms_nondet), L * (ff + bf),
                        bench::kPeakBf16Tflops);
    rows->push_back({short_name(m), "forward", ms_fwd, ff});
    rows->push_back({short_name(m), "backward, deterministic", ms_det, bf});
    rows->push_back({short_name(m), "backward, non-deterministic", ms_nondet, bf});
    rows->push_back({short_name(m), bench::fmt("step: %d x (fwd + det bwd)", m.layers),
                     (float)L * (ms_fwd + ms_det), L * (ff + bf)});
    rows->push_back({short_name(m), bench::fmt("step: %d x (fwd + nondet bwd)", m.layers),
                     (float)L * (ms_fwd + ms_nondet), L * (ff + bf)});
}

// The deterministic backward over the batch in chunks of `chunk` sequences, one call each, against the whole
// batch in one call. Why: its dP workspace (B*H*T*T*2 bytes, 403 MB at 124M, 629 MB at 1.5B) goes to DRAM and
// back between the flash kernel and the dQ matmul; one sequence's (25 MB at 124M, 52 MB at 1.5B) may stay in
// the 50 MB L2. Each (b, h) is computed alone, so the chunks give the whole batch's bits (the hash says).
// Measured on an H100 (2026-12-06): bitwise at every chunk, and slower at every chunk (docs/dead_ends.md).
void bench_chunked_backward(GpuContext* ctx, const ModelShape& m, DeviceSet& d, Timer& timer, uint64_t whole,
                            std::vector<Row>* rows) {
    const SdpaShape s = m.s;
    const SdpaBuffers& b = d.buf;
    const size_t nc_seq = (size_t)s.T * s.H * s.D;  // one sequence's elements of O (and of each of Q, K, V)
    AttentionGraphs det(true);
    const std::string label = shape_label(m);
    for (int chunk : {1, 2, 3, 4, 6}) {
        if (chunk >= s.B || s.B % chunk != 0) continue;
        auto run = [&] {
            for (int b0 = 0; b0 < s.B; b0 += chunk)
                attention_backward(&det, ctx, b.dqkv + 3 * nc_seq * b0, b.dout + nc_seq * b0,
                                   b.qkv + 3 * nc_seq * b0, b.out + nc_seq * b0,
                                   b.stats + (size_t)s.H * s.T * b0, chunk, s.T, s.H, s.D, ctx->stream);
        };
        const float ms = timer.median_ms(run);
        // NaN-fill dQKV and run once more: a sequence that no call wrote cannot pass
        CHECK_CUDA(cudaMemsetAsync(b.dqkv, 0xFF, 3 * nc_seq * s.B * 2, ctx->stream));
        run();
        const uint64_t h = hash_device({{b.dqkv, 3 * nc_seq * s.B * 2}});
        const std::string what = bench::fmt("backward, det, %d-sequence calls", chunk);
        printf("chunked backward at %s, %d sequences a call: %.4f ms, dQKV %s the whole batch's\n",
               label.c_str(), chunk, ms, h == whole ? "bitwise" : "DIFFERENT from");
        bench::report_flops(bench::fmt("attention_backward_det_chunk%d", chunk), label, ms, backward_flops(s),
                            bench::kPeakBf16Tflops);
        rows->push_back({short_name(m), what, ms, backward_flops(s)});
    }
}

// Elements of one layout's output differing from the packed entry point's: "identical" or the count and the
// largest difference.
std::string compare_outputs(const DeviceSet& entry, const DeviceSet& lay, SdpaLayout layout, SdpaShape s) {
    const size_t nc = (size_t)s.B * s.T * s.H * s.D;
    std::vector<__nv_bfloat16> eo(nc), lo(nc), eq(3 * nc), lq(3 * nc);
    CHECK_CUDA(cudaMemcpy(eo.data(), entry.buf.out, nc * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(lo.data(), lay.buf.out, nc * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(eq.data(), entry.buf.dqkv, 3 * nc * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(lq.data(), lay.buf.dqkv, 3 * nc * 2, cudaMemcpyDeviceToHost));
    const SdpaStrides from = sdpa_strides(SdpaLayout::PackedQkv, s), to = sdpa_strides(layout, s);
    size_t differ = 0;
    float max_diff = 0;
    auto check = [&](__nv_bfloat16 a, __nv_bfloat16 b) {
        const float x = __bfloat162float(a), y = __bfloat162float(b);
        if (x == y) return;
        differ++;
        max_diff = std::isnan(x - y) ? NAN : std::max(max_diff, std::fabs(x - y));
    };
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.H; h++)
            for (int t = 0; t < s.T; t++)
                for (int d = 0; d < s.D; d++) {
                    check(eo[sdpa_offset(from.o, 0, b, h, t, d)], lo[sdpa_offset(to.o, 0, b, h, t, d)]);
                    for (int w = 0; w < 3; w++)
                        check(eq[sdpa_offset(from.qkv, from.qkv_base[w], b, h, t, d)],
                              lq[sdpa_offset(to.qkv, to.qkv_base[w], b, h, t, d)]);
                }
    if (differ == 0) return "O, dQKV identical to the entry point's";
    return bench::fmt("O, dQKV: %zu of %zu elements differ from the entry point's, max |diff| %.3g", differ,
                      4 * nc, max_diff);
}

// The same SDPA at each layout (graphs of dev/sdpa_layouts.cu, deterministic backward), inputs copied from
// the packed ones so that the outputs can be compared with the entry point's.
void bench_layouts(GpuContext* ctx, const ModelShape& m, DeviceSet& entry, Timer& timer,
                   std::vector<Row>* rows) {
    const SdpaShape s = m.s;
    DeviceSet lay(s);
    const std::string label = shape_label(m);
    const SdpaStrides packed = sdpa_strides(SdpaLayout::PackedQkv, s);
    for (SdpaLayout layout : {SdpaLayout::PackedQkv, SdpaLayout::SeparateBthd, SdpaLayout::SeparateBhtd}) {
        const SdpaStrides to = sdpa_strides(layout, s);
        relayout<<<1024, 256, 0, ctx->stream>>>(entry.buf.qkv, lay.buf.qkv, packed, to, s, 3);
        relayout<<<1024, 256, 0, ctx->stream>>>(entry.buf.dout, lay.buf.dout, packed, to, s, 1);
        CHECK_LAUNCH();
        SdpaLayoutGraphs graphs;
        std::string why;
        const char* name = sdpa_layout_name(layout);
        if (!graphs.build(ctx, layout, true, s, &why)) {
            printf("layout %s at %s: not built: %s\n", name, label.c_str(), why.c_str());
            continue;
        }
        const float ms_fwd = timer.median_ms([&] { graphs.forward(ctx, lay.buf, ctx->stream); });
        const float ms_bwd = timer.median_ms([&] { graphs.backward(ctx, lay.buf, ctx->stream); });
        bench::report_flops(bench::fmt("sdpa_forward_%s", name), label, ms_fwd, forward_flops(s),
                            bench::kPeakBf16Tflops);
        bench::report_flops(bench::fmt("sdpa_backward_det_%s", name), label, ms_bwd, backward_flops(s),
                            bench::kPeakBf16Tflops);
        CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
        printf("layout %s at %s: %s\n", name, label.c_str(), compare_outputs(entry, lay, layout, s).c_str());
        rows->push_back({short_name(m), bench::fmt("layout %s: forward", name), ms_fwd, forward_flops(s)});
        rows->push_back(
            {short_name(m), bench::fmt("layout %s: backward, det", name), ms_bwd, backward_flops(s)});
    }
}

// Every plan of cuDNN's heuristics modes A, B and FALLBACK (attention_time_plans), forward and deterministic
// backward; "A#0" is the one the trainer runs.
void bench_plans(GpuContext* ctx, const ModelShape& m, DeviceSet& d) {
    const SdpaShape s = m.s;
    const SdpaBuffers& b = d.buf;
    for (bool backward : {false, true}) {
        const std::vector<AttentionPlanTiming> plans = attention_time_plans(
            ctx, backward, true, b.qkv, b.out, b.stats, b.dout, b.dqkv, s.B, s.T, s.H, s.D, 20, ctx->stream);
        for (const AttentionPlanTiming& p : plans) {
            if (p.ms < 0) {
                printf("plan %s %s\n", backward ? "backward" : "forward", p.name.c_str());
                continue;
            }
            bench::report_flops(
                backward ? "attention_backward_plan" : "attention_forward_plan",
                bench::fmt("%s,%s,ws=%lldMB", m.name, p.name.c_str(), (long long)(p.workspace_bytes >> 20)),
                p.ms, backward ? backward_flops(s) : forward_flops(s), bench::kPeakBf16Tflops);
        }
    }
}

void print_table(const std::vector<Row>& rows, const std::string& versions) {
    printf("\nattention alone (%s)\n", versions.c_str());
    printf("%-14s  %-36s  %9s  %7s\n", "shape", "what", "ms", "TFLOP/s");
    for (const Row& r : rows)
        printf("%-14s  %-36s  %9.4f  %7s\n", r.shape.c_str(), r.what.c_str(), r.ms,
               tflops(r.flops, r.ms).c_str());
    printf(
        "(FLOPs causal: forward 2*2*B*H*T*T*D/2, backward 2.5x forward; step rows: layers x the per-layer "
        "medians)\n");
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse_options(argc, argv);
    GpuContext ctx = create_gpu_context(0, 90);
    const std::string versions = gpu_library_versions() + "; built with " + sdpa_compiled_versions();
    printf("bench_attention: %s on %s\n", versions.c_str(), ctx.props.name);
    printf("timing: median of %d samples, each %d back-to-back call(s)%s\n", opt.samples, opt.launches,
           opt.flush ? " after writing 256 MiB (L2 flushed)" : " after 3 warm-up calls");
    fflush(stdout);
    Timer timer(opt, ctx.stream);
    std::vector<Row> rows;
    std::vector<ModelShape> shapes;
    const bool every_model = opt.shapes.empty() && opt.custom.empty();
    for (const ModelShape& m : kShapes)
        if (every_model || std::find(opt.shapes.begin(), opt.shapes.end(), m.name) != opt.shapes.end())
            shapes.push_back(m);
    shapes.insert(shapes.end(), opt.custom.begin(), opt.custom.end());
    for (const ModelShape& m : shapes) {
        DeviceSet d(m.s);
        const size_t nc = (size_t)m.s.B * m.s.T * m.s.H * m.s.D;
        fill_normal_bf16<<<1024, 256, 0, ctx.stream>>>(d.buf.qkv, 3 * nc, 1);
        fill_normal_bf16<<<1024, 256, 0, ctx.stream>>>(d.buf.dout, nc, 2);
        CHECK_LAUNCH();
        uint64_t dqkv_hash = 0;
        bench_entry_points(&ctx, m, d, timer, &rows, opt.chunks ? &dqkv_hash : nullptr);
        if (opt.chunks) bench_chunked_backward(&ctx, m, d, timer, dqkv_hash, &rows);
        if (opt.layouts) bench_layouts(&ctx, m, d, timer, &rows);
        if (opt.plans) bench_plans(&ctx, m, d);
        CHECK_CUDA(cudaDeviceSynchronize());
    }
    printf("cuDNN libraries mapped: %s\n", mapped_cudnn_libraries().c_str());
    print_table(rows, versions);
    destroy_gpu_context(&ctx);
    return 0;
}
