// Host tests for llmc/host/checkpoint_flags: the model and recipe flags of a configuration give back that
// configuration's model and recipe (round trip through to_json and parse_cli, default and non-default values
// of every key), and --generate / --export with --resume take them from the newest checkpoint only when none
// is given, never in training, and not from a checkpoint that does not read.
#include <sstream>
#include <string>
#include <vector>

#include "llmc/formats/checkpoint.h"
#include "llmc/host/checkpoint_flags.h"
#include "llmc/host/cli.h"
#include "llmc/host/config.h"
#include "test/temp_dir.h"
#include "test/testing.h"

namespace {

using testing::TempDir;

// parse_cli of `args` (argv[0] added); fails the test on a usage error.
TrainConfig parsed(const std::vector<std::string>& args) {
    std::vector<const char*> argv = {"train_gpt"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    TrainConfig cfg;
    const CliResult r = parse_cli((int)argv.size(), argv.data(), &cfg);
    if (!r.run) testing::fail(__FILE__, __LINE__, "parse_cli: " + r.message);
    return cfg;
}

// What a checkpoint must match to resume: the shape and the recipe.
void expect_same_model_and_recipe(const TrainConfig& a, const TrainConfig& b) {
    EXPECT_EQ(a.model.num_layers, b.model.num_layers);
    EXPECT_EQ(a.model.channels, b.model.channels);
    EXPECT_EQ(a.model.num_heads, b.model.num_heads);
    EXPECT_EQ(a.model.vocab_size, b.model.vocab_size);
    EXPECT_EQ(a.model.max_seq_len, b.model.max_seq_len);
    EXPECT_EQ(a.model.gelu_tanh, b.model.gelu_tanh);
    EXPECT_TRUE(a.precision == b.precision);
    EXPECT_EQ(a.adam_bf16_moments, b.adam_bf16_moments);
    if (a.precision == Precision::FP8) {
        EXPECT_TRUE(a.fp8.format == b.fp8.format);
        EXPECT_EQ(a.fp8.history_len, b.fp8.history_len);
        EXPECT_TRUE(a.fp8.amax_algo == b.fp8.amax_algo);
        EXPECT_EQ(a.fp8.margin, b.fp8.margin);
        EXPECT_EQ(a.fp8.lm_head, b.fp8.lm_head);
    }
}

// A checkpoint in `dir` whose configuration is that of `args`' run (one small tensor: only the header
// matters here).
void write_run_checkpoint(const std::string& dir, const std::vector<std::string>& args, int64_t step) {
    const TrainConfig cfg = parsed(args);
    CheckpointMeta m;
    m.step = step;
    m.model = "whatever the run's signature is";
    m.recipe = "and its recipe";
    m.config = to_json(cfg, 0);
    std::vector<float> x(4, 1.0f);
    write_checkpoint(dir, m, {{"master.w", "F32", {4}, x.data(), x.size() * 4}}, 5);
}

CliResult adopting(const std::vector<std::string>& args, TrainConfig* cfg,
                   std::vector<std::string>* adopted) {
    std::vector<const char*> argv = {"train_gpt"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    return parse_cli_adopting_checkpoint((int)argv.size(), argv.data(), cfg, adopted);
}

// Whitespace-separated words.
std::vector<std::string> words(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

// A run whose every model and recipe key differs from the default.
const std::vector<std::string> kFp8Run = words(
    "--model 124m --layers 2 --channels 128 --heads 4 --vocab 256 --max-seq 64 --seq 64 --gelu tanh "
    "--precision fp8 "
    "--fp8-format e4m3 --fp8-history 16 --fp8-amax-algo most_recent --fp8-margin 1 --no-fp8-lm-head "
    "--adam-moments bf16");

}  // namespace

TEST(flags_give_back_the_model_and_recipe) {
    for (const std::vector<std::string>& run :
         {std::vector<std::string>{}, std::vector<std::string>{"--model", "124m", "--precision", "fp8"},
          std::vector<std::string>{"--model", "350m", "--precision", "bf16", "--adam-moments", "bf16"},
          kFp8Run}) {
        const TrainConfig cfg = parsed(run);
        std::vector<std::string> flags = model_recipe_flags(to_json(cfg, 0));
        bool has_fp8_flag = false;
        for (const std::string& f : flags)
            has_fp8_flag |= f.rfind("--fp8", 0) == 0 || f.rfind("--no-fp8", 0) == 0;
        flags.insert(flags.end(), {"--seq", std::to_string(cfg.seq)});  // within its --max-seq
        expect_same_model_and_recipe(cfg, parsed(flags));
        EXPECT_EQ(has_fp8_flag, cfg.precision == Precision::FP8);  // bf16 would refuse an FP8 flag
    }
}

TEST(flags_of_a_broken_configuration_throw) {
    EXPECT_CONTAINS(testing::error_of([] { model_recipe_flags("not json"); }), "not JSON");
    EXPECT_CONTAINS(testing::error_of([] { model_recipe_flags("{\"precision\": \"bf16\"}"); }), "no 'model'");
    const std::string bad = "{\"precision\": \"bf16\", \"model\": \"124m\", \"layers\": \"twelve\"}";
    EXPECT_CONTAINS(testing::error_of([&] { model_recipe_flags(bad); }), "unexpected 'layers'");
}

TEST(generate_and_export_adopt_the_newest_checkpoint) {
    TempDir dir("host_checkpoint_flags");
    write_run_checkpoint(dir.path, {"--model", "124m"}, 3);  // older: bf16 124m
    write_run_checkpoint(dir.path, kFp8Run, 7);              // newest: the fp8 run
    for (const std::vector<std::string>& mode :
         {std::vector<std::string>{"--generate", "5"},
          std::vector<std::string>{"--export", dir.file("w.safetensors")}}) {
        std::vector<std::string> args = mode;
        args.insert(args.end(), {"--resume", dir.path});
        TrainConfig cfg;
        std::vector<std::string> adopted;
        const CliResult r = adopting(args, &cfg, &adopted);
        EXPECT_TRUE(r.run);
        EXPECT_TRUE(!adopted.empty());
        expect_same_model_and_recipe(cfg, parsed(kFp8Run));
        EXPECT_TRUE(cfg.resume == dir.path);  // the user's own flags still there
    }
}

TEST(nothing_adopted_when_a_flag_is_given_in_training_or_without_a_checkpoint) {
    TempDir dir("host_checkpoint_flags");
    write_run_checkpoint(dir.path, kFp8Run, 7);
    TempDir empty("host_checkpoint_flags_empty");
    const std::vector<std::vector<std::string>> cases = {
        {"--generate", "5", "--resume", dir.path, "--precision", "bf16"},  // the user chose
        {"--generate", "5", "--resume", dir.path, "--gelu", "tanh"},
        {"--resume", dir.path},                                  // training: its flags are the run's
        {"--generate", "5", "--resume", empty.path},             // no checkpoint: the resume's checks say so
        {"--generate", "5", "--init-from", dir.file("x.bin")}};  // no --resume
    for (const std::vector<std::string>& args : cases) {
        TrainConfig cfg;
        std::vector<std::string> adopted = {"stale"};
        const CliResult r = adopting(args, &cfg, &adopted);
        EXPECT_TRUE(r.run);
        EXPECT_TRUE(adopted.empty());
    }
}

TEST_MAIN()
