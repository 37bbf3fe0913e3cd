// cuDNN SDPA (flash attention) forward/backward graphs through cudnn-frontend, cached by shape.
// Compiled by nvcc -x cu as its own translation unit (see the Makefile): cudnn_frontend is slow to compile.
#define CUDNN_FRONTEND_SKIP_JSON_LIB  // no graph (de)serialization needed; much faster to compile
#include "llmc/gpu/sanitizer_marks.h"
#include "llmc/kernels/attention.h"

// cudnn_frontend_shim.h uses std::strlen without including <cstring> when the JSON library is skipped.
#include <cstring>
// (keep the line above before the frontend)
#include <cudnn_frontend.h>

#include <cmath>
#include <exception>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "llmc/host/check.h"

namespace fe = cudnn_frontend;

namespace {

// Fixed tensor uids, so a variant pack is a small uid -> pointer map.
enum : int64_t {
    UID_Q = 1,
    UID_K,
    UID_V,
    UID_O,
    UID_STATS,
    UID_DO,
    UID_DQ,
    UID_DK,
    UID_DV,
    UID_SEQ_Q,
    UID_SEQ_KV
};

enum class Pass { ForwardInference, ForwardTraining, Backward };

const char* pass_name(Pass pass) {
    switch (pass) {
        case Pass::ForwardInference:
            return "attention forward (inference)";
        case Pass::ForwardTraining:
            return "attention forward";
        case Pass::Backward:
            return "attention backward";
    }
    return "attention";
}

struct GraphKey {
    int B, T, H, D;
    Pass pass;
    bool operator<(const GraphKey& o) const {
        return std::tie(B, T, H, D, pass) < std::tie(o.B, o.T, o.H, o.D, o.pass);
    }
};

// Backward graphs with T % 128 != 0 take an explicit padding mask: per-batch sequence lengths (all T) in a
// device buffer of ours. Without it, cudnn-frontend 1.23 with a cuDNN backend <= 9.15 adds that very mask
// itself ("workaround padding mask") and copies the lengths into the workspace at every execute from a host
// vector that lives only during the call: a CUDA graph captures that copy with the host address, and a replay
// copies whatever that memory holds by then, so the backward reads garbage lengths (compute-sanitizer on the
// H200, T = 64: out-of-bounds 16-byte stores in sm90_flash_bprop, only with the CUDA graph; intermittent
// illegal memory accesses in the tiny-model tests). T a multiple of 128 (every benchmark shape) needs no
// mask.
bool backward_needs_seq_lens(const GraphKey& key) { return key.pass == Pass::Backward && key.T % 128 != 0; }

struct BuiltGraph {
    std::shared_ptr<fe::graph::Graph> graph;
    int64_t workspace_bytes = 0;
    std::shared_ptr<int32_t> seq_lens;  // device [2][B]: q then kv lengths (backward_needs_seq_lens), or null
};

// Packed qkv view of one of Q, K, V: dims {B, H, T, D}; the pointer passed at execution is offset by 0, C or
// 2C.
std::shared_ptr<fe::graph::Tensor_attributes> qkv_tensor(fe::graph::Graph& g, const char* name, int64_t uid,
                                                         int64_t B, int64_t T, int64_t H, int64_t D) {
    const int64_t C = H * D;
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({B, H, T, D})
                        .set_stride({T * 3 * C, D, 3 * C, 1}));
}
// [B, T, H, D] view (out, dout): dims {B, H, T, D}.
void set_btc_layout(fe::graph::Tensor_attributes& t, int64_t B, int64_t T, int64_t H, int64_t D) {
    const int64_t C = H * D;
    t.set_dim({B, H, T, D}).set_stride({T * C, D, C, 1});
}
void set_stats_layout(fe::graph::Tensor_attributes& t, int64_t B, int64_t T, int64_t H) {
    t.set_dim({B, H, T, 1}).set_stride({H * T, T, 1, 1}).set_data_type(fe::DataType_t::FLOAT);
}

// Describes the graph for `key` (no cuDNN calls yet).
std::shared_ptr<fe::graph::Graph> describe_graph(const GraphKey& key, bool deterministic) {
    const int64_t B = key.B, T = key.T, H = key.H, D = key.D;
    const float scale = 1.0f / std::sqrt((float)D);
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto Q = qkv_tensor(*g, "Q", UID_Q, B, T, H, D);
    auto K = qkv_tensor(*g, "K", UID_K, B, T, H, D);
    auto V = qkv_tensor(*g, "V", UID_V, B, T, H, D);
    if (key.pass != Pass::Backward) {
        const bool training = key.pass == Pass::ForwardTraining;
        auto options =
            fe::graph::SDPA_attributes()
                .set_name("sdpa_forward")
                .set_generate_stats(training)
                .set_attn_scale(scale)
                .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)  // causal: key j <= query i
                .set_diagonal_band_right_bound(0);
        auto [O, stats] = g->sdpa(Q, K, V, options);
        O->set_output(true).set_uid(UID_O);
        set_btc_layout(*O, B, T, H, D);
        if (training) {
            stats->set_output(true).set_uid(UID_STATS);
            set_stats_layout(*stats, B, T, H);
        }
    } else {
        auto O = g->tensor(fe::graph::Tensor_attributes().set_name("O").set_uid(UID_O));
        set_btc_layout(*O, B, T, H, D);
        auto dO = g->tensor(fe::graph::Tensor_attributes().set_name("dO").set_uid(UID_DO));
        set_btc_layout(*dO, B, T, H, D);
        auto stats = g->tensor(fe::graph::Tensor_attributes().set_name("stats").set_uid(UID_STATS));
        set_stats_layout(*stats, B, T, H);
        auto options = fe::graph::SDPA_backward_attributes()
                           .set_name("sdpa_backward")
                           .set_attn_scale(scale)
                           .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
                           .set_diagonal_band_right_bound(0)
                           .set_deterministic_algorithm(deterministic);
        if (backward_needs_seq_lens(key)) {
            auto seq_len = [&](const char* name, int64_t uid) {
                return g->tensor(fe::graph::Tensor_attributes()
                                     .set_name(name)
                                     .set_uid(uid)
                                     .set_dim({B, 1, 1, 1})
                                     .set_stride({1, 1, 1, 1})
                                     .set_data_type(fe::DataType_t::INT32));
            };
            options.set_padding_mask(true)
                .set_seq_len_q(seq_len("seq_len_q", UID_SEQ_Q))
                .set_seq_len_kv(seq_len("seq_len_kv", UID_SEQ_KV));
        }
        auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, stats, options);
        const int64_t C = H * D;
        for (auto [t, uid] :
             {std::make_pair(dQ, UID_DQ), std::make_pair(dK, UID_DK), std::make_pair(dV, UID_DV)})
            t->set_output(true).set_uid(uid).set_dim({B, H, T, D}).set_stride({T * 3 * C, D, 3 * C, 1});
    }
    return g;
}

// Validates and builds the graph; on failure returns false with "<step>: <frontend message>" in *why.
bool build_graph(const GraphKey& key, bool deterministic, cudnnHandle_t handle, BuiltGraph* out,
                 std::string* why) {
    try {
        auto g = describe_graph(key, deterministic);
        auto step = [&](const char* what, fe::error_t err) {
            if (err.is_good()) return true;
            *why = std::string(what) + ": " + err.get_message();
            return false;
        };
        if (!step("validate", g->validate())) return false;
        if (!step("build_operation_graph", g->build_operation_graph(handle))) return false;
        if (!step("create_execution_plans", g->create_execution_plans({fe::HeurMode_t::A}))) return false;
        if (!step("check_support", g->check_support())) return false;
        if (!step("build_plans", g->build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE))) return false;
        int64_t ws = 0;
        if (!step("get_workspace_size", g->get_workspace_size(ws))) return false;
        out->graph = std::move(g);
        out->workspace_bytes = ws;
        if (backward_needs_seq_lens(key)) {  // built outside any capture (the first, eager, use)
            int32_t* lens = nullptr;
            CHECK_CUDA(cudaMalloc(&lens, 2 * (size_t)key.B * sizeof(int32_t)));
            out->seq_lens = std::shared_ptr<int32_t>(lens, [](int32_t* p) { cudaFree(p); });
            const std::vector<int32_t> host(2 * (size_t)key.B, key.T);
            CHECK_CUDA(cudaMemcpy(lens, host.data(), host.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
        }
        return true;
    } catch (const std::exception& e) {  // the frontend throws for a few unsupported configurations
        *why = std::string("exception: ") + e.what();
        return false;
    }
}

}  // namespace

struct AttentionGraphs::Impl {
    std::map<GraphKey, BuiltGraph> graphs;
};

AttentionGraphs::AttentionGraphs(bool deterministic_backward)
    : impl(new Impl()), deterministic_(deterministic_backward) {}
AttentionGraphs::~AttentionGraphs() = default;

namespace {

std::string shape_string(const GraphKey& key) {
    char buf[96];
    snprintf(buf, sizeof buf, "B=%d T=%d H=%d D=%d", key.B, key.T, key.H, key.D);
    return buf;
}

// Returns the cached graph for key, building it on first use; nullptr (with *why) if it cannot be built.
const BuiltGraph* find_or_build(AttentionGraphs* graphs, GpuContext* ctx, const GraphKey& key,
                                std::string* why) {
    auto& cache = graphs->impl->graphs;
    auto it = cache.find(key);
    if (it != cache.end()) return &it->second;
    if (key.B <= 0 || key.T <= 0 || key.H <= 0 || key.D <= 0) {
        *why = "non-positive size";
        return nullptr;
    }
    BuiltGraph built;
    if (!build_graph(key, graphs->deterministic_backward(), ctx->cudnn, &built, why)) return nullptr;
    return &cache.emplace(key, std::move(built)).first->second;
}

const BuiltGraph& get_graph(AttentionGraphs* graphs, GpuContext* ctx, const GraphKey& key) {
    std::string why;
    const BuiltGraph* g = find_or_build(graphs, ctx, key, &why);
    if (!g)
        fatal("%s (%s): cuDNN graph build failed: %s", pass_name(key.pass), shape_string(key).c_str(),
              why.c_str());
    return *g;
}

void bind_stream(GpuContext* ctx, cudaStream_t stream) {
    cudaStream_t current = nullptr;
    CHECK_CUDNN(cudnnGetStream(ctx->cudnn, &current));
    if (current != stream) CHECK_CUDNN(cudnnSetStream(ctx->cudnn, stream));
}

void execute(const BuiltGraph& g, GpuContext* ctx, const GraphKey& key,
             std::unordered_map<int64_t, void*>& pack, cudaStream_t stream) {
    bind_stream(ctx, stream);
    void* workspace =
        ensure_cudnn_workspace(ctx, (size_t)g.workspace_bytes);  // may reallocate: fetch per call
    fe::error_t err = g.graph->execute(ctx->cudnn, pack, workspace);
    if (err.is_bad())
        fatal("%s (%s): cudnn-frontend execute failed: %s", pass_name(key.pass), shape_string(key).c_str(),
              err.get_message().c_str());
}

std::unordered_map<int64_t, void*> forward_pack(bf16* out_NC, float* stats_BHT, const bf16* qkv_NC3,
                                                size_t C) {
    bf16* qkv = const_cast<bf16*>(qkv_NC3);
    std::unordered_map<int64_t, void*> pack = {
        {UID_Q, qkv}, {UID_K, qkv + C}, {UID_V, qkv + 2 * C}, {UID_O, out_NC}};
    if (stats_BHT) pack[UID_STATS] = stats_BHT;
    return pack;
}

std::unordered_map<int64_t, void*> backward_pack(bf16* dqkv_NC3, const bf16* dout_NC, const bf16* qkv_NC3,
                                                 const bf16* out_NC, const float* stats_BHT, size_t C) {
    bf16* qkv = const_cast<bf16*>(qkv_NC3);
    return {{UID_Q, qkv},
            {UID_K, qkv + C},
            {UID_V, qkv + 2 * C},
            {UID_O, const_cast<bf16*>(out_NC)},
            {UID_DO, const_cast<bf16*>(dout_NC)},
            {UID_STATS, const_cast<float*>(stats_BHT)},
            {UID_DQ, dqkv_NC3},
            {UID_DK, dqkv_NC3 + C},
            {UID_DV, dqkv_NC3 + 2 * C}};
}

void add_seq_lens(const BuiltGraph& g, const GraphKey& key, std::unordered_map<int64_t, void*>* pack) {
    if (!g.seq_lens) return;
    (*pack)[UID_SEQ_Q] = g.seq_lens.get();
    (*pack)[UID_SEQ_KV] = g.seq_lens.get() + key.B;
}

}  // namespace

void attention_forward(AttentionGraphs* graphs, GpuContext* ctx, bf16* out_NC, float* stats_BHT,
                       const bf16* qkv_NC3, int B, int T, int H, int D, cudaStream_t stream) {
    const GraphKey key{B, T, H, D, stats_BHT ? Pass::ForwardTraining : Pass::ForwardInference};
    const BuiltGraph& g = get_graph(graphs, ctx, key);
    const size_t C = (size_t)H * D;
    std::unordered_map<int64_t, void*> pack = forward_pack(out_NC, stats_BHT, qkv_NC3, C);
    execute(g, ctx, key, pack, stream);
    mark_initialized(out_NC, (size_t)B * T * C * sizeof(bf16), stream);  // cuDNN's TMA stores: see the header
    if (stats_BHT) mark_initialized(stats_BHT, (size_t)B * H * T * sizeof(float), stream);
}

void attention_backward(AttentionGraphs* graphs, GpuContext* ctx, bf16* dqkv_NC3, const bf16* dout_NC,
                        const bf16* qkv_NC3, const bf16* out_NC, const float* stats_BHT, int B, int T, int H,
                        int D, cudaStream_t stream) {
    const GraphKey key{B, T, H, D, Pass::Backward};
    const BuiltGraph& g = get_graph(graphs, ctx, key);
    const size_t C = (size_t)H * D;
    std::unordered_map<int64_t, void*> pack = backward_pack(dqkv_NC3, dout_NC, qkv_NC3, out_NC, stats_BHT, C);
    add_seq_lens(g, key, &pack);
    execute(g, ctx, key, pack, stream);
    mark_initialized(dqkv_NC3, (size_t)B * T * 3 * C * sizeof(bf16), stream);
}

namespace {
// Every plan one heuristics mode offers for `key`, each built and timed (mean of `reps` runs on `stream`).
void time_mode_plans(GpuContext* ctx, const GraphKey& key, bool deterministic, fe::HeurMode_t mode,
                     const char* mode_name, std::unordered_map<int64_t, void*>& pack, int reps,
                     cudaStream_t stream, std::vector<AttentionPlanTiming>* out) {
    auto g = describe_graph(key, deterministic);
    auto ok = [&](const char* what, fe::error_t err) {
        if (err.is_good()) return true;
        out->push_back({std::string(mode_name) + ": " + what + " failed: " + err.get_message(), 0, -1.0f});
        return false;
    };
    if (!ok("validate", g->validate()) ||
        !ok("build_operation_graph", g->build_operation_graph(ctx->cudnn)) ||
        !ok("create_execution_plans", g->create_execution_plans({mode})) ||
        !ok("check_support", g->check_support()) ||
        !ok("build_plans", g->build_plans(fe::BuildPlanPolicy_t::ALL)))
        return;
    bind_stream(ctx, stream);
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    for (int64_t i = 0; i < g->get_execution_plan_count(); i++) {
        std::string name;
        int64_t ws = 0;
        if (g->get_plan_name_at_index(i, name).is_bad()) name = "?";
        name = std::string(mode_name) + "#" + std::to_string(i) + " " + name;
        if (g->get_workspace_size_plan_at_index(i, ws).is_bad()) {
            out->push_back({name + ": no workspace size", 0, -1.0f});
            continue;
        }
        void* workspace = ensure_cudnn_workspace(ctx, (size_t)ws);
        if (g->execute_plan_at_index(ctx->cudnn, pack, workspace, i).is_bad()) {  // warm-up
            out->push_back({name + ": execute failed", ws, -1.0f});
            continue;
        }
        CHECK_CUDA(cudaEventRecord(start, stream));
        for (int r = 0; r < reps; r++) (void)g->execute_plan_at_index(ctx->cudnn, pack, workspace, i);
        CHECK_CUDA(cudaEventRecord(stop, stream));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        out->push_back({name, ws, ms / reps});
    }
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
}
}  // namespace

std::vector<AttentionPlanTiming> attention_time_plans(GpuContext* ctx, bool backward, bool deterministic,
                                                      bf16* qkv_NC3, bf16* out_NC, float* stats_BHT,
                                                      bf16* dout_NC, bf16* dqkv_NC3, int B, int T, int H,
                                                      int D, int reps, cudaStream_t stream) {
    const GraphKey key{B, T, H, D, backward ? Pass::Backward : Pass::ForwardTraining};
    const size_t C = (size_t)H * D;
    std::unordered_map<int64_t, void*> pack =
        backward ? backward_pack(dqkv_NC3, dout_NC, qkv_NC3, out_NC, stats_BHT, C)
                 : forward_pack(out_NC, stats_BHT, qkv_NC3, C);
    std::vector<AttentionPlanTiming> out;
    if (backward_needs_seq_lens(key)) {  // the timing graphs carry no sequence lengths
        out.push_back({"not timed: T % 128 != 0 takes the padding-mask backward", 0, -1.0f});
        return out;
    }
    try {
        time_mode_plans(ctx, key, deterministic, fe::HeurMode_t::A, "A", pack, reps, stream, &out);
        time_mode_plans(ctx, key, deterministic, fe::HeurMode_t::B, "B", pack, reps, stream, &out);
        time_mode_plans(ctx, key, deterministic, fe::HeurMode_t::FALLBACK, "fallback", pack, reps, stream,
                        &out);
    } catch (const std::exception& e) {
        out.push_back({std::string("exception: ") + e.what(), 0, -1.0f});
    }
    return out;
}
