#include "llmc/config.h"

#include <cmath>
#include <sstream>

bool model_preset(const std::string& name, ModelConfig* out) {
    struct Preset {
        const char* name;
        int L, C, H;
    };
    static const Preset presets[] = {
        {"124m", 12, 768, 12}, {"350m", 24, 1024, 16}, {"774m", 36, 1280, 20}, {"1.5b", 48, 1600, 25}};
    for (const Preset& p : presets) {
        if (name == p.name) {
            out->num_layers = p.L;
            out->channels = p.C;
            out->num_heads = p.H;
            out->vocab_size = 50304;
            out->max_seq_len = 1024;
            return true;
        }
    }
    return false;
}

std::string validate(const TrainConfig& cfg) {
    const ModelConfig& m = cfg.model;
    std::ostringstream e;
    auto positive = [&](const char* flag, long v) {
        if (v <= 0 && e.str().empty()) e << flag << " must be positive, got " << v;
    };
    positive("--layers", m.num_layers);
    positive("--channels", m.channels);
    positive("--heads", m.num_heads);
    positive("--vocab", m.vocab_size);
    positive("--max-seq", m.max_seq_len);
    positive("--batch", cfg.batch);
    positive("--seq", cfg.seq);
    positive("--steps", cfg.steps);
    positive("--log-every", cfg.log_every);
    positive("--val-every", cfg.val_every);
    positive("--val-batches", cfg.val_batches);
    positive("--fp8-history", cfg.fp8.history_len);
    positive("--fp8-health-every", cfg.fp8_health_every);
    if (!e.str().empty()) return e.str();
    if (cfg.seq > m.max_seq_len)
        return "--seq " + std::to_string(cfg.seq) + " exceeds --max-seq " + std::to_string(m.max_seq_len);
    if (m.channels % m.num_heads != 0)
        return "--channels " + std::to_string(m.channels) + " is not divisible by --heads " +
               std::to_string(m.num_heads);
    int head_dim = m.channels / m.num_heads;
    if (head_dim % 8 != 0 || head_dim > 128)
        return "head size --channels/--heads = " + std::to_string(head_dim) +
               " must be a multiple of 8 and at most 128 (cuDNN flash attention)";
    // cuBLASLt FP8 GEMMs need K and leading dimensions that are multiples of 16; BF16 GEMMs want 8.
    // C, 3C, 4C and B*T are the reduction dims of the block's GEMMs; V is the LM head's row count.
    if (m.channels % 16 != 0) return "--channels " + std::to_string(m.channels) + " must be a multiple of 16";
    if ((long)cfg.batch * cfg.seq % 16 != 0)
        return "--batch x --seq = " + std::to_string((long)cfg.batch * cfg.seq) + " must be a multiple of 16";
    if (m.vocab_size % 16 != 0)
        return "--vocab " + std::to_string(m.vocab_size) + " must be a multiple of 16 (pad the vocabulary)";
    if (!(cfg.lr > 0) || !std::isfinite(cfg.lr)) return "--lr must be a positive number";
    if (cfg.warmup < 0) return "--warmup must be >= 0";
    if (!(cfg.final_lr_frac >= 0 && cfg.final_lr_frac <= 1)) return "--final-lr-frac must be in [0, 1]";
    if (!(cfg.weight_decay >= 0)) return "--weight-decay must be >= 0";
    if (!(cfg.grad_clip >= 0)) return "--grad-clip must be >= 0 (0 disables clipping)";
    if (cfg.fp8.margin < 0) return "--fp8-margin must be >= 0";
    if (cfg.train_data.empty()) return "--train-data must name shard files or 'random'";
    return "";
}

size_t num_parameters(const ModelConfig& m) {
    size_t C = m.channels, V = m.vocab_size, T = m.max_seq_len, L = m.num_layers;
    size_t per_layer = 2 * C                // ln1 weight, bias
                       + 3 * C * C + 3 * C  // qkv
                       + C * C + C          // attention out-projection
                       + 2 * C              // ln2
                       + 4 * C * C + 4 * C  // fc
                       + 4 * C * C + C;     // fc projection
    return V * C + T * C + L * per_layer + 2 * C;
}

double flops_per_token(const ModelConfig& m, int seq_len) {
    return 6.0 * (double)num_parameters(m) + 12.0 * m.num_layers * (double)seq_len * m.channels;
}

double seed_script_flops_per_step(const ModelConfig& m) {
    return 6.0 * (double)num_parameters(m) * 16 * 1024;
}

float learning_rate(const TrainConfig& cfg, int step) {
    if (step < cfg.warmup) return cfg.lr * (float)(step + 1) / (float)cfg.warmup;
    if (cfg.schedule == LrSchedule::Constant) return cfg.lr;
    int decay_steps = cfg.steps - cfg.warmup;
    if (decay_steps <= 1) return cfg.lr;
    double progress = (double)(step - cfg.warmup) / (double)(decay_steps - 1);  // 0 .. 1 at the last step
    if (progress > 1) progress = 1;
    double min_lr = (double)cfg.lr * cfg.final_lr_frac;
    return (float)(min_lr + 0.5 * (cfg.lr - min_lr) * (1.0 + std::cos(M_PI * progress)));
}

const char* to_string(Precision p) { return p == Precision::FP8 ? "fp8" : "bf16"; }
const char* to_string(LrSchedule s) { return s == LrSchedule::Cosine ? "cosine" : "constant"; }
const char* to_string(Fp8Format f) { return f == Fp8Format::Hybrid ? "hybrid" : "e4m3"; }
const char* to_string(AmaxAlgo a) { return a == AmaxAlgo::Max ? "max" : "most_recent"; }

static std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if ((unsigned char)c < 0x20) {
            out += ' ';
            continue;
        }
        out += c;
    }
    return out;
}

std::string to_json(const TrainConfig& c) {
    const ModelConfig& m = c.model;
    std::ostringstream o;
    o.precision(9);
    o << "{\n"
      << "  \"model\": \"" << json_escape(c.model_name) << "\",\n"
      << "  \"layers\": " << m.num_layers << ",\n"
      << "  \"channels\": " << m.channels << ",\n"
      << "  \"heads\": " << m.num_heads << ",\n"
      << "  \"vocab\": " << m.vocab_size << ",\n"
      << "  \"max_seq\": " << m.max_seq_len << ",\n"
      << "  \"gelu\": \"" << (m.gelu_tanh ? "tanh" : "erf") << "\",\n"
      << "  \"parameters\": " << num_parameters(m) << ",\n"
      << "  \"precision\": \"" << to_string(c.precision) << "\",\n"
      << "  \"fp8_format\": \"" << to_string(c.fp8.format) << "\",\n"
      << "  \"fp8_history\": " << c.fp8.history_len << ",\n"
      << "  \"fp8_amax_algo\": \"" << to_string(c.fp8.amax_algo) << "\",\n"
      << "  \"fp8_margin\": " << c.fp8.margin << ",\n"
      << "  \"batch\": " << c.batch << ",\n"
      << "  \"seq\": " << c.seq << ",\n"
      << "  \"steps\": " << c.steps << ",\n"
      << "  \"train_data\": \"" << json_escape(c.train_data) << "\",\n"
      << "  \"val_data\": \"" << json_escape(c.val_data) << "\",\n"
      << "  \"val_every\": " << c.val_every << ",\n"
      << "  \"val_batches\": " << c.val_batches << ",\n"
      << "  \"lr\": " << c.lr << ",\n"
      << "  \"warmup\": " << c.warmup << ",\n"
      << "  \"schedule\": \"" << to_string(c.schedule) << "\",\n"
      << "  \"final_lr_frac\": " << c.final_lr_frac << ",\n"
      << "  \"weight_decay\": " << c.weight_decay << ",\n"
      << "  \"grad_clip\": " << c.grad_clip << ",\n"
      << "  \"beta1\": " << c.beta1 << ",\n"
      << "  \"beta2\": " << c.beta2 << ",\n"
      << "  \"adam_eps\": " << c.adam_eps << ",\n"
      << "  \"seed\": " << c.seed << ",\n"
      << "  \"log_dir\": \"" << json_escape(c.log_dir) << "\",\n"
      << "  \"log_every\": " << c.log_every << ",\n"
      << "  \"fp8_health_every\": " << c.fp8_health_every << ",\n"
      << "  \"profile\": " << (c.profile ? "true" : "false") << "\n"
      << "}\n";
    return o.str();
}
