// The byte budget of the step (make bench-kernels' second table, scripts/bench/bench_kernels.sh). A benchmark
// of a kernel that GPT-1.5B's fp8 training step runs (B=12, T=1024, default flags, a steady step: no
// calibration) reports with report_budget, saying how many times one step runs it with this shape. The table
// sets its time against a plain copy of the same bytes (cudaMemcpyAsync device to device of half of them:
// half read, half written), timed here once per size as the kernel is (one launch after an L2 flush) and as
// 48 copies back to back in a CUDA graph (per copy; the step runs as one graph), and prints what each kernel
// costs a step beyond the one-launch copy, largest first.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "dev/dev_utils.h"

namespace bench {

constexpr int kGraphCopies = 48;  // one per layer of GPT-1.5B

struct CopyTimes {
    float one_launch_ms;  // after an L2 flush, as dev::time_ms times the kernels
    float in_graph_ms;    // per copy, kGraphCopies of them in one graph
};

// A copy of `bytes` read + written, cached per size. The copies of the graph read buffers no earlier copy of
// it touched within the last 2 x 256 MiB (H200 L2: 50 MiB), so none is served from L2.
inline CopyTimes copy_times(double bytes) {
    static std::map<size_t, CopyTimes> cache;
    const size_t half = ((size_t)(bytes / 2) + 255) / 256 * 256;
    if (auto it = cache.find(half); it != cache.end()) return it->second;
    const size_t count =
        std::min<size_t>(2 * kGraphCopies, std::max<size_t>(4, 2 * ((512ull << 20) / half + 1)));
    std::vector<char*> buf(count);
    for (char*& b : buf) CHECK_CUDA(cudaMalloc(&b, half));
    CopyTimes t;
    t.one_launch_ms =
        dev::time_ms([&] { CHECK_CUDA(cudaMemcpyAsync(buf[1], buf[0], half, cudaMemcpyDeviceToDevice, 0)); });
    cudaStream_t capture;
    CHECK_CUDA(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
    for (size_t i = 0; i < kGraphCopies; i++)  // count is even: sources even, destinations odd
        CHECK_CUDA(cudaMemcpyAsync(buf[(2 * i + 1) % count], buf[(2 * i) % count], half,
                                   cudaMemcpyDeviceToDevice, capture));
    CHECK_CUDA(cudaStreamEndCapture(capture, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    t.in_graph_ms = dev::time_ms([&] { CHECK_CUDA(cudaGraphLaunch(exec, 0)); }) / kGraphCopies;
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaStreamDestroy(capture));
    for (char* b : buf) CHECK_CUDA(cudaFree(b));
    cache[half] = t;
    return t;
}

// The BENCH line of report_bandwidth, and a BUDGET line:
//   BUDGET <kernel> <shape> <per_step> <ms> <bytes> <copy ms, one launch> <copy ms, in a graph>
inline void report_budget(const std::string& kernel, const std::string& shape, double ms, double bytes,
                          int per_step) {
    report_bandwidth(kernel, shape, ms, bytes);
    const CopyTimes c = copy_times(bytes);
    printf("BUDGET\t%s\t%s\t%d\t%.4f\t%.0f\t%.4f\t%.4f\n", kernel.c_str(), shape.c_str(), per_step, ms, bytes,
           c.one_launch_ms, c.in_graph_ms);
    fflush(stdout);
}

}  // namespace bench
