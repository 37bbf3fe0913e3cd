#include "llmc/host/cli.h"

#include <CLI/CLI.hpp>
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

// A string flag restricted to a fixed set of names, mapped onto a value of type E.
template <typename E>
struct Choice {
    const char* flag;
    std::vector<std::pair<std::string, E>> names;

    std::string list() const {  // "bf16, fp8"
        std::string s;
        for (size_t i = 0; i < names.size(); i++) s += (i ? ", " : "") + names[i].first;
        return s;
    }
    std::string type_name() const {  // "bf16|fp8"
        std::string s;
        for (size_t i = 0; i < names.size(); i++) s += (i ? "|" : "") + names[i].first;
        return s;
    }
    // Empty string on success, else the one-line error.
    std::string parse(const std::string& value, E* out) const {
        for (const auto& n : names) {
            if (n.first == value) {
                *out = n.second;
                return "";
            }
        }
        return std::string(flag) + ": '" + value + "' is not one of " + list();
    }
    std::string name_of(E v) const {
        for (const auto& n : names)
            if (n.second == v) return n.first;
        return names.front().first;
    }
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

}  // namespace

CliResult parse_cli(int argc, const char* const* argv, TrainConfig* cfg) {
    TrainConfig& c = *cfg;
    ModelConfig& m = c.model;

    const Choice<Precision> precision{"--precision", {{"bf16", Precision::BF16}, {"fp8", Precision::FP8}}};
    const Choice<bool> gelu{"--gelu", {{"erf", false}, {"tanh", true}}};
    const Choice<LrSchedule> schedule{"--schedule",
                                      {{"cosine", LrSchedule::Cosine}, {"constant", LrSchedule::Constant}}};
    const Choice<Fp8Format> fp8_format{"--fp8-format",
                                       {{"hybrid", Fp8Format::Hybrid}, {"e4m3", Fp8Format::E4M3}}};
    const Choice<AmaxAlgo> amax_algo{"--fp8-amax-algo",
                                     {{"max", AmaxAlgo::Max}, {"most_recent", AmaxAlgo::MostRecent}}};
    const Choice<int> model{"--model", {{"124m", 0}, {"350m", 1}, {"774m", 2}, {"1.5b", 3}}};
    const Choice<bool> export_format{"--export-format", {{"seed", false}, {"hf", true}}};
    std::string export_format_s = export_format.name_of(c.export_hf);

    // Choice flags are read as strings (defaults from TrainConfig) and mapped after parsing, so their
    // error messages are ours and name the flag and the accepted values.
    std::string precision_s = precision.name_of(c.precision), gelu_s = gelu.name_of(m.gelu_tanh);
    std::string schedule_s = schedule.name_of(c.schedule), fp8_format_s = fp8_format.name_of(c.fp8.format);
    std::string amax_algo_s = amax_algo.name_of(c.fp8.amax_algo), model_s = c.model_name;
    // Architecture overrides start from the preset, so they are only applied when given.
    int layers = 0, channels = 0, heads = 0, vocab = 0, max_seq = 0;

    CLI::App app{
        "train_gpt: GPT-2 family trainer for NVIDIA Hopper GPUs, BF16 or FP8 (Transformer Engine style "
        "delayed scaling) mixed precision.",
        argc > 0 && argv[0] ? argv[0] : "train_gpt"};
    app.get_formatter()->column_width(38);
    app.option_defaults()->always_capture_default();
    // A flag given twice: the last one wins ("train_gpt $BASE_FLAGS --steps 10"), as in most tools.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    // Flags that take a value, by each of their names -> the long name (for the negative-number rewrite).
    std::map<std::string, std::string> value_flags;
    // add_option, plus the number check of the variable's type (int, float, uint64; strings unchecked), as a
    // transform: check() would discard the rewrite to plain decimal.
    auto add = [&](const std::string& names, auto& var, const std::string& desc) {
        CLI::Option* o = app.add_option(names, var, desc);
        std::vector<std::string> split;
        std::string long_name;
        for (size_t b = 0; b <= names.size();) {
            size_t e = names.find(',', b);
            if (e == std::string::npos) e = names.size();
            split.push_back(names.substr(b, e - b));
            if (split.back().rfind("--", 0) == 0) long_name = split.back();
            b = e + 1;
        }
        for (const std::string& n : split) value_flags[n] = long_name.empty() ? n : long_name;
        using T = std::decay_t<decltype(var)>;
        if constexpr (std::is_same<T, int>::value) o->transform(int_value());
        if constexpr (std::is_same<T, float>::value) o->transform(float_value());
        if constexpr (std::is_same<T, uint64_t>::value) o->transform(uint64_value());
        return o;
    };
    auto choice_opt = [&](const char* name, std::string* s, const std::string& desc, const std::string& tn) {
        return add(name, *s, desc)->type_name(tn);
    };

    // Model.
    choice_opt("--precision", &precision_s,
               "GEMM precision: bf16, or fp8 with delayed scaling (see the FP8 flags)", precision.type_name())
        ->group("Model");
    choice_opt("--model", &model_s, "GPT-2 size preset (sets layers, channels, heads, vocab, max-seq)",
               model.type_name())
        ->group("Model");
    CLI::Option* o_layers =
        add("--layers", layers, "override the preset's number of layers L")->group("Model");
    CLI::Option* o_channels =
        add("--channels", channels, "override the preset's channels C (multiple of 16)")->group("Model");
    CLI::Option* o_heads = add("--heads", heads, "override the preset's attention heads H")->group("Model");
    CLI::Option* o_vocab =
        add("--vocab", vocab, "override the (padded) vocabulary size V (multiple of 16)")->group("Model");
    CLI::Option* o_max_seq =
        add("--max-seq", max_seq, "override the maximum sequence length (position embedding rows)")
            ->group("Model");
    for (CLI::Option* o : {o_layers, o_channels, o_heads, o_vocab, o_max_seq})
        o->type_name("INT")->default_str("preset");
    choice_opt("--gelu", &gelu_s, "GELU: exact erf (nn.GELU default) or tanh approximation", gelu.type_name())
        ->group("Model");

    // Training.
    add("-b,--batch", c.batch, "micro-batch size B (sequences per micro-step per GPU)")->group("Training");
    add("--total-batch", c.total_batch,
        "tokens per optimizer step = batch x seq x micro-steps x GPUs (gradient accumulation; 0: batch x seq "
        "x GPUs)")
        ->group("Training");
    add("-t,--seq", c.seq, "sequence length T (<= --max-seq)")->group("Training");
    add("-n,--steps", c.steps, "number of optimizer steps")->group("Training");
    add("--lr", c.lr, "peak learning rate")->group("Training");
    add("--warmup", c.warmup, "linear warmup steps (from lr/warmup to lr)")->group("Training");
    choice_opt("--schedule", &schedule_s, "learning-rate schedule after warmup", schedule.type_name())
        ->group("Training");
    add("--final-lr-frac", c.final_lr_frac, "cosine decays to lr * this at the last step")->group("Training");
    add("--weight-decay", c.weight_decay, "AdamW weight decay (matrices only)")->group("Training");
    add("--grad-clip", c.grad_clip, "clip the global gradient norm to this (0: off)")->group("Training");
    add("--beta1", c.beta1, "AdamW beta1")->group("Training");
    add("--beta2", c.beta2, "AdamW beta2")->group("Training");
    add("--seed", c.seed, "seed for weight init and random tokens")->group("Training");

    // Data.
    add("--train-data", c.train_data,
        "training shards (glob, e.g. 'data/x_train_*.bin'), or 'random' for uniform random tokens")
        ->group("Data");
    add("--val-data", c.val_data, "validation shards (glob); empty: no validation")->group("Data");
    add("--val-every", c.val_every, "validate every N steps (and after the last)")->group("Data");
    add("--val-batches", c.val_batches, "batches per validation")->group("Data");

    // FP8 (only used with --precision fp8).
    choice_opt("--fp8-format", &fp8_format_s, "hybrid: E4M3 forward, E5M2 gradients; e4m3: E4M3 everywhere",
               fp8_format.type_name())
        ->group("FP8 (with --precision fp8)");
    add("--fp8-history", c.fp8.history_len, "amax history length (delayed scaling window)")
        ->group("FP8 (with --precision fp8)");
    choice_opt("--fp8-amax-algo", &amax_algo_s, "scale from the max of the history, or the most recent amax",
               amax_algo.type_name())
        ->group("FP8 (with --precision fp8)");
    add("--fp8-margin", c.fp8.margin, "scale = fp8_max / amax / 2^margin")
        ->group("FP8 (with --precision fp8)");

    // Logging.
    add("--log-dir", c.log_dir, "directory for the config, metrics and logs")->group("Logging");
    add("--log-every", c.log_every, "print a line every N steps")->group("Logging");
    add("--fp8-health-every", c.fp8_health_every,
        "with fp8: print scale range, saturated and fallen-back slots every N steps")
        ->group("Logging");
    app.add_flag(
           "--profile", c.profile,
           "after training, run 3 extra steps with per-phase GPU timing (gemm, cast, attention, optimizer, "
           "other)")
        ->group("Logging");

    // Run lifecycle.
    add("--checkpoint-dir", c.checkpoint_dir,
        "write checkpoints here (default with --resume: the resume directory)")
        ->group("Checkpoints");
    add("--checkpoint-every", c.checkpoint_every,
        "checkpoint every N steps (0: only at the end and on a signal)")
        ->group("Checkpoints");
    add("--keep-checkpoints", c.keep_checkpoints, "keep the newest K checkpoints")->group("Checkpoints");
    app.add_flag("--checkpoint-required", c.checkpoint_required,
                 "a failed checkpoint write ends the run (default: a warning, training continues)")
        ->group("Checkpoints");
    add("--resume", c.resume, "continue from the newest valid checkpoint in this directory")
        ->group("Checkpoints");
    add("--max-bad-steps", c.max_bad_steps,
        "stop (with a checkpoint of the last good state) after K consecutive steps with a non-finite loss or "
        "gradient norm; each such step is skipped")
        ->group("Checkpoints");

    add("--recompute", c.recompute,
        "0: store what backward needs; 1 (fp8): recompute the fc-projection's FP8 input in backward (less "
        "memory, a little slower)")
        ->group("Training");
    app.add_flag("--deterministic,!--no-deterministic", c.deterministic,
                 "bitwise reproducible attention backward (default); --no-deterministic: cuDNN's faster "
                 "atomics")
        ->group("Training");
    app.add_flag("--cuda-graph,!--no-cuda-graph", c.cuda_graph,
                 "replay each training step as one captured CUDA graph (default; bitwise the same results); "
                 "--no-cuda-graph: launch every kernel from the host")
        ->group("Training");

    // Several GPUs.
    add("--rendezvous", c.rendezvous,
        "how the ranks exchange NCCL's id: tcp://HOST:PORT, file:PATH (shared filesystem) or mpi; default: "
        "from the launcher (mpirun: mpi, torchrun: MASTER_ADDR:MASTER_PORT+1, srun: MASTER_ADDR:MASTER_PORT)")
        ->group("Several GPUs");
    add("--comm-timeout", c.comm_timeout,
        "seconds a rank waits for the others (a dead or hung rank) before it stops with an error")
        ->group("Several GPUs");

    // Text samples.
    add("--sample-every", c.sample_every,
        "generate a text sample every N steps and after the last (0: never)")
        ->group("Sampling");
    add("--sample-tokens", c.sample_tokens, "tokens per sample")->group("Sampling");
    add("--prompt", c.prompt, "text the samples continue (default: start of a document)")->group("Sampling");
    add("--temperature", c.temperature, "sampling temperature (0: always the most likely token)")
        ->group("Sampling");
    add("--top-k", c.top_k, "sample among the K most likely tokens (0: all)")->group("Sampling");
    add("--tokenizer", c.tokenizer,
        "tokenizer file from scripts/prepare_data.py (default: tokenizer.bin next to the train shards; "
        "bytes for --vocab 256)")
        ->group("Sampling");

    // Weights in and out.
    add("--init-from", c.init_from,
        "start from these weights: a seed-layout .safetensors (our export) or a Hugging Face GPT-2 "
        "model.safetensors / folder (vocabulary padded with zero rows)")
        ->group("Weights");
    add("--export", c.export_path,
        "write the weights (from --resume or --init-from) and exit; with --export-at-end: after training")
        ->group("Weights");
    choice_opt("--export-format", &export_format_s,
               "seed: one file with the PyTorch module's names; hf: a Hugging Face GPT-2 folder "
               "(model.safetensors + config.json)",
               export_format.type_name())
        ->group("Weights");
    app.add_flag("--export-at-end", c.export_at_end, "export after the last step")->group("Weights");

    app.footer(
        "Shards are llm.c token files: a 256 x int32 header (magic 20240520, version 1, token count) then "
        "uint16 tokens; make them with scripts/prepare_data.py.");

    // "--steps -1": join a negative number to the value flag before it ("--steps=-1"), so that it is read as
    // the value whatever the CLI11 version's rule for telling numbers from options.
    std::vector<std::string> args;
    for (int i = 1; i < argc; i++) args.push_back(argv[i] ? argv[i] : "");
    std::vector<std::string> joined;
    for (size_t i = 0; i < args.size(); i++) {
        auto f = value_flags.find(args[i]);
        if (f != value_flags.end() && i + 1 < args.size() && looks_negative_number(args[i + 1])) {
            joined.push_back(f->second + "=" + args[i + 1]);
            i++;
        } else {
            joined.push_back(args[i]);
        }
    }
    std::vector<const char*> joined_argv = {argc > 0 && argv[0] ? argv[0] : "train_gpt"};
    for (const std::string& a : joined) joined_argv.push_back(a.c_str());

    try {
        app.parse((int)joined_argv.size(), joined_argv.data());
    } catch (const CLI::CallForHelp&) {
        CliResult r;
        r.exit_code = 0;
        r.message = app.help();
        return r;
    } catch (const CLI::ParseError& e) {
        return usage_error(e.what());
    }

    std::string err;
    if (err.empty()) err = precision.parse(precision_s, &c.precision);
    if (err.empty()) err = gelu.parse(gelu_s, &m.gelu_tanh);
    if (err.empty()) err = schedule.parse(schedule_s, &c.schedule);
    if (err.empty()) err = fp8_format.parse(fp8_format_s, &c.fp8.format);
    if (err.empty()) err = amax_algo.parse(amax_algo_s, &c.fp8.amax_algo);
    if (err.empty()) err = export_format.parse(export_format_s, &c.export_hf);
    int model_index = 0;
    if (err.empty()) err = model.parse(model_s, &model_index);
    if (!err.empty()) return usage_error(err);

    bool gelu_tanh = m.gelu_tanh;  // the preset does not touch it, but keep it explicit
    if (!model_preset(model_s, &m)) return usage_error("--model: unknown preset '" + model_s + "'");
    m.gelu_tanh = gelu_tanh;
    c.model_name = model_s;
    if (o_layers->count()) m.num_layers = layers;
    if (o_channels->count()) m.channels = channels;
    if (o_heads->count()) m.num_heads = heads;
    if (o_vocab->count()) m.vocab_size = vocab;
    if (o_max_seq->count()) m.max_seq_len = max_seq;

    std::string invalid = validate(c);
    if (!invalid.empty()) return usage_error(invalid);

    CliResult r;
    r.run = true;
    r.exit_code = 0;
    return r;
}
