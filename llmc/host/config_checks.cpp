// The configuration's checks before the GPU (config.h: validate) and the kernels' size limits they enforce,
// the largest batch that fits, and the gradient accumulation steps.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <vector>

#include "llmc/host/config.h"
#include "llmc/host/rendezvous_spec.h"
#include "llmc/host/settings.h"

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
//     (llmc/kernels/gelu/gelu.cu, which CHECKs grid.x <= 2^31-1) and encoder_forward (N*C elements, implied).
//   - FP8 cast+transpose kernels (llmc/kernels/cast/cast.cu launch_cast_transpose,
//   llmc/kernels/gelu/gelu_fp8.cu
//     fp8_gelu_cast_transpose) tile rows by 128 in grid.y, which is at most 65535.
//   - cuDNN flash attention (llmc/kernels/attention.cu) gets int64 dims/strides, but flash-attention kernels
//     commonly compute offsets in int32 and cuDNN documents no larger tensors: the packed qkv tensor
//     (B*T*3C elements) and the softmax stats (B*H*T) are kept within 2^31-1 (conservative; unreachable
//     within an H200's memory for the GPT-2 presets).
//   - Channels: the LayerNorm kernels keep a row in registers, C <= kLayerNormMaxC = 8192
//     (llmc/kernels/layernorm/layernorm.cuh; checked by layernorm.cu check_c and layernorm_fp8.cu
//     check_ln_shape).
//   - FP8 scale state: update_scales_kernel walks the amax history in int steps of 64 rows
//     (history <= 2^31 - 64); slots are int, 3 per Linear, 4 Linears per layer (12 L <= 2^31-1);
//     fp8_update_scales/fp8_calibrate_scales CHECK margin <= 64.
namespace {

constexpr int64_t kIntMax = 2147483647;           // INT32_MAX
constexpr int kMaxChannels = 8192;                // kLayerNormMaxC (llmc/kernels/layernorm/layernorm.cuh)
constexpr int64_t kMaxTokens = int64_t(1) << 30;  // int rows + one split of slack (see above)
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
    std::ostringstream e;
    // The integer settings' smallest values (the settings table): "--flag: must be >= lo, got v".
    auto at_least = [&](const std::string& flag, long long v, long long lo) {
        if (v < lo && e.str().empty()) e << flag << ": must be >= " << lo << ", got " << v;
    };
    for (const Setting& s : settings())
        if (s.has_min)
            at_least(s.long_name(), s.type == SettingType::Int64 ? s.get<int64_t>(cfg) : s.get<int>(cfg),
                     s.min);
    // warmup and steps both count the optimizer steps of the whole run (a resumed one too)
    if (e.str().empty() && cfg.warmup > cfg.steps)
        e << "--warmup " << cfg.warmup << " exceeds --steps " << cfg.steps
          << ": the learning rate would never reach --lr (both count the whole run's optimizer steps)";
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
    if (!cfg.gemm_autotune && cfg.gemm_variants)
        return "--gemm-variants: applies with --gemm-autotune (its second round), not with "
               "--no-gemm-autotune";
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
    if (cfg.generate > 0 && cfg.seq % 16 != 0)
        return "--seq " + std::to_string(cfg.seq) +
               " must be a multiple of 16 with --generate (the kernels' row count, of one sequence)";
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
