// Every device buffer of a training step for B x T tokens, declared once in a table (llmc/model/
// activations.cu: name, size, dtype, per layer, when present) that drives the allocation, the printed memory
// plan and the NaN fill of the tests. Buffers that are not present (e.g. the BF16 LayerNorm outputs in FP8,
// where the LayerNorms write FP8 copies) read as null. What the FP8 Linears keep and share is theirs
// (llmc/model/linear_fp8.h), planned into the same arena.
#pragma once
#include <cstddef>
#include <vector>

#include "llmc/gpu/arena.h"
#include "llmc/gpu/cuda_common.cuh"

enum class Act {
    Residual,     // L+1 x [N, C]: block inputs; [L] feeds the final LayerNorm
    ResidualMid,  // [N, C]: after the attention's residual add
    Ln1,
    Ln2,         // [N, C]: BF16 LayerNorm outputs (the Linear inputs the BF16 backward reads)
    Qkv,         // [N, 3C]
    Atty,        // [N, C]: attention output
    FchPreGelu,  // [N, F]
    Ln1Mean,
    Ln1Rstd,
    Ln2Mean,
    Ln2Rstd,
    AttStats,
    Lnf,
    LnfMean,
    LnfRstd,
    Logits,  // [N, V]; dlogits after the loss with targets
    Losses,
    LossScalar,
    GeluOut,    // [N, F], shared: BF16 GELU output (recomputed in backward instead of stored per layer)
    ScratchNC,  // projection outputs
    GradNC,
    GradNF,
    GradResidual,
    ReduceScratch,
    NormPartials,
    StepScalars,
    AdamwScalars,
    TokenSlots,
    kCount
};

struct ActivationShape {
    size_t B, T, C, L, H, V;
    int accum_steps;
    bool bf16_inputs;   // the Linears' BF16 inputs are model tensors (ln1, ln2, the GELU output)
    bool bf16_lm_head;  // ... and the LM head's (lnf)
};

class Activations {
  public:
    // Adds every buffer present for `shape` to `arena` (which the caller allocates).
    void plan(const ActivationShape& shape, Arena* arena);
    template <class T>
    T* at(Act a, size_t layer = 0) const {
        return static_cast<T*>(ptrs_[(int)a][layer]);
    }
    bf16* bf(Act a, size_t layer = 0) const { return at<bf16>(a, layer); }
    float* f32(Act a, size_t layer = 0) const { return at<float>(a, layer); }

  private:
    std::vector<void*> ptrs_[(int)Act::kCount];
};
