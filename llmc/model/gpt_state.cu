// GptModel's weights and training state in and out of the device: initialization, loading, host copies, and
// the checkpoint state as whole tensors, gathered from / scattered to the ZeRO-1 shards (llmc/parallel/shard_view.h).
#include <algorithm>

#include "llmc/model/gpt_impl.cuh"

// This rank's shard of parameter tensor k of an FP32 sharded buffer (master, m, v) from the whole host
// tensor.
static void shard_from_host(GptModel::Impl& s, float* shard_buffer, int k, const float* host_tensor) {
    const ParamShard& sh = s.shards[k];
    for (size_t sl = 0; sl < sh.slices; sl++)
        CHECK_CUDA(cudaMemcpyAsync(shard_buffer + sh.shard_offset + sl * sh.view.chunk,
                                   host_tensor + sl * sh.slice_numel + sh.view.rank_offset,
                                   sh.view.chunk * sizeof(float), cudaMemcpyHostToDevice, s.ctx->stream));
}

// Whole parameter tensor k of an FP32 sharded buffer into host_tensor (nullptr: take part in the gather
// only). With several ranks a collective: each slice is all-gathered into `scratch` (one slice).
static void shard_to_host(GptModel::Impl& s, const float* shard_buffer, int k, float* host_tensor,
                          float* scratch) {
    const ParamShard& sh = s.shards[k];
    if (!s.sharded()) {
        if (host_tensor)
            CHECK_CUDA(cudaMemcpyAsync(host_tensor, shard_buffer + sh.shard_offset,
                                       sh.shard_numel * sizeof(float), cudaMemcpyDeviceToHost,
                                       s.ctx->stream));
        CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
        return;
    }
    s.comm_after_compute();
    cudaStream_t cs = s.comm->stream();
    for (size_t sl = 0; sl < sh.slices; sl++) {
        CHECK_NCCL(ncclAllGather(shard_buffer + sh.shard_offset + sl * sh.view.chunk, scratch, sh.view.chunk,
                                 ncclFloat32, s.comm->nccl(), cs));
        if (host_tensor)
            CHECK_CUDA(cudaMemcpyAsync(host_tensor + sl * sh.slice_numel, scratch,
                                       sh.slice_numel * sizeof(float), cudaMemcpyDeviceToHost, cs));
    }
    CHECK_CUDA(cudaStreamSynchronize(cs));
}

// Runs fn(scratch) with a device buffer of the largest parameter slice (gathers), none with one GPU.
template <class Fn>
static void with_gather_scratch(GptModel::Impl& s, Fn fn) {
    float* scratch = nullptr;
    if (s.sharded()) {
        size_t largest = 0;
        for (const ParamShard& sh : s.shards) largest = std::max(largest, sh.slice_numel);
        CHECK_CUDA(cudaMalloc(&scratch, largest * sizeof(float)));
    }
    fn(scratch);
    if (scratch) CHECK_CUDA(cudaFree(scratch));
}

// After new master weights: fresh AdamW moments, BF16 working weights published to every rank.
static void sync_working_weights(GptModel::Impl& s) {
    CHECK_CUDA(cudaMemsetAsync(s.adam_m, 0, s.P_shard * sizeof(float), s.ctx->stream));
    CHECK_CUDA(cudaMemsetAsync(s.adam_v, 0, s.P_shard * sizeof(float), s.ctx->stream));
    s.publish_weights();
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void GptModel::init_weights(uint64_t seed) {
    Impl& s = *impl_;
    const float residual_std = 0.02f / sqrtf(2.0f * s.cfg.num_layers);
    for (int i = 0; i < kNumParamTensors; i++) {
        const ParamTensorInfo& t = s.table[i];
        const ParamShard& sh = s.shards[i];
        float* p = s.master + sh.shard_offset;
        if (i == LN1W || i == LN2W || i == LNFW)
            fill_constant(p, sh.shard_numel, 1.0f, s.ctx->stream);
        else if (t.weight_decay)  // the matrices; each rank draws exactly its part of the full tensor
            fill_normal(p, sh.shard_numel, (i == ATTPROJW || i == FCPROJW) ? residual_std : 0.02f, seed, i,
                        s.ctx->stream, sh.view);
        else
            fill_constant(p, sh.shard_numel, 0.0f, s.ctx->stream);
    }
    sync_working_weights(s);
}

void GptModel::load_weights(const std::vector<float>& host) {
    Impl& s = *impl_;
    CHECK(host.size() == s.P, "weights have %zu values, the model has %zu parameters", host.size(), s.P);
    for (int k = 0; k < kNumParamTensors; k++)
        shard_from_host(s, s.master, k, host.data() + s.shards[k].full_offset);
    sync_working_weights(s);
}

static std::vector<float> bf16_to_host(const bf16* d, size_t n, cudaStream_t stream) {
    std::vector<bf16> tmp(n);
    CHECK_CUDA(cudaMemcpyAsync(tmp.data(), d, n * sizeof(bf16), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<float> out(n);
    for (size_t i = 0; i < n; i++) out[i] = __bfloat162float(tmp[i]);
    return out;
}

std::vector<float> GptModel::weights_to_host() const {
    Impl& s = *impl_;
    std::vector<float> out(s.P);
    with_gather_scratch(s, [&](float* scratch) {
        for (int k = 0; k < kNumParamTensors; k++)
            shard_to_host(s, s.master, k, out.data() + s.shards[k].full_offset, scratch);
    });
    return out;
}
std::vector<float> GptModel::grads_to_host() const {
    return bf16_to_host(impl_->grads, impl_->P, impl_->ctx->stream);
}
std::vector<float> GptModel::logits_to_host(int rows) const {
    return bf16_to_host(impl_->logits, (size_t)rows * impl_->cfg.vocab_size, impl_->ctx->stream);
}
std::vector<float> GptModel::logits_row(int row) const {
    const size_t V = impl_->cfg.vocab_size;
    return bf16_to_host(impl_->logits + (size_t)row * V, V, impl_->ctx->stream);
}
std::vector<float> GptModel::fp8_state_to_host() const {
    const Impl& s = *impl_;
    if (!s.use_fp8()) return {};
    std::vector<float> out(s.scales.storage_floats);
    CHECK_CUDA(cudaMemcpyAsync(out.data(), s.scales.storage, out.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    return out;
}

std::vector<StateTensorInfo> GptModel::state_layout() const {
    const Impl& s = *impl_;
    std::vector<StateTensorInfo> out;
    auto add = [&](const std::string& name, const std::vector<size_t>& shape, size_t numel) {
        out.push_back({name, "F32", std::vector<int64_t>(shape.begin(), shape.end()), numel * sizeof(float)});
    };
    for (const char* prefix : {"master.", "adam_m.", "adam_v."})
        for (const ParamTensorInfo& t : s.table) add(prefix + t.name, t.shape, t.numel);
    if (s.use_fp8()) {
        const size_t S = s.scales.num_slots, H = s.scales.history_len;
        add("fp8.amax_history", {H, S}, H * S);
        add("fp8.scale", {S}, S);
        add("fp8.scale_inv", {S}, S);
    }
    return out;
}

namespace {
// The FP8 state tensors of state_layout(), in order (replicated: identical on every rank).
std::vector<float*> fp8_state_buffers(GptModel::Impl& s) {
    if (!s.use_fp8()) return {};
    return {s.scales.amax_history, s.scales.scale, s.scales.scale_inv};
}
}  // namespace

void GptModel::state_to_host(const std::vector<void*>& host) {
    Impl& s = *impl_;
    const std::vector<StateTensorInfo> layout = state_layout();
    CHECK(host.size() == layout.size(), "state_to_host: %zu buffers for %zu tensors", host.size(),
          layout.size());
    float* const sharded[3] = {s.master, s.adam_m, s.adam_v};
    with_gather_scratch(s, [&](float* scratch) {
        for (int b = 0; b < 3; b++)
            for (int k = 0; k < kNumParamTensors; k++)
                shard_to_host(s, sharded[b], k, static_cast<float*>(host[b * kNumParamTensors + k]), scratch);
    });
    const std::vector<float*> fp8 = fp8_state_buffers(s);
    for (size_t i = 0; i < fp8.size(); i++) {
        const size_t idx = 3 * kNumParamTensors + i;
        if (host[idx])
            CHECK_CUDA(
                cudaMemcpyAsync(host[idx], fp8[i], layout[idx].bytes, cudaMemcpyDeviceToHost, s.ctx->stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void GptModel::state_from_host(const std::vector<const void*>& host) {
    Impl& s = *impl_;
    const std::vector<StateTensorInfo> layout = state_layout();
    CHECK(host.size() == layout.size(), "state_from_host: %zu buffers for %zu tensors", host.size(),
          layout.size());
    float* const sharded[3] = {s.master, s.adam_m, s.adam_v};
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < kNumParamTensors; k++) {
            shard_from_host(s, sharded[b], k, static_cast<const float*>(host[b * kNumParamTensors + k]));
        }
    const std::vector<float*> fp8 = fp8_state_buffers(s);
    for (size_t i = 0; i < fp8.size(); i++) {
        const size_t idx = 3 * kNumParamTensors + i;
        CHECK_CUDA(
            cudaMemcpyAsync(fp8[i], host[idx], layout[idx].bytes, cudaMemcpyHostToDevice, s.ctx->stream));
    }
    // Derived copies: BF16 weights now, FP8 weights on the next forward (the cast re-records the same W
    // amaxes into the restored staging row, a max, so idempotent, and writes the same FP8 weights as the
    // uninterrupted run had after its update).
    s.publish_weights();
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

bool GptModel::fp8_calibration_pending() const { return impl_->use_fp8() && impl_->fp8.calibrate; }
void GptModel::set_fp8_calibration_pending(bool pending) {
    if (impl_->use_fp8()) impl_->fp8.calibrate = pending;
}
