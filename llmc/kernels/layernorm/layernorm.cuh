// LayerNorm over the last dim C of an [N, C] bf16 tensor (N = B*T rows), with weight and bias, eps 1e-5,
// biased variance (as PyTorch). Statistics in fp32: mean_N and rstd_N = 1/sqrt(var + eps) are saved by the
// forward for the backward. C must be a multiple of 8 and at most 8192; tensors 16-byte aligned.
// Forward: one warp per row, the row held in registers (two-pass mean/variance, one read of the input).
// Backward: one block per group of rows, each thread owning 8 (or 16) channels for all its rows, so the
// dweight/dbias partial sums live in registers; per-block partials go to `scratch`, then a second kernel
// reduces them in a fixed order. Results are bitwise deterministic on a given GPU.
#pragma once
#include <cstddef>

#include "llmc/gpu/cuda_common.cuh"

constexpr float kLayerNormEps = 1e-5f;
constexpr int kLayerNormMaxC = 8192;

// out = (inp - mean) * rstd * weight + bias. mean_N / rstd_N may be nullptr (not saved).
void layernorm_forward(bf16* out_NC, float* mean_N, float* rstd_N, const bf16* inp_NC, const bf16* weight_C,
                       const bf16* bias_C, int N, int C, cudaStream_t stream);

// residual = bf16(inp1 + inp2) (stored), then out = LayerNorm(residual) computed from the rounded residual.
void residual_layernorm_forward(bf16* residual_NC, bf16* out_NC, float* mean_N, float* rstd_N,
                                const bf16* inp1_NC, const bf16* inp2_NC, const bf16* weight_C,
                                const bf16* bias_C, int N, int C, cudaStream_t stream);

// Bytes of fp32 scratch that layernorm_backward needs for N rows of width C.
size_t layernorm_backward_scratch_bytes(int N, int C);

// dinp += dL/dinp (ACCUMULATED: dinp is the residual-stream gradient); dweight, dbias OVERWRITTEN with the
// sums over the N rows (accumulate: dweight += sum, dbias += sum, for gradient accumulation). inp/mean/rstd
// are the forward's input and saved statistics. `scratch` holds at least layernorm_backward_scratch_bytes(N,
// C) bytes (contents on entry irrelevant).
// options: how the backward kernel runs, every way with the same bits (dev/test_layernorm compares them):
// bulk_loads, each staged row copied whole by the tensor memory accelerator (where mean_N and rstd_N are
// 16-byte aligned and N a multiple of 4; else per-thread cp.async); fixed_slots, the per-row block sums over
// a fixed 8 slots (blocks of at most 8 warps: C <= 2048). Both cut instructions per row; together 2% faster
// at 12288 x 1600 on an H100 (docs/performance.md, 2026-12-05, fifteenth session), so both on by default.
struct LayerNormBackwardOptions {
    bool bulk_loads = true;
    bool fixed_slots = true;
};
void layernorm_backward(bf16* dinp_NC, bf16* dweight_C, bf16* dbias_C, float* scratch, const bf16* dout_NC,
                        const bf16* inp_NC, const bf16* weight_C, const float* mean_N, const float* rstd_N,
                        int N, int C, cudaStream_t stream, bool accumulate = false,
                        LayerNormBackwardOptions options = {});
