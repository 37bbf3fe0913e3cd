// The choice settings' names (one table per choice) and the small derived settings.
#include "llmc/host/config.h"

#include "llmc/host/choice_cache.h"

const ChoiceNames<Precision>& precision_names() {
    static const ChoiceNames<Precision> names = {{"bf16", Precision::BF16}, {"fp8", Precision::FP8}};
    return names;
}
const ChoiceNames<LrSchedule>& schedule_names() {
    static const ChoiceNames<LrSchedule> names = {{"cosine", LrSchedule::Cosine},
                                                  {"constant", LrSchedule::Constant}};
    return names;
}
const ChoiceNames<Fp8Format>& fp8_format_names() {
    static const ChoiceNames<Fp8Format> names = {{"hybrid", Fp8Format::Hybrid}, {"e4m3", Fp8Format::E4M3}};
    return names;
}
const ChoiceNames<AmaxAlgo>& amax_algo_names() {
    static const ChoiceNames<AmaxAlgo> names = {{"max", AmaxAlgo::Max},
                                                {"most_recent", AmaxAlgo::MostRecent}};
    return names;
}
const ChoiceNames<bool>& gelu_names() {
    static const ChoiceNames<bool> names = {{"erf", false}, {"tanh", true}};
    return names;
}
const ChoiceNames<ExportFormat>& export_format_names() {
    static const ChoiceNames<ExportFormat> names = {{"seed", ExportFormat::Seed},
                                                    {"hf", ExportFormat::HF},
                                                    {"llmc", ExportFormat::Llmc},
                                                    {"llmc-bf16", ExportFormat::LlmcBf16}};
    return names;
}
const ChoiceNames<bool>& adam_moments_names() {
    static const ChoiceNames<bool> names = {{"fp32", false}, {"bf16", true}};
    return names;
}

const char* export_format_description(ExportFormat f) {
    switch (f) {
        case ExportFormat::HF:
            return "Hugging Face GPT-2";
        case ExportFormat::Llmc:
            return "llm.c float32";
        case ExportFormat::LlmcBf16:
            return "llm.c bfloat16";
        case ExportFormat::Seed:
            break;
    }
    return "seed";
}

const char* to_string(Precision p) { return choice_name(precision_names(), p); }
const char* to_string(LrSchedule s) { return choice_name(schedule_names(), s); }
const char* to_string(Fp8Format f) { return choice_name(fp8_format_names(), f); }
const char* to_string(AmaxAlgo a) { return choice_name(amax_algo_names(), a); }

int default_recompute(Precision precision, const ModelConfig& m) {
    if (precision != Precision::FP8) return 0;
    const double block_params = 12.0 * m.num_layers * (double)m.channels * m.channels;
    return block_params >= kRecomputeMinBlockParams ? kFp8DefaultRecompute : 0;
}

std::string checkpoint_dir_of(const TrainConfig& cfg) {
    if (!cfg.checkpoint_dir.empty()) return cfg.checkpoint_dir;
    return cfg.resume.empty() ? cfg.resume_if_present : cfg.resume;
}

std::string gemm_cache_file(const TrainConfig& cfg) {
    if (!cfg.gemm_autotune || cfg.gemm_cache == "none") return "";
    return cfg.gemm_cache.empty() ? default_cache_path("gemm_algos.tsv") : cfg.gemm_cache;
}

void resolve_resume_if_present(TrainConfig* cfg, bool dir_has_checkpoint) {
    if (!cfg->resume_if_present.empty() && dir_has_checkpoint) cfg->resume = cfg->resume_if_present;
}

bool export_only(const TrainConfig& cfg) { return !cfg.export_path.empty() && !cfg.export_at_end; }

RunMode run_mode(const TrainConfig& cfg) {
    if (cfg.generate > 0) return RunMode::Generate;
    return export_only(cfg) ? RunMode::Export : RunMode::Train;
}

const char* run_mode_flag(RunMode mode) {
    return mode == RunMode::Export ? "--export" : mode == RunMode::Generate ? "--generate N" : "training";
}
