// GptModel: owns the parameter/optimizer allocation, the activation allocation and the per-component state
// (matmul plans, attention graphs), and sequences the kernels of a training step. See llmc/gpt.h.
#include "llmc/gpt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "llmc/adamw.cuh"
#include "llmc/attention.h"
#include "llmc/classifier.cuh"
#include "llmc/context.h"
#include "llmc/cuda_common.cuh"
#include "llmc/encoder.cuh"
#include "llmc/gelu.cuh"
#include "llmc/global_norm.cuh"
#include "llmc/init.cuh"
#include "llmc/layernorm.cuh"
#include "llmc/matmul.cuh"

std::vector<ParamTensorInfo> parameter_table(const ModelConfig& m) {
    const size_t L = m.num_layers, C = m.channels, V = m.vocab_size, maxT = m.max_seq_len;
    struct Spec {
        const char* name;
        std::vector<size_t> shape;
        bool decay;
    };
    const Spec specs[kNumParamTensors] = {
        {"wte", {V, C}, true},           {"wpe", {maxT, C}, true},        {"ln1w", {L, C}, false},
        {"ln1b", {L, C}, false},         {"qkvw", {L, 3 * C, C}, true},   {"qkvb", {L, 3 * C}, false},
        {"attprojw", {L, C, C}, true},   {"attprojb", {L, C}, false},     {"ln2w", {L, C}, false},
        {"ln2b", {L, C}, false},         {"fcw", {L, 4 * C, C}, true},    {"fcb", {L, 4 * C}, false},
        {"fcprojw", {L, C, 4 * C}, true}, {"fcprojb", {L, C}, false},     {"lnfw", {C}, false},
        {"lnfb", {C}, false},
    };
    std::vector<ParamTensorInfo> table;
    size_t offset = 0;
    for (const Spec& s : specs) {
        size_t numel = 1;
        for (size_t d : s.shape) numel *= d;
        table.push_back({s.name, s.shape, offset, numel, s.decay});
        offset += numel;
    }
    return table;
}

namespace {
enum ParamIndex { WTE, WPE, LN1W, LN1B, QKVW, QKVB, ATTPROJW, ATTPROJB, LN2W, LN2B, FCW, FCB, FCPROJW, FCPROJB, LNFW, LNFB };

// A list of named device buffers carved out of one allocation (256-byte aligned views).
class Arena {
public:
    template <class T>
    void add(const char* name, T** ptr, size_t count) {
        entries_.push_back({name, reinterpret_cast<void**>(ptr), count * sizeof(T)});
    }
    size_t allocate(const char* what) {
        size_t total = 0;
        for (auto& e : entries_) total += align(e.bytes);
        CHECK_CUDA(cudaMalloc(&base_, total));
        size_t off = 0;
        for (auto& e : entries_) {
            *e.ptr = static_cast<char*>(base_) + off;
            off += align(e.bytes);
        }
        printf("memory: %-12s %8.2f GiB\n", what, total / 1073741824.0);
        return total;
    }
    void print_plan() const {
        // group entries by name: per-layer buffers share a name
        std::vector<std::pair<std::string, size_t>> groups;
        for (auto& e : entries_) {
            bool found = false;
            for (auto& g : groups)
                if (g.first == e.name) g.second += align(e.bytes), found = true;
            if (!found) groups.push_back({e.name, align(e.bytes)});
        }
        for (auto& g : groups) printf("memory:   %-18s %9.1f MiB\n", g.first.c_str(), g.second / 1048576.0);
    }
    ~Arena() {
        if (base_) cudaFree(base_);
    }

private:
    static size_t align(size_t b) { return (b + 255) & ~size_t(255); }
    struct Entry {
        std::string name;
        void** ptr;
        size_t bytes;
    };
    std::vector<Entry> entries_;
    void* base_ = nullptr;
};

// Pointers to the per-layer slice of each parameter kind.
struct LayerParams {
    bf16 *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
};
}  // namespace

struct GptModel::Impl {
    ModelConfig cfg;
    int B, T;
    Precision precision;
    GpuContext* ctx;
    std::vector<ParamTensorInfo> table;
    size_t P = 0;

    // parameters + optimizer state: one allocation
    Arena param_arena;
    bf16* params = nullptr;  // working weights, canonical order
    bf16* grads = nullptr;
    float* master = nullptr;
    float* adam_m = nullptr;
    float* adam_v = nullptr;

    // activations: one allocation
    Arena act_arena;
    std::vector<bf16*> residual;  // L+1 x [N, C]: block inputs; residual[L] feeds the final LayerNorm
    std::vector<bf16*> residual_mid, ln1, ln2, qkv, atty, fch;  // per layer
    std::vector<float*> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd, att_stats;
    bf16 *lnf = nullptr, *logits = nullptr, *fch_gelu = nullptr, *scratch_NC = nullptr;
    float *lnf_mean = nullptr, *lnf_rstd = nullptr, *losses = nullptr, *loss_scalar = nullptr;
    bf16 *grad_NC = nullptr, *grad_N4C = nullptr, *grad_residual = nullptr;
    float* reduce_scratch = nullptr;  // LayerNorm/bias backward partial sums
    float *norm_partials = nullptr, *grad_norm = nullptr, *grad_scale = nullptr;
    int *inputs = nullptr, *targets = nullptr, *bucket_offsets = nullptr, *bucket_positions = nullptr,
        *bucket_tokens = nullptr;
    int num_buckets = 0;
    bool have_targets = false;

    MatmulPlanCache matmul_plans;
    AttentionGraphs attention_graphs;
    size_t peak_bytes = 0;

    bf16* param(int kind) { return params + table[kind].offset; }
    bf16* grad(int kind) { return grads + table[kind].offset; }
    LayerParams layer(bf16* base, int l) {
        const size_t C = cfg.channels;
        auto at = [&](int kind, size_t per_layer) { return base + table[kind].offset + l * per_layer; };
        return {at(LN1W, C),        at(LN1B, C),    at(QKVW, 3 * C * C), at(QKVB, 3 * C),
                at(ATTPROJW, C * C), at(ATTPROJB, C), at(LN2W, C),         at(LN2B, C),
                at(FCW, 4 * C * C), at(FCB, 4 * C), at(FCPROJW, 4 * C * C), at(FCPROJB, C)};
    }
};

GptModel::GptModel(const ModelConfig& m, int B, int T, Precision precision, GpuContext* ctx) : impl_(new Impl) {
    Impl& s = *impl_;
    s.cfg = m;
    s.B = B;
    s.T = T;
    s.precision = precision;
    s.ctx = ctx;
    s.table = parameter_table(m);
    for (auto& t : s.table) s.P += t.numel;
    const size_t L = m.num_layers, C = m.channels, V = m.vocab_size, N = (size_t)B * T, H = m.num_heads;

    s.param_arena.add("params bf16", &s.params, s.P);
    s.param_arena.add("grads bf16", &s.grads, s.P);
    s.param_arena.add("master fp32", &s.master, s.P);
    s.param_arena.add("adam m fp32", &s.adam_m, s.P);
    s.param_arena.add("adam v fp32", &s.adam_v, s.P);
    size_t param_bytes = s.param_arena.allocate("parameters");
    s.param_arena.print_plan();

    Arena& a = s.act_arena;
    s.residual.resize(L + 1);
    for (auto* v : {&s.residual_mid, &s.ln1, &s.ln2, &s.qkv, &s.atty, &s.fch}) v->resize(L);
    for (auto* v : {&s.ln1_mean, &s.ln1_rstd, &s.ln2_mean, &s.ln2_rstd, &s.att_stats}) v->resize(L);
    for (size_t l = 0; l <= L; l++) a.add("residual", &s.residual[l], N * C);
    for (size_t l = 0; l < L; l++) {
        a.add("residual_mid", &s.residual_mid[l], N * C);
        a.add("ln1", &s.ln1[l], N * C);
        a.add("ln2", &s.ln2[l], N * C);
        a.add("qkv", &s.qkv[l], N * 3 * C);
        a.add("atty", &s.atty[l], N * C);
        a.add("fch (pre-gelu)", &s.fch[l], N * 4 * C);
        a.add("ln stats", &s.ln1_mean[l], N);
        a.add("ln stats", &s.ln1_rstd[l], N);
        a.add("ln stats", &s.ln2_mean[l], N);
        a.add("ln stats", &s.ln2_rstd[l], N);
        a.add("att stats", &s.att_stats[l], (size_t)B * H * T);
    }
    a.add("lnf", &s.lnf, N * C);
    a.add("ln stats", &s.lnf_mean, N);
    a.add("ln stats", &s.lnf_rstd, N);
    a.add("logits", &s.logits, N * V);
    a.add("losses", &s.losses, N);
    a.add("losses", &s.loss_scalar, 1);
    // shared scratch: GELU output (recomputed in backward instead of stored per layer), projection outputs,
    // and the backward gradient buffers reused by every layer
    a.add("scratch", &s.fch_gelu, N * 4 * C);
    a.add("scratch", &s.scratch_NC, N * C);
    a.add("grad scratch", &s.grad_NC, N * C);
    a.add("grad scratch", &s.grad_N4C, N * 4 * C);
    a.add("grad scratch", &s.grad_residual, N * C);
    size_t reduce_bytes = std::max<size_t>({layernorm_backward_scratch_bytes((int)N, (int)C),
                                    matmul_dbias_scratch_bytes((int)N, (int)(4 * C))});
    a.add("reduce scratch", &s.reduce_scratch, reduce_bytes / sizeof(float) + 1);
    a.add("reduce scratch", &s.norm_partials, global_norm_num_partials());
    a.add("reduce scratch", &s.grad_norm, 1);
    a.add("reduce scratch", &s.grad_scale, 1);
    a.add("tokens", &s.inputs, N);
    a.add("tokens", &s.targets, N);
    a.add("tokens", &s.bucket_offsets, N + 1);
    a.add("tokens", &s.bucket_positions, N);
    a.add("tokens", &s.bucket_tokens, N);
    size_t act_bytes = a.allocate("activations");
    a.print_plan();
    s.peak_bytes = param_bytes + act_bytes;
}

GptModel::~GptModel() { delete impl_; }

size_t GptModel::num_parameters() const { return impl_->P; }

size_t GptModel::peak_memory_bytes() const {
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    impl_->peak_bytes = std::max(impl_->peak_bytes, total_b - free_b);
    return impl_->peak_bytes;
}

static void sync_working_weights(GptModel::Impl& s) {
    convert_to_bf16(s.params, s.master, s.P, s.ctx->stream);
    CHECK_CUDA(cudaMemsetAsync(s.adam_m, 0, s.P * sizeof(float), s.ctx->stream));
    CHECK_CUDA(cudaMemsetAsync(s.adam_v, 0, s.P * sizeof(float), s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void GptModel::init_weights(uint64_t seed) {
    Impl& s = *impl_;
    const float residual_std = 0.02f / sqrtf(2.0f * s.cfg.num_layers);
    for (int i = 0; i < kNumParamTensors; i++) {
        const ParamTensorInfo& t = s.table[i];
        float* p = s.master + t.offset;
        if (i == LN1W || i == LN2W || i == LNFW)
            fill_constant(p, t.numel, 1.0f, s.ctx->stream);
        else if (t.weight_decay)  // the matrices
            fill_normal(p, t.numel, (i == ATTPROJW || i == FCPROJW) ? residual_std : 0.02f, seed, i, s.ctx->stream);
        else
            fill_constant(p, t.numel, 0.0f, s.ctx->stream);
    }
    sync_working_weights(s);
}

void GptModel::load_weights(const std::vector<float>& host) {
    Impl& s = *impl_;
    CHECK(host.size() == s.P, "weights have %zu values, the model has %zu parameters", host.size(), s.P);
    CHECK_CUDA(cudaMemcpy(s.master, host.data(), s.P * sizeof(float), cudaMemcpyHostToDevice));
    sync_working_weights(s);
}

float GptModel::forward(const int* inputs_BT, const int* targets_BT) {
    Impl& s = *impl_;
    const int B = s.B, T = s.T, C = s.cfg.channels, H = s.cfg.num_heads, V = s.cfg.vocab_size, L = s.cfg.num_layers;
    const int N = B * T, D = C / H;
    cudaStream_t st = s.ctx->stream;
    for (int i = 0; i < N; i++)
        CHECK(inputs_BT[i] >= 0 && inputs_BT[i] < V && (!targets_BT || (targets_BT[i] >= 0 && targets_BT[i] < V)),
              "token id out of range [0, %d) at position %d", V, i);
    CHECK_CUDA(cudaMemcpyAsync(s.inputs, inputs_BT, N * sizeof(int), cudaMemcpyHostToDevice, st));
    if (targets_BT) CHECK_CUDA(cudaMemcpyAsync(s.targets, targets_BT, N * sizeof(int), cudaMemcpyHostToDevice, st));

    encoder_forward(s.residual[0], s.inputs, s.param(WTE), s.param(WPE), B, T, C, st);
    LayerParams p0 = s.layer(s.params, 0);
    layernorm_forward(s.ln1[0], s.ln1_mean[0], s.ln1_rstd[0], s.residual[0], p0.ln1w, p0.ln1b, N, C, st);
    for (int l = 0; l < L; l++) {
        LayerParams p = s.layer(s.params, l);
        matmul_forward(&s.matmul_plans, s.ctx, s.qkv[l], s.ln1[l], p.qkvw, p.qkvb, N, C, 3 * C, st);
        attention_forward(&s.attention_graphs, s.ctx, s.atty[l], s.att_stats[l], s.qkv[l], B, T, H, D, st);
        matmul_forward(&s.matmul_plans, s.ctx, s.scratch_NC, s.atty[l], p.attprojw, p.attprojb, N, C, C, st);
        residual_layernorm_forward(s.residual_mid[l], s.ln2[l], s.ln2_mean[l], s.ln2_rstd[l], s.residual[l],
                                   s.scratch_NC, p.ln2w, p.ln2b, N, C, st);
        matmul_forward(&s.matmul_plans, s.ctx, s.fch[l], s.ln2[l], p.fcw, p.fcb, N, C, 4 * C, st);
        gelu_forward(s.fch_gelu, s.fch[l], (size_t)N * 4 * C, s.cfg.gelu_tanh, st);
        matmul_forward(&s.matmul_plans, s.ctx, s.scratch_NC, s.fch_gelu, p.fcprojw, p.fcprojb, N, 4 * C, C, st);
        // The next block's ln1 (or the final LayerNorm) is fused with this block's residual add.
        bool last = l == L - 1;
        LayerParams next = s.layer(s.params, last ? l : l + 1);
        residual_layernorm_forward(s.residual[l + 1], last ? s.lnf : s.ln1[l + 1], last ? s.lnf_mean : s.ln1_mean[l + 1],
                                   last ? s.lnf_rstd : s.ln1_rstd[l + 1], s.residual_mid[l], s.scratch_NC,
                                   last ? s.param(LNFW) : next.ln1w, last ? s.param(LNFB) : next.ln1b, N, C, st);
    }
    matmul_forward(&s.matmul_plans, s.ctx, s.logits, s.lnf, s.param(WTE), nullptr, N, C, V, st);
    s.have_targets = targets_BT != nullptr;
    if (!targets_BT) {
        CHECK_CUDA(cudaStreamSynchronize(st));
        return 0.0f;
    }
    fused_classifier(s.logits, s.losses, s.targets, 1.0f / N, N, V, true, st);
    mean_loss(s.loss_scalar, s.losses, N, st);

    // Token buckets for the deterministic embedding backward, prepared on the host while the GPU works.
    TokenBuckets buckets;
    build_token_buckets(&buckets, inputs_BT, N);
    s.num_buckets = (int)buckets.tokens.size();
    CHECK_CUDA(cudaMemcpyAsync(s.bucket_offsets, buckets.offsets.data(), buckets.offsets.size() * sizeof(int),
                               cudaMemcpyHostToDevice, st));
    CHECK_CUDA(cudaMemcpyAsync(s.bucket_positions, buckets.positions.data(), N * sizeof(int), cudaMemcpyHostToDevice, st));
    CHECK_CUDA(cudaMemcpyAsync(s.bucket_tokens, buckets.tokens.data(), s.num_buckets * sizeof(int),
                               cudaMemcpyHostToDevice, st));
    float loss = 0;
    CHECK_CUDA(cudaMemcpyAsync(&loss, s.loss_scalar, sizeof(float), cudaMemcpyDeviceToHost, st));
    CHECK_CUDA(cudaStreamSynchronize(st));  // also keeps `buckets` alive until the copies are done
    return loss;
}

void GptModel::backward() {
    Impl& s = *impl_;
    CHECK(s.have_targets, "backward() needs a forward() with targets first");
    const int B = s.B, T = s.T, C = s.cfg.channels, H = s.cfg.num_heads, V = s.cfg.vocab_size, L = s.cfg.num_layers;
    const int N = B * T, D = C / H;
    cudaStream_t st = s.ctx->stream;
    MatmulPlanCache* mp = &s.matmul_plans;
    bf16* dres = s.grad_residual;  // gradient of the residual stream at the current point
    CHECK_CUDA(cudaMemsetAsync(dres, 0, (size_t)N * C * sizeof(bf16), st));

    // LM head (tied): dwte is overwritten here, the encoder backward adds the embedding part at the end.
    matmul_backward(mp, s.ctx, s.grad_NC, s.grad(WTE), nullptr, s.logits, s.lnf, s.param(WTE), N, C, V, false,
                    s.reduce_scratch, st);
    layernorm_backward(dres, s.grad(LNFW), s.grad(LNFB), s.reduce_scratch, s.grad_NC, s.residual[L], s.param(LNFW),
                       s.lnf_mean, s.lnf_rstd, N, C, st);
    for (int l = L - 1; l >= 0; l--) {
        LayerParams p = s.layer(s.params, l);
        LayerParams g = s.layer(s.grads, l);
        // MLP: residual[l+1] = residual_mid[l] + fcproj(gelu(fc(ln2(residual_mid[l]))))
        gelu_forward(s.fch_gelu, s.fch[l], (size_t)N * 4 * C, s.cfg.gelu_tanh, st);  // recompute
        matmul_backward(mp, s.ctx, s.grad_N4C, g.fcprojw, g.fcprojb, dres, s.fch_gelu, p.fcprojw, N, 4 * C, C, false,
                        s.reduce_scratch, st);
        gelu_backward_inplace(s.grad_N4C, s.fch[l], (size_t)N * 4 * C, s.cfg.gelu_tanh, st);
        matmul_backward(mp, s.ctx, s.grad_NC, g.fcw, g.fcb, s.grad_N4C, s.ln2[l], p.fcw, N, C, 4 * C, false,
                        s.reduce_scratch, st);
        layernorm_backward(dres, g.ln2w, g.ln2b, s.reduce_scratch, s.grad_NC, s.residual_mid[l], p.ln2w, s.ln2_mean[l],
                           s.ln2_rstd[l], N, C, st);
        // Attention: residual_mid[l] = residual[l] + attproj(sdpa(qkv(ln1(residual[l]))))
        matmul_backward(mp, s.ctx, s.grad_NC, g.attprojw, g.attprojb, dres, s.atty[l], p.attprojw, N, C, C, false,
                        s.reduce_scratch, st);
        bf16* dqkv = s.grad_N4C;  // [N, 3C] fits in the [N, 4C] scratch
        attention_backward(&s.attention_graphs, s.ctx, dqkv, s.grad_NC, s.qkv[l], s.atty[l], s.att_stats[l], B, T, H, D,
                           st);
        matmul_backward(mp, s.ctx, s.grad_NC, g.qkvw, g.qkvb, dqkv, s.ln1[l], p.qkvw, N, C, 3 * C, false,
                        s.reduce_scratch, st);
        layernorm_backward(dres, g.ln1w, g.ln1b, s.reduce_scratch, s.grad_NC, s.residual[l], p.ln1w, s.ln1_mean[l],
                           s.ln1_rstd[l], N, C, st);
    }
    encoder_backward(s.grad(WTE), s.grad(WPE), dres, s.bucket_offsets, s.bucket_positions, s.bucket_tokens,
                     s.num_buckets, B, T, C, st);
    // Rows of dwpe beyond T are not touched by this batch: their gradient is zero.
    if (T < s.cfg.max_seq_len)
        CHECK_CUDA(cudaMemsetAsync(s.grad(WPE) + (size_t)T * C, 0, (size_t)(s.cfg.max_seq_len - T) * C * sizeof(bf16), st));
    s.have_targets = false;
}

float GptModel::update(const AdamWSettings& a, int step) {
    Impl& s = *impl_;
    cudaStream_t st = s.ctx->stream;
    global_norm_squared(s.norm_partials, s.grads, s.P, st);
    grad_clip_scale(s.grad_norm, s.grad_scale, s.norm_partials, (int)global_norm_num_partials(), a.grad_clip, st);
    for (const ParamTensorInfo& t : s.table)
        adamw_update(s.master + t.offset, s.params + t.offset, s.adam_m + t.offset, s.adam_v + t.offset,
                     s.grads + t.offset, t.numel, a.lr, a.beta1, a.beta2, a.eps, t.weight_decay ? a.weight_decay : 0.0f,
                     step, s.grad_scale, st);
    float norm = 0;
    CHECK_CUDA(cudaMemcpyAsync(&norm, s.grad_norm, sizeof(float), cudaMemcpyDeviceToHost, st));
    CHECK_CUDA(cudaStreamSynchronize(st));
    return norm;
}

static std::vector<float> bf16_to_host(const bf16* d, size_t n) {
    std::vector<bf16> tmp(n);
    CHECK_CUDA(cudaMemcpy(tmp.data(), d, n * sizeof(bf16), cudaMemcpyDeviceToHost));
    std::vector<float> out(n);
    for (size_t i = 0; i < n; i++) out[i] = __bfloat162float(tmp[i]);
    return out;
}

std::vector<float> GptModel::weights_to_host() const {
    std::vector<float> out(impl_->P);
    CHECK_CUDA(cudaMemcpy(out.data(), impl_->master, impl_->P * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
}
std::vector<float> GptModel::grads_to_host() const { return bf16_to_host(impl_->grads, impl_->P); }
std::vector<float> GptModel::logits_to_host(int rows) const {
    return bf16_to_host(impl_->logits, (size_t)rows * impl_->cfg.vocab_size);
}
