// LayerNorm (+ residual add) written in FP8 directly by the pass that computes it (the input of an FP8 GEMM:
// no BF16 round trip, no separate amax pass), and its amax-only calibration pass.
//
// Semantics, bit for bit: y = the bf16 value layernorm_forward writes (llmc/kernels/layernorm/layernorm.cu:
// the same fp32 formula and operation order), then quantized exactly as fp8_cast_transpose does
// (llmc/kernels/cast/cast.cuh): fp8 = saturate(float(y) * scale) with round to nearest even, amax = max |y|
// (NaN propagates) into the slot's staging amax, scale read from the slot on the device, and
// out.scale_inv (may be null) = the slot's scale_inv. Shapes: N and C positive multiples of 16, C <= 8192,
// pointers 16-byte aligned; out.data [N, C] may be null, out.data_T [C, N] is required.
//
// Step-0 calibration (current scaling once): fp8_layernorm_amax, then the recipe's calibration of the slot,
// then the fused kernel.
#pragma once
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/kernels/cast/cast.cuh"

// LayerNorm (eps 1e-5, weight and bias) with an optional fused residual add, quantized to FP8.
// inp2_NC != null: residual_NC = bf16(inp1 + inp2) is stored and normalized (as residual_layernorm_forward);
// inp2_NC == null: inp1_NC is normalized and residual_NC is not written (may be null).
// mean_N / rstd_N (may be null) receive the same fp32 statistics as the BF16 kernel, bit for bit. Outputs
// must not overlap the inputs.
// One block per 32 rows (16 when C > 3072; for 1280 < C <= 2048 as many as put every block in one wave;
// tile_rows > 0, a multiple of 16, sets it: the tests and the benchmark's sweep):
// each warp normalizes whole rows held in registers (or, warps_per_row = 2 where C <= 2048, each pair of
// warps a row, half of it each: the same bits), writes the row-wise FP8 bytes and stages them in shared
// memory; then the block writes the transposed tile (tile_rows contiguous bytes per transposed row).
// warps_per_row 0: the tuned choice for C. [N, C] = [out.rows, out.cols].
void fp8_residual_layernorm_forward(bf16* residual_NC, const Fp8Tensor& out, float* mean_N, float* rstd_N,
                                    const bf16* inp1_NC, const bf16* inp2_NC, const bf16* weight_C,
                                    const bf16* bias_C, cudaStream_t stream, int tile_rows = 0,
                                    int warps_per_row = 0);

// Calibration: max |y| of the same LayerNorm outputs ([t.rows, t.cols]) into t's staging amax; nothing else
// written.
void fp8_layernorm_amax(const bf16* inp1_NC, const bf16* inp2_NC, const bf16* weight_C, const bf16* bias_C,
                        const Fp8Tensor& t, cudaStream_t stream);
