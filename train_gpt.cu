// train_gpt: trains a GPT-2-family model on Hopper GPUs in BF16 or FP8 (per-tensor delayed scaling), on one
// GPU or data-parallel over several (one process per GPU, NCCL, ZeRO-1), with gradient accumulation.
// The driver only: flags -> launch -> config -> data -> model -> training loop -> logs. Components live in
// llmc/.
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "llmc/host/check.h"
#include "llmc/formats/checkpoint.h"
#include "llmc/host/cli.h"
#include "llmc/parallel/comm.h"
#include "llmc/host/config.h"
#include "llmc/gpu/context.h"
#include "llmc/host/dataloader.h"
#include "llmc/run/generate.h"
#include "llmc/model/gpt.h"
#include "llmc/parallel/launch.h"
#include "llmc/host/logger.h"
#include "llmc/gpu/phase_timer.h"
#include "llmc/host/tokenizer.h"
#include "llmc/run/train_state.h"
#include "llmc/model/weights_io.h"
#ifdef TRAIN_GPT_FAULT_INJECTION
#include "llmc/model/gpt_testing.h"
#endif

namespace {

constexpr double kBf16PeakTflops = 989.0;  // H100/H200 SXM dense BF16: the MFU denominator in both precisions
constexpr double kFp8PeakTflops = 1979.0;  // dense FP8, shown beside it

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// An NVTX range for its scope (a step in an Nsight Systems trace).
struct NvtxRange {
    explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
    ~NvtxRange() { nvtxRangePop(); }
};

#ifdef TRAIN_GPT_FAULT_INJECTION
// Only in the test build of this driver (build/test/train_gpt_faults, test/gpu_lifecycle.sh):
// TRAIN_GPT_TEST_POISON_STEP=k launches step k with NaN gradients. The trainer itself has no fault hook.
void launch_training_step(GptModel* model, const AdamWSettings& adamw, int opt_step, int step) {
    const char* v = getenv("TRAIN_GPT_TEST_POISON_STEP");
    if (v && step == atoi(v))
        gpt_testing::launch_step_with_nan_gradients(*model, adamw, opt_step);
    else
        model->launch_step(adamw, opt_step);
}
#else
void launch_training_step(GptModel* model, const AdamWSettings& adamw, int opt_step, int step) {
    model->launch_step(adamw, opt_step);
}
#endif

// One optimizer step: every micro-step's tokens staged, the step launched (one CUDA graph once captured) and
// waited for. A non-finite loss or gradient norm skips the step on the device (every rank sees the same
// all-reduced values, so all skip together). first_step: this process's first, which also builds the
// cuBLASLt/cuDNN plans (a longer wait is normal).
StepOutcome train_step(GptModel* model, const GlobalBatch& batch, const AdamWSettings& adamw, int opt_step,
                       int step, Fp8Health* health, Communicator* comm, bool first_step) {
    NvtxRange range("step");
    for (int k = 0; k < batch.micro_steps(); k++)
        model->stage_micro_batch(k, batch.inputs_of(k), batch.targets_of(k));
    comm->arm(comm->timeout_s() + (first_step ? 300 : 0), "a training step's collectives");
    launch_training_step(model, adamw, opt_step, step);
    const StepOutcome r = model->wait_step(health);
    comm->disarm();
    return r;
}

// Runs 3 extra steps with per-phase GPU timing and prints the average breakdown (not part of the median).
void profile_steps(const TrainConfig& cfg, GptModel* model, TokenSource* data, GlobalBatch* batch,
                   Communicator* comm, RunLogger* logger) {
    const int steps = 3;
    std::vector<double> total(kNumPhases, 0.0);
    model->set_profiling(true);
    for (int i = 0; i < steps; i++) {
        batch->next(data);
        train_step(model, *batch,
                   {learning_rate(cfg, cfg.steps - 1), cfg.beta1, cfg.beta2, cfg.adam_eps, cfg.weight_decay,
                    cfg.grad_clip},
                   cfg.steps + i + 1, false, nullptr, comm, /*first_step=*/false);
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

// Where checkpoints go: --checkpoint-dir, else the --resume directory, else nowhere.
std::string checkpoint_dir(const TrainConfig& cfg) {
    return cfg.checkpoint_dir.empty() ? cfg.resume : cfg.checkpoint_dir;
}

// One training step's line on stdout (every --log-every steps and the last), its FP8 health (when measured)
// and its train.jsonl record. Throughput is global (all GPUs); MFU is per GPU.
void log_step(int step, const TrainConfig& cfg, const StepOutcome& r, float lr, double ms,
              double tokens_per_step, double flops_per_step, int gpus, size_t peak_bytes,
              const Fp8Health* health, RunLogger* logger) {
    const bool last = step == cfg.steps - 1;
    const double tokens_per_s = tokens_per_step / (ms / 1e3);
    const double tflops = flops_per_step / (ms / 1e3) / 1e12;
    const double mfu = tflops / gpus / kBf16PeakTflops;
    const double peak_gb = peak_bytes / 1e9;
    if (step % cfg.log_every == 0 || last) {
        printf(
            "step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.2f ms | %.0f tok/s | %.1f TFLOP/s | MFU "
            "%.1f%% | peak %.1f GB%s\n",
            step, cfg.steps, r.loss, lr, r.grad_norm, ms, tokens_per_s, tflops, 100 * mfu, peak_gb,
            gpus > 1 ? " per GPU" : "");
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
                             {"loss", r.loss},
                             {"lr", lr},
                             {"grad_norm", r.grad_norm},
                             {"step_ms", ms},
                             {"tokens_per_s", tokens_per_s},
                             {"tflops", tflops},
                             {"mfu", mfu},
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

// FNV-1a of the FP8 scale state, to check that every rank holds the same scales.
uint32_t fp8_state_hash(const GptModel& model) {
    const std::vector<float> state = model.fp8_state_to_host();
    uint32_t h = 2166136261u;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(state.data());
    for (size_t i = 0; i < state.size() * sizeof(float); i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

// The launcher's rank/world (mpirun, srun, torchrun or none) and the rendezvous to bootstrap NCCL with.
LaunchInfo launch_info(const TrainConfig& cfg, Rendezvous* rendezvous) {
    try {
        LaunchInfo li = detect_launch();
        *rendezvous = cfg.rendezvous.empty() ? default_rendezvous(li, [](const char* k) { return getenv(k); })
                                             : parse_rendezvous(cfg.rendezvous);
        return li;
    } catch (const std::exception& e) {
        fatal("%s", e.what());
    }
}

int train(const TrainConfig& cfg) {
    const ModelConfig& m = cfg.model;
    const int B = cfg.batch, T = cfg.seq;
    Rendezvous rendezvous;
    const LaunchInfo launch = launch_info(cfg, &rendezvous);
    const int world = launch.world_size, rank = launch.rank;
    // Only rank 0 prints and logs; errors (stderr) come from every rank.
    if (rank != 0 && !freopen("/dev/null", "w", stdout)) fatal("rank %d: cannot silence stdout", rank);
    int micro_steps = 1;
    if (std::string e = grad_accum_steps(cfg, world, &micro_steps); !e.empty()) fatal("%s", e.c_str());
    printf("train_gpt: resolved configuration\n%s", to_json(cfg, num_parameters(cfg.model)).c_str());
    if (world > 1 || micro_steps > 1)
        printf(
            "data parallel: %d GPU%s (%s), %d micro-step%s of %d x %d tokens per GPU: %lld tokens per step\n",
            world, world > 1 ? "s" : "", launch.launcher.c_str(), micro_steps, micro_steps > 1 ? "s" : "", B,
            T, (long long)B * T * micro_steps * world);

    // Data first: a bad shard is reported (naming the file) before any GPU work. Every rank reads the same
    // global batches and trains on its rows of them.
    GlobalBatch batch(B, T, micro_steps, world, rank);
    std::unique_ptr<TokenSource> train_data =
        make_token_source(cfg.train_data, batch.rows(), T, m.vocab_size, cfg.seed);
    std::unique_ptr<TokenSource> val_data;
    GlobalBatch val_batch(B, T, 1, world, rank);
    if (!cfg.val_data.empty())
        val_data = make_token_source(cfg.val_data, val_batch.rows(), T, m.vocab_size, cfg.seed + 1);
    Tokenizer tokenizer = cfg.sample_every > 0 ? sample_tokenizer(cfg) : Tokenizer::bytes();
    // The log directory too: a run must not train for hours and then fail to write its log.
    if (rank == 0)
        if (std::string e = prepare_log_dir(cfg.log_dir); !e.empty()) fatal("%s", e.c_str());
    if (!cfg.resume.empty() && list_checkpoints(cfg.resume).empty())
        fatal("--resume: no checkpoint (ckpt_*.safetensors) in '%s'", cfg.resume.c_str());
    if (!checkpoint_dir(cfg).empty() && rank == 0)
        if (std::string e = prepare_writable_dir(checkpoint_dir(cfg), "checkpoint directory"); !e.empty()) {
            if (cfg.checkpoint_required) fatal("%s", e.c_str());
            fprintf(stderr, "warning: %s (checkpoints will fail; training continues)\n", e.c_str());
        }
    std::string why;
    if (!cuda_device_available(&why))
        fatal("no CUDA device available (%s); train_gpt needs an NVIDIA GPU", why.c_str());
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    if (launch.local_rank >= devices)
        fatal("rank %d: local rank %d but this node has %d GPU%s (one process per GPU)", rank,
              launch.local_rank, devices, devices == 1 ? "" : "s");
    // BF16 cuDNN flash attention and cuBLASLt paths need Ampere or newer; FP8 GEMMs need sm_89+.
    GpuContext ctx = create_gpu_context(launch.local_rank, cfg.precision == Precision::FP8 ? 89 : 80);
    printf("device: %s, %d SMs, %.1f GiB%s\n", ctx.props.name, ctx.props.multiProcessorCount,
           ctx.props.totalGlobalMem / 1073741824.0, world > 1 ? " (rank 0's)" : "");
    std::unique_ptr<Communicator> comm;
    try {
        comm = std::make_unique<Communicator>(launch, rendezvous, cfg.comm_timeout);
    } catch (const std::exception& e) {
        fatal("rank %d of %d: %s", rank, world, e.what());
    }

    GptModel model(m, B, T, cfg.precision, &ctx, cfg.fp8, DataParallel{comm.get(), micro_steps},
                   StepOptions{cfg.recompute == 1, cfg.deterministic, cfg.cuda_graph});
    model.init_weights(cfg.seed);
    if (!cfg.init_from.empty()) {
        model.load_weights(import_weights(cfg.init_from, m));
        printf("weights from %s\n", cfg.init_from.c_str());
    }
    const double tokens_per_step = (double)batch.rows() * T;
    const double flops_per_step = flops_per_token(m, T) * tokens_per_step;
    printf("model: %zu parameters, %.3f TFLOP per step (honest: 6N + 12LTC per token)\n",
           model.num_parameters(), flops_per_step / 1e12);

    TrainState state(cfg, &model, train_data.get(), comm.get());
    if (!cfg.resume.empty()) {
        const std::string path = state.resume(cfg.resume);
        printf("resumed from %s: step %lld, %lld optimizer updates\n", path.c_str(),
               (long long)state.progress.step, (long long)state.progress.opt_step);
    }
    // Only rank 0 writes config.json and train.jsonl (another rank opening them would truncate rank 0's log).
    std::unique_ptr<RunLogger> run_logger =
        rank == 0 ? std::make_unique<RunLogger>(cfg.log_dir, to_json(cfg, num_parameters(cfg.model)), /*append=*/!cfg.resume.empty())
                  : std::make_unique<RunLogger>();
    RunLogger& logger = *run_logger;
    const std::string ckpt_dir = checkpoint_dir(cfg);
    auto checkpoint = [&](const char* why) {
        if (ckpt_dir.empty()) return;
        try {
            comm->arm(kCheckpointTimeoutS, "the checkpoint's gather");
            state.save(ckpt_dir, cfg.keep_checkpoints);
            comm->disarm();
            printf("checkpoint (%s): %s\n", why, checkpoint_path(ckpt_dir, state.progress.step).c_str());
        } catch (const std::exception& e) {
            if (cfg.checkpoint_required) fatal("checkpoint failed: %s", e.what());
            fprintf(stderr, "warning: checkpoint failed, training continues: %s\n", e.what());
        }
    };
    install_stop_signal_handlers();

    auto validate = [&](int step) {
        val_data->reset();
        double sum = 0;
        for (int i = 0; i < cfg.val_batches; i++) {
            val_batch.next(val_data.get());
            comm->arm(comm->timeout_s(), "validation");
            // leaves the training state as is; the loss is the mean over the ranks' rows
            sum += model.evaluate(val_batch.inputs_of(0), val_batch.targets_of(0));
        }
        comm->disarm();
        const double val_loss = sum / cfg.val_batches;
        printf("step %5d | val loss %.6f\n", step, val_loss);
        logger.record("val", {{"step", step}, {"val_loss", val_loss}});
    };
    auto export_now = [&]() {
        comm->arm(kCheckpointTimeoutS, "the export's gather");
        const std::vector<float> weights = model.weights_to_host();  // collective
        if (rank == 0) {
            export_weights(cfg.export_path, cfg.export_hf ? ExportFormat::HF : ExportFormat::Seed, m,
                           weights);
            printf("exported the weights (%s layout) to %s\n", cfg.export_hf ? "Hugging Face GPT-2" : "seed",
                   cfg.export_path.c_str());
        }
        comm->barrier(comm->stream(), kCheckpointTimeoutS, "rank 0 to write the export");
        comm->disarm();
    };
    if (!cfg.export_path.empty() && !cfg.export_at_end) {  // export only: no training
        if (val_data) validate((int)state.progress.step);
        export_now();
        destroy_gpu_context(&ctx);
        return 0;
    }
    std::vector<double> step_ms;
    const int first_step = (int)state.progress.step;
    const int warmup_steps_skipped = std::min<int>(3, (cfg.steps - first_step) / 2);
    int bad_in_a_row = 0;
    for (int step = first_step; step < cfg.steps; step++) {
        bool last = step == cfg.steps - 1;
        if (val_data && (step % cfg.val_every == 0 || last)) validate(step);
        batch.next(train_data.get());
        auto t0 = std::chrono::steady_clock::now();
        const float lr = learning_rate(cfg, step);
        const bool fp8_health = cfg.precision == Precision::FP8 && (step % cfg.fp8_health_every == 0 || last);
        Fp8Health health;
        const AdamWSettings adamw{lr, cfg.beta1, cfg.beta2, cfg.adam_eps, cfg.weight_decay, cfg.grad_clip};
        const StepOutcome r =
            train_step(&model, batch, adamw, (int)state.progress.opt_step + 1, step,
                       fp8_health ? &health : nullptr, comm.get(), step == first_step);
        state.progress.step = step + 1;
        if (r.applied) state.progress.opt_step++;
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        // A stop signal on any rank stops every rank after this step (launchers may signal only some).
        const int sig =
            comm->active() ? comm->max_int(stop_signal(), comm->timeout_s(), "the stop vote") : stop_signal();
        if (!r.applied) {
            bad_in_a_row++;
            printf(
                "step %5d/%d | skipped: loss %f, grad norm %f (non-finite; no update, no FP8 history) | %d "
                "in a row\n",
                step, cfg.steps, r.loss, r.grad_norm, bad_in_a_row);
            logger.record("skipped", {{"step", step}, {"loss", r.loss}, {"grad_norm", r.grad_norm}});
            if (bad_in_a_row >= cfg.max_bad_steps) {
                checkpoint("last good state");
                fatal(
                    "%d consecutive steps had a non-finite loss or gradient norm (--max-bad-steps %d): "
                    "stopping%s",
                    bad_in_a_row, cfg.max_bad_steps,
                    ckpt_dir.empty() ? "" : "; the checkpoint holds the last good state");
            }
        } else {
            bad_in_a_row = 0;
            // memory grows in the first steps (library workspaces, the graph capture): read it then and last
            if (step < first_step + 3 || last) model.update_peak_memory();
            log_step(step, cfg, r, lr, ms, tokens_per_step, flops_per_step, world, model.peak_memory_bytes(),
                     fp8_health ? &health : nullptr, &logger);
            if (fp8_health && comm->active()) {
                if (!comm->identical_on_all_ranks(fp8_state_hash(model), comm->timeout_s()))
                    fatal("rank %d: the FP8 scale state differs between ranks at step %d", rank, step);
                printf("step %5d | fp8 scales identical on all %d ranks\n", step, world);
            }
            step_ms.push_back(ms);
            if (cfg.sample_every > 0 && (step % cfg.sample_every == 0 || last)) {
                // every rank samples the same text (no collectives), so they stay in step
                const SampleSettings ss{cfg.sample_tokens, cfg.temperature, cfg.top_k, cfg.prompt};
                const std::string text =
                    generate_text(&model, B, T, m.vocab_size, tokenizer, ss, cfg.seed + step);
                printf("step %5d | sample: %s%s\n", step, escape_for_log(cfg.prompt).c_str(),
                       escape_for_log(text).c_str());
                logger.record_text("sample", step, "text", sanitize_utf8(cfg.prompt + text));
            }
            if (cfg.checkpoint_every > 0 && (step + 1) % cfg.checkpoint_every == 0 && !last)
                checkpoint("periodic");
        }
        if (sig) {
            checkpoint("signal");
            printf("train_gpt: stopped by %s after step %d%s\n", sig == SIGINT ? "SIGINT" : "SIGTERM", step,
                   ckpt_dir.empty() ? " (no --checkpoint-dir: nothing saved)" : "; resume with --resume");
            return 0;
        }
    }
    checkpoint("end of training");
    if (cfg.export_at_end) export_now();
    step_ms.erase(step_ms.begin(), step_ms.begin() + std::min<size_t>(warmup_steps_skipped, step_ms.size()));
    if (cfg.profile) profile_steps(cfg, &model, train_data.get(), &batch, comm.get(), &logger);
    double med = median(step_ms);
    double tflops = flops_per_step / (med / 1e3) / 1e12;
    const double per_gpu = tflops / world;
    printf(
        "summary: %s B=%d T=%d x %d micro-steps x %d GPU%s | median step %.2f ms over %zu steps | %.0f tok/s "
        "| "
        "%.1f TFLOP/s honest (per GPU %.1f: MFU %.1f%% of %.0f bf16; %.1f%% of %.0f fp8) | seed-script "
        "formula "
        "%.1f TFLOP/s | peak %.1f GB%s\n",
        to_string(cfg.precision), B, T, micro_steps, world, world > 1 ? "s" : "", med, step_ms.size(),
        tokens_per_step / (med / 1e3), tflops, per_gpu, 100 * per_gpu / kBf16PeakTflops, kBf16PeakTflops,
        100 * per_gpu / kFp8PeakTflops, kFp8PeakTflops,
        seed_script_flops_per_step(m) * batch.micro_steps() * world / (med / 1e3) / 1e12,
        model.peak_memory_bytes() / 1e9, world > 1 ? " per GPU" : "");
    logger.record("summary", {{"median_step_ms", med},
                              {"tokens_per_s", tokens_per_step / (med / 1e3)},
                              {"tflops", tflops},
                              {"mfu", per_gpu / kBf16PeakTflops},
                              {"gpus", world},
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
