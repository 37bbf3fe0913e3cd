// The table of settings (llmc/host/settings.h), one function per help group, rows in the help's order.
#include "llmc/host/settings.h"

namespace {

// A row's member: `FIELD(fp8.margin)` is a function returning TrainConfig's c.fp8.margin by reference.
#define FIELD(member)               \
    +[](TrainConfig & c) -> auto& { \
        return c.member;            \
    }

// The run modes a row's setting does something in (Setting::only_in): training; the export-only run, which
// validates (--val-data), evaluates HellaSwag and logs before it writes the weights; generation, which runs
// the forward on one sequence of --seq tokens and writes nothing but the text. Unmarked rows: every mode.
constexpr RunMode kTrain = RunMode::Train, kExport = RunMode::Export, kGenerate = RunMode::Generate;

void add(std::vector<Setting>* rows, const char* group, std::vector<Setting> group_rows) {
    for (Setting& s : group_rows) {
        s.group = group;
        rows->push_back(std::move(s));
    }
}

// "124m|350m|774m|1.5b": --model's choices.
std::string preset_choices() {
    std::string s;
    for (const std::string& n : model_preset_names()) s += (s.empty() ? "" : "|") + n;
    return s;
}

void model_settings(std::vector<Setting>* rows) {
    add(rows, "Model",
        {choice("--precision", "GEMM precision: bf16, or fp8 with delayed scaling (see the FP8 flags)",
                precision_names(), FIELD(precision))
             .key("precision"),
         setting(
             "--model",
             "GPT-2 size preset (sets layers, channels, heads, vocab, max-seq; 1558m, llm.c's name, is 1.5b)",
             FIELD(model_name))
             .value(preset_choices())
             .key("model"),
         setting("--layers", "override the preset's number of layers L", FIELD(model.num_layers))
             .applied_over_preset()
             .at_least(1)
             .key("layers"),
         setting("--channels", "override the preset's channels C (multiple of 16)", FIELD(model.channels))
             .applied_over_preset()
             .at_least(1)
             .key("channels"),
         setting("--heads", "override the preset's attention heads H", FIELD(model.num_heads))
             .applied_over_preset()
             .at_least(1)
             .key("heads"),
         setting("--vocab", "override the (padded) vocabulary size V (multiple of 16)",
                 FIELD(model.vocab_size))
             .applied_over_preset()
             .at_least(1)
             .key("vocab"),
         setting("--max-seq", "override the maximum sequence length (position embedding rows)",
                 FIELD(model.max_seq_len))
             .applied_over_preset()
             .at_least(1)
             .key("max_seq"),
         choice("--gelu", "GELU: exact erf (nn.GELU default) or tanh approximation", gelu_names(),
                FIELD(model.gelu_tanh))
             .key("gelu")});
}

void training_settings(std::vector<Setting>* rows) {
    add(rows, "Training",
        {setting("-b,--batch", "micro-batch size B (sequences per micro-step per GPU)", FIELD(batch))
             .at_least(1)
             .key("batch")
             .only_in({kTrain, kExport}),
         setting(
             "--total-batch",
             "tokens per optimizer step = batch x seq x micro-steps x GPUs (gradient accumulation; 0: batch "
             "x seq x GPUs)",
             FIELD(total_batch))
             .key("total_batch")
             .only_in({kTrain}),
         setting("-t,--seq", "sequence length T (<= --max-seq)", FIELD(seq)).at_least(1).key("seq"),
         setting("-n,--steps", "number of optimizer steps", FIELD(steps))
             .at_least(1)
             .key("steps")
             .only_in({kTrain}),
         setting("--lr", "peak learning rate", FIELD(lr)).key("lr").only_in({kTrain}),
         setting("--warmup", "linear warmup steps (from lr/warmup to lr)", FIELD(warmup))
             .at_least(0)
             .key("warmup")
             .only_in({kTrain}),
         choice("--schedule", "learning-rate schedule after warmup", schedule_names(), FIELD(schedule))
             .key("schedule")
             .only_in({kTrain}),
         setting("--final-lr-frac", "cosine decays to lr * this at the last step", FIELD(final_lr_frac))
             .key("final_lr_frac")
             .only_in({kTrain}),
         setting("--weight-decay", "AdamW weight decay (matrices only)", FIELD(weight_decay))
             .key("weight_decay")
             .only_in({kTrain}),
         setting("--grad-clip", "clip the global gradient norm to this (0: off)", FIELD(grad_clip))
             .key("grad_clip")
             .only_in({kTrain}),
         setting("--beta1", "AdamW beta1", FIELD(beta1)).key("beta1").only_in({kTrain}),
         setting("--beta2", "AdamW beta2", FIELD(beta2)).key("beta2").only_in({kTrain}),
         setting(nullptr, "AdamW epsilon (no flag)", FIELD(adam_eps)).key("adam_eps"),
         choice(
             "--adam-moments",
             "storage of the AdamW moments m and v (the arithmetic is FP32 either way); bf16: 4 bytes less "
             "memory per parameter, 8 bytes less traffic per step",
             adam_moments_names(), FIELD(adam_bf16_moments))
             .key("adam_moments"),
         setting("--seed", "seed for weight init, random tokens and sampling", FIELD(seed)).key("seed")});
}

void step_settings(std::vector<Setting>* rows) {
    // the count is the one the GEMM autotuner asks cuBLASLt for (help texts are kept as C strings: static)
    static const std::string gemm_autotune_help =
        "time cuBLASLt's best " + std::to_string(kGemmCandidates) +
        " algorithms per GEMM in the first step and keep the fastest (stored in --gemm-cache, so later runs "
        "choose the same); --no-gemm-autotune: the heuristic's first";
    add(rows, "Training",
        {setting(
             "--recompute",
             "0: store what backward needs; 1 (fp8): rebuild the fc-projection's FP8 input in the dGELU pass "
             "of backward; 2 (fp8): also the attention projection's (FP8 then needs less memory than BF16; "
             "the default from 774m, where it costs about nothing; README lists the cost)",
             FIELD(recompute))
             .shown_default("0 (fp8 from 774m: 2)")
             .key("recompute")
             .only_in({kTrain}),
         setting("--deterministic,!--no-deterministic",
                 "bitwise reproducible attention backward; --no-deterministic: cuDNN's faster atomics",
                 FIELD(deterministic))
             .key("deterministic")
             .only_in({kTrain}),
         setting(
             "--fuse-residual,!--no-fuse-residual",
             "add the residual stream in the attention and MLP projection GEMMs' epilogue (one rounding of "
             "the sum; the LayerNorm after them reads one tensor, not two): faster (H200, GPT-1.5B: fp8 "
             "-0.45%, bf16 -0.8% a step), not the default: its loss check moved the validation loss by up "
             "to 1.2%",
             FIELD(fuse_residual))
             .key("fuse_residual")
             .only_in({kTrain}),
         setting("--cuda-graph,!--no-cuda-graph",
                 "replay each training step as one captured CUDA graph (bitwise the same results); "
                 "--no-cuda-graph: launch every kernel from the host",
                 FIELD(cuda_graph))
             .key("cuda_graph")
             .only_in({kTrain}),
         setting("--gemm-autotune,!--no-gemm-autotune", gemm_autotune_help.c_str(), FIELD(gemm_autotune))
             .key("gemm_autotune"),
         setting("--gemm-variants,!--no-gemm-variants",
                 "with --gemm-autotune: then screen variants of the chosen algorithm (tiles, cluster shapes, "
                 "kernel options) and keep the fastest whose output is bitwise its own: the same training, "
                 "0-2% faster (H200), the first step tunes 7-20 s longer, once per GPU and shape (not in "
                 "runs that only generate or export)",
                 FIELD(gemm_variants))
             .key("gemm_variants"),
         setting("--gemm-cache",
                 "file of the tuned GEMM choices, shared by runs on this GPU (default: ~/.cache/train_gpt/"
                 "gemm_algos.tsv; 'none': not stored)",
                 FIELD(gemm_cache))
             .value("FILE")
             .key("gemm_cache")});
}

void data_settings(std::vector<Setting>* rows) {
    add(rows, "Data",
        {setting("--train-data",
                 "training shards (glob, e.g. 'data/x_train_*.bin'), or 'random' for uniform random tokens",
                 FIELD(train_data))
             .value("GLOB")
             .key("train_data")
             .only_in({kTrain}),
         setting("--val-data", "validation shards (glob); empty: no validation", FIELD(val_data))
             .value("GLOB")
             .key("val_data")
             .only_in({kTrain, kExport}),
         setting("--val-every", "validate every N steps (and after the last)", FIELD(val_every))
             .at_least(1)
             .key("val_every")
             .only_in({kTrain}),
         setting("--val-batches", "batches per validation", FIELD(val_batches))
             .at_least(1)
             .key("val_batches")
             .only_in({kTrain, kExport}),
         setting("--eval-hellaswag",
                 "HellaSwag file (scripts/data/prepare_hellaswag.py): accuracy after the last step (acc and "
                 "acc_norm, as llm.c)",
                 FIELD(eval_hellaswag))
             .value("FILE")
             .key("eval_hellaswag")
             .only_in({kTrain, kExport}),
         setting("--eval-every", "also evaluate HellaSwag every N steps, from step 0 (0: only at the end)",
                 FIELD(eval_every))
             .at_least(0)
             .key("eval_every")
             .only_in({kTrain}),
         setting(
             "--eval-hellaswag-dump",
             "write each example's ending losses and choices here (the latest evaluation; with several GPUs "
             "one FILE.rankR per rank)",
             FIELD(eval_hellaswag_dump))
             .value("FILE")
             .key("eval_hellaswag_dump")
             .only_in({kTrain, kExport})});
}

void fp8_settings(std::vector<Setting>* rows) {
    add(rows, "FP8 (with --precision fp8)",
        {choice("--fp8-format", "hybrid: E4M3 forward, E5M2 gradients; e4m3: E4M3 everywhere",
                fp8_format_names(), FIELD(fp8.format))
             .key("fp8_format"),
         setting("--fp8-history", "amax history length (delayed scaling window)", FIELD(fp8.history_len))
             .at_least(1)
             .key("fp8_history"),
         choice("--fp8-amax-algo", "scale from the max of the history, or the most recent amax",
                amax_algo_names(), FIELD(fp8.amax_algo))
             .key("fp8_amax_algo"),
         setting("--fp8-margin", "scale = fp8_max / amax / 2^margin", FIELD(fp8.margin))
             .at_least(0)
             .key("fp8_margin"),
         setting("--fp8-lm-head,!--no-fp8-lm-head",
                 "the LM head (tied embedding) as an FP8 Linear too (its own scales); --no-fp8-lm-head: BF16",
                 FIELD(fp8.lm_head))
             .key("fp8_lm_head"),
         setting("--fp8-fast-accum,!--no-fp8-fast-accum",
                 "forward GEMMs accumulate in the tensor cores' fast mode (as Transformer Engine's); "
                 "--no-fp8-fast-accum: promoted to FP32 as in the gradient GEMMs (closer to BF16's loss at "
                 "GPT-1.5B, ~2% slower)",
                 FIELD(fp8.fast_accum))
             .key("fp8_fast_accum"),
         setting("--fp8-health-every", "print scale range, saturated and fallen-back slots every N steps",
                 FIELD(fp8_health_every))
             .at_least(1)
             .key("fp8_health_every")
             .only_in({kTrain})});
}

void logging_settings(std::vector<Setting>* rows) {
    add(rows, "Logging",
        {setting("--log-dir", "directory for config.json (the resolved configuration) and train.jsonl",
                 FIELD(log_dir))
             .value("DIR")
             .key("log_dir")
             .only_in({kTrain, kExport}),
         setting("--log-every", "print a line every N steps", FIELD(log_every))
             .at_least(1)
             .key("log_every")
             .only_in({kTrain}),
         setting("--profile",
                 "after training, run 3 extra steps with per-phase GPU timing (gemm, cast, attention, "
                 "optimizer, other), replaying the captured step with its phase marks as graph nodes",
                 FIELD(profile))
             .key("profile")
             .only_in({kTrain})});
}

void checkpoint_settings(std::vector<Setting>* rows) {
    add(rows, "Checkpoints",
        {setting("--checkpoint-dir",
                 "write checkpoints here (default with --resume or --resume-if-present: that directory)",
                 FIELD(checkpoint_dir))
             .value("DIR")
             .key("checkpoint_dir")
             .only_in({kTrain}),
         setting("--checkpoint-every", "checkpoint every N steps (0: only at the end and on a signal)",
                 FIELD(checkpoint_every))
             .at_least(0)
             .key("checkpoint_every")
             .only_in({kTrain}),
         setting("--keep-checkpoints", "keep the newest K checkpoints", FIELD(keep_checkpoints))
             .at_least(1)
             .key("keep_checkpoints")
             .only_in({kTrain}),
         setting("--checkpoint-required",
                 "a failed checkpoint write ends the run (default: a warning, training continues)",
                 FIELD(checkpoint_required))
             .key("checkpoint_required")
             .only_in({kTrain}),
         setting("--resume", "continue from the newest valid checkpoint in this directory", FIELD(resume))
             .value("DIR")
             .key("resume"),
         setting("--resume-if-present",
                 "--resume DIR when DIR has a checkpoint, else start fresh and checkpoint there (the same "
                 "command continues a run after a crash)",
                 FIELD(resume_if_present))
             .value("DIR")
             .key("resume_if_present")
             .only_in({kTrain}),
         setting(
             "--max-bad-steps",
             "stop (with a checkpoint of the last good state) after K consecutive steps with a non-finite "
             "loss or gradient norm; each such step is skipped",
             FIELD(max_bad_steps))
             .at_least(1)
             .key("max_bad_steps")
             .only_in({kTrain})});
}

void gpu_and_sampling_settings(std::vector<Setting>* rows) {
    add(rows, "Several GPUs",
        {setting("--rendezvous",
                 "how the ranks exchange NCCL's id: tcp://HOST:PORT, file:PATH (shared filesystem) or mpi; "
                 "default: from the launcher (mpirun: mpi, torchrun: MASTER_ADDR:MASTER_PORT+1, srun: "
                 "MASTER_ADDR:MASTER_PORT)",
                 FIELD(rendezvous))
             .value("SPEC")
             .key("rendezvous")
             .only_in({kTrain, kExport}),
         setting("--comm-timeout",
                 "seconds a rank waits for the others (a dead or hung rank) before it stops with an error",
                 FIELD(comm_timeout))
             .key("comm_timeout")
             .only_in({kTrain, kExport}),
         setting(
             "--ranks-per-gpu",
             "local ranks sharing one GPU (local rank r uses GPU r / K): to check a multi-GPU run on fewer "
             "GPUs; more than 1 needs NCCL >= 2.30 and is slow (the ranks take turns on the GPU)",
             FIELD(ranks_per_gpu))
             .value("K")
             .at_least(1)
             .key("ranks_per_gpu")
             .only_in({kTrain, kExport})});
    add(rows, "Sampling",
        {setting("--generate",
                 "print --prompt and N tokens generated after it (streamed, --temperature, --top-k, --seed) "
                 "from the weights of --init-from or --resume, and exit: no training, nothing written",
                 FIELD(generate))
             .value("N")
             .at_least(0)
             .key("generate"),  // every mode: N > 0 selects --generate's, 0 is off
         setting("--sample-every", "generate a text sample every N steps and after the last (0: never)",
                 FIELD(sample_every))
             .at_least(0)
             .key("sample_every")
             .only_in({kTrain}),
         setting("--sample-tokens", "tokens per sample", FIELD(sample_tokens))
             .at_least(1)
             .key("sample_tokens")
             .only_in({kTrain}),
         setting("--prompt", "text the samples (and --generate) continue (default: start of a document)",
                 FIELD(prompt))
             .key("prompt")
             .only_in({kTrain, kGenerate}),
         setting("--temperature", "sampling temperature (0: always the most likely token)",
                 FIELD(temperature))
             .key("temperature")
             .only_in({kTrain, kGenerate}),
         setting("--top-k", "sample among the K most likely tokens (0: all)", FIELD(top_k))
             .at_least(0)
             .key("top_k")
             .only_in({kTrain, kGenerate}),
         setting("--tokenizer",
                 "tokenizer file from scripts/data/prepare_data.py (default: tokenizer.bin next to the train "
                 "shards; bytes for --vocab 256)",
                 FIELD(tokenizer))
             .value("FILE")
             .key("tokenizer")
             .only_in({kTrain, kGenerate})});
}

void weights_settings(std::vector<Setting>* rows) {
    add(rows, "Weights",
        {setting("--init-from",
                 "start from these weights: a seed-layout .safetensors (our export), a Hugging Face GPT-2 "
                 "model.safetensors / folder, or an llm.c model file (vocabulary padded with zero rows)",
                 FIELD(init_from))
             .value("FILE|DIR")
             .key("init_from"),
         setting("--export",
                 "write the weights (from --resume or --init-from) and exit; with --export-at-end: after "
                 "training; a file (seed) or a folder (hf)",
                 FIELD(export_path))
             .value("FILE|DIR")
             .key("export")
             .only_in({kTrain, kExport}),
         choice("--export-format",
                "seed: one file with the PyTorch module's names; hf: a Hugging Face GPT-2 folder "
                "(model.safetensors + config.json); llmc, llmc-bf16: llm.c's model file (float32, bfloat16)",
                export_format_names(), FIELD(export_format))
             .key("export_format")
             .only_in({kTrain, kExport}),
         setting("--export-at-end", "export after the last step", FIELD(export_at_end))
             .key("export_at_end")
             .only_in({kTrain})});
}

#undef FIELD

}  // namespace

std::string Setting::long_name() const {
    std::string names = flags ? flags : "";
    const size_t neg = names.find(",!");
    if (neg != std::string::npos) names.resize(neg);
    const size_t dd = names.find("--");
    return dd == std::string::npos ? names : names.substr(dd);
}

std::string Setting::negated_name() const {
    const std::string names = flags ? flags : "";
    const size_t neg = names.find(",!");
    return neg == std::string::npos ? "" : names.substr(neg + 2);
}

const std::vector<Setting>& settings() {
    static const std::vector<Setting> rows = [] {
        std::vector<Setting> r;
        for (auto group :
             {model_settings, training_settings, step_settings, data_settings, fp8_settings, logging_settings,
              checkpoint_settings, gpu_and_sampling_settings, weights_settings})
            group(&r);
        return r;
    }();
    return rows;
}
