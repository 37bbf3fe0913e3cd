#include "llmc/host/checkpoint_flags.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "llmc/formats/checkpoint.h"
#include "llmc/formats/json.h"
#include "llmc/host/settings.h"

namespace {

const Setting& setting_of(const std::string& key) {
    for (const Setting& s : settings())
        if (s.json && key == s.json && s.flags) return s;
    throw std::logic_error("no flag writes config key '" + key + "'");
}

// The flag (and its value) that sets `s` to `v`, as config.json wrote it.
std::vector<std::string> flag_for(const Setting& s, const json::Value& v) {
    const std::string flag = s.long_name();
    switch (s.type) {
        case SettingType::Switch:
            if (!v.as_bool() && s.negated_name().empty()) throw std::logic_error(flag + " has no negation");
            return {v.as_bool() ? flag : s.negated_name()};
        case SettingType::Int:
        case SettingType::Int64:
        case SettingType::Uint64:
            return {flag, std::to_string(v.as_int())};
        case SettingType::Float:
        case SettingType::Double: {
            char buf[32];
            snprintf(buf, sizeof buf, "%.9g", v.as_double());
            return {flag, buf};
        }
        case SettingType::Text:
        case SettingType::Choice:
            return {flag, v.as_string()};
    }
    return {};
}

json::Value parsed_config(const std::string& config_json) {
    json::Value cfg;
    try {
        cfg = json::parse(config_json);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("the checkpoint's configuration is not JSON: ") + e.what());
    }
    if (!cfg.is_object()) throw std::runtime_error("the checkpoint's configuration is not a JSON object");
    return cfg;
}

void append_flag(const json::Value& cfg, const std::string& key, std::vector<std::string>* flags) {
    const json::Value* v = cfg.find(key);
    if (!v) throw std::runtime_error("the checkpoint's configuration has no '" + key + "'");
    const Setting& s = setting_of(key);
    try {
        for (std::string& f : flag_for(s, *v)) flags->push_back(std::move(f));
    } catch (const std::logic_error&) {  // json's wrong-type error: not the value config.json writes
        throw std::runtime_error("the checkpoint's configuration has an unexpected '" + key + "'");
    }
}

// model_recipe_flags of a parsed configuration.
std::vector<std::string> flags_of(const json::Value& cfg) {
    const json::Value* precision = cfg.find("precision");
    const bool fp8 = precision && precision->is_string() && precision->as_string() == "fp8";
    std::vector<std::string> flags;
    for (const std::string& key : model_recipe_keys())
        if (key.rfind("fp8_", 0) != 0 || fp8) append_flag(cfg, key, &flags);
    return flags;
}

}  // namespace

const std::vector<std::string>& model_recipe_keys() {
    static const std::vector<std::string> keys = {
        "model",       "layers",        "channels",   "heads",        "vocab",
        "max_seq",     "gelu",          "precision",  "adam_moments", "fp8_format",
        "fp8_history", "fp8_amax_algo", "fp8_margin", "fp8_lm_head"};
    return keys;
}

std::vector<std::string> model_recipe_flags(const std::string& config_json) {
    return flags_of(parsed_config(config_json));
}

CliResult parse_cli_adopting_checkpoint(int argc, const char* const* argv, TrainConfig* cfg,
                                        std::vector<std::string>* adopted) {
    adopted->clear();
    const TrainConfig defaults = *cfg;
    CliResult r = parse_cli(argc, argv, cfg);
    const RunMode mode = r.run ? run_mode(*cfg) : RunMode::Train;
    if (mode == RunMode::Train || cfg->resume.empty()) return r;
    for (const std::string& key : model_recipe_keys())
        if (std::find(r.given.begin(), r.given.end(), key) != r.given.end()) return r;
    const std::string config = latest_checkpoint_config(cfg->resume);
    if (config.empty()) return r;
    std::vector<std::string> flags;
    try {
        const json::Value parsed = parsed_config(config);
        flags = flags_of(parsed);
        // the run's sequence length too, unless given: the default may exceed the checkpoint's --max-seq
        if (std::find(r.given.begin(), r.given.end(), "seq") == r.given.end())
            append_flag(parsed, "seq", &flags);
    } catch (const std::runtime_error&) {
        return r;  // an odd configuration: the resume's own checks name what does not match
    }
    std::vector<const char*> args = {argc > 0 ? argv[0] : "train_gpt"};
    for (const std::string& f : flags) args.push_back(f.c_str());
    for (int i = 1; i < argc; i++) args.push_back(argv[i]);
    *cfg = defaults;
    r = parse_cli((int)args.size(), args.data(), cfg);
    if (r.run) *adopted = flags;
    return r;
}
