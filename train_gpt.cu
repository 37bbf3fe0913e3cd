// train_gpt: trains a GPT-2-family model on Hopper GPUs in BF16 or FP8 (per-tensor delayed scaling), on one
// GPU or data-parallel over several (one process per GPU, NCCL, ZeRO-1), with gradient accumulation.
// The driver only: flags -> the checks before the GPU (llmc/run/preflight.h) -> summary -> GPU -> model ->
// training loop -> logs. Components live in llmc/.
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

#include "llmc/formats/checkpoint.h"
#include "llmc/formats/dataloader.h"
#include "llmc/formats/tokenizer.h"
#include "llmc/gpu/context.h"
#include "llmc/gpu/phase_timer.h"
#include "llmc/host/check.h"
#include "llmc/host/checkpoint_flags.h"
#include "llmc/host/cli.h"
#include "llmc/host/config.h"
#include "llmc/host/logger.h"
#include "llmc/model/gpt.h"
#include "llmc/model/weights_io.h"
#include "llmc/parallel/comm.h"
#include "llmc/parallel/launch.h"
#include "llmc/run/driver_hooks.h"
#include "llmc/run/generate.h"
#include "llmc/run/hellaswag_eval.h"
#include "llmc/run/preflight.h"
#include "llmc/run/text_output.h"
#include "llmc/run/train_state.h"
#include "llmc/run/version.h"

// The commit this binary was built from (git describe; the Makefile generates its definition).
extern const char kBuildCommit[];

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

// One optimizer step: every micro-step's tokens staged, the step launched (one CUDA graph once captured) and
// waited for. A non-finite loss or gradient norm skips the step on the device (every rank sees the same
// all-reduced values, so all skip together). first_step: this process's first, which also builds the
// cuBLASLt/cuDNN plans (a longer wait is normal).
StepOutcome train_step(const DriverHooks& hooks, GptModel* model, const GlobalBatch& batch,
                       const AdamWSettings& adamw, int opt_step, int step, Fp8Health* health,
                       Communicator* comm, bool first_step) {
    NvtxRange range("step");
    for (int k = 0; k < batch.micro_steps(); k++)
        model->stage_micro_batch(k, batch.inputs_of(k), batch.targets_of(k));
    comm->arm(comm->timeout_s() + (first_step ? 300 : 0), "a training step's collectives");
    hooks.launch_step(*model, adamw, opt_step, step);
    const StepOutcome r = model->wait_step(health);
    comm->disarm();
    return r;
}

// Runs extra steps with per-phase GPU timing and prints the average breakdown of 3 (not part of the median).
// With CUDA graphs (the default) the first is uncaptured (it creates the timer's events) and not counted; the
// 3 replay a capture of the step with its phase marks, so the phases add up to the step the loop replays.
void profile_steps(const DriverHooks& hooks, const TrainConfig& cfg, GptModel* model, TokenSource* data,
                   GlobalBatch* batch, Communicator* comm, RunLogger* logger) {
    const int steps = 3, warmup = cfg.cuda_graph ? 1 : 0;
    int replayed = 0;  // of the 3 (a step the recipe cannot capture runs uncaptured)
    std::vector<double> total(kNumPhases, 0.0);
    // The same steps timed as the loop times its steps (another process on the GPU slows both alike, so tests
    // compare the phases with this rather than the loop's median); their median leaves out the first, which
    // also captures the graph with its marks.
    std::vector<double> wall_ms;
    model->set_profiling(true);
    for (int i = 0; i < warmup + steps; i++) {
        batch->next(data);
        const auto t0 = std::chrono::steady_clock::now();
        train_step(hooks, model, *batch,
                   {learning_rate(cfg, cfg.steps - 1), cfg.beta1, cfg.beta2, cfg.adam_eps, cfg.weight_decay,
                    cfg.grad_clip},
                   cfg.steps + i + 1, false, nullptr, comm, /*first_step=*/false);
        const double step_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::vector<double> ms = model->collect_phase_ms();
        if (i < warmup) continue;
        replayed += model->last_step_replayed();
        wall_ms.push_back(step_ms);
        for (int p = 0; p < kNumPhases; p++) total[p] += ms[p] / steps;
    }
    model->set_profiling(false);
    double sum = 0;
    for (double t : total) sum += t;
    const std::string kind = replayed == steps ? "captured"
                             : replayed == 0   ? "uncaptured"
                                             : std::to_string(replayed) + " captured, the others uncaptured";
    printf("profile (%s, mean of %d %s steps, GPU time between phase marks):", to_string(cfg.precision),
           steps, kind.c_str());
    std::vector<std::pair<const char*, double>> fields;
    for (int p = 0; p < kNumPhases; p++) {
        printf(" %s %.1f ms (%.0f%%) |", phase_name(p), total[p], 100 * total[p] / sum);
        fields.push_back({phase_name(p), total[p]});
    }
    printf(" total %.1f ms\n", sum);
    fields.push_back({"total", sum});
    fields.push_back({"wall_step_ms", median(wall_ms)});
    logger->record("profile", fields);
    for (const std::string& line : model->gemm_report()) printf("gemm: %s\n", line.c_str());
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

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One training step's line on stdout (every --log-every steps and the last; eta: the time the remaining
// steps take at the current rate), its FP8 health (when measured) and its train.jsonl record. Throughput is
// global (all GPUs); MFU is per GPU.
void log_step(int step, const TrainConfig& cfg, const StepOutcome& r, float lr, double ms,
              double tokens_per_step, double flops_per_step, int gpus, size_t peak_bytes,
              const Fp8Health* health, double eta_s, RunLogger* logger) {
    const bool last = step == cfg.steps - 1;
    const double tokens_per_s = tokens_per_step / (ms / 1e3);
    const double tflops = flops_per_step / (ms / 1e3) / 1e12;
    const double mfu = tflops / gpus / kBf16PeakTflops;
    const double peak_gb = peak_bytes / 1e9;
    if (step % cfg.log_every == 0 || last) {
        printf(
            "step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.2f ms | %.0f tok/s | %.1f TFLOP/s | MFU "
            "%.1f%% | peak %.1f GB%s | eta %s\n",
            step, cfg.steps, r.loss, lr, r.grad_norm, ms, tokens_per_s, tflops, 100 * mfu, peak_gb,
            gpus > 1 ? " per GPU" : "", format_duration(eta_s).c_str());
        fflush(stdout);
    }
    if (health) {
        const float *hm = health->headroom_median, *hx = health->headroom_max;
        printf(
            "step %5d | fp8 health: scales [%.3g, %.3g] | %d/%d slots saturated | %d fell back (amax "
            "0/inf/nan) | headroom, binades, median/max: X %.1f/%.1f W %.1f/%.1f dY %.1f/%.1f\n",
            step, health->min_scale, health->max_scale, health->saturated, health->slots, health->fell_back,
            hm[kFp8X], hx[kFp8X], hm[kFp8W], hx[kFp8W], hm[kFp8DY], hx[kFp8DY]);
        logger->record("fp8", {{"step", step},
                               {"min_scale", health->min_scale},
                               {"max_scale", health->max_scale},
                               {"saturated", health->saturated},
                               {"fell_back", health->fell_back},
                               {"headroom_x", hm[kFp8X]},
                               {"headroom_x_max", hx[kFp8X]},
                               {"headroom_w", hm[kFp8W]},
                               {"headroom_w_max", hx[kFp8W]},
                               {"headroom_dy", hm[kFp8DY]},
                               {"headroom_dy_max", hx[kFp8DY]}});
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

// FNV-1a of the FP8 scale state and of the step's health figures, to check that every rank holds the same
// scales and logs the same health line (only rank 0 prints it).
uint32_t fp8_state_hash(const GptModel& model, const Fp8Health& health) {
    std::vector<float> words = model.fp8_state_to_host();
    for (float v : {(float)health.slots, (float)health.saturated, (float)health.fell_back, health.min_scale,
                    health.max_scale})
        words.push_back(v);
    words.insert(words.end(), std::begin(health.headroom_median), std::end(health.headroom_median));
    words.insert(words.end(), std::begin(health.headroom_max), std::end(health.headroom_max));
    uint32_t h = 2166136261u;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(words.data());
    for (size_t i = 0; i < words.size() * sizeof(float); i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

// A run once the checks have passed: the GPU, the communicator, the model with its weights and state, the
// log; each part of the driver is one method. Only rank 0 prints and logs; errors come from every rank.
class Run {
  public:
    Run(const TrainConfig& cfg, RunPlan* plan, const DriverHooks& hooks);
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    // --export without --export-at-end: validate (with --val-data), write the weights, no training.
    int export_without_training();
    // --generate N: the prompt and N tokens after it, streamed to `out`, no training.
    int generate_without_training(TextOutput* out);
    // The training loop, the final checkpoint and export, the summary line (with the wall time since
    // start_s). Returns the exit code.
    int train(double start_s);

  private:
    void open_gpu();
    void build_model();
    void checkpoint(const char* why);
    void validate(int step);
    // --eval-hellaswag: the accuracies of the model after `step` steps (stdout, train.jsonl, the dump).
    void eval_hellaswag(int step);
    void export_now();
    void sample(int step);
    // A skipped step (non-finite loss or norm): its line, and the stop after --max-bad-steps in a row.
    void on_skipped_step(int step, const StepOutcome& r, int bad_in_a_row);
    // An applied step: the FP8 scale and health identity across ranks (health: null when not measured), a
    // text sample, a periodic checkpoint.
    void after_applied_step(int step, const Fp8Health* health);
    void print_summary(std::vector<double> step_ms, int warmup_steps_skipped, double start_s);

    const TrainConfig& cfg_;
    RunPlan& plan_;
    const DriverHooks& hooks_;
    const int rank_, world_;
    const std::string ckpt_dir_;
    GlobalBatch batch_, val_batch_;
    const double tokens_per_step_, flops_per_step_;
    GpuContext ctx_{};
    bool gpu_open_ = false;
    std::unique_ptr<Communicator> comm_;
    std::unique_ptr<GptModel> model_;
    std::unique_ptr<TrainState> state_;
    std::unique_ptr<RunLogger> logger_;
};

Run::Run(const TrainConfig& cfg, RunPlan* plan, const DriverHooks& hooks)
    : cfg_(cfg),
      plan_(*plan),
      hooks_(hooks),
      rank_(plan->launch.rank),
      world_(plan->launch.world_size),
      ckpt_dir_(checkpoint_dir_of(cfg)),
      // Every rank reads the same global batches and trains on its rows of them.
      batch_(cfg.batch, cfg.seq, plan->micro_steps, world_, rank_),
      val_batch_(cfg.batch, cfg.seq, 1, world_, rank_),
      tokens_per_step_((double)batch_.rows() * cfg.seq),
      flops_per_step_(flops_per_token(cfg.model, cfg.seq) * tokens_per_step_) {
    open_gpu();
    try {
        comm_ = std::make_unique<Communicator>(plan->launch, plan->rendezvous, cfg.comm_timeout,
                                               cfg.ranks_per_gpu);
    } catch (const std::exception& e) {
        fatal("rank %d of %d: %s", rank_, world_, e.what());
    }
    build_model();
    // Only rank 0 writes config.json and train.jsonl (another rank opening them would truncate rank 0's log);
    // --generate writes nothing.
    logger_ = rank_ == 0 && run_mode(cfg) != RunMode::Generate
                  ? std::make_unique<RunLogger>(cfg.log_dir, to_json(cfg, num_parameters(cfg.model)),
                                                /*append=*/!cfg.resume.empty())
                  : std::make_unique<RunLogger>();
}

Run::~Run() {
    state_.reset();
    model_.reset();  // its device memory before the context that allocated it
    comm_.reset();
    if (gpu_open_) destroy_gpu_context(&ctx_);
}

// The first CUDA calls of the process: everything checkable without a GPU has been checked.
void Run::open_gpu() {
    std::string why;
    if (!cuda_device_available(&why))
        fatal("no CUDA device available (%s); train_gpt needs an NVIDIA GPU", why.c_str());
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    const int local_rank = plan_.launch.local_rank, per_gpu = cfg_.ranks_per_gpu;
    const int device = local_rank / per_gpu;
    if (device >= devices) {
        if (per_gpu == 1)
            fatal(
                "rank %d: local rank %d but this node has %d GPU%s (one process per GPU; --ranks-per-gpu "
                "lets ranks share one)",
                rank_, local_rank, devices, devices == 1 ? "" : "s");
        fatal("rank %d: local rank %d with --ranks-per-gpu %d needs GPU %d but this node has %d", rank_,
              local_rank, per_gpu, device, devices);
    }
    // BF16 cuDNN flash attention and cuBLASLt paths need Ampere or newer; FP8 GEMMs need sm_89+.
    ctx_ = create_gpu_context(device, cfg_.precision == Precision::FP8 ? 89 : 80);
    gpu_open_ = true;
    printf("device: %s, %d SMs, %.1f GiB%s; %s\n", ctx_.props.name, ctx_.props.multiProcessorCount,
           ctx_.props.totalGlobalMem / 1073741824.0, world_ > 1 ? " (rank 0's)" : "",
           gpu_library_versions().c_str());
}

// The step options of the configuration; the tuned GEMM choices go to gemm_cache_file (config.h).
static StepOptions step_options(const TrainConfig& cfg) {
    StepOptions o;
    o.fc_proj_input = cfg.fc_proj_input();
    o.att_proj_input = cfg.att_proj_input();
    o.deterministic_attention = cfg.deterministic;
    o.fuse_residual = cfg.fuse_residual;
    o.cuda_graph = cfg.cuda_graph;
    o.bf16_moments = cfg.adam_bf16_moments;
    o.gemm_autotune = cfg.gemm_autotune;
    o.gemm_variants = cfg.gemm_variants;
    o.gemm_cache_path = gemm_cache_file(cfg);
    return o;
}

// The model (it prints its memory plan), its weights (--init-from, else the seeded init) and, with --resume,
// the training state of the checkpoint.
void Run::build_model() {
    model_ = std::make_unique<GptModel>(cfg_.model, cfg_.batch, cfg_.seq, cfg_.precision, &ctx_, cfg_.fp8,
                                        DataParallel{comm_.get(), plan_.micro_steps}, step_options(cfg_));
    model_->init_weights(cfg_.seed);
    if (!cfg_.init_from.empty()) {
        try {  // the header was checked before the GPU; this reads the tensors
            model_->load_weights(import_weights(cfg_.init_from, cfg_.model));
        } catch (const std::exception& e) {
            fatal("--init-from: %s", e.what());
        }
    }
    state_ = std::make_unique<TrainState>(cfg_, model_.get(), plan_.train_data.get(), comm_.get());
    if (!cfg_.resume.empty()) {
        const std::string path = state_->resume(cfg_.resume);
        printf("resumed from %s: step %lld, %lld optimizer updates\n", path.c_str(),
               (long long)state_->progress.step, (long long)state_->progress.opt_step);
    }
}

void Run::checkpoint(const char* why) {
    if (ckpt_dir_.empty()) return;
    try {
        // the gather re-arms --comm-timeout per tensor; waiting for rank 0's write gets kCheckpointTimeoutS
        comm_->arm(comm_->timeout_s(), "the checkpoint's gather");
        state_->save(ckpt_dir_, cfg_.keep_checkpoints);
        comm_->disarm();
        printf("checkpoint (%s): %s\n", why, checkpoint_path(ckpt_dir_, state_->progress.step).c_str());
    } catch (const std::exception& e) {
        if (cfg_.checkpoint_required) fatal("checkpoint failed: %s", e.what());
        fprintf(stderr, "warning: checkpoint failed, training continues: %s\n", e.what());
    }
}

void Run::validate(int step) {
    plan_.val_data->reset();
    double sum = 0;
    for (int i = 0; i < cfg_.val_batches; i++) {
        val_batch_.next(plan_.val_data.get());
        comm_->arm(comm_->timeout_s(), "validation");
        // leaves the training state as is; the loss is the mean over the ranks' rows
        sum += model_->evaluate(val_batch_.inputs_of(0), val_batch_.targets_of(0));
    }
    comm_->disarm();
    const double val_loss = sum / cfg_.val_batches;
    printf("step %5d | val loss %.6f\n", step, val_loss);
    logger_->record("val", {{"step", step}, {"val_loss", val_loss}});
}

void Run::eval_hellaswag(int step) {
    const HellaSwagEvalShape shape{cfg_.batch, cfg_.seq, rank_, world_};
    auto forward = [&](const int* inputs, const int* targets) {
        comm_->arm(comm_->timeout_s(), "the HellaSwag evaluation");
        std::vector<float> losses =
            model_->evaluate_token_losses(inputs, targets);  // training state untouched
        comm_->disarm();
        return losses;
    };
    auto sum = [&](const std::vector<int>& v) {
        return comm_->sum_ints(v, comm_->timeout_s(), "HellaSwag counts");
    };
    const HellaSwagResult r = evaluate_hellaswag(*plan_.hellaswag, shape, forward, sum);
    printf("step %5d | hellaswag acc %.4f acc_norm %.4f (%d examples)\n", step, r.acc(), r.acc_norm(),
           r.examples);
    fflush(stdout);
    logger_->record("hellaswag",
                    {{"step", step}, {"acc", r.acc()}, {"acc_norm", r.acc_norm()}, {"examples", r.examples}});
    if (cfg_.eval_hellaswag_dump.empty()) return;
    try {  // a user's extra output: a failed write does not end the run
        write_hellaswag_dump(hellaswag_dump_path(cfg_.eval_hellaswag_dump, rank_, world_), r.local);
    } catch (const std::exception& e) {
        fprintf(stderr, "warning: --eval-hellaswag-dump: %s\n", e.what());
    }
}

void Run::export_now() {
    comm_->arm(comm_->timeout_s(), "the export's gather");
    const std::vector<float> weights = model_->weights_to_host();   // collective; re-arms per tensor
    comm_->arm(kCheckpointTimeoutS, "rank 0 to write the export");  // however long the disk takes
    if (rank_ == 0) {
        export_weights(cfg_.export_path, cfg_.export_format, cfg_.model, weights);
        printf("exported the weights (%s layout) to %s\n", export_format_description(cfg_.export_format),
               cfg_.export_path.c_str());
    }
    comm_->barrier(comm_->stream(), kCheckpointTimeoutS, "rank 0 to write the export");
    comm_->disarm();
}

int Run::export_without_training() {
    if (plan_.val_data) validate((int)state_->progress.step);
    if (plan_.hellaswag) eval_hellaswag((int)state_->progress.step);
    export_now();
    return 0;
}

// The seed is --seed itself (the samples during training use --seed + step).
int Run::generate_without_training(TextOutput* out) {
    const Tokenizer& tok = plan_.tokenizer;
    out->write(cfg_.prompt);
    const SampleSettings ss{cfg_.generate, cfg_.temperature, cfg_.top_k, cfg_.prompt};
    generate_text(model_.get(), cfg_.batch, cfg_.seq, cfg_.model.vocab_size, tok, ss, cfg_.seed,
                  [&](int id) { out->write(tok.decode_token(id)); });
    out->finish();
    return 0;
}

// Every rank samples the same text (no collectives), so they stay in step.
void Run::sample(int step) {
    const SampleSettings ss{cfg_.sample_tokens, cfg_.temperature, cfg_.top_k, cfg_.prompt};
    const std::string text = generate_text(model_.get(), cfg_.batch, cfg_.seq, cfg_.model.vocab_size,
                                           plan_.tokenizer, ss, cfg_.seed + step);
    printf("step %5d | sample: %s%s\n", step, escape_for_log(cfg_.prompt).c_str(),
           escape_for_log(text).c_str());
    logger_->record_text("sample", step, "text", sanitize_utf8(cfg_.prompt + text));
}

void Run::on_skipped_step(int step, const StepOutcome& r, int bad_in_a_row) {
    printf(
        "step %5d/%d | skipped: loss %f, grad norm %f (non-finite; no update, no FP8 history) | %d in a "
        "row\n",
        step, cfg_.steps, r.loss, r.grad_norm, bad_in_a_row);
    logger_->record("skipped", {{"step", step}, {"loss", r.loss}, {"grad_norm", r.grad_norm}});
    if (bad_in_a_row < cfg_.max_bad_steps) return;
    checkpoint("last good state");
    fatal("%d consecutive steps had a non-finite loss or gradient norm (--max-bad-steps %d): stopping%s",
          bad_in_a_row, cfg_.max_bad_steps,
          ckpt_dir_.empty() ? "" : "; the checkpoint holds the last good state");
}

void Run::after_applied_step(int step, const Fp8Health* health) {
    const bool last = step == cfg_.steps - 1;
    if (health && comm_->active()) {
        if (!comm_->identical_on_all_ranks(fp8_state_hash(*model_, *health), comm_->timeout_s()))
            fatal("rank %d: the FP8 scale state or health differs between ranks at step %d", rank_, step);
        printf("step %5d | fp8 scales and health identical on all %d ranks\n", step, world_);
    }
    if (cfg_.sample_every > 0 && (step % cfg_.sample_every == 0 || last)) sample(step);
    if (cfg_.checkpoint_every > 0 && (step + 1) % cfg_.checkpoint_every == 0 && !last) checkpoint("periodic");
}

int Run::train(double start_s) {
    install_stop_signal_handlers();
    std::vector<double> step_ms;
    const int first_step = (int)state_->progress.step;
    const int warmup_steps_skipped = std::min<int>(3, (cfg_.steps - first_step) / 2);
    Eta eta(now_s());
    int bad_in_a_row = 0;
    for (int step = first_step; step < cfg_.steps; step++) {
        const bool last = step == cfg_.steps - 1;
        if (plan_.val_data && (step % cfg_.val_every == 0 || last)) validate(step);
        if (plan_.hellaswag && cfg_.eval_every > 0 && step % cfg_.eval_every == 0) eval_hellaswag(step);
        batch_.next(plan_.train_data.get());
        auto t0 = std::chrono::steady_clock::now();
        const float lr = learning_rate(cfg_, step);
        const bool fp8_health =
            cfg_.precision == Precision::FP8 && (step % cfg_.fp8_health_every == 0 || last);
        Fp8Health health;
        const AdamWSettings adamw{
            lr, cfg_.beta1, cfg_.beta2, cfg_.adam_eps, cfg_.weight_decay, cfg_.grad_clip};
        const StepOutcome r =
            train_step(hooks_, model_.get(), batch_, adamw, (int)state_->progress.opt_step + 1, step,
                       fp8_health ? &health : nullptr, comm_.get(), step == first_step);
        state_->progress.step = step + 1;
        if (r.applied) state_->progress.opt_step++;
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        const double eta_s = eta.after_step(now_s(), cfg_.steps - step - 1);
        // A stop signal on any rank stops every rank after this step (launchers may signal only some).
        const int sig = comm_->active() ? comm_->max_int(stop_signal(), comm_->timeout_s(), "the stop vote")
                                        : stop_signal();
        if (!r.applied) {
            on_skipped_step(step, r, ++bad_in_a_row);
        } else {
            bad_in_a_row = 0;
            // memory grows in the first steps (library workspaces, the graph capture): read it then and last
            if (step < first_step + 3 || last) model_->update_peak_memory();
            log_step(step, cfg_, r, lr, ms, tokens_per_step_, flops_per_step_, world_,
                     model_->peak_memory_bytes(), fp8_health ? &health : nullptr, eta_s, logger_.get());
            step_ms.push_back(ms);
            after_applied_step(step, fp8_health ? &health : nullptr);
        }
        if (sig) {
            checkpoint("signal");
            printf("train_gpt: stopped by %s after step %d%s\n", sig == SIGINT ? "SIGINT" : "SIGTERM", step,
                   ckpt_dir_.empty() ? " (no --checkpoint-dir: nothing saved)" : "; resume with --resume");
            return 0;
        }
    }
    checkpoint("end of training");
    if (cfg_.export_at_end) export_now();
    if (plan_.hellaswag) eval_hellaswag(cfg_.steps);  // the trained model, after the checkpoint is safe
    if (cfg_.profile)
        profile_steps(hooks_, cfg_, model_.get(), plan_.train_data.get(), &batch_, comm_.get(),
                      logger_.get());
    print_summary(std::move(step_ms), warmup_steps_skipped, start_s);
    return 0;
}

// The last line of a run: the median step over the steady steps (the first few skipped), throughput, MFU,
// peak memory and the wall time since the process started.
void Run::print_summary(std::vector<double> step_ms, int warmup_steps_skipped, double start_s) {
    step_ms.erase(step_ms.begin(), step_ms.begin() + std::min<size_t>(warmup_steps_skipped, step_ms.size()));
    const double med = median(step_ms);
    const double tflops = flops_per_step_ / (med / 1e3) / 1e12;
    const double per_gpu = tflops / world_;
    const double peak_gb = model_->peak_memory_bytes() / 1e9;
    const double wall_s = now_s() - start_s;
    printf(
        "summary: %s B=%d T=%d x %d micro-steps x %d GPU%s | median step %.2f ms over %zu steps | "
        "%.0f tok/s | %.1f TFLOP/s honest (per GPU %.1f: MFU %.1f%% of %.0f bf16; %.1f%% of %.0f fp8) | "
        "seed-script formula %.1f TFLOP/s | peak %.1f GB%s | wall %s\n",
        to_string(cfg_.precision), cfg_.batch, cfg_.seq, batch_.micro_steps(), world_, world_ > 1 ? "s" : "",
        med, step_ms.size(), tokens_per_step_ / (med / 1e3), tflops, per_gpu, 100 * per_gpu / kBf16PeakTflops,
        kBf16PeakTflops, 100 * per_gpu / kFp8PeakTflops, kFp8PeakTflops,
        seed_script_flops_per_step(cfg_.model) * batch_.micro_steps() * world_ / (med / 1e3) / 1e12, peak_gb,
        world_ > 1 ? " per GPU" : "", format_duration(wall_s).c_str());
    logger_->record("summary", {{"median_step_ms", med},
                                {"tokens_per_s", tokens_per_step_ / (med / 1e3)},
                                {"tflops", tflops},
                                {"mfu", per_gpu / kBf16PeakTflops},
                                {"gpus", world_},
                                {"peak_mem_gb", peak_gb},
                                {"wall_s", wall_s}});
}

}  // namespace

// Flags, then everything checkable without a GPU (exit 2 on a mistake, before any CUDA call), then the
// summary, then the run, through `hooks` (llmc/run/driver_hooks.h).
int train_main(int argc, char** argv, const DriverHooks& hooks) {
    const double start_s = now_s();
    TrainConfig cfg;
    // --generate/--export --resume without model flags: those taken from the checkpoint
    std::vector<std::string> adopted;
    const CliResult cli = parse_cli_adopting_checkpoint(argc, argv, &cfg, &adopted);
    if (cli.version) {
        fputs(version_report(kBuildCommit).c_str(), stdout);
        return 0;
    }
    if (!cli.run) {
        fprintf(cli.exit_code == 0 ? stdout : stderr, "%s", cli.message.c_str());
        return cli.exit_code;
    }
    if (!adopted.empty()) {
        std::string flags;
        for (const std::string& f : adopted) flags += " " + f;
        fprintf(stderr, "train_gpt: --resume %s: the model and recipe of its checkpoint:%s\n",
                cfg.resume.c_str(), flags.c_str());
    }
    resolve_resume_if_present(&cfg, !list_checkpoints(cfg.resume_if_present).empty());
    RunPlan plan;
    if (std::string e = check_before_gpu(cfg, hooks.allow_export_of_init(), &plan); !e.empty())
        fatal_usage("%s", e.c_str());
    if (plan.launch.rank == 0)
        for (const std::string& w : plan.warnings) fprintf(stderr, "warning: %s\n", w.c_str());
    if (cli.print_config) {
        fputs(to_json(cfg, num_parameters(cfg.model)).c_str(), stdout);
        return 0;
    }
    std::unique_ptr<TextOutput> text;  // --generate: stdout holds the text alone, the rest goes to stderr
    if (run_mode(cfg) == RunMode::Generate) try {
            text = std::make_unique<TextOutput>();
        } catch (const std::exception& e) {
            fatal("%s", e.what());
        }
    if (std::string e = prepare_output_dirs(cfg, plan.launch.rank); !e.empty()) fatal_usage("%s", e.c_str());
    if (plan.launch.rank != 0 && !freopen("/dev/null", "w", stdout))
        fatal("rank %d: cannot silence stdout", plan.launch.rank);
    fputs(run_summary(cfg, num_parameters(cfg.model), plan.launch.world_size, plan.micro_steps,
                      plan.launch.launcher)
              .c_str(),
          stdout);
    fflush(stdout);
    try {
        Run run(cfg, &plan, hooks);
        switch (run_mode(cfg)) {
            case RunMode::Export:
                return run.export_without_training();
            case RunMode::Generate:
                return run.generate_without_training(text.get());
            case RunMode::Train:
                break;
        }
        return run.train(start_s);
    } catch (const std::exception& e) {  // e.g. a shard that changed while training: one line naming it
        fatal("%s", e.what());
    }
}

// The program: the default hooks. The test build of this driver (build/test/train_gpt_faults, compiled with
// TRAIN_GPT_NO_MAIN) calls train_main with its fault hooks instead.
#ifndef TRAIN_GPT_NO_MAIN
int main(int argc, char** argv) { return train_main(argc, argv, DriverHooks()); }
#endif
