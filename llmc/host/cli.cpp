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

// A string flag restricted to the names of a choice setting (config.h), mapped onto its value of type E.
template <typename E>
struct Choice {
    const char* flag;
    const ChoiceNames<E>& names;

    std::string joined(const char* sep) const {  // "bf16, fp8" or "bf16|fp8"
        std::string s;
        for (size_t i = 0; i < names.size(); i++) s += std::string(i ? sep : "") + names[i].name;
        return s;
    }
    std::string list() const { return joined(", "); }
    std::string type_name() const { return joined("|"); }
    // Empty string on success, else the one-line error.
    std::string parse(const std::string& value, E* out) const {
        for (const ChoiceName<E>& n : names) {
            if (value == n.name) {
                *out = n.value;
                return "";
            }
        }
        return std::string(flag) + ": '" + value + "' is not one of " + list();
    }
    std::string name_of(E v) const { return choice_name(names, v); }
};

// ---- numeric flags ----
// CLI11 validators run on a flag's text before it is converted; CLI11 prefixes their message with the flag
// ("--steps: ..."). They only check that the text is a number of the flag's type (range checks are
// validate()'s, so that a TrainConfig filled in code gets the same ones) and rewrite integers to plain
// decimal: CLI11's own conversion auto-detects the base (010 would be octal 8, 0x10 hex).

// Parses an optional sign and decimal digits into *neg and *mag (saturated above 2^64). Empty if it is one.
std::string parse_decimal(const std::string& v, bool* neg, unsigned __int128* mag) {
    size_t i = 0;
    *neg = false;
    if (i < v.size() && (v[i] == '+' || v[i] == '-')) *neg = v[i++] == '-';
    if (i == v.size()) return "'" + v + "' is not an integer";
    *mag = 0;
    for (; i < v.size(); i++) {
        if (!std::isdigit((unsigned char)v[i])) return "'" + v + "' is not an integer";
        if (*mag <= ((unsigned __int128)1 << 64)) *mag = *mag * 10 + (unsigned)(v[i] - '0');
    }
    return "";
}

// An int flag: a whole decimal number in [INT_MIN, INT_MAX].
CLI::Validator int_value() {
    return CLI::Validator(
        [](std::string& v) -> std::string {
            bool neg;
            unsigned __int128 mag;
            std::string why = parse_decimal(v, &neg, &mag);
            if (!why.empty()) return why;
            if (!neg && mag > (unsigned __int128)INT_MAX)
                return v + " is out of range (at most " + std::to_string(INT_MAX) + ")";
            if (neg && mag > (unsigned __int128)INT_MAX + 1)
                return v + " is out of range (at least " + std::to_string(INT_MIN) + ")";
            v = std::to_string(neg ? -(long long)mag : (long long)mag);
            return "";
        },
        "");
}

// A uint64 flag (the seed): a whole decimal number in [0, 2^64 - 1].
CLI::Validator uint64_value() {
    return CLI::Validator(
        [](std::string& v) -> std::string {
            bool neg;
            unsigned __int128 mag;
            std::string why = parse_decimal(v, &neg, &mag);
            if (!why.empty() || (neg && mag != 0)) return "must be a non-negative integer, got '" + v + "'";
            if (mag > (unsigned __int128)UINT64_MAX)
                return v + " is out of range (at most " + std::to_string(UINT64_MAX) + ")";
            v = std::to_string((unsigned long long)mag);
            return "";
        },
        "");
}

// A float flag: a number (strtod syntax) within float range; inf/nan pass through to validate().
CLI::Validator float_value() {
    return CLI::Validator(
        [](std::string& v) -> std::string {
            const char* begin = v.c_str();
            char* end = nullptr;
            errno = 0;
            double d = v.empty() || std::isspace((unsigned char)v[0]) ? 0.0 : std::strtod(begin, &end);
            if (v.empty() || end != begin + v.size()) return "'" + v + "' is not a number";
            if ((std::isinf(d) && errno == ERANGE) || (std::isfinite(d) && std::fabs(d) > FLT_MAX))
                return v + " is out of range for a float";
            return "";
        },
        "");
}

// A negative number, as the value of the flag before it ("--steps -1", "--lr -.5").
bool looks_negative_number(const std::string& s) {
    if (s.size() < 2 || s[0] != '-') return false;
    if (std::isdigit((unsigned char)s[1])) return true;
    return s[1] == '.' && s.size() > 2 && std::isdigit((unsigned char)s[2]);
}

// An argument that the user meant as a flag, not as the value of the flag before it: "--steps", "-n", "--".
// Negative numbers and "-" alone are values.
bool looks_like_flag(const std::string& s) {
    if (s.size() < 2 || s[0] != '-' || looks_negative_number(s)) return false;
    return s[1] == '-' || std::isalpha((unsigned char)s[1]);
}

// The help's width: no line wider (an 80-column terminal wraps it, a 120-column one shows it as it is).
constexpr size_t kHelpColumns = 120;

// `text` with each of its paragraphs ('\n'-separated) broken at spaces into lines of at most `width`
// columns (a longer word stays whole), joined by '\n'.
std::string wrap(const std::string& text, size_t width) {
    std::string out, line;
    size_t start = 0;
    for (;;) {
        const size_t end = std::min(text.find('\n', start), text.size());
        for (size_t b = start; b < end;) {
            const size_t e = std::min(text.find(' ', b), end);
            const std::string word = text.substr(b, e - b);
            if (!line.empty() && line.size() + 1 + word.size() > width) {
                out += line + "\n";
                line.clear();
            }
            line += (line.empty() ? "" : " ") + word;
            b = e + 1;
        }
        out += line;
        line.clear();
        if (end == text.size()) return out;
        out += "\n";
        start = end + 1;
    }
}

// CLI11's help, with each flag's real default: a negatable flag shows "--cuda-graph,--no-cuda-graph=on"
// (CLI11 writes "--no-cuda-graph{false}", the value the negation sets, which reads like a default of false);
// every line within kHelpColumns (descriptions wrapped in their column).
class HelpFormatter : public CLI::Formatter {
  public:
    std::string make_option_desc(const CLI::Option* opt) const override {
        return wrap(CLI::Formatter::make_option_desc(opt), kHelpColumns - get_column_width());
    }
    std::string make_description(const CLI::App* app) const override {
        return wrap(CLI::Formatter::make_description(app), kHelpColumns);
    }
    std::string make_footer(const CLI::App* app) const override {
        return wrap(CLI::Formatter::make_footer(app), kHelpColumns);
    }
    std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
        std::string name = CLI::Formatter::make_option_name(opt, is_positional);
        for (size_t open; (open = name.find('{')) != std::string::npos;) {
            const size_t close = name.find('}', open);
            name.erase(open, close == std::string::npos ? std::string::npos : close - open + 1);
        }
        return name;
    }
    // "TYPE=default" for options, "=on"/"=off" for switches, written here rather than by CLI11, whose
    // releases print the default differently ("INT=50" in 2.1, "INT [50]" in 2.4).
    std::string make_option_opts(const CLI::Option* opt) const override {
        std::string out;
        if (opt->get_type_size() != 0 && !opt->get_type_name().empty()) out += " " + opt->get_type_name();
        if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
        if (opt->get_required()) out += " REQUIRED";
        return out;
    }
};

// The flags, the variables they write before the configuration is assembled (choice flags as text, the
// architecture overrides), and the checks that need to know which flags were given.
class CliSpec {
  public:
    explicit CliSpec(TrainConfig* cfg, const char* argv0);
    // argv as CLI11 should see it: a negative number after a numeric flag joined to it ("--steps=-1", so it
    // is read as the value whatever the CLI11 version's rule); "" or the one-line error for a missing value
    // or a value that looks like a flag.
    std::string rewrite_args(int argc, const char* const* argv, std::vector<std::string>* out) const;
    // After app.parse: choices, the preset and the overrides into the config.
    std::string assemble();
    // A flag given that does nothing with the others: its one-line error, or "".
    std::string flag_without_effect() const;

    CLI::App app;
    bool print_config = false;
    bool version = false;

  private:
    // add_option, plus the number check of the variable's type (int, float, uint64; strings unchecked) as a
    // transform (check() would discard the rewrite to plain decimal); records every name of the flag.
    template <typename T>
    CLI::Option* add(const std::string& names, T& var, const std::string& desc, const char* group);
    CLI::Option* add_choice(const char* name, std::string* var, const std::string& desc,
                            const std::string& type, const char* group) {
        return add(name, *var, desc, group)->type_name(type);
    }
    // A flag without a value (with "!--no-x" among the names: negatable); help shows its default, on/off.
    // names "--x" or "--x,!--no-x" (a negation sets var to false).
    CLI::Option* add_switch(const std::string& names, bool& var, const std::string& desc, const char* group) {
        const size_t neg = names.find(",!");
        if (neg != std::string::npos) negations_[names.substr(0, neg)] = {names.substr(neg + 2), &var};
        return app.add_flag(names, var, desc)->group(group)->default_str(var ? "on" : "off");
    }
    // A given flag as the user spelled it: a switch whose value is false was given as its negation.
    std::string spelling(const char* flag) const {
        const auto it = negations_.find(flag);
        return it != negations_.end() && !*it->second.second ? it->second.first : std::string(flag);
    }
    void add_model_flags();
    void add_training_flags();
    void add_data_and_fp8_flags();
    void add_logging_and_checkpoint_flags();
    void add_gpu_sampling_and_weights_flags();
    bool given(const char* flag) const { return app.get_option(flag)->count() > 0; }

    TrainConfig& c_;
    std::map<std::string, std::string> value_flags_;  // every name of a flag that takes a value -> long name
    std::map<std::string, std::pair<std::string, const bool*>> negations_;  // switch -> its negation, value
    std::string precision_s_, gelu_s_, schedule_s_, fp8_format_s_, amax_algo_s_, model_s_, export_format_s_,
        adam_moments_s_;
    int layers_ = 0, channels_ = 0, heads_ = 0, vocab_ = 0, max_seq_ = 0;  // applied only when given
};

const Choice<Precision> kPrecision{"--precision", precision_names()};
const Choice<bool> kGelu{"--gelu", gelu_names()};
const Choice<LrSchedule> kSchedule{"--schedule", schedule_names()};
const Choice<Fp8Format> kFp8Format{"--fp8-format", fp8_format_names()};
const Choice<AmaxAlgo> kAmaxAlgo{"--fp8-amax-algo", amax_algo_names()};
const Choice<bool> kExportFormat{"--export-format", export_format_names()};
const Choice<bool> kAdamMoments{"--adam-moments", adam_moments_names()};

// "124m|350m|774m|1.5b" (sep "|") or "124m, 350m, 774m, 1.5b" (sep ", ").
std::string preset_names(const char* sep) {
    std::string s;
    for (const std::string& n : model_preset_names()) s += (s.empty() ? "" : sep) + n;
    return s;
}

CliSpec::CliSpec(TrainConfig* cfg, const char* argv0)
    : app("train_gpt: GPT-2 family trainer for NVIDIA Hopper GPUs, BF16 or FP8 (Transformer Engine style "
          "delayed scaling) mixed precision.",
          argv0),
      c_(*cfg) {
    // Choice flags are read as strings (defaults from TrainConfig) and mapped after parsing, so their error
    // messages are ours and name the flag and the accepted values.
    precision_s_ = kPrecision.name_of(c_.precision);
    gelu_s_ = kGelu.name_of(c_.model.gelu_tanh);
    schedule_s_ = kSchedule.name_of(c_.schedule);
    fp8_format_s_ = kFp8Format.name_of(c_.fp8.format);
    amax_algo_s_ = kAmaxAlgo.name_of(c_.fp8.amax_algo);
    model_s_ = c_.model_name;
    export_format_s_ = kExportFormat.name_of(c_.export_hf);
    adam_moments_s_ = kAdamMoments.name_of(c_.adam_bf16_moments);
    app.formatter(std::make_shared<HelpFormatter>());
    app.get_formatter()->column_width(42);
    app.option_defaults()->always_capture_default();
    // A flag given twice: the last one wins ("train_gpt $BASE_FLAGS --steps 10"), as in most tools.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    add_model_flags();
    add_training_flags();
    add_data_and_fp8_flags();
    add_logging_and_checkpoint_flags();
    add_gpu_sampling_and_weights_flags();
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

void CliSpec::add_model_flags() {
    const char* g = "Model";
    add_choice("--precision", &precision_s_,
               "GEMM precision: bf16, or fp8 with delayed scaling (see the FP8 flags)",
               kPrecision.type_name(), g);
    add_choice("--model", &model_s_, "GPT-2 size preset (sets layers, channels, heads, vocab, max-seq)",
               preset_names("|"), g);
    add("--layers", layers_, "override the preset's number of layers L", g);
    add("--channels", channels_, "override the preset's channels C (multiple of 16)", g);
    add("--heads", heads_, "override the preset's attention heads H", g);
    add("--vocab", vocab_, "override the (padded) vocabulary size V (multiple of 16)", g);
    add("--max-seq", max_seq_, "override the maximum sequence length (position embedding rows)", g);
    for (const char* o : {"--layers", "--channels", "--heads", "--vocab", "--max-seq"})
        app.get_option(o)->type_name("INT")->default_str("preset");
    add_choice("--gelu", &gelu_s_, "GELU: exact erf (nn.GELU default) or tanh approximation",
               kGelu.type_name(), g);
}

void CliSpec::add_training_flags() {
    const char* g = "Training";
    add("-b,--batch", c_.batch, "micro-batch size B (sequences per micro-step per GPU)", g);
    add("--total-batch", c_.total_batch,
        "tokens per optimizer step = batch x seq x micro-steps x GPUs (gradient accumulation; 0: batch x seq "
        "x GPUs)",
        g);
    add("-t,--seq", c_.seq, "sequence length T (<= --max-seq)", g);
    add("-n,--steps", c_.steps, "number of optimizer steps", g);
    add("--lr", c_.lr, "peak learning rate", g);
    add("--warmup", c_.warmup, "linear warmup steps (from lr/warmup to lr)", g);
    add_choice("--schedule", &schedule_s_, "learning-rate schedule after warmup", kSchedule.type_name(), g);
    add("--final-lr-frac", c_.final_lr_frac, "cosine decays to lr * this at the last step", g);
    add("--weight-decay", c_.weight_decay, "AdamW weight decay (matrices only)", g);
    add("--grad-clip", c_.grad_clip, "clip the global gradient norm to this (0: off)", g);
    add("--beta1", c_.beta1, "AdamW beta1", g);
    add("--beta2", c_.beta2, "AdamW beta2", g);
    add_choice("--adam-moments", &adam_moments_s_,
               "storage of the AdamW moments m and v (the arithmetic is FP32 either way); bf16: 4 bytes less "
               "memory per parameter, 8 bytes less traffic per step",
               kAdamMoments.type_name(), g);
    add("--seed", c_.seed, "seed for weight init and random tokens", g);
    add("--recompute", c_.recompute,
        "0: store what backward needs; 1 (fp8): rebuild the fc-projection's FP8 input in the dGELU pass of "
        "backward; 2 (fp8): also the attention projection's (FP8 then needs less memory than BF16; the "
        "default from 774m, where it costs about nothing; README lists the cost)",
        g)
        ->default_str("2 (fp8, 774m and up), 0");
    add_switch("--deterministic,!--no-deterministic", c_.deterministic,
               "bitwise reproducible attention backward; --no-deterministic: cuDNN's faster atomics", g);
    add_switch("--cuda-graph,!--no-cuda-graph", c_.cuda_graph,
               "replay each training step as one captured CUDA graph (bitwise the same results); "
               "--no-cuda-graph: launch every kernel from the host",
               g);
    add_switch("--gemm-autotune,!--no-gemm-autotune", c_.gemm_autotune,
               "time cuBLASLt's best 8 algorithms per GEMM in the first step and keep the fastest (stored in "
               "--gemm-cache, so later runs choose the same); --no-gemm-autotune: the heuristic's first",
               g);
    add("--gemm-cache", c_.gemm_cache,
        "file of the tuned GEMM choices, shared by runs on this GPU (default: ~/.cache/train_gpt/"
        "gemm_algos.tsv; 'none': not stored)",
        g)
        ->type_name("FILE");
}

void CliSpec::add_data_and_fp8_flags() {
    const char* d = "Data";
    add("--train-data", c_.train_data,
        "training shards (glob, e.g. 'data/x_train_*.bin'), or 'random' for uniform random tokens", d)
        ->type_name("GLOB");
    add("--val-data", c_.val_data, "validation shards (glob); empty: no validation", d)->type_name("GLOB");
    add("--val-every", c_.val_every, "validate every N steps (and after the last)", d);
    add("--val-batches", c_.val_batches, "batches per validation", d);
    add("--eval-hellaswag", c_.eval_hellaswag,
        "HellaSwag file (scripts/data/prepare_hellaswag.py): accuracy after the last step (acc and acc_norm, "
        "as "
        "llm.c)",
        d)
        ->type_name("FILE");
    add("--eval-every", c_.eval_every,
        "also evaluate HellaSwag every N steps, from step 0 (0: only at the end)", d);
    add("--eval-hellaswag-dump", c_.eval_hellaswag_dump,
        "write each example's ending losses and choices here (the latest evaluation; with several GPUs one "
        "FILE.rankR per rank)",
        d)
        ->type_name("FILE");
    const char* f = "FP8 (with --precision fp8)";
    add_choice("--fp8-format", &fp8_format_s_, "hybrid: E4M3 forward, E5M2 gradients; e4m3: E4M3 everywhere",
               kFp8Format.type_name(), f);
    add("--fp8-history", c_.fp8.history_len, "amax history length (delayed scaling window)", f);
    add_choice("--fp8-amax-algo", &amax_algo_s_, "scale from the max of the history, or the most recent amax",
               kAmaxAlgo.type_name(), f);
    add("--fp8-margin", c_.fp8.margin, "scale = fp8_max / amax / 2^margin", f);
    add_switch("--fp8-lm-head,!--no-fp8-lm-head", c_.fp8.lm_head,
               "the LM head (tied embedding) as an FP8 Linear too (its own scales); --no-fp8-lm-head: BF16",
               f);
    add_switch("--fp8-fast-accum,!--no-fp8-fast-accum", c_.fp8.fast_accum,
               "forward GEMMs accumulate in the tensor cores' fast mode (as Transformer Engine's); "
               "--no-fp8-fast-accum: promoted to FP32 as in the gradient GEMMs (closer to BF16's loss at "
               "GPT-1.5B, ~2% slower)",
               f);
    add("--fp8-health-every", c_.fp8_health_every,
        "print scale range, saturated and fallen-back slots every N steps", f);
}

void CliSpec::add_logging_and_checkpoint_flags() {
    const char* g = "Logging";
    add("--log-dir", c_.log_dir, "directory for config.json (the resolved configuration) and train.jsonl", g)
        ->type_name("DIR");
    add("--log-every", c_.log_every, "print a line every N steps", g);
    add_switch("--profile", c_.profile,
               "after training, run 3 extra steps with per-phase GPU timing (gemm, cast, attention, "
               "optimizer, other), replaying the captured step with its phase marks as graph nodes",
               g);
    add_switch("--print-config", print_config,
               "print the resolved configuration (JSON) once the flags and the files they name are "
               "checked, and exit: no training, no folders created, no GPU",
               g);
    add_switch("--version", version,
               "print the commit this was built from and the CUDA runtime, driver, cuBLASLt, cuDNN and NCCL "
               "versions (built with, loaded), and exit",
               g);
    const char* k = "Checkpoints";
    add("--checkpoint-dir", c_.checkpoint_dir,
        "write checkpoints here (default with --resume or --resume-if-present: that directory)", k)
        ->type_name("DIR");
    add("--checkpoint-every", c_.checkpoint_every,
        "checkpoint every N steps (0: only at the end and on a signal)", k);
    add("--keep-checkpoints", c_.keep_checkpoints, "keep the newest K checkpoints", k);
    add_switch("--checkpoint-required", c_.checkpoint_required,
               "a failed checkpoint write ends the run (default: a warning, training continues)", k);
    add("--resume", c_.resume, "continue from the newest valid checkpoint in this directory", k)
        ->type_name("DIR");
    add("--resume-if-present", c_.resume_if_present,
        "--resume DIR when DIR has a checkpoint, else start fresh and checkpoint there (the same command "
        "continues a run after a crash)",
        k)
        ->type_name("DIR");
    add("--max-bad-steps", c_.max_bad_steps,
        "stop (with a checkpoint of the last good state) after K consecutive steps with a non-finite loss or "
        "gradient norm; each such step is skipped",
        k);
}

void CliSpec::add_gpu_sampling_and_weights_flags() {
    const char* g = "Several GPUs";
    add("--rendezvous", c_.rendezvous,
        "how the ranks exchange NCCL's id: tcp://HOST:PORT, file:PATH (shared filesystem) or mpi; default: "
        "from the launcher (mpirun: mpi, torchrun: MASTER_ADDR:MASTER_PORT+1, srun: MASTER_ADDR:MASTER_PORT)",
        g)
        ->type_name("SPEC");
    add("--comm-timeout", c_.comm_timeout,
        "seconds a rank waits for the others (a dead or hung rank) before it stops with an error", g);
    add("--ranks-per-gpu", c_.ranks_per_gpu,
        "local ranks sharing one GPU (local rank r uses GPU r / K): to check a multi-GPU run on fewer GPUs; "
        "more than 1 needs NCCL >= 2.30 and is slow (the ranks take turns on the GPU)",
        g)
        ->type_name("K");
    const char* s = "Sampling";
    add("--sample-every", c_.sample_every,
        "generate a text sample every N steps and after the last (0: never)", s);
    add("--sample-tokens", c_.sample_tokens, "tokens per sample", s);
    add("--prompt", c_.prompt, "text the samples continue (default: start of a document)", s);
    add("--temperature", c_.temperature, "sampling temperature (0: always the most likely token)", s);
    add("--top-k", c_.top_k, "sample among the K most likely tokens (0: all)", s);
    add("--tokenizer", c_.tokenizer,
        "tokenizer file from scripts/data/prepare_data.py (default: tokenizer.bin next to the train shards; "
        "bytes for --vocab 256)",
        s)
        ->type_name("FILE");
    const char* w = "Weights";
    add("--init-from", c_.init_from,
        "start from these weights: a seed-layout .safetensors (our export) or a Hugging Face GPT-2 "
        "model.safetensors / folder (vocabulary padded with zero rows)",
        w)
        ->type_name("FILE|DIR");
    add("--export", c_.export_path,
        "write the weights (from --resume or --init-from) and exit; with --export-at-end: after training; a "
        "file (seed) or a folder (hf)",
        w)
        ->type_name("FILE|DIR");
    add_choice("--export-format", &export_format_s_,
               "seed: one file with the PyTorch module's names; hf: a Hugging Face GPT-2 folder "
               "(model.safetensors + config.json)",
               kExportFormat.type_name(), w);
    add_switch("--export-at-end", c_.export_at_end, "export after the last step", w);
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
    ModelConfig& m = c_.model;
    std::string err;
    if (err.empty()) err = kPrecision.parse(precision_s_, &c_.precision);
    if (err.empty()) err = kGelu.parse(gelu_s_, &m.gelu_tanh);
    if (err.empty()) err = kSchedule.parse(schedule_s_, &c_.schedule);
    if (err.empty()) err = kFp8Format.parse(fp8_format_s_, &c_.fp8.format);
    if (err.empty()) err = kAmaxAlgo.parse(amax_algo_s_, &c_.fp8.amax_algo);
    if (err.empty()) err = kExportFormat.parse(export_format_s_, &c_.export_hf);
    if (err.empty()) err = kAdamMoments.parse(adam_moments_s_, &c_.adam_bf16_moments);
    if (!err.empty()) return err;
    const bool gelu_tanh = m.gelu_tanh;  // the preset does not touch it, but keep it explicit
    if (!model_preset(model_s_, &m)) return "--model: '" + model_s_ + "' is not one of " + preset_names(", ");
    m.gelu_tanh = gelu_tanh;
    c_.model_name = model_s_;
    if (given("--layers")) m.num_layers = layers_;
    if (given("--channels")) m.channels = channels_;
    if (given("--heads")) m.num_heads = heads_;
    if (given("--vocab")) m.vocab_size = vocab_;
    // FP8's default by model size (config.h); BF16 has nothing to rebuild.
    if (!given("--recompute")) c_.recompute = default_recompute(c_.precision, m);
    if (given("--max-seq")) m.max_seq_len = max_seq_;
    return "";
}

std::string CliSpec::flag_without_effect() const {
    struct Rule {
        std::vector<const char*> flags;
        bool applies;
        const char* because;
    };
    const std::vector<Rule> rules = {
        {{"--prompt", "--sample-tokens", "--temperature", "--top-k", "--tokenizer"},
         c_.sample_every > 0,
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
    };
    for (const Rule& r : rules)
        for (const char* f : r.flags)
            if (!r.applies && given(f)) return spelling(f) + ": has no effect " + r.because;
    return "";
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
        return usage_error(e.what());
    }
    if (spec.version) {  // whatever else is given
        CliResult r;
        r.version = true;
        return r;
    }
    if (std::string e = spec.assemble(); !e.empty()) return usage_error(e);
    if (std::string e = validate(*cfg); !e.empty()) return usage_error(e);
    if (std::string e = spec.flag_without_effect(); !e.empty()) return usage_error(e);
    CliResult r;
    r.run = true;
    r.print_config = spec.print_config;
    return r;
}
