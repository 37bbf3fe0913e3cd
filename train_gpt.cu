// train_gpt: trains a GPT-2-family model on one Hopper GPU in BF16 or FP8 (per-tensor delayed scaling).
// The driver only: flags -> config -> data -> model -> training loop -> logs. Components live in llmc/.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "llmc/check.h"
#include "llmc/checkpoint.h"
#include "llmc/cli.h"
#include "llmc/config.h"
#include "llmc/context.h"
#include "llmc/dataloader.h"
#include "llmc/generate.h"
#include "llmc/gpt.h"
#include "llmc/logger.h"
#include "llmc/phase_timer.h"
#include "llmc/tokenizer.h"
#include "llmc/train_state.h"
#include "llmc/weights_io.h"

namespace {

constexpr double kBf16PeakTflops = 989.0;  // H100/H200 SXM dense BF16: the MFU denominator in both precisions
constexpr double kFp8PeakTflops = 1979.0;  // dense FP8, shown beside it

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Runs 3 extra steps with per-phase GPU timing and prints the average breakdown (not part of the median).
void profile_steps(const TrainConfig& cfg, GptModel* model, TokenSource* data, std::vector<int>& inputs,
                   std::vector<int>& targets, RunLogger* logger) {
    const int steps = 3;
    std::vector<double> total(kNumPhases, 0.0);
    model->set_profiling(true);
    for (int i = 0; i < steps; i++) {
        data->next_batch(inputs.data(), targets.data());
        model->forward(inputs.data(), targets.data());
        model->backward();
        model->update({learning_rate(cfg, cfg.steps - 1), cfg.beta1, cfg.beta2, cfg.adam_eps,
                       cfg.weight_decay, cfg.grad_clip},
                      cfg.steps + i + 1);
        std::vector<double> ms = model->collect_phase_ms();
        for (int p = 0; p < kNumPhases; p++) total[p] += ms[p] / steps;
    }
    model->set_profiling(false);
    double sum = 0;
    for (double t : total) sum += t;
    printf("profile (%s, mean of %d steps, GPU time between phase marks):", to_string(cfg.precision), steps);
    std::vector<std::pair<const char*, double>> fields;
    for (int p = 0; p < kNumPhases; p++) {
        printf(" %s %.1f ms (%.0f%%) |", phase_name(p), total[p], 100 * total[p] / sum);
        fields.push_back({phase_name(p), total[p]});
    }
    printf(" total %.1f ms\n", sum);
    fields.push_back({"total", sum});
    logger->record("profile", fields);
}

// SIGINT/SIGTERM: the first asks the loop to finish its step, checkpoint and exit 0; a second exits at once.
// (A signal handler can only talk to the loop through a flag of static storage.)
volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) {
    if (g_stop_signal) _exit(128 + sig);
    g_stop_signal = sig;
}
void install_stop_signal_handlers() {
    struct sigaction sa = {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}
int stop_signal() { return g_stop_signal; }

// Test-only: TRAIN_GPT_TEST_POISON_STEP=k fills step k's gradients with NaN (fault-handling tests).
int test_poison_step() {
    const char* v = getenv("TRAIN_GPT_TEST_POISON_STEP");
    return v ? atoi(v) : -1;
}

// Where checkpoints go: --checkpoint-dir, else the --resume directory, else nowhere.
std::string checkpoint_dir(const TrainConfig& cfg) {
    return cfg.checkpoint_dir.empty() ? cfg.resume : cfg.checkpoint_dir;
}

// One training step's line on stdout (every --log-every steps and the last), its FP8 health (when measured)
// and its train.jsonl record.
void log_step(int step, const TrainConfig& cfg, float loss, float lr, float grad_norm, double ms,
              double flops_per_step, size_t peak_bytes, const Fp8Health* health, RunLogger* logger) {
    const bool last = step == cfg.steps - 1;
    const double tokens_per_s = (double)cfg.batch * cfg.seq / (ms / 1e3);
    const double tflops = flops_per_step / (ms / 1e3) / 1e12;
    const double peak_gb = peak_bytes / 1e9;
    if (step % cfg.log_every == 0 || last) {
        printf(
            "step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.2f ms | %.0f tok/s | %.1f TFLOP/s | MFU "
            "%.1f%% | "
            "peak %.1f GB\n",
            step, cfg.steps, loss, lr, grad_norm, ms, tokens_per_s, tflops, 100 * tflops / kBf16PeakTflops,
            peak_gb);
        fflush(stdout);
    }
    if (health) {
        printf(
            "step %5d | fp8 health: scales [%.3g, %.3g] | %d/%d slots saturated | %d fell back (amax "
            "0/inf/nan)\n",
            step, health->min_scale, health->max_scale, health->saturated, health->slots, health->fell_back);
        logger->record("fp8", {{"step", step},
                               {"min_scale", health->min_scale},
                               {"max_scale", health->max_scale},
                               {"saturated", health->saturated},
                               {"fell_back", health->fell_back}});
    }
    logger->record("train", {{"step", step},
                             {"loss", loss},
                             {"lr", lr},
                             {"grad_norm", grad_norm},
                             {"step_ms", ms},
                             {"tokens_per_s", tokens_per_s},
                             {"tflops", tflops},
                             {"mfu", tflops / kBf16PeakTflops},
                             {"peak_mem_gb", peak_gb}});
}

// The tokenizer for text samples: --tokenizer, else tokenizer.bin next to the training shards, else bytes
// when the vocabulary is 256. Exits with a one-line error when samples are asked for and none applies.
Tokenizer sample_tokenizer(const TrainConfig& cfg) {
    std::string path = cfg.tokenizer;
    if (path.empty() && cfg.train_data != "random") {
        const size_t slash = cfg.train_data.rfind('/');
        const std::string next_to_shards =
            (slash == std::string::npos ? std::string(".") : cfg.train_data.substr(0, slash)) +
            "/tokenizer.bin";
        if (access(next_to_shards.c_str(), R_OK) == 0) path = next_to_shards;
    }
    if (!path.empty()) return Tokenizer::load(path);
    if (cfg.model.vocab_size == 256) return Tokenizer::bytes();
    fatal(
        "--sample-every: no tokenizer: pass --tokenizer FILE (scripts/prepare_data.py writes tokenizer.bin "
        "next to the shards)");
}

int train(const TrainConfig& cfg) {
    const ModelConfig& m = cfg.model;
    const int B = cfg.batch, T = cfg.seq;
    printf("train_gpt: resolved configuration\n%s", to_json(cfg).c_str());

    // Data first: a bad shard is reported (naming the file) before any GPU work.
    std::unique_ptr<TokenSource> train_data = make_token_source(cfg.train_data, B, T, m.vocab_size, cfg.seed);
    std::unique_ptr<TokenSource> val_data;
    if (!cfg.val_data.empty()) val_data = make_token_source(cfg.val_data, B, T, m.vocab_size, cfg.seed + 1);
    Tokenizer tokenizer = cfg.sample_every > 0 ? sample_tokenizer(cfg) : Tokenizer::bytes();
    // The log directory too: a run must not train for hours and then fail to write its log.
    if (std::string e = prepare_log_dir(cfg.log_dir); !e.empty()) fatal("%s", e.c_str());
    if (!cfg.resume.empty() && list_checkpoints(cfg.resume).empty())
        fatal("--resume: no checkpoint (ckpt_*.safetensors) in '%s'", cfg.resume.c_str());
    if (!checkpoint_dir(cfg).empty())
        if (std::string e = prepare_writable_dir(checkpoint_dir(cfg), "checkpoint directory"); !e.empty()) {
            if (cfg.checkpoint_required) fatal("%s", e.c_str());
            fprintf(stderr, "warning: %s (checkpoints will fail; training continues)\n", e.c_str());
        }
    std::string why;
    if (!cuda_device_available(&why))
        fatal("no CUDA device available (%s); train_gpt needs an NVIDIA GPU", why.c_str());
    // BF16 cuDNN flash attention and cuBLASLt paths need Ampere or newer; FP8 GEMMs need sm_89+.
    GpuContext ctx = create_gpu_context(0, cfg.precision == Precision::FP8 ? 89 : 80);
    printf("device: %s, %d SMs, %.1f GiB\n", ctx.props.name, ctx.props.multiProcessorCount,
           ctx.props.totalGlobalMem / 1073741824.0);

    GptModel model(m, B, T, cfg.precision, &ctx, cfg.fp8);
    model.init_weights(cfg.seed);
    if (!cfg.init_from.empty()) {
        model.load_weights(import_weights(cfg.init_from, m));
        printf("weights from %s\n", cfg.init_from.c_str());
    }
    const double flops_per_step = flops_per_token(m, T) * B * T;
    printf("model: %zu parameters, %.3f TFLOP per step (honest: 6N + 12LTC per token)\n",
           model.num_parameters(), flops_per_step / 1e12);

    TrainState state(cfg, &model, train_data.get());
    if (!cfg.resume.empty()) {
        const std::string path = state.resume(cfg.resume);
        printf("resumed from %s: step %lld, %lld optimizer updates\n", path.c_str(),
               (long long)state.progress.step, (long long)state.progress.opt_step);
    }
    RunLogger logger(cfg.log_dir, to_json(cfg), /*append=*/!cfg.resume.empty());
    const std::string ckpt_dir = checkpoint_dir(cfg);
    auto checkpoint = [&](const char* why) {
        if (ckpt_dir.empty()) return;
        try {
            state.save(ckpt_dir, cfg.keep_checkpoints);
            printf("checkpoint (%s): %s\n", why, checkpoint_path(ckpt_dir, state.progress.step).c_str());
        } catch (const std::exception& e) {
            if (cfg.checkpoint_required) fatal("checkpoint failed: %s", e.what());
            fprintf(stderr, "warning: checkpoint failed, training continues: %s\n", e.what());
        }
    };
    install_stop_signal_handlers();
    const int poison_step = test_poison_step();

    std::vector<int> inputs(B * T), targets(B * T);
    auto validate = [&](int step) {
        val_data->reset();
        double sum = 0;
        for (int i = 0; i < cfg.val_batches; i++) {
            val_data->next_batch(inputs.data(), targets.data());
            sum += model.evaluate(inputs.data(), targets.data());  // leaves the training state as is
        }
        const double val_loss = sum / cfg.val_batches;
        printf("step %5d | val loss %.6f\n", step, val_loss);
        logger.record("val", {{"step", step}, {"val_loss", val_loss}});
    };
    auto export_now = [&]() {
        export_weights(cfg.export_path, cfg.export_hf ? ExportFormat::HF : ExportFormat::Seed, m,
                       model.weights_to_host());
        printf("exported the weights (%s layout) to %s\n", cfg.export_hf ? "Hugging Face GPT-2" : "seed",
               cfg.export_path.c_str());
    };
    if (!cfg.export_path.empty() && !cfg.export_at_end) {  // export only: no training
        if (val_data) validate((int)state.progress.step);
        export_now();
        destroy_gpu_context(&ctx);
        return 0;
    }
    std::vector<double> step_ms;
    const int warmup_steps_skipped = std::min<int>(3, (cfg.steps - (int)state.progress.step) / 2);
    int bad_in_a_row = 0;
    for (int step = (int)state.progress.step; step < cfg.steps; step++) {
        bool last = step == cfg.steps - 1;
        if (val_data && (step % cfg.val_every == 0 || last)) validate(step);
        train_data->next_batch(inputs.data(), targets.data());
        auto t0 = std::chrono::steady_clock::now();
        float loss = model.forward(inputs.data(), targets.data());
        float lr = learning_rate(cfg, step);
        const bool fp8_health = cfg.precision == Precision::FP8 && (step % cfg.fp8_health_every == 0 || last);
        Fp8Health health;
        float grad_norm = NAN;
        if (std::isfinite(loss)) {
            model.backward();
            if (step == poison_step) model.poison_gradients();
            const AdamWSettings adamw{lr,           cfg.beta1,        cfg.beta2,
                                      cfg.adam_eps, cfg.weight_decay, cfg.grad_clip};
            grad_norm = model.update(adamw, (int)state.progress.opt_step + 1, fp8_health ? &health : nullptr);
        } else {
            model.discard_step();  // its amaxes never reach the FP8 history
        }
        const bool good = std::isfinite(loss) && std::isfinite(grad_norm);
        state.progress.step = step + 1;
        if (good) state.progress.opt_step++;
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!good) {
            bad_in_a_row++;
            printf(
                "step %5d/%d | skipped: loss %f, grad norm %f (non-finite; no update, no FP8 history) | %d "
                "in a row\n",
                step, cfg.steps, loss, grad_norm, bad_in_a_row);
            logger.record("skipped", {{"step", step}, {"loss", loss}, {"grad_norm", grad_norm}});
            if (bad_in_a_row >= cfg.max_bad_steps) {
                checkpoint("last good state");
                fatal(
                    "%d consecutive steps had a non-finite loss or gradient norm (--max-bad-steps %d): "
                    "stopping%s",
                    bad_in_a_row, cfg.max_bad_steps,
                    ckpt_dir.empty() ? "" : "; the checkpoint holds the last good state");
            }
            continue;
        }
        bad_in_a_row = 0;
        log_step(step, cfg, loss, lr, grad_norm, ms, flops_per_step, model.peak_memory_bytes(),
                 fp8_health ? &health : nullptr, &logger);
        step_ms.push_back(ms);
        if (cfg.sample_every > 0 && (step % cfg.sample_every == 0 || last)) {
            const SampleSettings ss{cfg.sample_tokens, cfg.temperature, cfg.top_k, cfg.prompt};
            const std::string text =
                generate_text(&model, B, T, m.vocab_size, tokenizer, ss, cfg.seed + step);
            printf("step %5d | sample: %s%s\n", step, escape_for_log(cfg.prompt).c_str(),
                   escape_for_log(text).c_str());
            logger.record_text("sample", step, "text", sanitize_utf8(cfg.prompt + text));
        }
        if (cfg.checkpoint_every > 0 && (step + 1) % cfg.checkpoint_every == 0 && !last)
            checkpoint("periodic");
        if (int sig = stop_signal()) {
            checkpoint("signal");
            printf("train_gpt: stopped by %s after step %d%s\n", sig == SIGINT ? "SIGINT" : "SIGTERM", step,
                   ckpt_dir.empty() ? " (no --checkpoint-dir: nothing saved)" : "; resume with --resume");
            return 0;
        }
    }
    checkpoint("end of training");
    if (cfg.export_at_end) export_now();
    step_ms.erase(step_ms.begin(), step_ms.begin() + std::min<size_t>(warmup_steps_skipped, step_ms.size()));
    if (cfg.profile) profile_steps(cfg, &model, train_data.get(), inputs, targets, &logger);
    double med = median(step_ms);
    double tflops = flops_per_step / (med / 1e3) / 1e12;
    printf(
        "summary: %s B=%d T=%d | median step %.2f ms over %zu steps | %.0f tok/s | %.1f TFLOP/s honest "
        "(MFU %.1f%% of %.0f bf16; %.1f%% of %.0f fp8) | seed-script formula %.1f TFLOP/s | peak %.1f GB\n",
        to_string(cfg.precision), B, T, med, step_ms.size(), B * T / (med / 1e3), tflops,
        100 * tflops / kBf16PeakTflops, kBf16PeakTflops, 100 * tflops / kFp8PeakTflops, kFp8PeakTflops,
        seed_script_flops_per_step(m) / (med / 1e3) / 1e12, model.peak_memory_bytes() / 1e9);
    logger.record("summary", {{"median_step_ms", med},
                              {"tokens_per_s", B * T / (med / 1e3)},
                              {"tflops", tflops},
                              {"mfu", tflops / kBf16PeakTflops},
                              {"peak_mem_gb", model.peak_memory_bytes() / 1e9}});
    destroy_gpu_context(&ctx);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    TrainConfig cfg;
    CliResult cli = parse_cli(argc, argv, &cfg);
    if (!cli.run) {
        fprintf(cli.exit_code == 0 ? stdout : stderr, "%s", cli.message.c_str());
        return cli.exit_code;
    }
    try {
        return train(cfg);
    } catch (const std::exception& e) {  // data errors: one line naming the file
        fatal("%s", e.what());
    }
}
