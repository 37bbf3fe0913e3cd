// The activation table (llmc/model/activations.h).
#include <algorithm>

#include "llmc/kernels/gemm/matmul.cuh"
#include "llmc/kernels/global_norm.cuh"
#include "llmc/kernels/layernorm/layernorm.cuh"
#include "llmc/model/activations.h"
#include "llmc/model/layout.h"
#include "llmc/model/step_runtime.h"

namespace {
enum class Count { One, L, LPlus1 };
enum class When { Always, Bf16Inputs, Bf16LmHead };
// Sizes in elements of the row's dtype (Bytes: in bytes).
enum class Size {
    N,
    NC,
    N3C,
    NF,
    NV,
    BHT,
    One,
    ReduceScratch,
    NormPartials,
    TokenSlots,
    StepScalarsBytes,
    AdamwScalarsBytes
};
enum class Dtype { BF16, F32, I32, Bytes };

struct ActivationSpec {
    Act id;
    const char* name;  // the memory plan's group
    Count count;
    Size size;
    Dtype dtype;
    When when;
};

// clang-format off
const ActivationSpec kActivations[] = {
//   id                      name                            count          size                    dtype         when
    {Act::Residual,          "residual",                     Count::LPlus1, Size::NC,               Dtype::BF16,  When::Always},
    {Act::ResidualMid,       "residual_mid",                 Count::L,      Size::NC,               Dtype::BF16,  When::Always},
    {Act::Ln1,               "ln1",                          Count::L,      Size::NC,               Dtype::BF16,  When::Bf16Inputs},
    {Act::Ln2,               "ln2",                          Count::L,      Size::NC,               Dtype::BF16,  When::Bf16Inputs},
    {Act::Qkv,               "qkv",                          Count::L,      Size::N3C,              Dtype::BF16,  When::Always},
    {Act::Atty,              "atty",                         Count::L,      Size::NC,               Dtype::BF16,  When::Always},
    {Act::FchPreGelu,        "fch (pre-gelu)",               Count::L,      Size::NF,               Dtype::BF16,  When::Always},
    {Act::Ln1Mean,           "ln stats",                     Count::L,      Size::N,                Dtype::F32,   When::Always},
    {Act::Ln1Rstd,           "ln stats",                     Count::L,      Size::N,                Dtype::F32,   When::Always},
    {Act::Ln2Mean,           "ln stats",                     Count::L,      Size::N,                Dtype::F32,   When::Always},
    {Act::Ln2Rstd,           "ln stats",                     Count::L,      Size::N,                Dtype::F32,   When::Always},
    {Act::AttStats,          "att stats",                    Count::L,      Size::BHT,              Dtype::F32,   When::Always},
    {Act::Lnf,               "lnf",                          Count::One,    Size::NC,               Dtype::BF16,  When::Bf16LmHead},
    {Act::LnfMean,           "ln stats",                     Count::One,    Size::N,                Dtype::F32,   When::Always},
    {Act::LnfRstd,           "ln stats",                     Count::One,    Size::N,                Dtype::F32,   When::Always},
    {Act::Logits,            "logits",                       Count::One,    Size::NV,               Dtype::BF16,  When::Always},
    {Act::Losses,            "losses",                       Count::One,    Size::N,                Dtype::F32,   When::Always},
    {Act::LossScalar,        "losses",                       Count::One,    Size::One,              Dtype::F32,   When::Always},
    {Act::GeluOut,           "scratch",                      Count::One,    Size::NF,               Dtype::BF16,  When::Bf16Inputs},
    {Act::ScratchNC,         "scratch",                      Count::One,    Size::NC,               Dtype::BF16,  When::Always},
    {Act::GradNC,            "grad scratch",                 Count::One,    Size::NC,               Dtype::BF16,  When::Always},
    {Act::GradNF,            "grad scratch",                 Count::One,    Size::NF,               Dtype::BF16,  When::Always},
    {Act::GradResidual,      "grad scratch",                 Count::One,    Size::NC,               Dtype::BF16,  When::Always},
    {Act::ReduceScratch,     "reduce scratch",               Count::One,    Size::ReduceScratch,    Dtype::F32,   When::Always},
    {Act::NormPartials,      "reduce scratch",               Count::One,    Size::NormPartials,     Dtype::F32,   When::Always},
    {Act::StepScalars,       "step scalars",                 Count::One,    Size::StepScalarsBytes, Dtype::Bytes, When::Always},
    {Act::AdamwScalars,      "step scalars",                 Count::One,    Size::AdamwScalarsBytes,Dtype::Bytes, When::Always},
    {Act::TokenSlots,        "tokens",                       Count::One,    Size::TokenSlots,       Dtype::I32,   When::Always},
};
// clang-format on

bool present(When w, const ActivationShape& s) {
    switch (w) {
        case When::Always:
            return true;
        case When::Bf16Inputs:
            return s.bf16_inputs;
        case When::Bf16LmHead:  // the BF16 head's input; the FP8 head's final LayerNorm writes FP8
            return s.bf16_lm_head;
    }
    return false;
}

size_t elements(Size z, const ActivationShape& s) {
    const size_t N = s.B * s.T, C = s.C;
    switch (z) {
        case Size::N:
            return N;
        case Size::NC:
            return N * C;
        case Size::N3C:
            return N * 3 * C;
        case Size::NF:
            return N * 4 * C;
        case Size::NV:
            return N * s.V;
        case Size::BHT:
            return s.B * s.H * s.T;
        case Size::One:
            return 1;
        case Size::ReduceScratch:  // LayerNorm and bias backward partial sums
            return std::max<size_t>(layernorm_backward_scratch_bytes((int)N, (int)C),
                                    matmul_dbias_scratch_bytes((int)N, (int)(4 * C))) /
                       sizeof(float) +
                   1;
        case Size::NormPartials:
            return kNumParamTensors * global_norm_num_partials();
        case Size::TokenSlots:
            return s.accum_steps * token_slot_ints(N);
        case Size::StepScalarsBytes:
            return sizeof(StepScalars);
        case Size::AdamwScalarsBytes:
            return 2 * sizeof(AdamWStepScalars);
    }
    return 0;
}

size_t dtype_bytes(Dtype d) {
    switch (d) {
        case Dtype::BF16:
            return 2;
        case Dtype::F32:
        case Dtype::I32:
            return 4;
        case Dtype::Bytes:
            return 1;
    }
    return 0;
}
}  // namespace

void Activations::plan(const ActivationShape& shape, Arena* arena) {
    for (const ActivationSpec& a : kActivations) {
        const size_t n = a.count == Count::One ? 1 : a.count == Count::L ? shape.L : shape.L + 1;
        std::vector<void*>& ptrs = ptrs_[(int)a.id];
        ptrs.assign(n, nullptr);
        if (!present(a.when, shape)) continue;
        const size_t bytes = elements(a.size, shape) * dtype_bytes(a.dtype);
        for (size_t l = 0; l < n; l++) arena->add(a.name, reinterpret_cast<char**>(&ptrs[l]), bytes);
    }
}
