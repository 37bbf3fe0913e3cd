// GptModel's weights and training state in and out of the device: initialization, loading, host copies, and
// the checkpoint state as whole tensors, gathered from / scattered to the ZeRO-1 shards
// (llmc/parallel/shard_view.h). The recipe's state (empty in BF16) travels with it.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "llmc/kernels/init.cuh"
#include "llmc/model/gpt_impl.cuh"

// This rank's shard of parameter tensor k of a sharded buffer (master, m, v: FP32, or BF16 moments) from the
// whole host tensor.
template <class T>
static void shard_from_host(GptModel::Impl& s, T* shard_buffer, int k, const T* host_tensor) {
    const ParamShard& sh = s.params.shards[k];
    for (size_t sl = 0; sl < sh.slices; sl++)
        CHECK_CUDA(cudaMemcpyAsync(shard_buffer + sh.shard_offset + sl * sh.view.chunk,
                                   host_tensor + sl * sh.slice_numel + sh.view.rank_offset,
                                   sh.view.chunk * sizeof(T), cudaMemcpyHostToDevice, s.ctx->stream));
}

// Whole parameter tensor k of a sharded buffer into host_tensor (nullptr: take part in the gather only). With
// several ranks a collective: each slice is all-gathered into `scratch` (one FP32 slice's bytes).
template <class T>
static void shard_to_host(GptModel::Impl& s, const T* shard_buffer, int k, T* host_tensor, float* scratch) {
    const ParamShard& sh = s.params.shards[k];
    if (!s.dp.sharded()) {
        if (host_tensor)
            CHECK_CUDA(cudaMemcpyAsync(host_tensor, shard_buffer + sh.shard_offset,
                                       sh.shard_numel * sizeof(T), cudaMemcpyDeviceToHost, s.ctx->stream));
        CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
        return;
    }
    // a dead rank stops the gather within --comm-timeout of the last tensor's progress, whatever the model
    // size
    s.dp.comm()->arm(s.dp.comm()->timeout_s(), "the gather of the training state");
    s.dp.comm_after_compute();
    cudaStream_t cs = s.dp.comm()->stream();
    T* gathered = reinterpret_cast<T*>(scratch);
    for (size_t sl = 0; sl < sh.slices; sl++) {
        s.dp.all_gather(shard_buffer + sh.shard_offset + sl * sh.view.chunk, gathered, sh.view.chunk);
        if (host_tensor)
            CHECK_CUDA(cudaMemcpyAsync(host_tensor + sl * sh.slice_numel, gathered,
                                       sh.slice_numel * sizeof(T), cudaMemcpyDeviceToHost, cs));
    }
    CHECK_CUDA(cudaStreamSynchronize(cs));
}

// Runs fn(scratch) with a device buffer of the largest parameter slice (gathers), none with one GPU.
template <class Fn>
static void with_gather_scratch(GptModel::Impl& s, Fn fn) {
    float* scratch = nullptr;
    if (s.dp.sharded()) {
        size_t largest = 0;
        for (const ParamShard& sh : s.params.shards) largest = std::max(largest, sh.slice_numel);
        CHECK_CUDA(cudaMalloc(&scratch, largest * sizeof(float)));
    }
    fn(scratch);
    if (scratch) CHECK_CUDA(cudaFree(scratch));
}

// After new master weights: fresh AdamW moments, BF16 working weights published to every rank.
static void sync_working_weights(GptModel::Impl& s) {
    s.params.with_moments([&](auto* m, auto* v) {
        CHECK_CUDA(cudaMemsetAsync(m, 0, s.params.P_shard * s.params.moment_bytes(), s.ctx->stream));
        CHECK_CUDA(cudaMemsetAsync(v, 0, s.params.P_shard * s.params.moment_bytes(), s.ctx->stream));
    });
    s.publish_weights();
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void GptModel::init_weights(uint64_t seed) {
    Impl& s = *impl_;
    const float residual_std = 0.02f / sqrtf(2.0f * s.cfg.num_layers);
    for (int i = 0; i < kNumParamTensors; i++) {
        const ParamShard& sh = s.params.shards[i];
        float* p = s.params.master + sh.shard_offset;
        switch (param_spec(i).init) {
            case ParamInit::One:
                fill_constant(p, sh.shard_numel, 1.0f, s.ctx->stream);
                break;
            case ParamInit::Zero:
                fill_constant(p, sh.shard_numel, 0.0f, s.ctx->stream);
                break;
            case ParamInit::Normal:  // each rank draws exactly its part of the full tensor
                fill_normal(p, sh.shard_numel, 0.02f, seed, i, s.ctx->stream, sh.view);
                break;
            case ParamInit::ResidualNormal:
                fill_normal(p, sh.shard_numel, residual_std, seed, i, s.ctx->stream, sh.view);
                break;
        }
    }
    sync_working_weights(s);
}

void GptModel::load_weights(const std::vector<float>& host) {
    Impl& s = *impl_;
    CHECK(host.size() == s.params.P, "weights have %zu values, the model has %zu parameters", host.size(),
          s.params.P);
    for (int k = 0; k < kNumParamTensors; k++)
        shard_from_host(s, s.params.master, k, host.data() + s.params.shards[k].full_offset);
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
    std::vector<float> out(s.params.P);
    with_gather_scratch(s, [&](float* scratch) {
        for (int k = 0; k < kNumParamTensors; k++)
            shard_to_host(s, s.params.master, k, out.data() + s.params.shards[k].full_offset, scratch);
    });
    return out;
}
std::vector<float> GptModel::grads_to_host() const {
    return bf16_to_host(impl_->params.grads, impl_->params.P, impl_->ctx->stream);
}
std::vector<float> GptModel::logits_to_host(int rows) const {
    return bf16_to_host(impl_->act.bf(Act::Logits), (size_t)rows * impl_->cfg.vocab_size, impl_->ctx->stream);
}
std::vector<float> GptModel::logits_row(int row) const {
    const size_t V = impl_->cfg.vocab_size;
    return bf16_to_host(impl_->act.bf(Act::Logits) + (size_t)row * V, V, impl_->ctx->stream);
}
std::vector<float> GptModel::fp8_state_to_host() const {
    return impl_->recipe->state_to_host(impl_->ctx->stream);
}

std::vector<StateTensorInfo> GptModel::state_layout() const {
    const Impl& s = *impl_;
    std::vector<StateTensorInfo> out;
    auto add = [&](const std::string& name, const std::vector<size_t>& shape, size_t numel, bool half) {
        out.push_back({name, half ? "BF16" : "F32", std::vector<int64_t>(shape.begin(), shape.end()),
                       numel * (half ? sizeof(bf16) : sizeof(float))});
    };
    for (const char* prefix : {"master.", "adam_m.", "adam_v."})
        for (const ParamTensorInfo& t : s.params.table)
            add(prefix + t.name, t.shape, t.numel, prefix[0] == 'a' && s.params.bf16_moments);
    for (const RecipeStateTensor& t : s.recipe->state_tensors()) add(t.name, t.shape, t.floats, false);
    return out;
}

void GptModel::state_to_host(const std::vector<void*>& host) {
    Impl& s = *impl_;
    const std::vector<StateTensorInfo> layout = state_layout();
    CHECK(host.size() == layout.size(), "state_to_host: %zu buffers for %zu tensors", host.size(),
          layout.size());
    with_gather_scratch(s, [&](float* scratch) {
        for (int k = 0; k < kNumParamTensors; k++)
            shard_to_host(s, s.params.master, k, static_cast<float*>(host[k]), scratch);
        s.params.with_moments([&](auto* m, auto* v) {
            using T = std::remove_pointer_t<decltype(m)>;
            for (int k = 0; k < kNumParamTensors; k++) {
                shard_to_host(s, m, k, static_cast<T*>(host[kNumParamTensors + k]), scratch);
                shard_to_host(s, v, k, static_cast<T*>(host[2 * kNumParamTensors + k]), scratch);
            }
        });
    });
    // the recipe's state is replicated: identical on every rank
    const std::vector<RecipeStateTensor> recipe = s.recipe->state_tensors();
    for (size_t i = 0; i < recipe.size(); i++) {
        const size_t idx = 3 * kNumParamTensors + i;
        if (host[idx])
            CHECK_CUDA(cudaMemcpyAsync(host[idx], recipe[i].data, layout[idx].bytes, cudaMemcpyDeviceToHost,
                                       s.ctx->stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void GptModel::state_from_host(const std::vector<const void*>& host) {
    Impl& s = *impl_;
    const std::vector<StateTensorInfo> layout = state_layout();
    CHECK(host.size() == layout.size(), "state_from_host: %zu buffers for %zu tensors", host.size(),
          layout.size());
    for (int k = 0; k < kNumParamTensors; k++)
        shard_from_host(s, s.params.master, k, static_cast<const float*>(host[k]));
    s.params.with_moments([&](auto* m, auto* v) {
        using T = std::remove_pointer_t<decltype(m)>;
        for (int k = 0; k < kNumParamTensors; k++) {
            shard_from_host(s, m, k, static_cast<const T*>(host[kNumParamTensors + k]));
            shard_from_host(s, v, k, static_cast<const T*>(host[2 * kNumParamTensors + k]));
        }
    });
    const std::vector<RecipeStateTensor> recipe = s.recipe->state_tensors();
    for (size_t i = 0; i < recipe.size(); i++) {
        const size_t idx = 3 * kNumParamTensors + i;
        CHECK_CUDA(cudaMemcpyAsync(recipe[i].data, host[idx], layout[idx].bytes, cudaMemcpyHostToDevice,
                                   s.ctx->stream));
    }
    // Derived copies: BF16 weights now, FP8 weights on the next forward (the cast re-records the same W
    // amaxes into the restored staging row, a max, so idempotent, and writes the same FP8 weights as the
    // uninterrupted run had after its update).
    s.publish_weights();
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

bool GptModel::fp8_calibration_pending() const { return impl_->recipe->calibrating(); }
void GptModel::set_fp8_calibration_pending(bool pending) { impl_->recipe->set_calibrating(pending); }
