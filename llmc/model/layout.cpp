// The GPT's parameter layout table (llmc/model/layout.h).
#include "llmc/model/layout.h"

#include "llmc/host/check.h"

namespace {
constexpr int kNone = -1;
// clang-format off
const ParamSpec kParams[kNumParamTensors] = {
//   name        per layer rows     cols     decay  init                       linear     seed name                HF name              HF [in,out]
    {"wte",      false,    Dim::V,  Dim::C,  true,  ParamInit::Normal,         kLmHead,   "tok_embd.weight",       "wte.weight",        false},
    {"wpe",      false,    Dim::S,  Dim::C,  true,  ParamInit::Normal,         kNone,     "pos_embd.weight",       "wpe.weight",        false},
    {"ln1w",     true,     Dim::C,  Dim::One,false, ParamInit::One,            kNone,     "attn_norm.weight",      "ln_1.weight",       false},
    {"ln1b",     true,     Dim::C,  Dim::One,false, ParamInit::Zero,           kNone,     "attn_norm.bias",        "ln_1.bias",         false},
    {"qkvw",     true,     Dim::C3, Dim::C,  true,  ParamInit::Normal,         kQkv,      "attn.attn_proj.weight", "attn.c_attn.weight",true},
    {"qkvb",     true,     Dim::C3, Dim::One,false, ParamInit::Zero,           kQkv,      "attn.attn_proj.bias",   "attn.c_attn.bias",  false},
    {"attprojw", true,     Dim::C,  Dim::C,  true,  ParamInit::ResidualNormal, kAttProj,  "attn.out_proj.weight",  "attn.c_proj.weight",true},
    {"attprojb", true,     Dim::C,  Dim::One,false, ParamInit::Zero,           kAttProj,  "attn.out_proj.bias",    "attn.c_proj.bias",  false},
    {"ln2w",     true,     Dim::C,  Dim::One,false, ParamInit::One,            kNone,     "ffn_norm.weight",       "ln_2.weight",       false},
    {"ln2b",     true,     Dim::C,  Dim::One,false, ParamInit::Zero,           kNone,     "ffn_norm.bias",         "ln_2.bias",         false},
    {"fcw",      true,     Dim::F,  Dim::C,  true,  ParamInit::Normal,         kFc,       "ffn.0.weight",          "mlp.c_fc.weight",   true},
    {"fcb",      true,     Dim::F,  Dim::One,false, ParamInit::Zero,           kFc,       "ffn.0.bias",            "mlp.c_fc.bias",     false},
    {"fcprojw",  true,     Dim::C,  Dim::F,  true,  ParamInit::ResidualNormal, kFcProj,   "ffn.2.weight",          "mlp.c_proj.weight", true},
    {"fcprojb",  true,     Dim::C,  Dim::One,false, ParamInit::Zero,           kFcProj,   "ffn.2.bias",            "mlp.c_proj.bias",   false},
    {"lnfw",     false,    Dim::C,  Dim::One,false, ParamInit::One,            kNone,     "out_norm.weight",       "ln_f.weight",       false},
    {"lnfb",     false,    Dim::C,  Dim::One,false, ParamInit::Zero,           kNone,     "out_norm.bias",         "ln_f.bias",         false},
};
const LinearSpec kLinears[kLinearsPerLayer + 1] = {
//   name        weight      bias        in      out
    {"qkv",      kQkvw,      kQkvb,      Dim::C, Dim::C3},
    {"attproj",  kAttprojw,  kAttprojb,  Dim::C, Dim::C},
    {"fc",       kFcw,       kFcb,       Dim::C, Dim::F},
    {"fcproj",   kFcprojw,   kFcprojb,   Dim::F, Dim::C},
    {"lm_head",  kWte,       kNone,      Dim::C, Dim::V},  // tied to the token embedding
};
// clang-format on
}  // namespace

size_t dim_size(Dim d, const ModelConfig& m) {
    switch (d) {
        case Dim::One:
            return 1;
        case Dim::C:
            return (size_t)m.channels;
        case Dim::C3:
            return 3 * (size_t)m.channels;
        case Dim::F:
            return 4 * (size_t)m.channels;
        case Dim::V:
            return (size_t)m.vocab_size;
        case Dim::S:
            return (size_t)m.max_seq_len;
    }
    return 0;
}

const ParamSpec& param_spec(int id) {
    CHECK(id >= 0 && id < kNumParamTensors, "parameter id %d out of range", id);
    return kParams[id];
}

const LinearSpec& linear_spec(int kind) {
    CHECK(kind >= 0 && kind <= kLmHead, "linear kind %d out of range", kind);
    return kLinears[kind];
}

bool is_block_linear_weight(int id) {
    const ParamSpec& p = param_spec(id);
    return p.per_layer && p.linear >= 0 && linear_spec(p.linear).weight == id;
}

std::vector<ParamTensorInfo> parameter_table(const ModelConfig& m) {
    std::vector<ParamTensorInfo> table;
    size_t offset = 0;
    for (const ParamSpec& p : kParams) {
        std::vector<size_t> shape;
        if (p.per_layer) shape.push_back((size_t)m.num_layers);
        shape.push_back(dim_size(p.rows, m));
        if (p.cols != Dim::One) shape.push_back(dim_size(p.cols, m));
        size_t numel = 1;
        for (size_t d : shape) numel *= d;
        table.push_back({p.name, shape, offset, numel, p.weight_decay, p.per_layer});
        offset += numel;
    }
    return table;
}

size_t num_parameters(const ModelConfig& m) {
    size_t n = 0;
    for (const ParamTensorInfo& t : parameter_table(m)) n += t.numel;
    return n;
}

double flops_per_token(const ModelConfig& m, int seq_len) {
    return 6.0 * (double)num_parameters(m) + 12.0 * m.num_layers * (double)seq_len * m.channels;
}

double seed_script_flops_per_step(const ModelConfig& m) {
    return 6.0 * (double)num_parameters(m) * 16 * 1024;
}
