// Host tests for llmc/cli: defaults, every flag, presets and overrides, --help, and one-line usage errors.
#include <functional>
#include <string>
#include <vector>

#include "llmc/cli.h"
#include "llmc/config.h"
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

}  // namespace

TEST(defaults) {
    TrainConfig cfg;
    CliResult r = parse({}, &cfg);
    EXPECT_TRUE(r.run);
    EXPECT_EQ(r.exit_code, 0);
    TrainConfig def;
    EXPECT_TRUE(to_json(cfg) == to_json(def));  // every field (the JSON dump lists them all)
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

TEST(each_flag_sets_its_field) {
    struct Case {
        std::vector<std::string> args;
        std::function<bool(const TrainConfig&)> check;
    };
    // Values differ from the defaults so a flag that is ignored fails its check.
    const std::vector<Case> cases = {
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
        {{"--val-every", "25"}, [](const TrainConfig& c) { return c.val_every == 25; }},
        {{"--val-batches", "3"}, [](const TrainConfig& c) { return c.val_batches == 3; }},
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
        {{"--log-dir", "/tmp/runs/a"}, [](const TrainConfig& c) { return c.log_dir == "/tmp/runs/a"; }},
        {{"--log-every", "10"}, [](const TrainConfig& c) { return c.log_every == 10; }},
        {{"--fp8-format", "e4m3"}, [](const TrainConfig& c) { return c.fp8.format == Fp8Format::E4M3; }},
        {{"--fp8-format", "hybrid"}, [](const TrainConfig& c) { return c.fp8.format == Fp8Format::Hybrid; }},
        {{"--fp8-history", "16"}, [](const TrainConfig& c) { return c.fp8.history_len == 16; }},
        {{"--fp8-amax-algo", "most_recent"},
         [](const TrainConfig& c) { return c.fp8.amax_algo == AmaxAlgo::MostRecent; }},
        {{"--fp8-amax-algo", "max"}, [](const TrainConfig& c) { return c.fp8.amax_algo == AmaxAlgo::Max; }},
        {{"--fp8-margin", "2"}, [](const TrainConfig& c) { return c.fp8.margin == 2; }},
        {{"--layers", "6"}, [](const TrainConfig& c) { return c.model.num_layers == 6; }},
        {{"--channels", "1280", "--heads", "20"},
         [](const TrainConfig& c) { return c.model.channels == 1280 && c.model.num_heads == 20; }},
        {{"--vocab", "50320"}, [](const TrainConfig& c) { return c.model.vocab_size == 50320; }},
        {{"--max-seq", "2048", "--seq", "2048"},
         [](const TrainConfig& c) { return c.model.max_seq_len == 2048 && c.seq == 2048; }},
    };
    for (const Case& k : cases) {
        TrainConfig cfg;
        CliResult r = parse(k.args, &cfg);
        if (!r.run) {
            testing::fail(__FILE__, __LINE__, "'" + joined(k.args) + "' was rejected: " + r.message);
            continue;
        }
        if (!k.check(cfg))
            testing::fail(__FILE__, __LINE__, "'" + joined(k.args) + "' did not set its field");
    }
    // Several flags together, each still lands in its own field.
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
                                 "--fp8-margin",   "--help"})
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
        // numbers
        {{"--lr", "0"}, "--lr"},
        {{"--lr", "-1"}, "--lr"},
        {{"--warmup", "-1"}, "--warmup"},
        {{"--final-lr-frac", "1.5"}, "--final-lr-frac"},
        {{"--weight-decay", "-0.1"}, "--weight-decay"},
        {{"--grad-clip", "-1"}, "--grad-clip"},
        {{"--fp8-margin", "-1"}, "--fp8-margin"},
        {{"--seed", "-1"}, "--seed"},
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

TEST_MAIN()
