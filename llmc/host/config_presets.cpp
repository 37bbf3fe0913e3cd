// The GPT-2 family presets behind --model (config.h: model_preset, model_preset_names).
#include "llmc/host/config.h"

namespace {
struct Preset {
    const char* name;
    int L, C, H;
};
constexpr Preset kPresets[] = {
    {"124m", 12, 768, 12}, {"350m", 24, 1024, 16}, {"774m", 36, 1280, 20}, {"1.5b", 48, 1600, 25}};
}  // namespace

// llm.c's name of the largest size (its scripts say 1558M), taken for ours.
constexpr const char* kAliasOf1p5b = "1558m";

bool model_preset(const std::string& name, ModelConfig* out) {
    for (const Preset& p : kPresets) {
        if (name == p.name || (name == kAliasOf1p5b && std::string(p.name) == "1.5b")) {
            out->num_layers = p.L;
            out->channels = p.C;
            out->num_heads = p.H;
            out->vocab_size = ModelConfig().vocab_size;  // every preset: GPT-2's padded vocabulary
            out->max_seq_len = ModelConfig().max_seq_len;
            return true;
        }
    }
    return false;
}

std::vector<std::string> model_preset_names() {
    std::vector<std::string> names;
    for (const Preset& p : kPresets) names.push_back(p.name);
    return names;
}
