// The FP8 GEMMs of a Linear [OC, C] over N rows, with Fp8Tensor operands (llmc/fp8/fp8_tensor.h): each reads
// the copy its role needs (row-wise `data` or transposed `data_T`), the tensor's scale_inv and its format;
// the shapes come from the tensors. Adapters over matmul_gemm (llmc/kernels/gemm/matmul.cuh: plan cache,
// alignment and size rules); D is BF16 in all three, D = scale_inv_A * scale_inv_B * (A B).
#pragma once
#include "llmc/fp8/fp8_tensor.h"
#include "llmc/kernels/gemm/matmul.cuh"

// out_NO = x w^T + bias_O (nullable) (+ residual_NO when given, BF16 [N, OC], not aliasing out_NO): x.data
// [N, C], w.data [OC, C], both E4M3. Fast accumulation unless GemmTuning says otherwise.
void matmul_fp8_forward(MatmulPlanCache* cache, GpuContext* ctx, bf16* out_NO, const Fp8Tensor& x,
                        const Fp8Tensor& w, const bf16* bias_O, cudaStream_t stream,
                        const bf16* residual_NO = nullptr);

// dinp_NC = dy w (overwritten): dy.data [N, OC] (E4M3 or E5M2) and w.data_T [C, OC] (E4M3).
void matmul_fp8_dgrad(MatmulPlanCache* cache, GpuContext* ctx, bf16* dinp_NC, const Fp8Tensor& dy,
                      const Fp8Tensor& w, cudaStream_t stream);

// dweight_OI (+)= dy^T x: dy.data_T [OC, N] (E4M3 or E5M2) and x.data_T [C, N] (E4M3). accumulate: +=
// (beta = 1, BF16 C = D) else overwritten. N a multiple of 16 (the reduction dimension).
void matmul_fp8_wgrad(MatmulPlanCache* cache, GpuContext* ctx, bf16* dweight_OI, const Fp8Tensor& dy,
                      const Fp8Tensor& x, bool accumulate, cudaStream_t stream);
