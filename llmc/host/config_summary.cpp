// What a person reads at start (config.h: run_summary).
#include <sstream>

#include "llmc/host/config.h"

namespace {

std::string with_commas(uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); i++) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string plural(long n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string shortest(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
}

// "GPT-2 124m (12 layers, ...)", "GPT-2 124m with overrides (2 layers, ...)" after --layers and the like.
std::string model_line(const TrainConfig& c, size_t parameters) {
    const ModelConfig& m = c.model;
    ModelConfig preset;
    const bool is_preset = model_preset(c.model_name, &preset) && preset.num_layers == m.num_layers &&
                           preset.channels == m.channels && preset.num_heads == m.num_heads &&
                           preset.vocab_size == m.vocab_size && preset.max_seq_len == m.max_seq_len;
    return "train_gpt: GPT-2 " + c.model_name + (is_preset ? "" : " with overrides") + " (" +
           std::to_string(m.num_layers) + " layers, " + std::to_string(m.channels) + " channels, " +
           std::to_string(m.num_heads) + " heads, vocab " + std::to_string(m.vocab_size) + ", max seq " +
           std::to_string(m.max_seq_len) + ", GELU " + choice_name(gelu_names(), m.gelu_tanh) + "), " +
           with_commas(parameters) + " parameters\n";
}

std::string precision_line(const TrainConfig& c) {
    std::string s = "  precision    ";
    const std::string adam =
        c.adam_bf16_moments ? "FP32 master weights, BF16 AdamW moments" : "FP32 master weights and AdamW";
    if (c.precision == Precision::BF16) return s + "bf16 (BF16 GEMMs, " + adam + ")\n";
    const Fp8Config& f = c.fp8;
    return s + "fp8 " + to_string(f.format) +
           (f.format == Fp8Format::Hybrid ? " (E4M3 forward, E5M2 gradients)" : " (E4M3 everywhere)") +
           ", delayed scaling: amax " + to_string(f.amax_algo) + " over " + std::to_string(f.history_len) +
           " steps, margin " + std::to_string(f.margin) + (f.lm_head ? ", LM head in fp8" : "") +
           (c.recompute ? ", recompute " + std::to_string(c.recompute) : "") +
           (c.adam_bf16_moments ? ", BF16 AdamW moments" : "") + "\n";
}

// How the GEMMs find their cuBLASLt algorithm: a shape not yet stored is tuned in the step that first runs
// it, which is why a fresh GPU's first step takes seconds longer than the rest.
std::string gemm_line(const TrainConfig& c) {
    const std::string s = "  GEMMs        cuBLASLt, ";
    if (!c.gemm_autotune) return s + "the heuristic's first algorithm (no autotuning)\n";
    const std::string file = gemm_cache_file(c);
    return s + "the heuristic's " + std::to_string(kGemmCandidates) + " best timed" +
           (c.gemm_variants ? ", then variants with bitwise the same output (--gemm-variants)" : "") +
           " in the first step that runs a shape, " +
           (file.empty() ? "not stored" : "stored in " + file + " for later runs on this GPU") + "\n";
}

std::string batch_line(const TrainConfig& c, int gpus, int micro_steps, const std::string& launcher) {
    const uint64_t tokens = (uint64_t)c.batch * c.seq * micro_steps * gpus;
    std::string lr = "lr " + shortest(c.lr) + " " + to_string(c.schedule);
    if (c.schedule == LrSchedule::Cosine) lr += " to " + shortest((float)(c.lr * c.final_lr_frac));
    if (c.warmup > 0) lr += " after " + plural(c.warmup, "warmup step", "warmup steps");
    // ranks sharing GPUs (--ranks-per-gpu) are counted as ranks, not GPUs
    const std::string ranks = c.ranks_per_gpu > 1
                                  ? plural(gpus, "rank", "ranks") + " (" + launcher + ", " +
                                        std::to_string(c.ranks_per_gpu) + " per GPU)"
                                  : plural(gpus, "GPU", "GPUs") + (gpus > 1 ? " (" + launcher + ")" : "");
    return "  batch        " + std::to_string(c.batch) + " x " + std::to_string(c.seq) + " tokens x " +
           plural(micro_steps, "micro-step", "micro-steps") + " x " + ranks + " = " + with_commas(tokens) +
           " tokens per step; " + plural(c.steps, "step", "steps") + ", " + lr + "\n";
}

std::string data_line(const TrainConfig& c) {
    std::string s = "  data         ";
    s += c.train_data == "random" ? "random tokens (seed " + std::to_string(c.seed) + ")"
                                  : "train '" + c.train_data + "'";
    if (!c.val_data.empty())
        s += ", validation '" + c.val_data + "' every " + plural(c.val_every, "step", "steps") + " (" +
             plural(c.val_batches, "batch", "batches") + ")";
    if (c.sample_every > 0) s += ", a text sample every " + plural(c.sample_every, "step", "steps");
    s += "\n";
    if (!c.eval_hellaswag.empty())
        s += "  eval         HellaSwag '" + c.eval_hellaswag + "' " +
             (c.eval_every > 0 ? "every " + plural(c.eval_every, "step", "steps") + " and " : "") +
             "after the last step" +
             (c.eval_hellaswag_dump.empty() ? "" : ", per-example results to " + c.eval_hellaswag_dump) +
             "\n";
    return s;
}

// The weights a run starts from (and --resume's or --resume-if-present's folder).
std::string weights_lines(const TrainConfig& c) {
    std::string s;
    if (!c.resume.empty()) s += "  resume       the newest valid checkpoint in " + c.resume + "\n";
    if (c.resume.empty() && !c.resume_if_present.empty())
        s += "  resume       none: no checkpoint in " + c.resume_if_present + " yet, starting fresh\n";
    if (!c.init_from.empty()) s += "  weights      from " + c.init_from + "\n";
    return s;
}

// --generate: what it prints and how it picks the tokens.
std::string generate_line(const TrainConfig& c) {
    const std::string how = c.temperature == 0 ? "greedy (temperature 0)"
                                               : "temperature " + shortest(c.temperature) + ", top-k " +
                                                     (c.top_k > 0 ? std::to_string(c.top_k) : "all") +
                                                     ", seed " + std::to_string(c.seed);
    return "  generate     " + plural(c.generate, "token", "tokens") +
           " after the prompt on stdout (a window of " + plural(c.seq, "token", "tokens") + "), " + how +
           "; tokenizer " + (c.tokenizer.empty() ? "bytes" : "'" + c.tokenizer + "'") + "\n";
}

std::string output_lines(const TrainConfig& c) {
    std::string s = "  logs         " + c.log_dir + "/config.json, " + c.log_dir + "/train.jsonl" +
                    (c.resume.empty() ? "" : " (appended)") + "\n";
    const std::string ckpt = checkpoint_dir_of(c);
    s += "  checkpoints  ";
    if (run_mode(c) != RunMode::Train)
        s += "none (no training)";
    else if (ckpt.empty())
        s += "none (--checkpoint-dir DIR)";
    else
        s +=
            ckpt + "/ " +
            (c.checkpoint_every > 0 ? "every " + plural(c.checkpoint_every, "step", "steps") + " and " : "") +
            "at the end, the newest " + std::to_string(c.keep_checkpoints) + " kept";
    s += "\n" + weights_lines(c);
    if (!c.export_path.empty())
        s += "  export       " + c.export_path + " (" + export_format_description(c.export_format) +
             " layout) " + (export_only(c) ? "and exit, no training" : "after the last step") + "\n";
    return s;
}

}  // namespace

std::string run_summary(const TrainConfig& cfg, size_t parameters, int gpus, int micro_steps,
                        const std::string& launcher) {
    if (run_mode(cfg) == RunMode::Generate)
        return model_line(cfg, parameters) + precision_line(cfg) + gemm_line(cfg) + generate_line(cfg) +
               weights_lines(cfg);
    return model_line(cfg, parameters) + precision_line(cfg) + gemm_line(cfg) +
           batch_line(cfg, gpus, micro_steps, launcher) + data_line(cfg) + output_lines(cfg);
}
