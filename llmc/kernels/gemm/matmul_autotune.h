// GEMM algorithm autotuning (GemmTuning in llmc/kernels/gemm/matmul.cuh), internal to
// llmc/kernels/matmul*.cu: the heuristic's best answers are timed on the call's own operands and the fastest
// kept, or a choice stored in the `--gemm-cache` file is taken instead.
#pragma once
#include <cublasLt.h>

#include <vector>

#include "llmc/kernels/gemm/matmul_plan.cuh"

constexpr int kGemmCandidates = 8;  // heuristic answers timed per GEMM when autotuning

// The plan's algorithm under autotuning: the stored choice if there is one, else (outside stream capture:
// no timing inside a graph) the fastest of `cands`, stored for later processes. Inside a capture with no
// stored choice the heuristic's first (already in p->algo) stays.
void gemm_choose_algorithm(MatmulPlanCache* cache, GpuContext* ctx, MatmulPlan* p,
                           const std::vector<cublasLtMatmulHeuristicResult_t>& cands, const GemmArgs& args,
                           cudaStream_t stream);
