#include "llmc/host/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "llmc/host/json.h"
#include "llmc/host/launch.h"

namespace {
struct Preset {
    const char* name;
    int L, C, H;
};
constexpr Preset kPresets[] = {
    {"124m", 12, 768, 12}, {"350m", 24, 1024, 16}, {"774m", 36, 1280, 20}, {"1.5b", 48, 1600, 25}};
}  // namespace

bool model_preset(const std::string& name, ModelConfig* out) {
    for (const Preset& p : kPresets) {
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

std::vector<std::string> model_preset_names() {
    std::vector<std::string> names;
    for (const Preset& p : kPresets) names.push_back(p.name);
    return names;
}

// ---------------------------------------------------------------------------------------------------------
// Kernel size limits. Audit of what the GPU code indexes with (llmc/*.cu, llmc/kernels/attention.cu):
//   - Element offsets into activations, logits, parameters and optimizer state are size_t/long everywhere
//     (e.g. fused_classifier_kernel's row = logits + (size_t)blockIdx.x * V, Arena sizes, adamw/global_norm
//     over P, the GEMM outputs through cuBLASLt's 64-bit layouts). So B*T*V (logits), V*C, maxT*C, L*4C*C
//     and the parameter count have no 32-bit limit; GPU memory bounds them (GptModel's check_memory_plan).
//   - Row counts are int: gpt_step.cu computes N = B*T in int; cuBLASLt plans take int32 m/n/k/ld (matmul.cu
//     GemmKey: N, C, 3C, 4C, V); fused_classifier launches N blocks; layernorm/cast kernels index rows in
//     int and step past N by up to one split of rows (matmul_dbias_partial_kernel: row_begin +
//     rows_per_split <= 2N; layernorm_backward_kernel: row + gridDim.x). Hence kMaxTokens = 2^30, which
//     keeps every such sum below 2^31.
//   - 1-D grids of 8-element x 256-thread blocks over N*4C elements: gelu_forward / gelu_backward_inplace
//     (llmc/kernels/gelu.cu, which CHECKs grid.x <= 2^31-1) and encoder_forward (N*C elements, implied).
//   - FP8 cast+transpose kernels (llmc/fp8/cast.cu launch_cast_transpose, llmc/fp8/fp8_producers.cu
//     fp8_gelu_cast_transpose) tile rows by 128 in grid.y, which is at most 65535.
//   - cuDNN flash attention (llmc/kernels/attention.cu) gets int64 dims/strides, but flash-attention kernels
//     commonly compute offsets in int32 and cuDNN documents no larger tensors: the packed qkv tensor
//     (B*T*3C elements) and the softmax stats (B*H*T) are kept within 2^31-1 (conservative; unreachable
//     within an H200's memory for the GPT-2 presets).
//   - Channels: the LayerNorm kernels keep a row in registers, C <= kLayerNormMaxC = 8192
//     (llmc/kernels/layernorm.cuh; checked by layernorm.cu check_c and fp8_producers.cu check_ln_shape).
//   - FP8 scale state: update_scales_kernel walks the amax history in int steps of 64 rows
//     (history <= 2^31 - 64); slots are int, 3 per Linear, 4 Linears per layer (12 L <= 2^31-1);
//     fp8_update_scales/fp8_calibrate_scales CHECK margin <= 64.
namespace {

constexpr int64_t kIntMax = 2147483647;                  // INT32_MAX
constexpr int kMaxChannels = 8192;                       // kLayerNormMaxC (llmc/kernels/layernorm.cuh)
constexpr int64_t kMaxTokens = int64_t(1) << 30;         // int rows + one split of slack (see above)
constexpr int64_t kMaxGeluElements = 8 * 256 * kIntMax;  // gelu.cu: grid.x = ceil(n / 2048) <= 2^31-1
constexpr int64_t kMaxFp8Tokens = 65535 * 128;           // fp8 cast-transpose: grid.y = ceil(N / 128)
constexpr int kMaxFp8History = kIntMax - 63;             // update_scales_kernel: base += 64 stays an int
constexpr int kMaxFp8Margin = 64;                        // fp8_update_scales / fp8_calibrate_scales
constexpr int kMaxFp8Layers = (int)(kIntMax / 12);       // 12 FP8 scale slots per layer, int slot index

// A limit on a size proportional to the tokens per step N = B*T: N * per_token <= limit.
struct TokenLimit {
    const char* what;  // the size, in flag terms
    int64_t per_token;
    int64_t limit;
    const char* who;  // the kernel that imposes it
};

std::vector<TokenLimit> token_limits(const TrainConfig& cfg) {
    const int64_t C = cfg.model.channels, H = cfg.model.num_heads;
    std::vector<TokenLimit> l = {
        {"B*T", 1, kMaxTokens, "token rows are int in the model, the GEMMs and the row kernels"},
        {"B*T*4*channels", 4 * C, kMaxGeluElements, "grid of the GELU kernels, 2048 elements per block"},
        {"B*T*3*channels", 3 * C, kIntMax, "cuDNN flash attention's packed qkv tensor"},
        {"B*heads*T", H, kIntMax, "cuDNN flash attention's softmax stats"},
    };
    if (cfg.precision == Precision::FP8)
        l.push_back({"B*T", 1, kMaxFp8Tokens, "FP8 cast-transpose grid.y = B*T/128 <= 65535"});
    return l;
}

int64_t gcd64(int64_t a, int64_t b) { return b == 0 ? a : gcd64(b, a % b); }

std::string u128_to_string(unsigned __int128 v) {
    std::string s;
    do {
        s.insert(s.begin(), char('0' + (int)(v % 10)));
        v /= 10;
    } while (v != 0);
    return s;
}

}  // namespace

int64_t max_tokens_per_step(const TrainConfig& cfg) {
    int64_t n = INT64_MAX;
    for (const TokenLimit& l : token_limits(cfg))
        n = std::min(n, l.limit / std::max<int64_t>(l.per_token, 1));
    return n;
}

int max_batch_for(const TrainConfig& cfg) {
    if (cfg.seq <= 0) return 0;
    const int64_t T = cfg.seq;
    const int64_t step = 16 / gcd64(T, 16);  // B*T must be a multiple of 16
    int64_t b = max_tokens_per_step(cfg) / T / step * step;
    return (int)std::min<int64_t>(b, kIntMax);
}

// Empty if B*T and the sizes derived from it fit the kernels, else the one-line message.
static std::string check_token_limits(const TrainConfig& cfg) {
    const int64_t B = cfg.batch, T = cfg.seq, N = B * T;
    const std::vector<TokenLimit> limits = token_limits(cfg);
    const TokenLimit* worst = nullptr;  // the violated limit that allows the fewest tokens
    for (const TokenLimit& l : limits) {
        const int64_t max_n = l.limit / l.per_token;
        if (N > max_n && (!worst || max_n < worst->limit / worst->per_token)) worst = &l;
    }
    if (!worst) return "";
    std::ostringstream e;
    const unsigned __int128 value = (unsigned __int128)N * (unsigned __int128)worst->per_token;
    e << "--batch " << B << " x --seq " << T << " = " << N
      << " tokens per step exceeds the kernels' index limits (" << worst->what << " = "
      << u128_to_string(value) << " must be <= " << worst->limit << ": " << worst->who << "); ";
    const int b = max_batch_for(cfg);
    if (b >= 1) {
        e << "use --batch <= " << b;
    } else {
        // Even the smallest batch is too large at this --seq: suggest a --seq for the given --batch.
        const int64_t step = 16 / gcd64(B, 16);
        const int64_t t = max_tokens_per_step(cfg) / B / step * step;
        if (t >= 1)
            e << "use --seq <= " << t << " (with --batch " << B << ")";
        else
            e << "use a smaller --batch and --seq";
    }
    return e.str();
}

namespace {

// The integer settings' ranges and the multi-GPU and recompute settings (the first failure only).
std::string validate_integers(const TrainConfig& cfg) {
    const ModelConfig& m = cfg.model;
    std::ostringstream e;
    // Ranges of the numeric settings: "--flag: must be >= lo, got v" (the first failure only).
    auto at_least = [&](const char* flag, long v, long lo) {
        if (v < lo && e.str().empty()) e << flag << ": must be >= " << lo << ", got " << v;
    };
    at_least("--layers", m.num_layers, 1);
    at_least("--channels", m.channels, 1);
    at_least("--heads", m.num_heads, 1);
    at_least("--vocab", m.vocab_size, 1);
    at_least("--max-seq", m.max_seq_len, 1);
    at_least("--batch", cfg.batch, 1);
    at_least("--seq", cfg.seq, 1);
    at_least("--steps", cfg.steps, 1);
    at_least("--warmup", cfg.warmup, 0);
    at_least("--log-every", cfg.log_every, 1);
    at_least("--val-every", cfg.val_every, 1);
    at_least("--val-batches", cfg.val_batches, 1);
    at_least("--eval-every", cfg.eval_every, 0);
    at_least("--fp8-history", cfg.fp8.history_len, 1);
    at_least("--fp8-margin", cfg.fp8.margin, 0);
    at_least("--fp8-health-every", cfg.fp8_health_every, 1);
    at_least("--checkpoint-every", cfg.checkpoint_every, 0);
    at_least("--keep-checkpoints", cfg.keep_checkpoints, 1);
    at_least("--max-bad-steps", cfg.max_bad_steps, 1);
    at_least("--sample-every", cfg.sample_every, 0);
    at_least("--sample-tokens", cfg.sample_tokens, 1);
    at_least("--top-k", cfg.top_k, 0);
    if (cfg.total_batch < 0)
        e << "--total-batch: must be >= 0 (0: batch x seq x GPUs), got " << cfg.total_batch;
    if (!cfg.rendezvous.empty()) try {
            parse_rendezvous(cfg.rendezvous);
        } catch (const std::exception& ex) {
            e << ex.what();  // names --rendezvous and the spec
        }
    if (!(cfg.comm_timeout > 0)) e << "--comm-timeout: must be > 0 seconds, got " << cfg.comm_timeout;
    if (e.str().empty() && (cfg.recompute < 0 || cfg.recompute > 2))
        e << "--recompute: 0 (store everything backward needs), 1 or 2, got " << cfg.recompute;
    if (e.str().empty() && cfg.recompute >= 1 && cfg.precision != Precision::FP8)
        e << "--recompute " << cfg.recompute
          << " applies to --precision fp8 (bf16 already recomputes GELU in backward)";
    return e.str();
}

// The real-valued settings, then the combinations of flags that contradict each other.
std::string validate_reals_and_combinations(const TrainConfig& cfg) {
    const ModelConfig& m = cfg.model;
    auto num = [](double v) {
        std::ostringstream o;
        o << v;
        return o.str();
    };
    if (!(cfg.lr > 0) || !std::isfinite(cfg.lr))
        return "--lr: must be a finite number > 0, got " + num(cfg.lr);
    if (!(cfg.final_lr_frac >= 0 && cfg.final_lr_frac <= 1))
        return "--final-lr-frac: must be in [0, 1], got " + num(cfg.final_lr_frac);
    if (!(cfg.weight_decay >= 0) || !std::isfinite(cfg.weight_decay))
        return "--weight-decay: must be a finite number >= 0, got " + num(cfg.weight_decay);
    if (!(cfg.grad_clip >= 0) || !std::isfinite(cfg.grad_clip))
        return "--grad-clip: must be a finite number >= 0 (0 disables clipping), got " + num(cfg.grad_clip);
    // AdamW's bias corrections divide by 1 - beta^t: beta = 1 divides by zero.
    if (!(cfg.beta1 >= 0 && cfg.beta1 < 1)) return "--beta1: must be in [0, 1), got " + num(cfg.beta1);
    if (!(cfg.beta2 >= 0 && cfg.beta2 < 1)) return "--beta2: must be in [0, 1), got " + num(cfg.beta2);
    if (!(cfg.adam_eps > 0) || !std::isfinite(cfg.adam_eps))
        return "adam_eps: must be a finite number > 0, got " + num(cfg.adam_eps);
    if (cfg.fp8.margin > kMaxFp8Margin)
        return "--fp8-margin: must be <= " + std::to_string(kMaxFp8Margin) + ", got " +
               std::to_string(cfg.fp8.margin);
    if (cfg.fp8.history_len > kMaxFp8History)
        return "--fp8-history: must be <= " + std::to_string(kMaxFp8History) + ", got " +
               std::to_string(cfg.fp8.history_len);
    if (cfg.precision == Precision::FP8 && m.num_layers > kMaxFp8Layers)
        return "--layers: must be <= " + std::to_string(kMaxFp8Layers) +
               " with --precision fp8 (12 scale slots per layer, int slot index), got " +
               std::to_string(m.num_layers);
    if (!(cfg.temperature >= 0) || !std::isfinite(cfg.temperature))
        return "--temperature: must be a finite number >= 0 (0: always the most likely token), got " +
               num(cfg.temperature);
    if (cfg.export_at_end && cfg.export_path.empty()) return "--export-at-end: needs --export PATH";
    if (!cfg.gemm_autotune && !cfg.gemm_cache.empty())
        return "--gemm-cache: applies with --gemm-autotune (the choices it stores), not with "
               "--no-gemm-autotune";
    if (!cfg.eval_hellaswag.empty() && cfg.batch < 4)
        return "--eval-hellaswag: needs --batch >= 4 (an example's 4 endings are rows of one batch), got "
               "--batch " +
               std::to_string(cfg.batch);
    if (!cfg.resume.empty() && !cfg.init_from.empty())
        return "--init-from: not with --resume (the checkpoint has the weights)";
    if (!cfg.resume_if_present.empty() && !cfg.resume.empty())
        return "--resume-if-present: not with --resume (it is --resume DIR once DIR has a checkpoint)";
    if (!cfg.resume_if_present.empty() && !cfg.init_from.empty())
        return "--init-from: not with --resume-if-present (a checkpoint there has the weights)";
    if (cfg.train_data.empty()) return "--train-data: must name shard files or 'random'";
    if (cfg.log_dir.empty()) return "--log-dir: must not be empty";
    return "";
}

// The shape rules of the kernels and their index limits.
std::string validate_shapes(const TrainConfig& cfg) {
    const ModelConfig& m = cfg.model;
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
    if (m.channels > kMaxChannels)
        return "--channels " + std::to_string(m.channels) + " exceeds " + std::to_string(kMaxChannels) +
               ", the widest row the LayerNorm kernels hold";
    if (m.vocab_size % 16 != 0)
        return "--vocab " + std::to_string(m.vocab_size) + " must be a multiple of 16 (pad the vocabulary)";
    std::string overflow = check_token_limits(cfg);
    if (!overflow.empty()) return overflow;
    if ((long)cfg.batch * cfg.seq % 16 != 0)
        return "--batch x --seq = " + std::to_string((long)cfg.batch * cfg.seq) + " must be a multiple of 16";
    return "";
}

}  // namespace

std::string validate(const TrainConfig& cfg) {
    std::string e = validate_integers(cfg);
    if (e.empty()) e = validate_reals_and_combinations(cfg);
    if (e.empty()) e = validate_shapes(cfg);
    return e;
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

std::string checkpoint_dir_of(const TrainConfig& cfg) {
    if (!cfg.checkpoint_dir.empty()) return cfg.checkpoint_dir;
    return cfg.resume.empty() ? cfg.resume_if_present : cfg.resume;
}

void resolve_resume_if_present(TrainConfig* cfg, bool dir_has_checkpoint) {
    if (!cfg->resume_if_present.empty() && dir_has_checkpoint) cfg->resume = cfg->resume_if_present;
}

bool export_only(const TrainConfig& cfg) { return !cfg.export_path.empty() && !cfg.export_at_end; }

namespace {

// A float as the shortest decimal that reads back as the same float (6e-4f is 0.0006, not the double
// 0.000600000028...); JSON has no inf or nan, so those are null.
json::Value json_float(double v, bool is_float = true) {
    if (!std::isfinite(v)) return json::Value();
    char buf[64];
    const char* end = is_float ? std::to_chars(buf, buf + sizeof buf, (float)v).ptr
                               : std::to_chars(buf, buf + sizeof buf, v).ptr;
    double shortest = 0;
    std::from_chars(buf, end, shortest);  // locale-independent, unlike strtod
    return json::Value::number(shortest);
}

// json.h's integers are int64: a seed above INT64_MAX is written as its decimal string.
json::Value json_seed(uint64_t seed) {
    if (seed <= (uint64_t)INT64_MAX) return json::Value::integer((int64_t)seed);
    return json::Value::string(std::to_string(seed));
}

void add_model_json(const TrainConfig& c, size_t parameters, json::Value* o) {
    const ModelConfig& m = c.model;
    o->set("model", json::Value::string(c.model_name));
    o->set("layers", json::Value::integer(m.num_layers));
    o->set("channels", json::Value::integer(m.channels));
    o->set("heads", json::Value::integer(m.num_heads));
    o->set("vocab", json::Value::integer(m.vocab_size));
    o->set("max_seq", json::Value::integer(m.max_seq_len));
    o->set("gelu", json::Value::string(m.gelu_tanh ? "tanh" : "erf"));
    o->set("parameters", json::Value::integer((int64_t)parameters));
    o->set("precision", json::Value::string(to_string(c.precision)));
    o->set("fp8_format", json::Value::string(to_string(c.fp8.format)));
    o->set("fp8_history", json::Value::integer(c.fp8.history_len));
    o->set("fp8_amax_algo", json::Value::string(to_string(c.fp8.amax_algo)));
    o->set("fp8_margin", json::Value::integer(c.fp8.margin));
    o->set("fp8_lm_head", json::Value::boolean(c.fp8.lm_head));
    o->set("fp8_fast_accum", json::Value::boolean(c.fp8.fast_accum));
}

void add_training_json(const TrainConfig& c, json::Value* o) {
    auto integer = [&](const char* k, int64_t v) { o->set(k, json::Value::integer(v)); };
    auto str = [&](const char* k, const std::string& v) { o->set(k, json::Value::string(v)); };
    auto real = [&](const char* k, float v) { o->set(k, json_float(v)); };
    integer("batch", c.batch);
    integer("seq", c.seq);
    integer("total_batch", c.total_batch);
    integer("steps", c.steps);
    str("train_data", c.train_data);
    str("val_data", c.val_data);
    integer("val_every", c.val_every);
    integer("val_batches", c.val_batches);
    str("eval_hellaswag", c.eval_hellaswag);
    integer("eval_every", c.eval_every);
    str("eval_hellaswag_dump", c.eval_hellaswag_dump);
    real("lr", c.lr);
    integer("warmup", c.warmup);
    str("schedule", to_string(c.schedule));
    real("final_lr_frac", c.final_lr_frac);
    real("weight_decay", c.weight_decay);
    real("grad_clip", c.grad_clip);
    real("beta1", c.beta1);
    real("beta2", c.beta2);
    real("adam_eps", c.adam_eps);
    str("adam_moments", c.adam_bf16_moments ? "bf16" : "fp32");
    o->set("seed", json_seed(c.seed));
}

void add_run_json(const TrainConfig& c, json::Value* o) {
    auto integer = [&](const char* k, int64_t v) { o->set(k, json::Value::integer(v)); };
    auto str = [&](const char* k, const std::string& v) { o->set(k, json::Value::string(v)); };
    auto flag = [&](const char* k, bool v) { o->set(k, json::Value::boolean(v)); };
    str("log_dir", c.log_dir);
    integer("log_every", c.log_every);
    integer("fp8_health_every", c.fp8_health_every);
    flag("profile", c.profile);
    str("checkpoint_dir", c.checkpoint_dir);
    integer("checkpoint_every", c.checkpoint_every);
    integer("keep_checkpoints", c.keep_checkpoints);
    flag("checkpoint_required", c.checkpoint_required);
    str("resume", c.resume);
    str("resume_if_present", c.resume_if_present);
    integer("max_bad_steps", c.max_bad_steps);
    str("rendezvous", c.rendezvous);
    o->set("comm_timeout", json_float(c.comm_timeout, /*is_float=*/false));
    integer("recompute", c.recompute);
    flag("deterministic", c.deterministic);
    flag("cuda_graph", c.cuda_graph);
    flag("gemm_autotune", c.gemm_autotune);
    str("gemm_cache", c.gemm_cache);
    integer("sample_every", c.sample_every);
    integer("sample_tokens", c.sample_tokens);
    str("prompt", c.prompt);
    o->set("temperature", json_float(c.temperature));
    integer("top_k", c.top_k);
    str("tokenizer", c.tokenizer);
    str("init_from", c.init_from);
    str("export", c.export_path);
    str("export_format", c.export_hf ? "hf" : "seed");
    flag("export_at_end", c.export_at_end);
}

}  // namespace

std::string to_json(const TrainConfig& c, size_t parameters) {
    json::Value o = json::Value::object();
    add_model_json(c, parameters, &o);
    add_training_json(c, &o);
    add_run_json(c, &o);
    return json::dump_pretty(o);
}

std::string grad_accum_steps(const TrainConfig& cfg, int world, int* steps) {
    const int64_t per_micro_step = (int64_t)cfg.batch * cfg.seq * world;
    if (cfg.total_batch == 0) {
        *steps = 1;
        return "";
    }
    if (cfg.total_batch % per_micro_step != 0)
        return "--total-batch " + std::to_string(cfg.total_batch) +
               " is not a multiple of --batch x --seq x GPUs = " + std::to_string(cfg.batch) + " x " +
               std::to_string(cfg.seq) + " x " + std::to_string(world) + " = " +
               std::to_string(per_micro_step) + " tokens";
    *steps = (int)(cfg.total_batch / per_micro_step);
    return "";
}

// ------------------------------------------------------------------------------------- summary for people
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
           std::to_string(m.max_seq_len) + ", GELU " + (m.gelu_tanh ? "tanh" : "erf") + "), " +
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

std::string batch_line(const TrainConfig& c, int gpus, int micro_steps, const std::string& launcher) {
    const uint64_t tokens = (uint64_t)c.batch * c.seq * micro_steps * gpus;
    std::string lr = "lr " + shortest(c.lr) + " " + to_string(c.schedule);
    if (c.schedule == LrSchedule::Cosine) lr += " to " + shortest((float)(c.lr * c.final_lr_frac));
    if (c.warmup > 0) lr += " after " + plural(c.warmup, "warmup step", "warmup steps");
    return "  batch        " + std::to_string(c.batch) + " x " + std::to_string(c.seq) + " tokens x " +
           plural(micro_steps, "micro-step", "micro-steps") + " x " + plural(gpus, "GPU", "GPUs") +
           (gpus > 1 ? " (" + launcher + ")" : "") + " = " + with_commas(tokens) + " tokens per step; " +
           plural(c.steps, "step", "steps") + ", " + lr + "\n";
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

std::string output_lines(const TrainConfig& c) {
    std::string s = "  logs         " + c.log_dir + "/config.json, " + c.log_dir + "/train.jsonl" +
                    (c.resume.empty() ? "" : " (appended)") + "\n";
    const std::string ckpt = checkpoint_dir_of(c);
    s += "  checkpoints  ";
    if (ckpt.empty())
        s += "none (--checkpoint-dir DIR)";
    else
        s +=
            ckpt + "/ " +
            (c.checkpoint_every > 0 ? "every " + plural(c.checkpoint_every, "step", "steps") + " and " : "") +
            "at the end, the newest " + std::to_string(c.keep_checkpoints) + " kept";
    s += "\n";
    if (!c.resume.empty()) s += "  resume       the newest valid checkpoint in " + c.resume + "\n";
    if (c.resume.empty() && !c.resume_if_present.empty())
        s += "  resume       none: no checkpoint in " + c.resume_if_present + " yet, starting fresh\n";
    if (!c.init_from.empty()) s += "  weights      from " + c.init_from + "\n";
    if (!c.export_path.empty())
        s += "  export       " + c.export_path + " (" + (c.export_hf ? "Hugging Face GPT-2" : "seed") +
             " layout) " + (export_only(c) ? "and exit, no training" : "after the last step") + "\n";
    return s;
}

}  // namespace

std::string run_summary(const TrainConfig& cfg, size_t parameters, int gpus, int micro_steps,
                        const std::string& launcher) {
    return model_line(cfg, parameters) + precision_line(cfg) + batch_line(cfg, gpus, micro_steps, launcher) +
           data_line(cfg) + output_lines(cfg);
}
