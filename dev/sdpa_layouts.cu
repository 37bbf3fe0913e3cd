// cuDNN SDPA graphs at a chosen memory layout (dev/sdpa_layouts.h), for dev/bench_attention.cu.
#define CUDNN_FRONTEND_SKIP_JSON_LIB  // as llmc/kernels/attention.cu: no (de)serialization, faster to compile
#include "dev/sdpa_layouts.h"

// cudnn_frontend_shim.h uses std::strlen without including <cstring> when the JSON library is skipped.
#include <cstring>
// (keep the line above before the frontend)
#include <cudnn_frontend.h>

#include <cmath>
#include <exception>
#include <unordered_map>
#include <vector>

#include "llmc/host/check.h"

namespace fe = cudnn_frontend;

namespace {

enum : int64_t { UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_DO, UID_DQ, UID_DK, UID_DV };

std::vector<int64_t> dims(SdpaShape s) { return {s.B, s.H, s.T, s.D}; }
std::vector<int64_t> strides(const int64_t* s) { return {s[0], s[1], s[2], s[3]}; }

std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& g, const char* name, int64_t uid,
                                                    SdpaShape s, const int64_t* stride) {
    return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims(s)).set_stride(
        strides(stride)));
}

void set_stats_layout(fe::graph::Tensor_attributes& t, SdpaShape s) {
    const int64_t H = s.H, T = s.T;
    t.set_dim({s.B, H, T, 1}).set_stride({H * T, T, 1, 1}).set_data_type(fe::DataType_t::FLOAT);
}

std::shared_ptr<fe::graph::Graph> new_graph() {
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    return g;
}

// The training forward: O and stats from Q, K, V.
std::shared_ptr<fe::graph::Graph> describe_forward(SdpaShape s, const SdpaStrides& st) {
    auto g = new_graph();
    auto Q = input(*g, "Q", UID_Q, s, st.qkv), K = input(*g, "K", UID_K, s, st.qkv),
         V = input(*g, "V", UID_V, s, st.qkv);
    auto options = fe::graph::SDPA_attributes()
                       .set_name("sdpa_forward")
                       .set_generate_stats(true)
                       .set_attn_scale(1.0f / std::sqrt((float)s.D))
                       .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
                       .set_diagonal_band_right_bound(0);
    auto [O, stats] = g->sdpa(Q, K, V, options);
    O->set_output(true).set_uid(UID_O).set_dim(dims(s)).set_stride(strides(st.o));
    stats->set_output(true).set_uid(UID_STATS);
    set_stats_layout(*stats, s);
    return g;
}

// The backward: dQ, dK, dV from Q, K, V, O, dO and the stats.
std::shared_ptr<fe::graph::Graph> describe_backward(SdpaShape s, const SdpaStrides& st, bool deterministic) {
    auto g = new_graph();
    auto Q = input(*g, "Q", UID_Q, s, st.qkv), K = input(*g, "K", UID_K, s, st.qkv),
         V = input(*g, "V", UID_V, s, st.qkv);
    auto O = input(*g, "O", UID_O, s, st.o), dO = input(*g, "dO", UID_DO, s, st.o);
    auto stats = g->tensor(fe::graph::Tensor_attributes().set_name("stats").set_uid(UID_STATS));
    set_stats_layout(*stats, s);
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("sdpa_backward")
                       .set_attn_scale(1.0f / std::sqrt((float)s.D))
                       .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
                       .set_diagonal_band_right_bound(0)
                       .set_deterministic_algorithm(deterministic);
    auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, stats, options);
    for (auto [t, uid] : {std::make_pair(dQ, UID_DQ), std::make_pair(dK, UID_DK), std::make_pair(dV, UID_DV)})
        t->set_output(true).set_uid(uid).set_dim(dims(s)).set_stride(strides(st.qkv));
    return g;
}

// Validates and builds g (heuristics mode A, its first plan); false with "<step>: <message>" in *why.
bool build_graph(fe::graph::Graph& g, cudnnHandle_t handle, int64_t* workspace, std::string* why) {
    auto step = [&](const char* what, fe::error_t err) {
        if (err.is_good()) return true;
        *why = std::string(what) + ": " + err.get_message();
        return false;
    };
    return step("validate", g.validate()) && step("build_operation_graph", g.build_operation_graph(handle)) &&
           step("create_execution_plans", g.create_execution_plans({fe::HeurMode_t::A})) &&
           step("check_support", g.check_support()) &&
           step("build_plans", g.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE)) &&
           step("get_workspace_size", g.get_workspace_size(*workspace));
}

void execute(fe::graph::Graph& g, int64_t workspace_bytes, GpuContext* ctx,
             std::unordered_map<int64_t, void*>& pack, cudaStream_t stream) {
    CHECK_CUDNN(cudnnSetStream(ctx->cudnn, stream));
    void* workspace = ensure_cudnn_workspace(ctx, (size_t)workspace_bytes);
    fe::error_t err = g.execute(ctx->cudnn, pack, workspace);
    if (err.is_bad()) fatal("sdpa_layouts: cudnn-frontend execute failed: %s", err.get_message().c_str());
}

}  // namespace

struct SdpaLayoutGraphs::Impl {
    SdpaStrides strides{};
    std::shared_ptr<fe::graph::Graph> forward, backward;
    int64_t forward_workspace = 0, backward_workspace = 0;

    // Q, K, V (or dQ, dK, dV) of a qkv-sized buffer.
    void add_qkv(std::unordered_map<int64_t, void*>* pack, __nv_bfloat16* base, int64_t uid_q) const {
        for (int which = 0; which < 3; which++) (*pack)[uid_q + which] = base + strides.qkv_base[which];
    }
};

SdpaLayoutGraphs::SdpaLayoutGraphs() : impl_(new Impl()) {}
SdpaLayoutGraphs::~SdpaLayoutGraphs() = default;

bool SdpaLayoutGraphs::build(GpuContext* ctx, SdpaLayout layout, bool deterministic, SdpaShape shape,
                             std::string* why) {
    impl_->strides = sdpa_strides(layout, shape);
    try {
        impl_->forward = describe_forward(shape, impl_->strides);
        impl_->backward = describe_backward(shape, impl_->strides, deterministic);
        std::string what;
        if (!build_graph(*impl_->forward, ctx->cudnn, &impl_->forward_workspace, &what)) {
            *why = "forward " + what;
            return false;
        }
        if (!build_graph(*impl_->backward, ctx->cudnn, &impl_->backward_workspace, &what)) {
            *why = "backward " + what;
            return false;
        }
    } catch (const std::exception& e) {  // the frontend throws for a few unsupported configurations
        *why = std::string("exception: ") + e.what();
        return false;
    }
    return true;
}

void SdpaLayoutGraphs::forward(GpuContext* ctx, const SdpaBuffers& buf, cudaStream_t stream) {
    std::unordered_map<int64_t, void*> pack = {{UID_O, buf.out}, {UID_STATS, buf.stats}};
    impl_->add_qkv(&pack, buf.qkv, UID_Q);
    execute(*impl_->forward, impl_->forward_workspace, ctx, pack, stream);
}

void SdpaLayoutGraphs::backward(GpuContext* ctx, const SdpaBuffers& buf, cudaStream_t stream) {
    std::unordered_map<int64_t, void*> pack = {{UID_O, buf.out}, {UID_DO, buf.dout}, {UID_STATS, buf.stats}};
    impl_->add_qkv(&pack, buf.qkv, UID_Q);
    impl_->add_qkv(&pack, buf.dqkv, UID_DQ);
    execute(*impl_->backward, impl_->backward_workspace, ctx, pack, stream);
}

std::string sdpa_compiled_versions() {
    char buf[96];
    snprintf(buf, sizeof buf, "cudnn-frontend %d.%d.%d, cuDNN headers %d.%d.%d", CUDNN_FRONTEND_MAJOR_VERSION,
             CUDNN_FRONTEND_MINOR_VERSION, CUDNN_FRONTEND_PATCH_VERSION, CUDNN_MAJOR, CUDNN_MINOR,
             CUDNN_PATCHLEVEL);
    return buf;
}
