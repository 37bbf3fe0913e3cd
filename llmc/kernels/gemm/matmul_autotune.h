// GEMM algorithm autotuning (GemmTuning in llmc/kernels/gemm/matmul.cuh), internal to
// llmc/kernels/matmul*.cu: the heuristic's best answers are timed on the call's own operands and the fastest
// kept, or a choice stored in the `--gemm-cache` file is taken instead.
#pragma once
#include <cublasLt.h>

#include <vector>

#include "llmc/host/config.h"  // kGemmCandidates: heuristic answers timed per GEMM when autotuning
#include "llmc/kernels/gemm/matmul_plan.cuh"

constexpr int kTimedRuns = 8;  // launches per timing (after two warm-up launches)

// The plan's algorithm under autotuning: the stored choice if there is one, else (outside stream capture:
// no timing inside a graph) the fastest of `cands`, stored for later processes. Inside a capture with no
// stored choice the heuristic's first (already in p->algo) stays.
void gemm_choose_algorithm(MatmulPlanCache* cache, GpuContext* ctx, MatmulPlan* p,
                           const std::vector<cublasLtMatmulHeuristicResult_t>& cands, const GemmArgs& args,
                           cudaStream_t stream);

// Mean microseconds of one launch of `algo` on the plan's operands, reading C at `c` and writing D at `d`
// (kTimedRuns launches after two warm-ups), or -1 if cuBLASLt refuses it.
float gemm_time_algorithm(GpuContext* ctx, const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo,
                          const GemmArgs& args, const void* c, void* d, cudaStream_t stream,
                          cudaEvent_t start, cudaEvent_t stop);

// The second round of autotuning (llmc/kernels/gemm/matmul_refine.cu). The heuristic's answers may differ
// in how they sum (split-K); variants of the winner and of the other answers (other tiles, thread-block
// cluster shapes, custom options; split-K and reduction scheme kept) are screened by one launch each, and the
// 8 fastest whose output on the call's operands is bitwise the first round's winner's (answers[winner]) are
// timed against it as the first round times; the fastest is kept. So the choice computes what the first
// round chose, faster or as fast. Without the memory for the comparison: the winner.
struct GemmRefinement {
    cublasLtMatmulHeuristicResult_t choice;
    float us = 0.0f, base_us = 0.0f;  // the choice's and the winner's microseconds, timed alike
    int variants = -1;                // variants screened (-1: no second round)
    int compared = 0, same_bits = 0;  // of those, compared with the winner's output; bitwise the same
};
GemmRefinement gemm_refine_choice(GpuContext* ctx, const MatmulPlan& p,
                                  const std::vector<cublasLtMatmulHeuristicResult_t>& answers, size_t winner,
                                  const GemmArgs& args, cudaStream_t stream);
