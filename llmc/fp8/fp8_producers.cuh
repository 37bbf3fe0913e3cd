// Fused FP8 producers (residual + LayerNorm, GELU, and their amax-only calibration passes): the kernels
// that produce the inputs of FP8 GEMMs write
// them in FP8 directly, row-wise and transposed, in the same pass that computes them (no BF16 round trip,
// no separate amax pass).
//
// Semantics, bit for bit: y = the bf16 value the BF16 kernel writes (llmc/kernels/layernorm.cu,
// llmc/kernels/gelu.cu: same fp32 formula and operation order), then quantized exactly as fp8_cast_transpose
// does (llmc/fp8/cast.cuh): fp8 = saturate(float(y) * scale) with round to nearest even, amax = max |y| (NaN
// propagates) into the slot's staging amax (one integer atomicMax per block), scale read from st->scale[slot]
// on the device, and out.scale_inv (one float, may be null) = st->scale_inv[slot]. So the output bytes equal
// the BF16 kernel followed by fp8_cast_transpose.
//
// Each writes the Fp8Tensor `out` (its bytes, scale_inv, slot and format). Shapes: N and C positive
// multiples of 16 (LayerNorm: C <= 8192), pointers 16-byte aligned. out.data [N, C] (row-wise) may be null;
// out.data_T [C, N] (transposed) is required.
//
// Step-0 calibration (current scaling once): run the *_amax variant (same y, only the amax), then
// fp8_calibrate_scales(st, slot, 1, margin, stream), then the fused kernel.
#pragma once
#include "llmc/fp8/cast.cuh"
#include "llmc/gpu/cuda_common.cuh"

// LayerNorm (eps 1e-5, weight and bias) with an optional fused residual add, quantized to FP8.
// inp2_NC != null: residual_NC = bf16(inp1 + inp2) is stored and normalized (as residual_layernorm_forward);
// inp2_NC == null: inp1_NC is normalized and residual_NC is not written (may be null).
// mean_N / rstd_N (may be null) receive the same fp32 statistics as the BF16 kernel, bit for bit. Outputs
// must not overlap the inputs.
// One block per 32 rows (16 when C > 3072; for 1280 < C <= 2048 as many as put every block in one wave;
// tile_rows > 0, a multiple of 16, sets it: the tests and the benchmark's sweep):
// each warp normalizes whole rows held in registers, writes the row-wise FP8 bytes and stages them in shared
// memory; then the block writes the transposed tile (tile_rows contiguous bytes per transposed row).
void fp8_residual_layernorm_forward(bf16* residual_NC, const Fp8Tensor& out, float* mean_N, float* rstd_N,
                                    Fp8ScaleState* st, const bf16* inp1_NC, const bf16* inp2_NC,
                                    const bf16* weight_C, const bf16* bias_C, int N, int C,
                                    cudaStream_t stream, int tile_rows = 0);

// Calibration: max |y| of the same LayerNorm outputs into the slot's staging amax; nothing else written.
void fp8_layernorm_amax(Fp8ScaleState* st, int slot, const bf16* inp1_NC, const bf16* inp2_NC,
                        const bf16* weight_C, const bf16* bias_C, int N, int C, cudaStream_t stream);

// y = bf16(gelu(pre)) as gelu_forward computes it (erf form, or the tanh approximation if gelu_tanh),
// quantized to FP8: row-wise out.data [N, C] (may be null) and transposed out.data_T [C, N], with amax.
// pre_NC is the GELU input (the fc output). 128 x 128 tiles transposed through shared memory.
void fp8_gelu_cast_transpose(const Fp8Tensor& out, Fp8ScaleState* st, const bf16* pre_NC, int N, int C,
                             bool gelu_tanh, cudaStream_t stream);

// The same, row-wise out.data only (no transposed copy: --recompute 1 rebuilds it in backward): the same
// bytes, amax and scale_inv as fp8_gelu_cast_transpose's row-wise output. N * C multiple of 8.
void fp8_gelu_cast(const Fp8Tensor& out, Fp8ScaleState* st, const bf16* pre_NC, int N, int C, bool gelu_tanh,
                   cudaStream_t stream);

// Calibration: max |bf16(gelu(pre))| over N * C elements into the slot's staging amax (N * C multiple of 8).
void fp8_gelu_amax(Fp8ScaleState* st, int slot, const bf16* pre_NC, int N, int C, bool gelu_tanh,
                   cudaStream_t stream);
