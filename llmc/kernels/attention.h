// Causal multi-head self-attention (flash attention) through cuDNN's fused SDPA graphs (cudnn-frontend).
// BF16 inputs/outputs, FP32 softmax and accumulation, attention scale 1/sqrt(D), causal (top-left) mask.
// Q, K, V are read in place from the packed qkv rows: row n of qkv_NC3 is [q | k | v], each C = H*D wide,
// head h at columns h*D .. h*D+D-1 of each part (i.e. [B, T, 3, H, D]). The output out_NC is [B, T, H, D].
// stats_BHT holds, per (b, h, t), the natural-log log-sum-exp of that row's scaled, masked scores
// (max_j s_tj + log sum_j exp(s_tj - max), s = q.k / sqrt(D)), which backward needs.
// T not a multiple of 128: the backward graph takes an explicit padding mask with every length T (same
// result), so that no host-to-device copy is captured into the CUDA graph (attention.cu says why).
// Implemented in attention.cpp, its own translation unit: cudnn_frontend is header-only and slow to compile.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "llmc/gpu/context.h"

typedef __nv_bfloat16 bf16;  // same typedef as llmc/gpu/cuda_common.cuh

// Cache of built cuDNN graphs keyed by (B, T, H, D, forward-inference / forward-training / backward).
// Building a graph takes from tens of milliseconds to seconds; executing a cached one costs microseconds of
// host time. Owned by the caller (one per GpuContext); not thread-safe.
// deterministic_backward: ask cuDNN for its deterministic backward (bitwise reproducible dQ; it needs a
// B*H*T*T*2-byte dP workspace, ~630 MB at B=12, H=25, T=1024). false: faster fp32 atomics for dQ.
class AttentionGraphs {
  public:
    explicit AttentionGraphs(bool deterministic_backward = true);
    ~AttentionGraphs();
    AttentionGraphs(const AttentionGraphs&) = delete;
    AttentionGraphs& operator=(const AttentionGraphs&) = delete;
    bool deterministic_backward() const { return deterministic_; }

    struct Impl;  // the graphs, keyed by shape (defined in attention.cpp)
    std::unique_ptr<Impl> impl;

  private:
    bool deterministic_;
};

// out_NC [B*T, C] = softmax(causal(q k^T / sqrt(D))) v per head; stats_BHT [B, H, T] fp32 log-sum-exp for
// backward. stats_BHT == nullptr selects an inference graph that writes no stats.
// Builds the graph on first use of a shape (fatal error if cuDNN cannot run it).
void attention_forward(AttentionGraphs* graphs, GpuContext* ctx, bf16* out_NC, float* stats_BHT,
                       const bf16* qkv_NC3, int B, int T, int H, int D, cudaStream_t stream);

// dqkv_NC3 [B*T, 3C] = [dq | dk | dv] (overwritten, same packed layout as qkv_NC3), from dout_NC and the
// forward's inputs, output and stats.
void attention_backward(AttentionGraphs* graphs, GpuContext* ctx, bf16* dqkv_NC3, const bf16* dout_NC,
                        const bf16* qkv_NC3, const bf16* out_NC, const float* stats_BHT, int B, int T, int H,
                        int D, cudaStream_t stream);

// The plan choice, measured (the benchmark's question: is the heuristic's first plan, which
// attention_forward/backward use, the fastest?): every execution plan that cuDNN's heuristics modes A, B and
// FALLBACK offer for the training forward (backward = false) or the backward, each built and run `reps` times
// on the given buffers (outputs overwritten). "A#0" is the plan the trainer uses. ms < 0: the plan (or the
// mode) failed, `name` says where.
struct AttentionPlanTiming {
    std::string name;
    int64_t workspace_bytes;
    float ms;
};
std::vector<AttentionPlanTiming> attention_time_plans(GpuContext* ctx, bool backward, bool deterministic,
                                                      bf16* qkv_NC3, bf16* out_NC, float* stats_BHT,
                                                      bf16* dout_NC, bf16* dqkv_NC3, int B, int T, int H,
                                                      int D, int reps, cudaStream_t stream);
