// Host tests for llmc/host/config: parameter and FLOP counts, the learning-rate schedule, the JSON dump.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "llmc/formats/json.h"
#include "llmc/host/config.h"
#include "llmc/model/layout.h"
#include "test/testing.h"

namespace {

// Parameter count from the tensor shapes, written out independently of llmc/model/layout.h.
size_t count_from_shapes(size_t L, size_t C, size_t V, size_t maxT) {
    std::vector<std::vector<size_t>> shapes = {
        {V, C},         // wte
        {maxT, C},      // wpe
        {L, C},         // ln1 weight
        {L, C},         // ln1 bias
        {L, 3 * C, C},  // qkv weight
        {L, 3 * C},     // qkv bias
        {L, C, C},      // attention projection weight
        {L, C},         // attention projection bias
        {L, C},         // ln2 weight
        {L, C},         // ln2 bias
        {L, 4 * C, C},  // fc weight
        {L, 4 * C},     // fc bias
        {L, C, 4 * C},  // fc projection weight
        {L, C},         // fc projection bias
        {C},            // final ln weight
        {C},            // final ln bias
    };
    size_t total = 0;
    for (const auto& s : shapes) {
        size_t n = 1;
        for (size_t d : s) n *= d;
        total += n;
    }
    return total;
}

// The number that follows "\"key\": " in a JSON dump (NaN if the key is absent).
double json_number(const std::string& json, const std::string& key) {
    std::string k = "\"" + key + "\": ";
    size_t p = json.find(k);
    if (p == std::string::npos) return NAN;
    return std::strtod(json.c_str() + p + k.size(), nullptr);
}

}  // namespace

TEST(num_parameters_presets) {
    ModelConfig m;
    EXPECT_TRUE(model_preset("1.5b", &m));
    EXPECT_EQ(num_parameters(m), (size_t)1557686400);  // the spec's count for GPT-2 1.5B with V = 50304
    ModelConfig alias;                                 // llm.c's name for it
    EXPECT_TRUE(model_preset("1558m", &alias));
    EXPECT_TRUE(alias.num_layers == m.num_layers && alias.channels == m.channels &&
                alias.num_heads == m.num_heads);
    EXPECT_TRUE(!model_preset("1558", &alias) && !model_preset("1.5B", &alias));
    EXPECT_EQ(num_parameters(m), count_from_shapes(48, 1600, 50304, 1024));
    EXPECT_TRUE(model_preset("124m", &m));
    EXPECT_EQ(num_parameters(m), count_from_shapes(12, 768, 50304, 1024));
    EXPECT_TRUE(model_preset("350m", &m));
    EXPECT_EQ(num_parameters(m), count_from_shapes(24, 1024, 50304, 1024));
    EXPECT_TRUE(model_preset("774m", &m));
    EXPECT_EQ(num_parameters(m), count_from_shapes(36, 1280, 50304, 1024));
    // A small custom shape, so a formula that only matches the presets by accident fails.
    m.num_layers = 3;
    m.channels = 48;
    m.num_heads = 6;
    m.vocab_size = 272;
    m.max_seq_len = 40;
    EXPECT_EQ(num_parameters(m), count_from_shapes(3, 48, 272, 40));
    EXPECT_TRUE(!model_preset("2b", &m));
}

TEST(flops_per_token_formula) {
    for (const char* name : {"124m", "1.5b"}) {
        ModelConfig m;
        EXPECT_TRUE(model_preset(name, &m));
        double N = (double)count_from_shapes(m.num_layers, m.channels, m.vocab_size, m.max_seq_len);
        for (int T : {64, 1024}) {
            double expect = 6.0 * N + 12.0 * m.num_layers * T * m.channels;
            EXPECT_NEAR(flops_per_token(m, T), expect, 1e-9 * expect);
        }
    }
}

TEST(seed_script_flops_overstate) {
    ModelConfig m;
    EXPECT_TRUE(model_preset("1.5b", &m));
    double N = (double)num_parameters(m);
    double seed = seed_script_flops_per_step(m);
    // The 6N part exactly: 6 * N * 16 * 1024, i.e. 16/12 = 4/3 of 6N over the real 12 x 1024 tokens.
    EXPECT_EQ(seed, 6.0 * N * 16 * 1024);
    EXPECT_NEAR(seed / (6.0 * N * 12 * 1024), 4.0 / 3.0, 1e-12);
    // Against the honest count (which adds the attention term 12 L T C) the ratio is 4/3 shrunk by
    // 6N / (6N + 12 L T C): about 1.21 for 1.5B at T = 1024, i.e. between 1 and 4/3.
    double honest_step = flops_per_token(m, 1024) * 12 * 1024;
    double ratio = seed / honest_step;
    double attn = 12.0 * m.num_layers * 1024 * m.channels;
    EXPECT_NEAR(ratio, 4.0 / 3.0 * 6.0 * N / (6.0 * N + attn), 1e-12);
    EXPECT_TRUE(ratio > 1.0 && ratio < 4.0 / 3.0);
    EXPECT_NEAR(ratio, 4.0 / 3.0, 4.0 / 3.0 * attn / (6.0 * N + attn) + 1e-12);
}

TEST(learning_rate_warmup_is_linear) {
    TrainConfig c;
    c.lr = 1e-3f;
    c.warmup = 10;
    c.steps = 100;
    for (LrSchedule s : {LrSchedule::Cosine, LrSchedule::Constant}) {
        c.schedule = s;
        EXPECT_NEAR(learning_rate(c, 0), c.lr / c.warmup, 1e-9);  // starts at lr / warmup
        for (int step = 0; step < c.warmup; step++)
            EXPECT_NEAR(learning_rate(c, step), (double)c.lr * (step + 1) / c.warmup, 1e-9);
        EXPECT_NEAR(learning_rate(c, c.warmup - 1), c.lr, 1e-9);  // reaches lr on the last warmup step
    }
    c.warmup = 0;
    EXPECT_NEAR(learning_rate(c, 0), c.lr, 1e-9);  // no warmup: lr from step 0
}

TEST(learning_rate_cosine) {
    TrainConfig c;
    c.lr = 6e-4f;
    c.final_lr_frac = 0.1f;
    c.schedule = LrSchedule::Cosine;
    for (int warmup : {0, 1, 7}) {
        for (int steps : {warmup + 2, 50, 1000}) {
            c.warmup = warmup;
            c.steps = steps;
            EXPECT_NEAR(learning_rate(c, warmup), c.lr, 1e-9);  // the first step after warmup is at lr
            EXPECT_NEAR(learning_rate(c, steps - 1), (double)c.lr * c.final_lr_frac, 1e-9);  // the last step
            float prev = learning_rate(c, warmup);
            for (int step = warmup + 1; step < steps; step++) {
                float cur = learning_rate(c, step);
                if (cur > prev) {
                    testing::fail(__FILE__, __LINE__, "lr increases at step " + std::to_string(step));
                    break;
                }
                prev = cur;
            }
            // Halfway through the decay the cosine is at the midpoint of lr and the final lr.
            if ((steps - warmup - 1) % 2 == 0 && steps - warmup > 2)
                EXPECT_NEAR(learning_rate(c, warmup + (steps - warmup - 1) / 2),
                            0.5 * (c.lr + (double)c.lr * c.final_lr_frac), 1e-9);
        }
    }
}

TEST(learning_rate_constant) {
    TrainConfig c;
    c.lr = 3e-4f;
    c.steps = 40;
    c.schedule = LrSchedule::Constant;
    c.warmup = 0;
    for (int step = 0; step < c.steps; step++) EXPECT_EQ(learning_rate(c, step), c.lr);
    c.warmup = 5;
    for (int step = c.warmup; step < c.steps; step++) EXPECT_EQ(learning_rate(c, step), c.lr);
}

TEST(to_json_has_every_field) {
    TrainConfig c;
    EXPECT_TRUE(model_preset("350m", &c.model));
    c.model_name = "350m";
    c.model.gelu_tanh = true;
    c.precision = Precision::FP8;
    c.fp8.format = Fp8Format::E4M3;
    c.fp8.history_len = 17;
    c.fp8.amax_algo = AmaxAlgo::MostRecent;
    c.fp8.margin = 3;
    c.batch = 7;
    c.seq = 96;
    c.steps = 123;
    c.train_data = "data/t_*.bin";
    c.val_data = "data/v_*.bin";
    c.val_every = 11;
    c.val_batches = 13;
    c.lr = 2.5e-4f;
    c.warmup = 19;
    c.schedule = LrSchedule::Constant;
    c.final_lr_frac = 0.05f;
    c.weight_decay = 0.01f;
    c.grad_clip = 0.5f;
    c.beta1 = 0.85f;
    c.beta2 = 0.97f;
    c.adam_eps = 1e-6f;
    c.seed = 987654321012ull;
    c.log_dir = "runs/x";
    c.log_every = 29;
    c.eval_hellaswag = "hs/val.bin";
    c.eval_every = 31;
    c.eval_hellaswag_dump = "hs/dump.txt";
    std::string j = to_json(c, num_parameters(c.model));
    for (const char* s :
         {"\"model\": \"350m\"", "\"gelu\": \"tanh\"", "\"precision\": \"fp8\"", "\"fp8_format\": \"e4m3\"",
          "\"fp8_amax_algo\": \"most_recent\"", "\"train_data\": \"data/t_*.bin\"",
          "\"val_data\": \"data/v_*.bin\"", "\"schedule\": \"constant\"", "\"log_dir\": \"runs/x\"",
          "\"eval_hellaswag\": \"hs/val.bin\"", "\"eval_hellaswag_dump\": \"hs/dump.txt\""})
        EXPECT_CONTAINS(j, s);
    struct Num {
        const char* key;
        double value;
    };
    for (const Num& n : std::vector<Num>{
             {"layers", 24},      {"channels", 1024},       {"heads", 16},
             {"vocab", 50304},    {"max_seq", 1024},        {"parameters", (double)num_parameters(c.model)},
             {"fp8_history", 17}, {"fp8_margin", 3},        {"batch", 7},
             {"seq", 96},         {"steps", 123},           {"val_every", 11},
             {"val_batches", 13}, {"eval_every", 31},       {"lr", 2.5e-4f},
             {"warmup", 19},      {"final_lr_frac", 0.05f}, {"weight_decay", 0.01f},
             {"grad_clip", 0.5f}, {"beta1", 0.85f},         {"beta2", 0.97f},
             {"adam_eps", 1e-6f}, {"seed", 987654321012.0}, {"log_every", 29}}) {
        double v = json_number(j, n.key);
        // Floats are written as the shortest decimal that reads back as the same float (0.00025, not the
        // double 0.000249999993684...); integers exactly.
        if (!((float)v == (float)n.value && (v == std::round(v)) == (n.value == std::round(n.value))))
            testing::fail(__FILE__, __LINE__,
                          std::string("json field ") + n.key + " = " + std::to_string(v) + ", expected " +
                              std::to_string(n.value));
    }
    EXPECT_CONTAINS(j, "\"lr\": 0.00025,\n");
    // Strings are quoted by json.h (control characters too); the whole text parses, one member per line.
    c.log_dir = "a\"b\\c";
    c.prompt = "line\nnext\t\x01";
    j = to_json(c, num_parameters(c.model));
    EXPECT_CONTAINS(j, "\"log_dir\": \"a\\\"b\\\\c\"");
    EXPECT_CONTAINS(j, "\"prompt\": \"line\\nnext\\t\\u0001\"");
    const json::Value v = json::parse(j);
    EXPECT_TRUE(v.find("prompt")->as_string() == c.prompt);
    EXPECT_EQ(v.as_object().size(), (size_t)std::count(j.begin(), j.end(), '\n') - 2);
    // A seed past int64 (json.h's integers) is its decimal string; non-finite numbers are null.
    c.seed = 18446744073709551615ull;
    c.comm_timeout = INFINITY;
    j = to_json(c, num_parameters(c.model));
    EXPECT_CONTAINS(j, "\"seed\": \"18446744073709551615\"");
    EXPECT_CONTAINS(j, "\"comm_timeout\": null");
}

TEST(run_summary_for_people) {
    TrainConfig c;
    EXPECT_TRUE(model_preset("124m", &c.model));
    c.model_name = "124m";
    c.precision = Precision::FP8;
    c.batch = 8;
    c.total_batch = 8 * 1024 * 4 * 2;
    c.checkpoint_dir = "ck";
    c.checkpoint_every = 100;
    const std::string s = run_summary(c, num_parameters(c.model), 2, 4, "torchrun");
    for (const char* line :
         {"train_gpt: GPT-2 124m (12 layers, 768 channels, 12 heads, vocab 50304, max seq 1024, GELU erf), "
          "124,475,904 parameters\n",
          "  precision    fp8 hybrid (E4M3 forward, E5M2 gradients), delayed scaling: amax max over "
          "1024 steps, margin 0, LM head in fp8\n",
          "  batch        8 x 1024 tokens x 4 micro-steps x 2 GPUs (torchrun) = 65,536 tokens per step; "
          "50 steps, lr 0.0006 cosine to 6e-05\n",
          "  data         random tokens (seed 3985)\n", "  logs         logs/config.json, logs/train.jsonl\n",
          "  checkpoints  ck/ every 100 steps and at the end, the newest 2 kept\n"})
        EXPECT_CONTAINS(s, line);
    // how the GEMMs are chosen, and where the choices go (a fresh GPU's first step is the one that tunes)
    // (the count is the one the GEMM autotuner asks cuBLASLt for, not a second literal)
    const std::string best = "the heuristic's " + std::to_string(kGemmCandidates) + " best timed";
    EXPECT_CONTAINS(s, "  GEMMs        cuBLASLt, " + best +
                           ", then variants with bitwise the same output (--gemm-variants) in the first step "
                           "that runs a shape, stored in ");
    TrainConfig g = c;
    g.gemm_cache = "g.tsv";
    g.gemm_variants = false;
    EXPECT_CONTAINS(
        run_summary(g, num_parameters(g.model), 1, 1, "single"),
        best + " in the first step that runs a shape, stored in g.tsv for later runs on this GPU\n");
    g.gemm_cache = "none";
    EXPECT_CONTAINS(run_summary(g, num_parameters(g.model), 1, 1, "single"), "runs a shape, not stored\n");
    g.gemm_autotune = false;
    EXPECT_CONTAINS(run_summary(g, num_parameters(g.model), 1, 1, "single"),
                    "  GEMMs        cuBLASLt, the heuristic's first algorithm (no autotuning)\n");
    c.ranks_per_gpu = 2;  // ranks sharing a GPU are counted as ranks
    EXPECT_CONTAINS(run_summary(c, num_parameters(c.model), 2, 4, "torchrun"),
                    "x 4 micro-steps x 2 ranks (torchrun, 2 per GPU) = 65,536 tokens per step");
    c.ranks_per_gpu = 1;
    // every line but the first is indented; an overridden preset is not called by the preset's name
    EXPECT_TRUE(s.find("\ntrain_gpt") == std::string::npos && s.find("\n  ") != std::string::npos);
    c.model.num_layers = 2;
    c.export_path = "w.safetensors";
    c.resume = "ck";
    EXPECT_CONTAINS(run_summary(c, num_parameters(c.model), 1, 1, "single"),
                    "train_gpt: GPT-2 124m with overrides (2 layers");
    EXPECT_CONTAINS(run_summary(c, num_parameters(c.model), 1, 1, "single"),
                    "x 1 GPU = 8,192 tokens per step");
    EXPECT_CONTAINS(run_summary(c, num_parameters(c.model), 1, 1, "single"),
                    "  export       w.safetensors (seed layout) and exit, no training\n");
    EXPECT_TRUE(s.find("  eval ") == std::string::npos);
    c.eval_hellaswag = "hs.bin";
    EXPECT_CONTAINS(run_summary(c, num_parameters(c.model), 1, 1, "single"),
                    "  eval         HellaSwag 'hs.bin' after the last step\n");
    c.eval_every = 250;
    c.eval_hellaswag_dump = "d.txt";
    EXPECT_CONTAINS(run_summary(c, num_parameters(c.model), 1, 1, "single"),
                    "  eval         HellaSwag 'hs.bin' every 250 steps and after the last step, per-example "
                    "results to d.txt\n");
}

TEST(validate_range_messages) {
    TrainConfig ok;
    EXPECT_TRUE(validate(ok).empty());
    struct Case {
        void (*set)(TrainConfig&);
        const char* text;
    };
    const std::vector<Case> cases = {
        {[](TrainConfig& c) { c.steps = -1; }, "--steps: must be >= 1, got -1"},
        {[](TrainConfig& c) { c.batch = -5; }, "--batch: must be >= 1, got -5"},
        {[](TrainConfig& c) { c.warmup = -1; }, "--warmup: must be >= 0, got -1"},
        {[](TrainConfig& c) { c.warmup = 51; },
         "--warmup 51 exceeds --steps 50: the learning rate would never reach"},
        {[](TrainConfig& c) { c.lr = -1; }, "--lr: must be a finite number > 0, got -1"},
        {[](TrainConfig& c) { c.lr = INFINITY; }, "--lr: must be a finite number > 0"},
        {[](TrainConfig& c) { c.beta1 = 1; }, "--beta1: must be in [0, 1), got 1"},
        {[](TrainConfig& c) { c.beta2 = -0.5f; }, "--beta2: must be in [0, 1), got -0.5"},
        {[](TrainConfig& c) { c.adam_eps = 0; }, "adam_eps: must be a finite number > 0"},
        {[](TrainConfig& c) { c.fp8.margin = 65; }, "--fp8-margin: must be <= 64, got 65"},
        {[](TrainConfig& c) { c.fp8.history_len = INT_MAX; }, "--fp8-history: must be <= 2147483584"},
        {[](TrainConfig& c) { c.fp8_health_every = 0; }, "--fp8-health-every: must be >= 1, got 0"},
        {[](TrainConfig& c) { c.log_dir = ""; }, "--log-dir: must not be empty"},
        {[](TrainConfig& c) { c.model.channels = 8208, c.model.num_heads = 513; }, "exceeds 8192"},
        {[](TrainConfig& c) {
             c.precision = Precision::FP8;
             c.model.num_layers = INT_MAX / 12 + 1;
         },
         "--layers: must be <= 178956970 with --precision fp8"},
    };
    for (const Case& k : cases) {
        TrainConfig c;
        k.set(c);
        std::string msg = validate(c);
        if (msg.find(k.text) == std::string::npos)
            testing::fail(__FILE__, __LINE__,
                          "expected \"" + std::string(k.text) + "\", got \"" + msg + "\"");
        if (msg.find('\n') != std::string::npos) testing::fail(__FILE__, __LINE__, "not one line: " + msg);
    }
}

TEST(token_limits_match_the_kernels) {
    // Written out independently: N = B*T <= 2^30 (int rows + one split of slack), N*4C <= 2048 * (2^31-1)
    // (GELU grid.x), N*3C and N*H <= 2^31-1 (cuDNN attention tensors), FP8 also N <= 65535 * 128.
    const int64_t imax = INT_MAX;
    for (const char* name : {"124m", "350m", "774m", "1.5b"}) {
        for (Precision p : {Precision::BF16, Precision::FP8}) {
            TrainConfig c;
            EXPECT_TRUE(model_preset(name, &c.model));
            c.precision = p;
            const int64_t C = c.model.channels, H = c.model.num_heads;
            int64_t n = std::min({int64_t(1) << 30, 2048 * imax / (4 * C), imax / (3 * C), imax / H});
            if (p == Precision::FP8) n = std::min<int64_t>(n, 65535 * 128);
            EXPECT_EQ(max_tokens_per_step(c), n);
            for (int T : {1024, 1000, 7}) {
                c.seq = T;
                const int64_t step = T == 1024 ? 1 : T == 1000 ? 2 : 16;  // B*T must be a multiple of 16
                const int64_t b = n / T / step * step;
                EXPECT_EQ((int64_t)max_batch_for(c), b);
                c.batch = (int)b;
                if (!validate(c).empty())
                    testing::fail(__FILE__, __LINE__, "max batch rejected: " + validate(c));
                c.batch = (int)(b + step);
                std::string msg = validate(c);
                EXPECT_CONTAINS(msg, "tokens per step exceeds the kernels' index limits");
                EXPECT_CONTAINS(msg, "use --batch <= " + std::to_string(b));
            }
        }
    }
}

TEST(token_limits_use_64_bit_arithmetic) {
    // B*T near 2^62: the check must neither overflow nor wrap into an accepted value.
    TrainConfig c;
    c.batch = INT_MAX;
    c.model.max_seq_len = INT_MAX;
    c.seq = INT_MAX;
    std::string msg = validate(c);
    EXPECT_CONTAINS(msg, "--batch 2147483647 x --seq 2147483647 = 4611686014132420609 tokens per step");
    EXPECT_CONTAINS(msg, "use a smaller --batch and --seq");
    c.seq = 2147483632;  // B = 1 still overflows at this T: the suggestion is a --seq
    c.batch = 1;
    msg = validate(c);
    EXPECT_CONTAINS(msg, "use --seq <= ");
    // B*T*V beyond 2^31 is fine: the logits are indexed in 64-bit (llm.c's 124M at B = 64).
    TrainConfig big_logits;
    EXPECT_TRUE(model_preset("124m", &big_logits.model));
    big_logits.batch = 64;
    EXPECT_TRUE((int64_t)big_logits.batch * big_logits.seq * big_logits.model.vocab_size > INT_MAX);
    EXPECT_TRUE(validate(big_logits).empty());
}

// --total-batch: micro-steps = total / (B * T * GPUs), an error naming the product when it does not divide.
TEST(grad_accum_steps_divides_total_batch) {
    TrainConfig c;
    c.batch = 6;
    c.seq = 1024;
    int steps = 0;
    EXPECT_TRUE(grad_accum_steps(c, 1, &steps).empty());
    EXPECT_EQ(steps, 1);  // no --total-batch: one micro-step
    for (int world : {1, 2, 4, 8}) {
        for (int micro : {1, 2, 5, 64}) {
            c.total_batch = (int64_t)6 * 1024 * world * micro;
            EXPECT_TRUE(grad_accum_steps(c, world, &steps).empty());
            EXPECT_EQ(steps, micro);
        }
    }
    c.total_batch = 524288;  // GPT-2's 0.5M tokens: 6 x 1024 x 3 GPUs does not divide it
    const std::string e = grad_accum_steps(c, 3, &steps);
    EXPECT_CONTAINS(e, "--total-batch 524288");
    EXPECT_CONTAINS(e, "18432");
    c.total_batch = -1;
    EXPECT_CONTAINS(validate(c), "--total-batch");
    c.total_batch = 0;
    c.comm_timeout = 0;
    EXPECT_CONTAINS(validate(c), "--comm-timeout");
    c.comm_timeout = 30;
    c.ranks_per_gpu = 0;
    EXPECT_CONTAINS(validate(c), "--ranks-per-gpu: must be >= 1, got 0");
    c.ranks_per_gpu = 1;
    c.rendezvous = "udp://x:1";
    EXPECT_CONTAINS(validate(c), "udp://x:1");
}

// --recompute: 0, 1 or 2, and 1 or 2 only with fp8 (bf16 has nothing to recompute).
// --resume-if-present DIR is --resume DIR once DIR has a checkpoint; without one the run starts fresh, writes
// its checkpoints there and says so in its summary.
TEST(resume_if_present_resolution) {
    TrainConfig c;
    EXPECT_TRUE(model_preset("124m", &c.model));
    c.model_name = "124m";
    resolve_resume_if_present(&c, true);  // not given: nothing changes
    EXPECT_TRUE(c.resume.empty());
    c.resume_if_present = "ck";
    EXPECT_TRUE(checkpoint_dir_of(c) == "ck");
    resolve_resume_if_present(&c, false);
    EXPECT_TRUE(c.resume.empty());
    std::string s = run_summary(c, num_parameters(c.model), 1, 1, "single");
    EXPECT_CONTAINS(s, "  resume       none: no checkpoint in ck yet, starting fresh\n");
    EXPECT_CONTAINS(s, "logs/train.jsonl\n");  // a fresh run starts its log anew
    EXPECT_CONTAINS(to_json(c, 0), "\"resume_if_present\": \"ck\"");
    resolve_resume_if_present(&c, true);
    EXPECT_TRUE(c.resume == "ck" && checkpoint_dir_of(c) == "ck");
    s = run_summary(c, num_parameters(c.model), 1, 1, "single");
    EXPECT_CONTAINS(s, "  resume       the newest valid checkpoint in ck\n");
    EXPECT_CONTAINS(s, "logs/train.jsonl (appended)\n");
    EXPECT_TRUE(s.find("starting fresh") == std::string::npos);
}

TEST(recompute_levels) {
    TrainConfig c;
    c.precision = Precision::FP8;
    for (int level : {0, 1, 2}) {
        c.recompute = level;
        EXPECT_TRUE(validate(c).empty());
    }
    for (int level : {-1, 3}) {
        c.recompute = level;
        EXPECT_CONTAINS(validate(c), "--recompute");
    }
    c.precision = Precision::BF16;
    for (int level : {1, 2}) {
        c.recompute = level;
        EXPECT_CONTAINS(validate(c), "applies to --precision fp8");
    }
}

TEST_MAIN()
