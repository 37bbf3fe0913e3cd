// Model and training configuration: the settings (this struct; settings.h is the table of their flags, help,
// smallest values and config.json keys), the presets (config_presets.cpp), the validation and the kernels'
// size limits (config_checks.cpp), the LR schedule (lr_schedule.cpp), the JSON (config_json.cpp) and the
// summary for people (config_summary.cpp); the choice settings' names (config.cpp).
// Host-only (no CUDA), so the host tests can exercise it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct ModelConfig {
    int num_layers = 48;     // L
    int channels = 1600;     // C
    int num_heads = 25;      // H
    int vocab_size = 50304;  // V (the seed's padded GPT-2 vocabulary)
    int max_seq_len = 1024;  // maxT (rows of the position embedding)
    bool gelu_tanh = false;  // false: exact erf GELU (nn.GELU() default); true: tanh approximation
};

enum class Precision { BF16, FP8 };
enum class LrSchedule { Cosine, Constant };
enum class Fp8Format { Hybrid, E4M3 };  // hybrid: E4M3 forward, E5M2 gradients
enum class AmaxAlgo { Max, MostRecent };
// Where --export writes the weights (llmc/model/weights_io.h): the seed script's safetensors file, a Hugging
// Face GPT-2 folder, or an llm.c model file in float32 or bfloat16 (llmc/model/weights_llmc.h).
enum class ExportFormat { Seed, HF, Llmc, LlmcBf16 };
// What a run does: train (the default), only write the weights and exit (--export without --export-at-end),
// or only generate text and exit (--generate N). Each setting says in which modes it does something
// (settings.h).
enum class RunMode { Train, Export, Generate };

struct Fp8Config {
    Fp8Format format = Fp8Format::Hybrid;  // Transformer Engine defaults
    int history_len = 1024;
    AmaxAlgo amax_algo = AmaxAlgo::Max;
    int margin = 0;
    bool lm_head = true;     // the LM head (tied to the token embedding) in FP8 too; false: BF16
    bool fast_accum = true;  // forward GEMMs in the tensor cores' fast accumulation (TE's default); false:
                             // promoted to FP32 as in the gradient GEMMs
};

// What a Linear keeps of its input for its backward (--recompute: the FP8 Linears' transposed input X^T).
enum class InputKeep {
    Saved,      // per layer, written by the forward
    FromGelu,   // rebuilt by the fc's dGELU cast from the pre-GELU tensor (the fc-proj, --recompute 1 and 2)
    FromInput,  // rebuilt from the input still held, the attention output (the attn-proj, --recompute 2)
};

// --recompute when the flag is not given and the precision is fp8 (README, Flags: measured cost and memory):
// kFp8DefaultRecompute for models of at least kRecomputeMinBlockParams block parameters (12 L C^2: 774m and
// 1.5b), where it keeps FP8 below BF16's memory at about no cost; 0 below (124m, 350m), where memory is not
// what limits and the rebuild costs time (0.45 ms of 25 a step at 124M, B=16).
constexpr int kFp8DefaultRecompute = 2;
constexpr double kRecomputeMinBlockParams = 500e6;

// GEMM autotuning (--gemm-autotune): cuBLASLt's heuristic is asked for this many answers per GEMM, each timed
// on the call's operands (llmc/kernels/gemm/matmul_autotune.h); here so the start-up summary can name it.
constexpr int kGemmCandidates = 8;

struct TrainConfig {
    std::string model_name = "1.5b";
    ModelConfig model;
    Precision precision = Precision::BF16;
    Fp8Config fp8;
    int batch = 12;           // B: the micro-batch of one GPU
    int seq = 1024;           // T
    int64_t total_batch = 0;  // tokens per optimizer step (B*T x micro-steps x GPUs); 0: B*T x GPUs
    int steps = 50;
    std::string train_data = "random";  // glob of shards, or "random"
    std::string val_data;               // empty: no validation
    int val_every = 100;
    int val_batches = 20;
    // HellaSwag accuracy (llm.c's completion-style scoring, llmc/run/hellaswag_eval.h).
    std::string eval_hellaswag;       // file from scripts/data/prepare_hellaswag.py; empty: no evaluation
    int eval_every = 0;               // 0: after the last step only; N: also at steps 0, N, 2N, ...
    std::string eval_hellaswag_dump;  // per-example results of the latest evaluation; empty: none
    float lr = 6e-4f;
    int warmup = 0;
    LrSchedule schedule = LrSchedule::Cosine;
    float final_lr_frac = 0.1f;  // cosine decays to lr * final_lr_frac
    float weight_decay = 0.1f;
    float grad_clip = 1.0f;  // 0 disables clipping
    float beta1 = 0.9f, beta2 = 0.95f, adam_eps = 1e-8f;
    bool adam_bf16_moments = false;  // --adam-moments bf16: m and v stored in BF16 (FP32 arithmetic)
    uint64_t seed = 3985;            // the seed script's seed
    std::string log_dir = "logs";
    int log_every = 1;
    int fp8_health_every = 50;
    bool profile = false;

    // Run lifecycle: checkpoints, resume, faults (llmc/formats/checkpoint.h).
    std::string checkpoint_dir;  // empty: no checkpoints (with --resume: the resume directory)
    int checkpoint_every = 0;    // 0: only at the end (and on SIGINT/SIGTERM)
    int keep_checkpoints = 2;
    bool checkpoint_required = false;  // a failed checkpoint write ends the run instead of a warning
    std::string resume;                // directory to resume from (its newest valid checkpoint)
    // --resume-if-present DIR: --resume DIR when DIR holds a checkpoint, else a fresh run checkpointing
    // there (resolve_resume_if_present), so the same command continues a crashed run.
    std::string resume_if_present;
    int max_bad_steps = 5;  // consecutive skipped (non-finite) steps that stop the run

    // Several GPUs (llmc/parallel/launch.h, llmc/parallel/comm.h).
    std::string rendezvous;    // NCCL id exchange: tcp://HOST:PORT, file:PATH, mpi; empty: the launcher's
    double comm_timeout = 30;  // seconds a rank waits for the others before it stops with an error
    // Local ranks per GPU: local rank r runs on GPU r / ranks_per_gpu. 1 (one process per GPU) unless asked;
    // more lets several ranks share a GPU (tests, checking a multi-GPU setup on one GPU; needs NCCL >= 2.30).
    int ranks_per_gpu = 1;

    // Speed / memory / reproducibility trade-offs.
    int recompute = 0;  // fp8: 1: the fc-projection's FP8 input rebuilt in backward, not stored; 2: also the
                        // attention projection's. The CLI's default: default_recompute()
    InputKeep fc_proj_input() const { return recompute >= 1 ? InputKeep::FromGelu : InputKeep::Saved; }
    InputKeep att_proj_input() const { return recompute >= 2 ? InputKeep::FromInput : InputKeep::Saved; }
    bool deterministic = true;   // cuDNN's deterministic attention backward (bitwise reproducible runs)
    bool fuse_residual = false;  // the residual adds in the projection GEMMs' epilogue (docs/performance.md)
    bool cuda_graph = true;      // each training step replays one captured CUDA graph (same results)
    bool gemm_autotune = true;   // time cuBLASLt's best candidates per GEMM once, keep the fastest
    bool gemm_variants = true;   // then their variants with bitwise the same output (matmul.cuh); the
                                 // CLI's default: on when training with gemm_autotune
    std::string gemm_cache;      // file of those choices, shared by runs; "": the default; "none": no file

    // Text samples during training (llmc/run/generate.h).
    int sample_every = 0;  // 0: never; else every N steps and after the last
    int sample_tokens = 64;
    std::string prompt;  // empty: start from the end-of-text token (or a newline for bytes)
    float temperature = 1.0f;
    int top_k = 40;         // 0: the whole vocabulary
    std::string tokenizer;  // tokenizer file (scripts/data/prepare_data.py); empty: next to the train shards
    // --generate N: print --prompt and N tokens generated after it from --init-from's or --resume's weights,
    // then exit (no training, no files written). 0: off.
    int generate = 0;

    // Weights in and out (llmc/model/weights_io.h).
    std::string init_from;    // start from these weights (seed or Hugging Face GPT-2 layout)
    std::string export_path;  // write the weights here: without --export-at-end instead of training
    ExportFormat export_format = ExportFormat::Seed;
    bool export_at_end = false;
};

// Fills `out` with the GPT-2 family preset `name` (124m, 350m, 774m, 1.5b). False if unknown.
bool model_preset(const std::string& name, ModelConfig* out);
// The presets' names, smallest first: --model's choices.
std::vector<std::string> model_preset_names();
// Empty string if valid, else a one-line message naming the offending setting and what was expected: every
// numeric setting's range, the shape rules of the kernels (head size, multiples of 16, C <= 8192), and the
// sizes the kernels index with 32-bit ints or grid dimensions, computed in 64-bit (B*T, B*T*4C, B*T*3C,
// B*H*T; with FP8 B*T <= 65535 * 128). An overflow message names the largest --batch that fits. Host-only:
// call it before any GPU work. config_checks.cpp lists which kernel imposes which limit.
std::string validate(const TrainConfig& cfg);
// The largest tokens per step B*T that the kernels can index for cfg's model and precision.
int64_t max_tokens_per_step(const TrainConfig& cfg);
// The largest --batch within the kernels' index limits for cfg's other settings (B*T a multiple of 16), or
// 0 if there is none at this --seq. GPU memory is not considered (GptModel checks that on the device).
int max_batch_for(const TrainConfig& cfg);

// Micro-steps per optimizer step on `world` GPUs: total_batch / (B * T * world), or 1 without --total-batch.
// Returns an empty string and sets *steps, or a one-line error when it does not divide.
std::string grad_accum_steps(const TrainConfig& cfg, int world, int* steps);

// Learning rate for 0-based `step`: linear warmup over `warmup` steps to `lr`, then constant or cosine
// decay to lr * final_lr_frac at the last step.
float learning_rate(const TrainConfig& cfg, int step);

// --recompute's default for this precision and model (kFp8DefaultRecompute above).
int default_recompute(Precision precision, const ModelConfig& model);
// Where checkpoints go: --checkpoint-dir, else the --resume (or --resume-if-present) directory, else "".
std::string checkpoint_dir_of(const TrainConfig& cfg);
// Where the tuned GEMM choices are stored: --gemm-cache, else ~/.cache/train_gpt/gemm_algos.tsv (under
// XDG_CACHE_HOME when set); "" for nowhere (--gemm-cache none, no autotuning, or no HOME).
std::string gemm_cache_file(const TrainConfig& cfg);
// --resume-if-present DIR once its folder is looked at (`dir_has_checkpoint`: DIR has a ckpt_* file, valid
// or not): sets cfg->resume = DIR, else leaves cfg->resume empty (a fresh start; run_summary says so).
void resolve_resume_if_present(TrainConfig* cfg, bool dir_has_checkpoint);
// --export without --export-at-end: write the weights of --resume or --init-from and exit, no training.
bool export_only(const TrainConfig& cfg);
// The mode the settings select (RunMode above).
RunMode run_mode(const TrainConfig& cfg);
// The mode's flag, for messages: "--export", "--generate N".
const char* run_mode_flag(RunMode mode);

// A choice setting's names, one table per choice: the flag takes them (llmc/host/cli.cpp, in this order),
// config.json and the summary write them (to_string, choice_name).
template <typename E>
struct ChoiceName {
    const char* name;
    E value;
};
template <typename E>
using ChoiceNames = std::vector<ChoiceName<E>>;
const ChoiceNames<Precision>& precision_names();
const ChoiceNames<LrSchedule>& schedule_names();
const ChoiceNames<Fp8Format>& fp8_format_names();
const ChoiceNames<AmaxAlgo>& amax_algo_names();
const ChoiceNames<bool>& gelu_names();                   // ModelConfig::gelu_tanh: erf, tanh
const ChoiceNames<ExportFormat>& export_format_names();  // seed, hf, llmc, llmc-bf16
// The layout in words, for people: "seed", "Hugging Face GPT-2", "llm.c float32", "llm.c bfloat16".
const char* export_format_description(ExportFormat f);
const ChoiceNames<bool>& adam_moments_names();  // TrainConfig::adam_bf16_moments: fp32, bf16
// v's name in `names` (the first one's if v has none).
template <typename E>
const char* choice_name(const ChoiceNames<E>& names, E v) {
    for (const ChoiceName<E>& n : names)
        if (n.value == v) return n.name;
    return names.front().name;
}

const char* to_string(Precision p);
const char* to_string(LrSchedule s);
const char* to_string(Fp8Format f);
const char* to_string(AmaxAlgo a);
// The whole resolved configuration, one JSON member per line (config.json, --print-config); `parameters`
// is the model's count (llmc/model/layout.h, above this folder).
std::string to_json(const TrainConfig& cfg, size_t parameters);
// What a person reads at start, '\n'-ended lines: the first "train_gpt: <model>, <parameters>", the others
// indented by two spaces: precision and FP8 recipe, batch and accumulation over `gpus` GPUs (started by
// `launcher`) and `micro_steps`, data, logs, checkpoints, weights in and out (--generate: precision, what it
// generates, the weights).
std::string run_summary(const TrainConfig& cfg, size_t parameters, int gpus, int micro_steps,
                        const std::string& launcher);
