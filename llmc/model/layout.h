// The GPT's parameter layout, declared once: every parameter tensor's name, per-layer shape, weight decay,
// initialization, the Linear it feeds and its names in the exported file layouts. Allocation, ZeRO-1 shards,
// checkpoint tensor names, export/import, the parameter count and the FLOP count all read this table.
// Host code (no CUDA).
//
// Dimension key, one spelling per shape suffix everywhere in llmc/: B batch, T sequence, N = B x T tokens,
// C channels, F = 4C (MLP width), L layers, H heads, D = C / H head size, V vocabulary (padded),
// S the maximum sequence length (positions), and for any Linear O its out- and I its in-features. A tensor
// named x_NC is [N, C] row-major; W_OI an [out, in] nn.Linear weight, out_NO its output, bias_O its bias.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "llmc/host/config.h"

// The parameter tensors in canonical order (the layout of the flat parameter buffer, of reference files and
// of checkpoints); per-layer tensors are stacked over the layers.
enum ParamId {
    kWte,
    kWpe,
    kLn1w,
    kLn1b,
    kQkvw,
    kQkvb,
    kAttprojw,
    kAttprojb,
    kLn2w,
    kLn2b,
    kFcw,
    kFcb,
    kFcprojw,
    kFcprojb,
    kLnfw,
    kLnfb,
    kNumParamTensors
};

// The Linear layers: four per block (in the order of their FP8 scale slots: linear index = 4 x layer + kind)
// and the LM head, tied to the token embedding.
enum LinearKind { kQkv, kAttProj, kFc, kFcProj, kLinearsPerLayer, kLmHead = kLinearsPerLayer };

// A dimension of a parameter or Linear, resolved against the ModelConfig.
enum class Dim { One, C, C3, F, V, S };
size_t dim_size(Dim d, const ModelConfig& m);

enum class ParamInit { Zero, One, Normal, ResidualNormal };  // normal: N(0, 0.02); residual: / sqrt(2L)

struct ParamSpec {
    const char* name;
    bool per_layer;
    Dim rows, cols;  // one layer's shape [rows, cols] (cols One: a vector)
    bool weight_decay;
    ParamInit init;
    int linear;             // the LinearKind whose weight or bias this is, -1 for none
    const char* seed_name;  // in the seed script's state_dict (per layer: after "tsfmr_blks.{i}.")
    const char* hf_name;    // in Hugging Face GPT-2 (per layer: after "h.{i}.")
    bool hf_transposed;     // HF stores it [in, out] (Conv1D), the transpose of nn.Linear's [out, in]
};
const ParamSpec& param_spec(int id);

struct LinearSpec {
    const char* name;
    int weight, bias;  // ParamId (bias -1: none)
    Dim in, out;
};
const LinearSpec& linear_spec(int kind);

// One parameter tensor of a model: the spec resolved.
struct ParamTensorInfo {
    std::string name;
    std::vector<size_t> shape;  // full shape including the leading L for per-layer tensors
    size_t offset;              // element offset into the flat parameter buffer
    size_t numel;
    bool weight_decay;  // matrices (Linear weights, wte, wpe) are decayed; biases and LayerNorm are not
    bool per_layer;
    size_t slices() const { return per_layer ? shape[0] : 1; }
    size_t slice_numel() const { return numel / slices(); }
};
// The parameter table for `m` in canonical order.
std::vector<ParamTensorInfo> parameter_table(const ModelConfig& m);
// Total number of parameters (the table's sum).
size_t num_parameters(const ModelConfig& m);
// The block weights that are Linear weights (cast to FP8 in FP8 training), in LinearKind order.
bool is_block_linear_weight(int param_id);

// Training FLOPs per token, counted honestly: 6 x parameters + 12 x L x T x C (attention scores and values).
double flops_per_token(const ModelConfig& m, int seq_len);
// The report's per-step figure, 6 x parameters x 16 x 1024 (it assumed batch 16 while training batch 12).
double seed_script_flops_per_step(const ModelConfig& m);
