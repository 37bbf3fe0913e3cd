// Every device buffer of a training step for B x T tokens, declared once in a table (llmc/model/
// activations.cu: name, size, dtype, per layer, when present) that drives the allocation, the printed memory
// plan and the NaN fill of the tests. Buffers that are not present (e.g. the BF16 LayerNorm outputs in FP8,
// where the LayerNorms write FP8 copies) read as null.
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
    Fp8XtQkv,
    Fp8XtAttProj,
    Fp8XtFc,
    Fp8XtFcProj,         // per layer: the FP8 X^T a Linear keeps for its wgrad
    Fp8XtFcProjShared,   // --recompute 1: one fc-proj X^T, rebuilt in backward
    Fp8XtAttProjShared,  // --recompute 2: one attn-proj X^T, rebuilt in backward from the attention output
    Fp8DyTFcProjKept,    // --recompute 1: the fc-proj's dY^T, kept for its wgrad until the X^T is rebuilt
    Fp8DyScaleInvFcProjKept,  // --recompute 1: that dY^T's scale_inv (a GEMM scale pointer: a buffer of its
                              // own)
    Fp8XtLmHead,              // --fp8-lm-head: the final LayerNorm's FP8 output, transposed
    Fp8XRows,
    Fp8DyRows,
    Fp8DyT,
    Fp8DyScaleInv,
    Fp8DbiasScratch,  // shared FP8 scratch
    kCount
};

struct ActivationShape {
    size_t B, T, C, L, H, V;
    int accum_steps;
    bool fp8;
    bool recompute_fc_proj_input;
    bool recompute_att_proj_input;
    bool fp8_lm_head;
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
    __nv_fp8_storage_t* fp8(Act a, size_t layer = 0) const { return at<__nv_fp8_storage_t>(a, layer); }

  private:
    std::vector<void*> ptrs_[(int)Act::kCount];
};
