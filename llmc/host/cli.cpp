#include "llmc/host/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "llmc/host/cli_text.h"
#include "llmc/host/settings.h"

namespace {

// CLI11 messages can span lines; the user sees exactly one line.
std::string one_line(const std::string& s) {
    std::string out;
    bool pending_space = false;
    for (char c : s) {
        if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) out += ' ';
        pending_space = false;
        out += c;
    }
    return out;
}

CliResult usage_error(const std::string& msg) {
    CliResult r;
    r.run = false;
    r.exit_code = 2;
    r.message = "error: " + one_line(msg) + "\n";
    return r;
}

// "124m|350m|774m|1.5b" (sep "|") or "124m, 350m, 774m, 1.5b" (sep ", ").
std::string preset_names(const char* sep) {
    std::string s;
    for (const std::string& n : model_preset_names()) s += (s.empty() ? "" : sep) + n;
    return s;
}

// The flags of the settings table (llmc/host/settings.h), the variables they write before the configuration
// is assembled (choice flags as text, the model overrides), and the checks that need to know which flags
// were given.
class CliSpec {
  public:
    explicit CliSpec(TrainConfig* cfg, const char* argv0);
    // argv as CLI11 should see it: a negative number after a numeric flag joined to it ("--steps=-1", so it
    // is read as the value whatever the CLI11 version's rule); "" or the one-line error for a missing value
    // or a value that looks like a flag.
    std::string rewrite_args(int argc, const char* const* argv, std::vector<std::string>* out) const;
    // After app.parse: choices, the preset and the overrides into the config.
    std::string assemble();
    // A flag given in a run mode it does nothing in (the settings table's column): its one-line error, or "".
    // Before validate(): the mode's own settings (--generate's --batch 1) would otherwise be blamed.
    std::string flag_without_effect_in_mode() const;
    // A flag given that does nothing with the others: its one-line error, or "".
    std::string flag_without_effect() const;
    // The config.json keys of the table's flags given on the command line.
    std::vector<std::string> given_keys() const {
        std::vector<std::string> keys;
        for (const Setting& s : settings())
            if (s.flags && s.json && given(s.long_name().c_str())) keys.push_back(s.json);
        return keys;
    }

    CLI::App app;
    bool print_config = false;
    bool version = false;

  private:
    // add_option, plus the number check of the variable's type (int, float, uint64; strings unchecked) as a
    // transform (check() would discard the rewrite to plain decimal); records every name of the flag.
    template <typename T>
    CLI::Option* add(const std::string& names, T& var, const std::string& desc, const char* group);
    // A flag without a value (with "!--no-x" among the names: negatable); help shows its default, on/off.
    // names "--x" or "--x,!--no-x" (a negation sets var to false).
    CLI::Option* add_switch(const std::string& names, bool& var, const std::string& desc, const char* group) {
        const size_t neg = names.find(",!");
        if (neg != std::string::npos) negations_[names.substr(0, neg)] = {names.substr(neg + 2), &var};
        return app.add_flag(names, var, desc)->group(group)->default_str(var ? "on" : "off");
    }
    // The flag of row `row` of the table, writing its member (a choice or a model override: this object's
    // text or integer for it, until assemble()).
    void add_setting(const Setting& s, size_t row);
    // A given flag as the user spelled it: a switch whose value is false was given as its negation.
    std::string spelling(const char* flag) const {
        const auto it = negations_.find(flag);
        return it != negations_.end() && !*it->second.second ? it->second.first : std::string(flag);
    }
    bool given(const char* flag) const { return app.get_option(flag)->count() > 0; }

    TrainConfig& c_;
    std::map<std::string, std::string> value_flags_;  // every name of a flag that takes a value -> long name
    std::map<std::string, std::pair<std::string, const bool*>> negations_;  // switch -> its negation, value
    std::vector<std::string> choice_text_;  // per row: a choice flag's text, mapped in assemble()
    std::vector<int> override_;             // per row: a model override's value, applied if given
};

CliSpec::CliSpec(TrainConfig* cfg, const char* argv0)
    : app("train_gpt: GPT-2 family trainer for NVIDIA Hopper GPUs, BF16 or FP8 (Transformer Engine style "
          "delayed scaling) mixed precision.",
          argv0),
      c_(*cfg) {
    app.formatter(std::make_shared<HelpFormatter>());
    app.get_formatter()->column_width(47);  // the longest flag and default, plus two spaces
    app.option_defaults()->always_capture_default();
    // A flag given twice: the last one wins ("train_gpt $BASE_FLAGS --steps 10"), as in most tools.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    const std::vector<Setting>& rows = settings();
    choice_text_.resize(rows.size());
    override_.resize(rows.size());
    for (size_t i = 0; i < rows.size(); i++)
        if (rows[i].flags) add_setting(rows[i], i);
    add_switch("--print-config", print_config,
               "print the resolved configuration (JSON) once the flags and the files they name are "
               "checked, and exit: no training, no folders created, no GPU",
               "Logging");
    add_switch("--version", version,
               "print the commit this was built from and the CUDA runtime, driver, cuBLASLt, cuDNN and NCCL "
               "versions (built with, loaded), and exit",
               "Logging");
    app.footer(
        "Shards are llm.c token files: a 256 x int32 header (magic 20240520, version 1, token count) then "
        "uint16 tokens; make them with scripts/data/prepare_data.py.\n"
        "Exit status: 0 done; 2 a usage error (a flag, a flag combination, or a file or folder a flag "
        "names), found before the GPU is touched; 1 a failure while running.");
}

template <typename T>
CLI::Option* CliSpec::add(const std::string& names, T& var, const std::string& desc, const char* group) {
    CLI::Option* o = app.add_option(names, var, desc)->group(group);
    std::vector<std::string> split;
    std::string long_name;
    for (size_t b = 0; b <= names.size();) {
        size_t e = names.find(',', b);
        if (e == std::string::npos) e = names.size();
        split.push_back(names.substr(b, e - b));
        if (split.back().rfind("--", 0) == 0) long_name = split.back();
        b = e + 1;
    }
    for (const std::string& n : split) value_flags_[n] = long_name.empty() ? n : long_name;
    if constexpr (std::is_same<T, int>::value) o->transform(int_value());
    if constexpr (std::is_same<T, float>::value) o->transform(float_value());
    if constexpr (std::is_same<T, uint64_t>::value) o->transform(uint64_value());
    return o;
}

void CliSpec::add_setting(const Setting& s, size_t row) {
    CLI::Option* o = nullptr;
    switch (s.type) {
        case SettingType::Switch:
            o = add_switch(s.flags, s.ref<bool>(c_), s.help, s.group);
            break;
        case SettingType::Choice: {
            choice_text_[row] = s.choice_get(c_);  // the default, shown by the help
            std::string names;
            for (const std::string& n : s.choices) names += (names.empty() ? "" : "|") + n;
            o = add(s.flags, choice_text_[row], s.help, s.group)->type_name(names);
            break;
        }
        case SettingType::Int:
            if (s.over_preset)
                o = add(s.flags, override_[row], s.help, s.group)->type_name("INT")->default_str("preset");
            else
                o = add(s.flags, s.ref<int>(c_), s.help, s.group);
            break;
        case SettingType::Int64:
            o = add(s.flags, s.ref<int64_t>(c_), s.help, s.group);
            break;
        case SettingType::Uint64:
            o = add(s.flags, s.ref<uint64_t>(c_), s.help, s.group);
            break;
        case SettingType::Float:
            o = add(s.flags, s.ref<float>(c_), s.help, s.group);
            break;
        case SettingType::Double:
            o = add(s.flags, s.ref<double>(c_), s.help, s.group);
            break;
        case SettingType::Text:
            o = add(s.flags, s.ref<std::string>(c_), s.help, s.group);
            break;
    }
    if (!s.value_name.empty()) o->type_name(s.value_name);
    if (!s.help_default.empty()) o->default_str(s.help_default);
}

std::string CliSpec::rewrite_args(int argc, const char* const* argv, std::vector<std::string>* out) const {
    std::vector<std::string> args;
    for (int i = 1; i < argc; i++) args.push_back(argv[i] ? argv[i] : "");
    for (size_t i = 0; i < args.size(); i++) {
        const auto flag = value_flags_.find(args[i]);
        if (flag == value_flags_.end()) {
            out->push_back(args[i]);
            continue;
        }
        const std::string& name = flag->second;
        if (i + 1 == args.size()) return name + ": expected a value after it";
        const std::string& value = args[++i];
        if (looks_like_flag(value))
            return name + ": expected a value, got the flag " + value +
                   " (for a value that starts with '-', write " + name + "=VALUE)";
        if (looks_negative_number(value)) {
            out->push_back(name + "=" + value);
        } else {
            out->push_back(args[i - 1]);
            out->push_back(value);
        }
    }
    return "";
}

std::string CliSpec::assemble() {
    const std::vector<Setting>& rows = settings();
    for (size_t i = 0; i < rows.size(); i++) {
        const Setting& s = rows[i];
        if (s.type != SettingType::Choice || !s.flags || s.choice_set(c_, choice_text_[i])) continue;
        std::string names;
        for (const std::string& n : s.choices) names += (names.empty() ? "" : ", ") + n;
        return s.long_name() + ": '" + choice_text_[i] + "' is not one of " + names;
    }
    ModelConfig& m = c_.model;
    const bool gelu_tanh = m.gelu_tanh;  // the preset does not touch it, but keep it explicit
    if (!model_preset(c_.model_name, &m))
        return "--model: '" + c_.model_name + "' is not one of " + preset_names(", ");
    m.gelu_tanh = gelu_tanh;
    for (size_t i = 0; i < rows.size(); i++)
        if (rows[i].over_preset && given(rows[i].long_name().c_str())) rows[i].ref<int>(c_) = override_[i];
    // FP8's default by model size (config.h); BF16 has nothing to rebuild.
    if (!given("--recompute")) c_.recompute = default_recompute(c_.precision, m);
    // The second round of GEMM tuning pays back over a training run; a run that only generates or exports
    // would wait for it and gain nothing, and without the first round there is nothing to refine.
    if (!given("--gemm-variants")) c_.gemm_variants = c_.gemm_autotune && run_mode(c_) == RunMode::Train;
    if (c_.generate > 0) c_.batch = 1;  // one sequence (--batch is refused: flag_without_effect)
    return "";
}

// Why a setting does nothing in a run that does not train (the mode's flag leads the message).
const char* mode_without_training(RunMode mode) {
    if (mode == RunMode::Export)
        return "(it writes the weights and exits, no training; --export-at-end exports after training)";
    return "(it prints the text of one sequence and exits: no training, nothing written)";
}

std::string CliSpec::flag_without_effect_in_mode() const {
    const RunMode mode = run_mode(c_);
    for (const Setting& s : settings()) {
        const std::string flag = s.long_name();
        if (s.flags && !s.applies_in(mode) && given(flag.c_str()))
            return spelling(flag.c_str()) + ": has no effect with " + run_mode_flag(mode) + " " +
                   mode_without_training(mode);
    }
    return "";
}

std::string CliSpec::flag_without_effect() const {
    const RunMode mode = run_mode(c_);
    struct Rule {
        std::vector<const char*> flags;
        bool applies;
        std::string because;
    };
    const std::vector<Rule> rules = {
        {{"--prompt", "--sample-tokens", "--temperature", "--top-k", "--tokenizer"},
         c_.sample_every > 0 || mode == RunMode::Generate,
         "without --sample-every N (text samples are off)"},
        {{"--val-every", "--val-batches"}, !c_.val_data.empty(), "without --val-data (no validation)"},
        {{"--eval-every", "--eval-hellaswag-dump"},
         !c_.eval_hellaswag.empty(),
         "without --eval-hellaswag FILE (no HellaSwag evaluation)"},
        {{"--checkpoint-every", "--keep-checkpoints", "--checkpoint-required"},
         !checkpoint_dir_of(c_).empty(),
         "without --checkpoint-dir DIR or --resume DIR (no checkpoints)"},
        {{"--fp8-format", "--fp8-history", "--fp8-amax-algo", "--fp8-margin", "--fp8-health-every",
          "--fp8-lm-head", "--fp8-fast-accum"},
         c_.precision == Precision::FP8,
         "with --precision bf16 (the FP8 flags apply to --precision fp8)"},
        {{"--final-lr-frac"},
         c_.schedule == LrSchedule::Cosine,
         "with --schedule constant (it ends the cosine)"},
        {{"--export-format"}, !c_.export_path.empty(), "without --export PATH"},
        {{"--adam-moments"},
         mode == RunMode::Train || !c_.resume.empty(),
         std::string("with ") + run_mode_flag(mode) +
             " but no --resume DIR (without training it only says how a checkpoint stores AdamW's moments)"},
    };
    for (const Rule& r : rules)
        for (const char* f : r.flags)
            if (!r.applies && given(f)) return spelling(f) + ": has no effect " + r.because;
    return "";
}

// CLI11's "--steps: 1 required INT missing" (an empty value, "--steps=") in our words; other messages as
// they are.
std::string in_our_words(const std::string& msg) {
    const size_t colon = msg.find(": ");
    if (colon != std::string::npos && msg.find(" required ", colon) != std::string::npos && msg.size() > 8 &&
        msg.compare(msg.size() - 8, 8, " missing") == 0)
        return msg.substr(0, colon) + ": expected a value after it (got an empty one)";
    return msg;
}

// CLI11's "The following argument was not expected: x" in our words: an unknown flag or a stray value.
std::string unexpected_arguments(const CLI::App& app) {
    const std::vector<std::string> rest = app.remaining();
    if (rest.empty()) return "unexpected arguments (train_gpt --help lists the flags)";
    if (looks_like_flag(rest[0])) return "unknown flag " + rest[0] + " (train_gpt --help lists the flags)";
    return "unexpected argument '" + rest[0] +
           "': a value must follow its flag (train_gpt --help lists the flags)";
}

}  // namespace

CliResult parse_cli(int argc, const char* const* argv, TrainConfig* cfg) {
    CliSpec spec(cfg, argc > 0 && argv[0] ? argv[0] : "train_gpt");
    std::vector<std::string> args;
    if (std::string e = spec.rewrite_args(argc, argv, &args); !e.empty()) return usage_error(e);
    std::vector<const char*> cli11_argv = {argc > 0 && argv[0] ? argv[0] : "train_gpt"};
    for (const std::string& a : args) cli11_argv.push_back(a.c_str());
    try {
        spec.app.parse((int)cli11_argv.size(), cli11_argv.data());
    } catch (const CLI::CallForHelp&) {
        CliResult r;
        r.message = spec.app.help();
        return r;
    } catch (const CLI::ExtrasError&) {
        return usage_error(unexpected_arguments(spec.app));
    } catch (const CLI::ParseError& e) {
        return usage_error(in_our_words(e.what()));
    }
    if (spec.version) {  // whatever else is given
        CliResult r;
        r.version = true;
        return r;
    }
    if (std::string e = spec.assemble(); !e.empty()) return usage_error(e);
    if (std::string e = spec.flag_without_effect_in_mode(); !e.empty()) return usage_error(e);
    if (std::string e = validate(*cfg); !e.empty()) return usage_error(e);
    if (std::string e = spec.flag_without_effect(); !e.empty()) return usage_error(e);
    CliResult r;
    r.run = true;
    r.print_config = spec.print_config;
    r.given = spec.given_keys();
    return r;
}
