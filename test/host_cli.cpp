// Host tests for llmc/host/cli: defaults, every flag, presets and overrides, --help, one-line usage errors.
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "llmc/host/cli.h"
#include "llmc/host/config.h"
#include "llmc/host/settings.h"
#include "test/testing.h"

namespace {

CliResult parse(const std::vector<std::string>& args, TrainConfig* cfg) {
    std::vector<const char*> argv = {"train_gpt"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    return parse_cli((int)argv.size(), argv.data(), cfg);
}

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const std::string& a : args) s += (s.empty() ? "" : " ") + a;
    return s;
}

// The message of a usage error: "error: ...\n", one line, and nothing else.
bool is_one_line_error(const std::string& msg) {
    if (msg.rfind("error: ", 0) != 0) return false;
    if (msg.empty() || msg.back() != '\n') return false;
    return msg.find('\n') == msg.size() - 1;
}

// The number after `prefix` in `msg` (-1 if absent).
long number_after(const std::string& msg, const std::string& prefix) {
    size_t p = msg.find(prefix);
    if (p == std::string::npos) return -1;
    return std::strtol(msg.c_str() + p + prefix.size(), nullptr, 10);
}

// Checks that `args` is rejected with one "error: ..." line that names `flag` and contains each of `texts`,
// and none of CLI11's own phrasings.
void expect_usage_error(const std::vector<std::string>& args, const std::string& flag,
                        const std::vector<std::string>& texts, const char* file, int line) {
    TrainConfig cfg;
    CliResult r = parse(args, &cfg);
    std::string what = "'" + joined(args) + "'";
    if (r.run) return testing::fail(file, line, what + " was accepted");
    if (r.exit_code != 2) testing::fail(file, line, what + " exit code " + std::to_string(r.exit_code));
    if (!is_one_line_error(r.message))
        testing::fail(file, line, what + " is not one error line: " + r.message);
    if (r.message.find(flag) == std::string::npos)
        testing::fail(file, line, what + " message does not name " + flag + ": " + r.message);
    for (const std::string& t : texts)
        if (r.message.find(t) == std::string::npos)
            testing::fail(file, line, what + " message lacks \"" + t + "\": " + r.message);
    for (const char* cli11 : {"At Most", "At Least", "Could not convert", "required but received"})
        if (r.message.find(cli11) != std::string::npos)
            testing::fail(file, line, what + " message is CLI11's: " + r.message);
}
#define EXPECT_USAGE_ERROR(args, flag, ...) expect_usage_error(args, flag, __VA_ARGS__, __FILE__, __LINE__)

}  // namespace

TEST(defaults) {
    TrainConfig cfg;
    CliResult r = parse({}, &cfg);
    EXPECT_TRUE(r.run);
    EXPECT_EQ(r.exit_code, 0);
    TrainConfig def;
    EXPECT_TRUE(to_json(cfg, 0) == to_json(def, 0));  // every field (the JSON dump lists them all)
    EXPECT_TRUE(cfg.model_name == "1.5b");
    EXPECT_EQ(cfg.model.num_layers, 48);
    EXPECT_EQ(cfg.model.channels, 1600);
    EXPECT_EQ(cfg.model.num_heads, 25);
    EXPECT_EQ(cfg.model.vocab_size, 50304);
    EXPECT_EQ(cfg.model.max_seq_len, 1024);
    EXPECT_TRUE(cfg.precision == Precision::BF16);
    EXPECT_TRUE(cfg.train_data == "random");
    EXPECT_EQ(cfg.adam_eps, def.adam_eps);
}

namespace {

// A flag and the check that it landed in its field; values differ from the defaults so a flag that is
// ignored fails its check.
struct FlagCase {
    std::vector<std::string> args;
    std::function<bool(const TrainConfig&)> check;
};

void expect_each_sets_its_field(const std::vector<FlagCase>& cases) {
    for (const FlagCase& k : cases) {
        TrainConfig cfg;
        CliResult r = parse(k.args, &cfg);
        if (!r.run) {
            testing::fail(__FILE__, __LINE__, "'" + joined(k.args) + "' was rejected: " + r.message);
            continue;
        }
        if (!k.check(cfg))
            testing::fail(__FILE__, __LINE__, "'" + joined(k.args) + "' did not set its field");
    }
}

}  // namespace

// Every row of the settings table with a flag is a flag of the help (the table is what the CLI registers),
// and every long flag of the help is a row's or one of the CLI's own (--print-config, --version, --help).
TEST(settings_table_is_the_cli) {
    TrainConfig cfg;
    const CliResult r = parse({"--help"}, &cfg);
    std::set<std::string> rows;
    for (const Setting& s : settings()) {
        if (!s.flags) continue;
        rows.insert(s.long_name());
        if (r.message.find(s.long_name()) == std::string::npos)
            testing::fail(__FILE__, __LINE__, s.long_name() + " of the settings table is not in the help");
    }
    std::istringstream help(r.message);
    for (std::string line; std::getline(help, line);) {
        if (line.rfind("  --", 0) != 0) continue;  // an option's line (descriptions are indented further)
        const std::string flag = line.substr(2, line.find_first_of(" =,", 2) - 2);
        if (!rows.count(flag) && flag != "--print-config" && flag != "--version" && flag != "--help")
            testing::fail(__FILE__, __LINE__, "the help's " + flag + " is not a row of the settings table");
    }
    EXPECT_TRUE(rows.size() >= 60);
}

TEST(model_and_training_flags_set_their_fields) {
    expect_each_sets_its_field({
        {{"--precision", "fp8"}, [](const TrainConfig& c) { return c.precision == Precision::FP8; }},
        {{"--precision", "bf16"}, [](const TrainConfig& c) { return c.precision == Precision::BF16; }},
        {{"--gelu", "tanh"}, [](const TrainConfig& c) { return c.model.gelu_tanh; }},
        {{"--gelu", "erf"}, [](const TrainConfig& c) { return !c.model.gelu_tanh; }},
        {{"--batch", "4"}, [](const TrainConfig& c) { return c.batch == 4; }},
        {{"-b", "8"}, [](const TrainConfig& c) { return c.batch == 8; }},
        {{"--seq", "512"}, [](const TrainConfig& c) { return c.seq == 512; }},
        {{"-t", "256"}, [](const TrainConfig& c) { return c.seq == 256; }},
        {{"--steps", "7"}, [](const TrainConfig& c) { return c.steps == 7; }},
        {{"-n", "9"}, [](const TrainConfig& c) { return c.steps == 9; }},
        {{"--train-data", "data/x_train_*.bin"},
         [](const TrainConfig& c) { return c.train_data == "data/x_train_*.bin"; }},
        {{"--val-data", "data/x_val_*.bin"},
         [](const TrainConfig& c) { return c.val_data == "data/x_val_*.bin"; }},
        {{"--val-every", "25", "--val-data", "v*.bin"},
         [](const TrainConfig& c) { return c.val_every == 25; }},
        {{"--val-batches", "3", "--val-data", "v*.bin"},
         [](const TrainConfig& c) { return c.val_batches == 3; }},
        {{"--eval-hellaswag", "hs.bin", "--eval-every", "250", "--eval-hellaswag-dump", "d.txt"},
         [](const TrainConfig& c) {
             return c.eval_hellaswag == "hs.bin" && c.eval_every == 250 && c.eval_hellaswag_dump == "d.txt";
         }},
        {{"--lr", "0.0003"}, [](const TrainConfig& c) { return c.lr == 0.0003f; }},
        {{"--lr=1e-3"}, [](const TrainConfig& c) { return c.lr == 1e-3f; }},
        {{"--warmup", "10"}, [](const TrainConfig& c) { return c.warmup == 10; }},
        {{"--schedule", "constant"}, [](const TrainConfig& c) { return c.schedule == LrSchedule::Constant; }},
        {{"--schedule", "cosine"}, [](const TrainConfig& c) { return c.schedule == LrSchedule::Cosine; }},
        {{"--final-lr-frac", "0.25"}, [](const TrainConfig& c) { return c.final_lr_frac == 0.25f; }},
        {{"--final-lr-frac", "0"}, [](const TrainConfig& c) { return c.final_lr_frac == 0.0f; }},
        {{"--weight-decay", "0.05"}, [](const TrainConfig& c) { return c.weight_decay == 0.05f; }},
        {{"--grad-clip", "0"}, [](const TrainConfig& c) { return c.grad_clip == 0.0f; }},
        {{"--beta1", "0.8"}, [](const TrainConfig& c) { return c.beta1 == 0.8f; }},
        {{"--beta2", "0.99"}, [](const TrainConfig& c) { return c.beta2 == 0.99f; }},
        {{"--seed", "12345678901234"}, [](const TrainConfig& c) { return c.seed == 12345678901234ull; }},
    });
}

TEST(run_flags_set_their_fields) {
    expect_each_sets_its_field({
        {{"--log-dir", "/tmp/runs/a"}, [](const TrainConfig& c) { return c.log_dir == "/tmp/runs/a"; }},
        {{"--log-every", "10"}, [](const TrainConfig& c) { return c.log_every == 10; }},
        {{"--fp8-format", "e4m3", "--precision", "fp8"},
         [](const TrainConfig& c) { return c.fp8.format == Fp8Format::E4M3; }},
        {{"--fp8-format", "hybrid", "--precision", "fp8"},
         [](const TrainConfig& c) { return c.fp8.format == Fp8Format::Hybrid; }},
        {{"--fp8-history", "16", "--precision", "fp8"},
         [](const TrainConfig& c) { return c.fp8.history_len == 16; }},
        {{"--fp8-amax-algo", "most_recent", "--precision", "fp8"},
         [](const TrainConfig& c) { return c.fp8.amax_algo == AmaxAlgo::MostRecent; }},
        {{"--fp8-amax-algo", "max", "--precision", "fp8"},
         [](const TrainConfig& c) { return c.fp8.amax_algo == AmaxAlgo::Max; }},
        {{"--fp8-margin", "2", "--precision", "fp8"}, [](const TrainConfig& c) { return c.fp8.margin == 2; }},
        {{"--precision", "fp8"}, [](const TrainConfig& c) { return c.fp8.fast_accum; }},
        {{"--no-fp8-fast-accum", "--precision", "fp8"},
         [](const TrainConfig& c) { return !c.fp8.fast_accum; }},
        {{"--fp8-health-every", "5", "--precision", "fp8"},
         [](const TrainConfig& c) { return c.fp8_health_every == 5; }},
        {{"--sample-every", "10", "--prompt", "Once", "--sample-tokens", "8", "--temperature", "0.5",
          "--top-k", "3", "--tokenizer", "t.bin"},
         [](const TrainConfig& c) {
             return c.sample_every == 10 && c.prompt == "Once" && c.sample_tokens == 8 &&
                    c.temperature == 0.5f && c.top_k == 3 && c.tokenizer == "t.bin";
         }},
        {{"--checkpoint-dir", "ck", "--checkpoint-every", "7", "--keep-checkpoints", "3",
          "--checkpoint-required"},
         [](const TrainConfig& c) {
             return c.checkpoint_dir == "ck" && c.checkpoint_every == 7 && c.keep_checkpoints == 3 &&
                    c.checkpoint_required;
         }},
        {{"--resume", "ck", "--checkpoint-every", "7"},
         [](const TrainConfig& c) { return c.checkpoint_every == 7; }},
        {{"--export", "w.safetensors", "--export-format", "hf"},
         [](const TrainConfig& c) { return c.export_format == ExportFormat::HF; }},
        {{"--log-dir=--steps"}, [](const TrainConfig& c) { return c.log_dir == "--steps"; }},
        {{"--log-dir", "-"}, [](const TrainConfig& c) { return c.log_dir == "-"; }},
        {{"--layers", "6"}, [](const TrainConfig& c) { return c.model.num_layers == 6; }},
        {{"--channels", "1280", "--heads", "20"},
         [](const TrainConfig& c) { return c.model.channels == 1280 && c.model.num_heads == 20; }},
        {{"--vocab", "50320"}, [](const TrainConfig& c) { return c.model.vocab_size == 50320; }},
        {{"--no-cuda-graph"}, [](const TrainConfig& c) { return !c.cuda_graph; }},
        {{"--no-cuda-graph", "--cuda-graph"}, [](const TrainConfig& c) { return c.cuda_graph; }},
        {{"--no-deterministic"}, [](const TrainConfig& c) { return !c.deterministic; }},
        {{"--precision", "fp8"}, [](const TrainConfig& c) { return c.fp8.lm_head && c.gemm_autotune; }},
        {{"--no-gemm-autotune", "--gemm-autotune"}, [](const TrainConfig& c) { return c.gemm_autotune; }},
        {{"--precision", "fp8", "--no-fp8-lm-head"}, [](const TrainConfig& c) { return !c.fp8.lm_head; }},
        {{"--adam-moments", "bf16"}, [](const TrainConfig& c) { return c.adam_bf16_moments; }},
        {{"--adam-moments", "fp32"}, [](const TrainConfig& c) { return !c.adam_bf16_moments; }},
        {{"--no-gemm-autotune"}, [](const TrainConfig& c) { return !c.gemm_autotune; }},
        {{"--gemm-autotune", "--gemm-cache", "g.tsv"},
         [](const TrainConfig& c) { return c.gemm_cache == "g.tsv"; }},
        // the second round: on by default in training, off without the first or when only generating
        {{"--precision", "fp8"}, [](const TrainConfig& c) { return c.gemm_autotune && c.gemm_variants; }},
        {{"--gemm-variants"}, [](const TrainConfig& c) { return c.gemm_autotune && c.gemm_variants; }},
        {{"--no-gemm-variants"}, [](const TrainConfig& c) { return c.gemm_autotune && !c.gemm_variants; }},
        {{"--no-gemm-autotune"}, [](const TrainConfig& c) { return !c.gemm_variants; }},
        {{"--generate", "8", "--init-from", "m.bin"}, [](const TrainConfig& c) { return !c.gemm_variants; }},
        {{"--generate", "8", "--init-from", "m.bin", "--gemm-variants"},
         [](const TrainConfig& c) { return c.gemm_variants; }},
        {{"--max-seq", "2048", "--seq", "2048"},
         [](const TrainConfig& c) { return c.model.max_seq_len == 2048 && c.seq == 2048; }},
    });
}

TEST(several_flags_together) {
    // each still lands in its own field
    TrainConfig cfg;
    CliResult r = parse({"--precision", "fp8", "-b", "16", "-t", "128", "-n", "3", "--lr", "0.001",
                         "--warmup", "2", "--fp8-history", "8", "--seed", "7"},
                        &cfg);
    EXPECT_TRUE(r.run);
    EXPECT_TRUE(cfg.precision == Precision::FP8);
    EXPECT_EQ(cfg.batch, 16);
    EXPECT_EQ(cfg.seq, 128);
    EXPECT_EQ(cfg.steps, 3);
    EXPECT_EQ(cfg.warmup, 2);
    EXPECT_EQ(cfg.fp8.history_len, 8);
    EXPECT_EQ(cfg.seed, (uint64_t)7);
}

TEST(model_presets) {
    for (const char* name : {"124m", "350m", "774m", "1.5b"}) {
        TrainConfig cfg;
        CliResult r = parse({"--model", name}, &cfg);
        EXPECT_TRUE(r.run);
        ModelConfig expect;
        EXPECT_TRUE(model_preset(name, &expect));
        EXPECT_TRUE(cfg.model_name == name);
        EXPECT_EQ(cfg.model.num_layers, expect.num_layers);
        EXPECT_EQ(cfg.model.channels, expect.channels);
        EXPECT_EQ(cfg.model.num_heads, expect.num_heads);
        EXPECT_EQ(cfg.model.vocab_size, expect.vocab_size);
        EXPECT_EQ(cfg.model.max_seq_len, expect.max_seq_len);
    }
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--model", "124m"}, &cfg).run);
    EXPECT_EQ(cfg.model.num_layers, 12);
    EXPECT_EQ(cfg.model.channels, 768);
    EXPECT_EQ(cfg.model.num_heads, 12);
}

TEST(overrides_apply_after_preset) {
    // Overrides win whatever their position relative to --model; unspecified fields keep the preset's.
    for (bool model_first : {true, false}) {
        std::vector<std::string> args = {"--layers", "2",   "--channels", "128", "--heads", "4",
                                         "--vocab",  "256", "--max-seq",  "64",  "-t",      "64",
                                         "-b",       "4",   "--gelu",     "tanh"};
        if (model_first)
            args.insert(args.begin(), {"--model", "124m"});
        else
            args.insert(args.end(), {"--model", "124m"});
        TrainConfig cfg;
        CliResult r = parse(args, &cfg);
        EXPECT_TRUE(r.run);
        EXPECT_EQ(cfg.model.num_layers, 2);
        EXPECT_EQ(cfg.model.channels, 128);
        EXPECT_EQ(cfg.model.num_heads, 4);
        EXPECT_EQ(cfg.model.vocab_size, 256);
        EXPECT_EQ(cfg.model.max_seq_len, 64);
        EXPECT_TRUE(cfg.model.gelu_tanh);
        EXPECT_TRUE(cfg.model_name == "124m");
    }
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--model", "350m", "--layers", "3"}, &cfg).run);
    EXPECT_EQ(cfg.model.num_layers, 3);
    EXPECT_EQ(cfg.model.channels, 1024);  // from the preset
    EXPECT_EQ(cfg.model.num_heads, 16);
}

TEST(help_names_every_flag) {
    for (const char* h : {"--help", "-h"}) {
        TrainConfig cfg;
        CliResult r = parse({h}, &cfg);
        EXPECT_TRUE(!r.run);
        EXPECT_EQ(r.exit_code, 0);
        for (const char* flag : {"--precision",    "--model",
                                 "--layers",       "--channels",
                                 "--heads",        "--vocab",
                                 "--max-seq",      "--gelu",
                                 "--batch",        "-b",
                                 "--seq",          "-t",
                                 "--steps",        "-n",
                                 "--train-data",   "--val-data",
                                 "--val-every",    "--val-batches",
                                 "--lr",           "--warmup",
                                 "--schedule",     "--final-lr-frac",
                                 "--weight-decay", "--grad-clip",
                                 "--beta1",        "--beta2",
                                 "--seed",         "--log-dir",
                                 "--log-every",    "--fp8-format",
                                 "--fp8-history",  "--fp8-amax-algo",
                                 "--fp8-margin",   "--fp8-fast-accum",
                                 "--help"})
            if (r.message.find(std::string(flag) + " ") == std::string::npos &&
                r.message.find(std::string(flag) + ",") == std::string::npos)
                testing::fail(__FILE__, __LINE__, std::string("help does not name ") + flag);
        // The accepted values of the choice flags are listed.
        for (const char* v : {"bf16|fp8", "124m|350m|774m|1.5b", "erf|tanh", "cosine|constant", "hybrid|e4m3",
                              "max|most_recent"})
            EXPECT_CONTAINS(r.message, v);
    }
}

TEST(usage_errors_are_one_line) {
    struct Case {
        std::vector<std::string> args;
        const char* names;  // the message must name this flag (or argument)
    };
    const std::vector<Case> cases = {
        // non-positive sizes
        {{"--batch", "0"}, "--batch"},
        {{"-b", "-4"}, "--batch"},
        {{"--seq", "0"}, "--seq"},
        {{"--steps", "0"}, "--steps"},
        {{"--layers", "0"}, "--layers"},
        {{"--channels", "-16"}, "--channels"},
        {{"--heads", "0"}, "--heads"},
        {{"--vocab", "0"}, "--vocab"},
        {{"--max-seq", "0"}, "--max-seq"},
        {{"--val-every", "0"}, "--val-every"},
        {{"--val-batches", "0"}, "--val-batches"},
        {{"--log-every", "0"}, "--log-every"},
        {{"--fp8-history", "0"}, "--fp8-history"},
        // shape constraints
        {{"--seq", "2048"}, "--max-seq"},
        {{"--max-seq", "512"}, "--seq"},
        {{"--heads", "7"}, "--heads"},
        {{"--channels", "1608", "--heads", "24"}, "--channels"},  // divisible, but head size 67
        {{"--model", "124m", "--channels", "776", "--heads", "97"},
         "--channels"},                       // head size 8, C % 16 != 0
        {{"-b", "3", "-t", "5"}, "--batch"},  // B*T = 15
        {{"--vocab", "50257"}, "--vocab"},
        // choices
        {{"--precision", "fp9"}, "--precision"},
        {{"--precision", "FP8"}, "--precision"},
        {{"--model", "2b"}, "--model"},
        {{"--gelu", "relu"}, "--gelu"},
        {{"--schedule", "linear"}, "--schedule"},
        {{"--fp8-format", "e5m2"}, "--fp8-format"},
        {{"--fp8-amax-algo", "mean"}, "--fp8-amax-algo"},
        {{"--adam-moments", "fp16"}, "--adam-moments"},
        {{"--no-gemm-autotune", "--gemm-cache", "g.tsv"}, "--gemm-cache"},
        {{"--no-gemm-autotune", "--gemm-variants"}, "--gemm-variants"},
        // numbers
        {{"--lr", "0"}, "--lr"},
        {{"--lr", "-1"}, "--lr"},
        {{"--warmup", "-1"}, "--warmup"},
        {{"--final-lr-frac", "1.5"}, "--final-lr-frac"},
        {{"--weight-decay", "-0.1"}, "--weight-decay"},
        {{"--grad-clip", "-1"}, "--grad-clip"},
        {{"--fp8-margin", "-1"}, "--fp8-margin"},
        {{"--seed", "-1"}, "--seed"},
        {{"--beta1", "1"}, "--beta1"},
        {{"--beta2", "-0.1"}, "--beta2"},
        {{"--fp8-margin", "65"}, "--fp8-margin"},
        {{"--fp8-history", "2147483647"}, "--fp8-history"},
        {{"--fp8-health-every", "0"}, "--fp8-health-every"},
        {{"--channels", "16384", "--heads", "128"}, "--channels"},
        {{"--log-dir", ""}, "--log-dir"},
        {{"--lr", "1e999"}, "--lr"},
        {{"--batch", "3000000"}, "--batch"},
        {{"--max-seq", "65536", "--seq", "65536"}, "--seq"},
        {{"--batch", "abc"}, "--batch"},
        {{"--batch", "1.5"}, "--batch"},
        {{"--lr", "fast"}, "--lr"},
        {{"--steps", "99999999999"}, "--steps"},
        {{"--batch"}, "--batch"},  // missing value
        {{"--train-data", ""}, "--train-data"},
        // unknown flags and stray arguments
        {{"--foo"}, "--foo"},
        {{"--batch-size", "12"}, "--batch-size"},
        {{"extra"}, "extra"},
        {{"-x"}, "-x"},
    };
    for (const Case& k : cases) {
        TrainConfig cfg;
        CliResult r = parse(k.args, &cfg);
        std::string what = "'" + joined(k.args) + "'";
        if (r.run) {
            testing::fail(__FILE__, __LINE__, what + " was accepted");
            continue;
        }
        if (r.exit_code == 0) testing::fail(__FILE__, __LINE__, what + " exited 0");
        if (!is_one_line_error(r.message))
            testing::fail(__FILE__, __LINE__,
                          what + " message is not one 'error: ...' line: [" + r.message + "]");
        if (r.message.find(k.names) == std::string::npos)
            testing::fail(__FILE__, __LINE__, what + " message does not name " + k.names + ": " + r.message);
        for (const char* cli11 : {"At Most", "Could not convert"})
            if (r.message.find(cli11) != std::string::npos)
                testing::fail(__FILE__, __LINE__, what + " message is CLI11's: " + r.message);
    }
}

TEST(precision_error_text) {
    TrainConfig cfg;
    CliResult r = parse({"--precision", "fp9"}, &cfg);
    EXPECT_TRUE(!r.run);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(r.message == "error: --precision: 'fp9' is not one of bf16, fp8\n");
    r = parse({"--model", "7b"}, &cfg);
    EXPECT_TRUE(r.message == "error: --model: '7b' is not one of 124m, 350m, 774m, 1.5b\n");
}

TEST(negative_numbers_are_values) {
    // "-1" after a numeric flag is its value (not an option), so the range check speaks.
    TrainConfig cfg;
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"--steps", "-1"}, {"-n", "-1"}, {"--steps=-1"}, {"-n-1"}}) {
        CliResult r = parse(args, &cfg);
        EXPECT_TRUE(!r.run);
        EXPECT_EQ(r.exit_code, 2);
        EXPECT_TRUE(r.message == "error: --steps: must be >= 1, got -1\n");
    }
    EXPECT_USAGE_ERROR({"--batch", "-5"}, "--batch", {"must be >= 1, got -5"});
    EXPECT_USAGE_ERROR({"-b", "-5"}, "--batch", {"must be >= 1, got -5"});
    EXPECT_USAGE_ERROR({"--lr", "-1"}, "--lr", {"must be a finite number > 0, got -1"});
    EXPECT_USAGE_ERROR({"--lr", "-.5"}, "--lr", {"got -0.5"});
    EXPECT_USAGE_ERROR({"--warmup", "-3"}, "--warmup", {"must be >= 0, got -3"});
    EXPECT_USAGE_ERROR({"--beta1", "-0.5"}, "--beta1", {"must be in [0, 1), got -0.5"});
    EXPECT_USAGE_ERROR({"--steps", "-1", "--batch", "4"}, "--steps", {"got -1"});
    // A negative number that is a valid value still lands in its field (none of ours accepts one, so check
    // that a later flag is not swallowed and a valid run still parses).
    EXPECT_TRUE(parse({"--precision", "fp8", "--fp8-margin", "0", "--steps", "3"}, &cfg).run);
    EXPECT_EQ(cfg.steps, 3);
}

TEST(every_numeric_flag_has_a_range) {
    struct Case {
        std::vector<std::string> args;
        const char* flag;
        const char* text;
    };
    const std::vector<Case> cases = {
        {{"--layers", "0"}, "--layers", "must be >= 1, got 0"},
        {{"--channels", "0"}, "--channels", "must be >= 1, got 0"},
        {{"--heads", "-2"}, "--heads", "must be >= 1, got -2"},
        {{"--vocab", "-16"}, "--vocab", "must be >= 1, got -16"},
        {{"--max-seq", "0"}, "--max-seq", "must be >= 1, got 0"},
        {{"--batch", "0"}, "--batch", "must be >= 1, got 0"},
        {{"--seq", "-1"}, "--seq", "must be >= 1, got -1"},
        {{"--steps", "0"}, "--steps", "must be >= 1, got 0"},
        {{"--warmup", "-1"}, "--warmup", "must be >= 0, got -1"},
        {{"--val-every", "-1"}, "--val-every", "must be >= 1, got -1"},
        {{"--val-batches", "0"}, "--val-batches", "must be >= 1, got 0"},
        {{"--eval-every", "-1", "--eval-hellaswag", "hs.bin"}, "--eval-every", "must be >= 0, got -1"},
        {{"--eval-hellaswag", "hs.bin", "--batch", "2"},
         "--eval-hellaswag",
         "needs --batch >= 4 (an example's 4 endings are rows of one batch), got --batch 2"},
        {{"--log-every", "-10"}, "--log-every", "must be >= 1, got -10"},
        {{"--fp8-history", "0"}, "--fp8-history", "must be >= 1, got 0"},
        {{"--fp8-history", "2147483647"}, "--fp8-history", "must be <= 2147483584"},
        {{"--fp8-margin", "-1"}, "--fp8-margin", "must be >= 0, got -1"},
        {{"--fp8-margin", "65"}, "--fp8-margin", "must be <= 64, got 65"},
        {{"--fp8-health-every", "0"}, "--fp8-health-every", "must be >= 1, got 0"},
        {{"--lr", "0"}, "--lr", "must be a finite number > 0, got 0"},
        {{"--lr", "inf"}, "--lr", "must be a finite number > 0"},
        {{"--lr", "nan"}, "--lr", "must be a finite number > 0"},
        {{"--final-lr-frac", "-0.1"}, "--final-lr-frac", "must be in [0, 1], got -0.1"},
        {{"--final-lr-frac", "1.5"}, "--final-lr-frac", "must be in [0, 1], got 1.5"},
        {{"--weight-decay", "-1"}, "--weight-decay", "must be a finite number >= 0, got -1"},
        {{"--grad-clip", "-1"}, "--grad-clip", "must be a finite number >= 0"},
        {{"--beta1", "1"}, "--beta1", "must be in [0, 1), got 1"},
        {{"--beta2", "1.5"}, "--beta2", "must be in [0, 1), got 1.5"},
        {{"--seed", "-1"}, "--seed", "must be a non-negative integer"},
        {{"--log-dir", ""}, "--log-dir", "must not be empty"},
    };
    for (const Case& k : cases) EXPECT_USAGE_ERROR(k.args, k.flag, {k.text});
    // The edges themselves are accepted.
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--precision", "fp8", "--warmup", "0", "--fp8-margin", "64", "--beta1", "0", "--beta2",
                       "0.999", "--final-lr-frac", "1", "--weight-decay", "0", "--grad-clip", "0",
                       "--fp8-history", "1"},
                      &cfg)
                    .run);
    EXPECT_EQ(cfg.fp8.margin, 64);
}

TEST(numbers_must_fit_their_type) {
    EXPECT_USAGE_ERROR({"--steps", "99999999999"}, "--steps",
                       {"99999999999 is out of range (at most 2147483647)"});
    EXPECT_USAGE_ERROR({"--warmup", "-99999999999"}, "--warmup", {"out of range (at least -2147483648)"});
    EXPECT_USAGE_ERROR({"--vocab", "99999999999"}, "--vocab", {"out of range (at most 2147483647)"});
    EXPECT_USAGE_ERROR({"--batch", "1.5"}, "--batch", {"'1.5' is not an integer"});
    EXPECT_USAGE_ERROR({"--batch", "12abc"}, "--batch", {"'12abc' is not an integer"});
    EXPECT_USAGE_ERROR({"--steps", "1e3"}, "--steps", {"'1e3' is not an integer"});
    EXPECT_USAGE_ERROR({"--lr", "fast"}, "--lr", {"'fast' is not a number"});
    EXPECT_USAGE_ERROR({"--lr", "1e999"}, "--lr", {"out of range for a float"});
    EXPECT_USAGE_ERROR({"--seed", "18446744073709551616"}, "--seed",
                       {"out of range (at most 18446744073709551615)"});
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--seed", "18446744073709551615"}, &cfg).run);
    EXPECT_TRUE(cfg.seed == 18446744073709551615ull);
    // Integers are decimal (CLI11 alone would read 010 as octal 8).
    EXPECT_TRUE(parse({"--batch", "012", "--steps", "+5"}, &cfg).run);
    EXPECT_EQ(cfg.batch, 12);
    EXPECT_EQ(cfg.steps, 5);
}

TEST(repeated_flag_last_wins) {
    TrainConfig cfg;
    CliResult r = parse({"--steps", "5", "--steps", "6", "-b", "4", "--batch", "8"}, &cfg);
    EXPECT_TRUE(r.run);
    EXPECT_EQ(cfg.steps, 6);
    EXPECT_EQ(cfg.batch, 8);
}

TEST(batch_overflow_suggests_a_batch) {
    for (const char* model : {"1.5b", "124m"}) {
        TrainConfig cfg;
        CliResult r = parse({"--model", model, "--batch", "3000000"}, &cfg);
        EXPECT_TRUE(!r.run);
        EXPECT_EQ(r.exit_code, 2);
        EXPECT_TRUE(is_one_line_error(r.message));
        EXPECT_CONTAINS(r.message,
                        "error: --batch 3000000 x --seq 1024 = 3072000000 tokens per step exceeds");
        EXPECT_CONTAINS(r.message, "must be <= ");
        const long suggested = number_after(r.message, "use --batch <= ");
        EXPECT_TRUE(suggested >= 1);
        if (suggested < 1) continue;
        TrainConfig ok;
        CliResult r_ok = parse({"--model", model, "--batch", std::to_string(suggested)}, &ok);
        if (!r_ok.run) testing::fail(__FILE__, __LINE__, "suggested batch rejected: " + r_ok.message);
        TrainConfig bad;
        CliResult r_bad = parse({"--model", model, "--batch", std::to_string(suggested + 1)}, &bad);
        EXPECT_TRUE(!r_bad.run);
        EXPECT_EQ(number_after(r_bad.message, "use --batch <= "), suggested);  // the same suggestion
    }
}

TEST(fp8_row_tile_limit) {
    // C = 64 keeps the attention guard (B*T*3C) above FP8's cast-transpose grid.y limit, 65535 * 128 rows.
    const std::vector<std::string> small = {"--model", "124m", "--channels", "64", "--heads", "1"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = small;
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    TrainConfig cfg;
    CliResult r = parse(with({"--precision", "fp8", "--batch", "8193"}), &cfg);
    EXPECT_TRUE(!r.run);
    EXPECT_TRUE(is_one_line_error(r.message));
    EXPECT_CONTAINS(r.message, "B*T = 8389632 must be <= 8388480");
    EXPECT_CONTAINS(r.message, "65535");
    EXPECT_EQ(number_after(r.message, "use --batch <= "), 8191L);  // 8191 * 1024 = 8387584 <= 8388480
    EXPECT_TRUE(parse(with({"--precision", "fp8", "--batch", "8191"}), &cfg).run);
    EXPECT_TRUE(parse(with({"--precision", "bf16", "--batch", "8193"}), &cfg).run);  // an FP8-only limit
}

TEST(seq_too_large) {
    // A long --seq at the default --batch 12: the suggestion is a smaller --batch.
    TrainConfig cfg;
    CliResult r = parse({"--max-seq", "65536", "--seq", "65536"}, &cfg);
    EXPECT_TRUE(!r.run);
    EXPECT_TRUE(is_one_line_error(r.message));
    EXPECT_CONTAINS(r.message, "--batch 12 x --seq 65536 = 786432 tokens per step");
    const long b = number_after(r.message, "use --batch <= ");
    EXPECT_TRUE(b >= 1);
    EXPECT_TRUE(parse({"--max-seq", "65536", "--seq", "65536", "--batch", std::to_string(b)}, &cfg).run);
    EXPECT_TRUE(!parse({"--max-seq", "65536", "--seq", "65536", "--batch", std::to_string(b + 1)}, &cfg).run);
    // So long that even --batch 1 overflows: the suggestion is a shorter --seq.
    r = parse({"--max-seq", "2147483632", "--seq", "2147483632", "-b", "1"}, &cfg);
    EXPECT_TRUE(!r.run);
    EXPECT_TRUE(is_one_line_error(r.message));
    EXPECT_CONTAINS(r.message, "--batch 1 x --seq 2147483632 = 2147483632 tokens per step");
    const long t = number_after(r.message, "use --seq <= ");
    EXPECT_TRUE(t >= 16 && t % 16 == 0);
    EXPECT_TRUE(parse({"--max-seq", "2147483632", "--seq", std::to_string(t), "-b", "1"}, &cfg).run);
    EXPECT_TRUE(!parse({"--max-seq", "2147483632", "--seq", std::to_string(t + 16), "-b", "1"}, &cfg).run);
}

TEST(vocab_and_channels_limits) {
    // A vocabulary beyond int is refused by the flag's type; the logits (B*T*V) are indexed in 64-bit, so a
    // large one that fits an int is left to the GPU memory check.
    EXPECT_USAGE_ERROR({"--vocab", "4294967296"}, "--vocab", {"out of range"});
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--model", "124m", "--batch", "64"}, &cfg).run);  // llm.c's 124M: B*T*V = 3.3e9
    // The LayerNorm kernels hold at most 8192 channels.
    EXPECT_USAGE_ERROR({"--channels", "8208", "--heads", "513"}, "--channels", {"8192"});
    EXPECT_TRUE(parse({"--channels", "8192", "--heads", "64", "--batch", "1"}, &cfg).run);
}

// A value that looks like a flag is the user's forgotten value: both named, and how to mean it.
TEST(value_that_looks_like_a_flag) {
    TrainConfig cfg;
    CliResult r = parse({"--log-dir", "--steps", "5"}, &cfg);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(r.message ==
                "error: --log-dir: expected a value, got the flag --steps (for a value that starts with '-', "
                "write --log-dir=VALUE)\n");
    r = parse({"--export", "--steps", "5"}, &cfg);
    EXPECT_CONTAINS(r.message, "error: --export: expected a value, got the flag --steps");
    r = parse({"-n", "-b", "4"}, &cfg);  // short names: the message uses the long one
    EXPECT_CONTAINS(r.message, "error: --steps: expected a value, got the flag -b");
    r = parse({"--train-data", "--"}, &cfg);
    EXPECT_CONTAINS(r.message, "--train-data: expected a value, got the flag --");
    r = parse({"--steps", "3", "--log-dir"}, &cfg);
    EXPECT_TRUE(r.message == "error: --log-dir: expected a value after it\n");
    // an empty value of a number (CLI11 says "1 required INT missing")
    r = parse({"--steps="}, &cfg);
    EXPECT_TRUE(r.message == "error: --steps: expected a value after it (got an empty one)\n");
    r = parse({"--lr="}, &cfg);
    EXPECT_TRUE(r.message == "error: --lr: expected a value after it (got an empty one)\n");
    EXPECT_TRUE(parse({"--sample-every", "1", "--prompt=-x"}, &cfg).run);
    EXPECT_TRUE(cfg.prompt == "-x");
}

TEST(unknown_flags_and_stray_arguments) {
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--batch-size", "12"}, &cfg).message ==
                "error: unknown flag --batch-size (train_gpt --help lists the flags)\n");
    EXPECT_TRUE(
        parse({"--steps", "5", "7"}, &cfg).message ==
        "error: unexpected argument '7': a value must follow its flag (train_gpt --help lists the flags)\n");
}

// Flags that change nothing with the others given are usage errors naming the flag and what it needs; with
// that, they are accepted.
TEST(flags_without_effect) {
    struct Case {
        std::vector<std::string> args, enabling;
        const char* message;
    };
    const std::vector<Case> cases = {
        {{"--prompt", "Once"},
         {"--sample-every", "5"},
         "--prompt: has no effect without --sample-every N (text samples are off)"},
        {{"--sample-every", "0", "--top-k", "5"},
         {"--sample-every", "5"},
         "--top-k: has no effect without --sample-every N"},
        {{"--tokenizer", "t.bin"},
         {"--sample-every", "5"},
         "--tokenizer: has no effect without --sample-every N"},
        {{"--val-batches", "2"}, {"--val-data", "v*.bin"}, "--val-batches: has no effect without --val-data"},
        {{"--checkpoint-every", "10"},
         {"--checkpoint-dir", "ck"},
         "--checkpoint-every: has no effect without --checkpoint-dir DIR or --resume DIR (no checkpoints)"},
        {{"--checkpoint-required"}, {"--resume", "ck"}, "--checkpoint-required: has no effect without"},
        {{"--fp8-history", "16"},
         {"--precision", "fp8"},
         "--fp8-history: has no effect with --precision bf16 (the FP8 flags apply to --precision fp8)"},
        {{"--fp8-health-every", "1"}, {"--precision", "fp8"}, "--fp8-health-every: has no effect with"},
        {{"--no-fp8-lm-head"},
         {"--precision", "fp8"},
         "--no-fp8-lm-head: has no effect with --precision bf16"},
        {{"--no-fp8-fast-accum"},
         {"--precision", "fp8"},
         "--no-fp8-fast-accum: has no effect with --precision bf16"},
        {{"--schedule", "constant", "--final-lr-frac", "0.5"},
         {"--schedule", "cosine"},
         "--final-lr-frac: has no effect with --schedule constant"},
        {{"--export-format", "hf"},
         {"--export", "x"},
         "--export-format: has no effect without --export PATH"},
        {{"--eval-every", "100"},
         {"--eval-hellaswag", "hs.bin"},
         "--eval-every: has no effect without --eval-hellaswag FILE (no HellaSwag evaluation)"},
        {{"--eval-hellaswag-dump", "d.txt"},
         {"--eval-hellaswag", "hs.bin"},
         "--eval-hellaswag-dump: has no effect without --eval-hellaswag FILE"},
    };
    for (const Case& k : cases) {
        EXPECT_USAGE_ERROR(k.args,
                           k.args[0] == "--sample-every" || k.args[0] == "--schedule" ? k.args[2] : k.args[0],
                           {std::string("error: ") + k.message});
        std::vector<std::string> fixed = k.args;
        fixed.insert(fixed.end(), k.enabling.begin(), k.enabling.end());
        TrainConfig cfg;
        const CliResult r = parse(fixed, &cfg);
        if (!r.run) testing::fail(__FILE__, __LINE__, "'" + joined(fixed) + "' was rejected: " + r.message);
    }
}

// A run that does not train (--export without --export-at-end) refuses every training-only flag by name,
// and takes the flags it uses: the model, the forward's shape, validation and HellaSwag (it evaluates
// before writing), logs, the launcher's and the weights' flags. The lists are this test's own, not the
// settings table's, so a row marked for the wrong modes fails here.
TEST(training_flags_have_no_effect_with_export) {
    const std::vector<std::string> export_only = {"--init-from", "w.safetensors", "--export",
                                                  "x.safetensors"};
    const std::vector<std::vector<std::string>> refused = {{"--steps", "5"},
                                                           {"--lr", "1e-3"},
                                                           {"--warmup", "2"},
                                                           {"--schedule", "constant"},
                                                           {"--final-lr-frac", "0.5"},
                                                           {"--weight-decay", "0"},
                                                           {"--grad-clip", "0"},
                                                           {"--beta1", "0.8"},
                                                           {"--beta2", "0.9"},
                                                           {"--total-batch", "0"},
                                                           {"--recompute", "0"},
                                                           {"--no-deterministic"},
                                                           {"--no-cuda-graph"},
                                                           {"--train-data", "random"},
                                                           {"--val-every", "10"},
                                                           {"--eval-every", "10"},
                                                           {"--log-every", "5"},
                                                           {"--profile"},
                                                           {"--checkpoint-dir", "ck"},
                                                           {"--checkpoint-every", "10"},
                                                           {"--keep-checkpoints", "3"},
                                                           {"--checkpoint-required"},
                                                           {"--resume-if-present", "ck"},
                                                           {"--max-bad-steps", "2"},
                                                           {"--sample-every", "10"},
                                                           {"--sample-tokens", "8"},
                                                           {"--prompt", "Once"},
                                                           {"--temperature", "0"},
                                                           {"--top-k", "1"},
                                                           {"--tokenizer", "t.bin"},
                                                           {"--precision", "fp8", "--fp8-health-every", "5"}};
    for (const std::vector<std::string>& flags : refused) {
        std::vector<std::string> args = export_only;
        args.insert(args.end(), flags.begin(), flags.end());
        if (flags[0] == "--resume-if-present")
            args.erase(args.begin(), args.begin() + 2);  // not with --init-from
        const std::string& flag = flags[0] == "--precision" ? flags[2] : flags[0];
        EXPECT_USAGE_ERROR(args, flag,
                           {"error: " + flag + ": has no effect with --export (it writes the weights"});
        // the same flags with --export-at-end: a training run, which uses them
        args.push_back("--export-at-end");
        if (flags[0] == "--val-every") args.insert(args.end(), {"--val-data", "v*.bin"});
        if (flags[0] == "--eval-every") args.insert(args.end(), {"--eval-hellaswag", "hs.bin"});
        if (flags[0] == "--checkpoint-every" || flags[0] == "--keep-checkpoints" ||
            flags[0] == "--checkpoint-required")
            args.insert(args.end(), {"--checkpoint-dir", "ck"});
        if (flags[0] == "--sample-tokens" || flags[0] == "--prompt" || flags[0] == "--temperature" ||
            flags[0] == "--top-k" || flags[0] == "--tokenizer")
            args.insert(args.end(), {"--sample-every", "5"});
        TrainConfig cfg;
        const CliResult r = parse(args, &cfg);
        if (!r.run) testing::fail(__FILE__, __LINE__, "'" + joined(args) + "' was rejected: " + r.message);
    }
    const std::vector<std::vector<std::string>> used = {
        {"--model", "124m", "--layers", "2", "--gelu", "tanh"},
        {"--batch", "4", "--seq", "512"},
        {"--val-data", "v*.bin", "--val-batches", "2"},
        {"--eval-hellaswag", "hs.bin", "--eval-hellaswag-dump", "d.txt", "--batch", "4"},
        {"--log-dir", "runs/x", "--seed", "7"},
        {"--precision", "fp8", "--fp8-history", "16", "--no-fp8-lm-head", "--fp8-margin", "1"},
        {"--no-gemm-autotune"},
        {"--gemm-cache", "c.tsv"},
        {"--comm-timeout", "60", "--rendezvous", "tcp://h:1"},
        {"--export-format", "hf"}};
    for (const std::vector<std::string>& flags : used) {
        std::vector<std::string> args = export_only;
        args.insert(args.end(), flags.begin(), flags.end());
        TrainConfig cfg;
        const CliResult r = parse(args, &cfg);
        if (!r.run) testing::fail(__FILE__, __LINE__, "'" + joined(args) + "' was rejected: " + r.message);
    }
    // --adam-moments says how a checkpoint stores AdamW's moments: needed to --resume one, else nothing
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--resume", "ck", "--export", "x", "--adam-moments", "bf16"}, &cfg).run);
    EXPECT_USAGE_ERROR({"--init-from", "w", "--export", "x", "--adam-moments", "bf16"}, "--adam-moments",
                       {"has no effect with --export but no --resume DIR"});
}

// --generate N takes the model, precision and FP8 flags, --seq (the window), the weights, the sampling flags
// (without --sample-every) and --seed, runs one sequence (--batch 1), and refuses the flags of training,
// logging, evaluation, export and several ranks by name. The lists are this test's own.
TEST(generate_takes_the_sampling_flags_and_refuses_the_others) {
    const std::vector<std::string> gen = {"--init-from", "w.safetensors", "--generate", "20"};
    TrainConfig cfg;
    std::vector<std::string> args = gen;
    args.insert(args.end(), {"--prompt",
                             "Once",
                             "--temperature",
                             "0",
                             "--top-k",
                             "5",
                             "--tokenizer",
                             "t.bin",
                             "--seed",
                             "3",
                             "--seq",
                             "512",
                             "--precision",
                             "fp8",
                             "--fp8-margin",
                             "1",
                             "--no-gemm-autotune",
                             "--model",
                             "124m",
                             "--gelu",
                             "tanh"});
    CliResult r = parse(args, &cfg);
    if (!r.run) return testing::fail(__FILE__, __LINE__, "'" + joined(args) + "' was rejected: " + r.message);
    EXPECT_TRUE(run_mode(cfg) == RunMode::Generate && cfg.generate == 20 && cfg.batch == 1 && cfg.seq == 512);
    const std::vector<std::vector<std::string>> refused = {
        {"--batch", "4"},           {"--steps", "5"},
        {"--lr", "1e-3"},           {"--sample-every", "5"},
        {"--sample-tokens", "8"},   {"--log-dir", "x"},
        {"--val-data", "v*.bin"},   {"--val-batches", "2"},
        {"--eval-hellaswag", "h"},  {"--checkpoint-dir", "c"},
        {"--export", "x"},          {"--export-format", "hf"},
        {"--rendezvous", "mpi"},    {"--comm-timeout", "5"},
        {"--train-data", "random"}, {"--log-every", "1"},
        {"--no-cuda-graph"},        {"--recompute", "0"},
        {"--total-batch", "0"},     {"--profile"}};
    for (const std::vector<std::string>& flags : refused) {
        args = gen;
        args.insert(args.end(), flags.begin(), flags.end());
        EXPECT_USAGE_ERROR(args, flags[0],
                           {"error: " + flags[0] + ": has no effect with --generate N (it prints the text"});
    }
    EXPECT_USAGE_ERROR({"--init-from", "w", "--generate", "5", "--seq", "100"}, "--seq",
                       {"--seq 100 must be a multiple of 16 with --generate"});
    EXPECT_USAGE_ERROR({"--generate", "-1"}, "--generate", {"must be >= 0, got -1"});
    // 0 is off: a training run, where --prompt needs --sample-every
    EXPECT_USAGE_ERROR({"--generate", "0", "--prompt", "x"}, "--prompt", {"without --sample-every"});
    TrainConfig fresh;
    EXPECT_TRUE(parse({"--resume", "ck", "--generate", "5", "--adam-moments", "bf16"}, &fresh).run);
}

// --help shows each flag's real default, the switches' included (CLI11 alone prints
// "--no-cuda-graph{false}" for a flag that is on).
TEST(help_shows_real_defaults) {
    TrainConfig cfg;
    const std::string help = parse({"--help"}, &cfg).message;
    for (const char* s :
         {"--deterministic,--no-deterministic=on", "--cuda-graph,--no-cuda-graph=on", "--profile=off",
          "--print-config=off", "--export-at-end=off", "--checkpoint-required=off", "-n,--steps INT=50",
          "--log-dir DIR=logs", "--precision bf16|fp8=bf16", "Exit status: 0 done; 2 a usage error",
          "--recompute INT=0 (fp8 from 774m: 2)", "--train-data GLOB=random", "--init-from FILE|DIR"})
        EXPECT_CONTAINS(help, s);
    // the count the GEMM autotuner times (config.h), not a second literal
    EXPECT_CONTAINS(help, "time cuBLASLt's best " + std::to_string(kGemmCandidates) + " algorithms per GEMM");
    EXPECT_TRUE(help.find('{') == std::string::npos);
    // every flag's name and default end two spaces before the description column (47): the two never run
    // together
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("  -", 0) == 0 && line.size() > 47 && !(line[45] == ' ' && line[46] == ' '))
            testing::fail(__FILE__, __LINE__,
                          "a flag's name runs into its description: " + line.substr(0, 60));
    // no line wider than 120 columns: descriptions wrap in their column
    for (size_t b = 0; b < help.size();) {
        const size_t e = std::min(help.find('\n', b), help.size());
        if (e - b > 120)
            testing::fail(__FILE__, __LINE__, "a help line of " + std::to_string(e - b) + " columns");
        b = e + 1;
    }
}

// --version: not a run, exit 0, whatever else is given (the caller prints the versions).
TEST(version_is_asked_before_anything_else) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--version"}, std::vector<std::string>{"--steps", "0", "--version"}}) {
        TrainConfig cfg;
        const CliResult r = parse(args, &cfg);
        EXPECT_TRUE(!r.run && r.version && r.exit_code == 0 && r.message.empty());
    }
    TrainConfig cfg;
    EXPECT_TRUE(!parse({"--steps", "5"}, &cfg).version);
}

// --recompute's default follows the precision and the model's size: kFp8DefaultRecompute with fp8 from
// kRecomputeMinBlockParams block parameters (774m, 1.5b: FP8 below BF16's memory), 0 for smaller fp8 models
// (124m, 350m, a preset made smaller with --layers) and with bf16; a given value always wins.
TEST(recompute_default_by_precision) {
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--precision", "fp8"}, &cfg).run);  // 1.5b
    EXPECT_EQ(cfg.recompute, kFp8DefaultRecompute);
    EXPECT_TRUE(parse({"--precision", "fp8", "--model", "774m"}, &cfg).run);
    EXPECT_EQ(cfg.recompute, kFp8DefaultRecompute);
    for (const char* model : {"124m", "350m"}) {
        EXPECT_TRUE(parse({"--precision", "fp8", "--model", model}, &cfg).run);
        EXPECT_EQ(cfg.recompute, 0);
    }
    EXPECT_TRUE(parse({"--precision", "fp8", "--layers", "12"}, &cfg).run);  // 1.5b's width, 12 layers: 369M
    EXPECT_EQ(cfg.recompute, 0);
    EXPECT_TRUE(parse({"--precision", "fp8", "--model", "124m", "--recompute", "2"}, &cfg).run);
    EXPECT_EQ(cfg.recompute, 2);
    EXPECT_TRUE(parse({"--precision", "bf16"}, &cfg).run);
    EXPECT_EQ(cfg.recompute, 0);
    EXPECT_TRUE(parse({"--precision", "fp8", "--recompute", "0"}, &cfg).run);
    EXPECT_EQ(cfg.recompute, 0);
    EXPECT_TRUE(parse({"--precision", "fp8", "--recompute", "1"}, &cfg).run);
    EXPECT_EQ(cfg.recompute, 1);
}

// --resume-if-present DIR: checkpoints go to DIR (the flags that need a checkpoint folder apply); it stands
// in for --resume and so is not given with it or with --init-from.
TEST(resume_if_present_flag) {
    TrainConfig cfg;
    EXPECT_TRUE(parse({"--resume-if-present", "ck", "--checkpoint-every", "7"}, &cfg).run);
    EXPECT_TRUE(cfg.resume_if_present == "ck" && cfg.resume.empty() && checkpoint_dir_of(cfg) == "ck");
    EXPECT_USAGE_ERROR((std::vector<std::string>{"--resume-if-present", "ck", "--resume", "ck"}),
                       "--resume-if-present", {"error: --resume-if-present: not with --resume"});
    EXPECT_USAGE_ERROR(
        (std::vector<std::string>{"--resume-if-present", "ck", "--init-from", "w.safetensors"}),
        "--init-from", {"error: --init-from: not with --resume-if-present"});
}

TEST(print_config_flag) {
    TrainConfig cfg;
    CliResult r = parse({"--print-config", "--steps", "3"}, &cfg);
    EXPECT_TRUE(r.run && r.print_config);
    EXPECT_TRUE(!parse({"--steps", "3"}, &cfg).print_config);
}

TEST_MAIN()
