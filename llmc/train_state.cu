#include <cuda_runtime.h>

#include "llmc/check.h"
#include "llmc/dataloader.h"
#include "llmc/gpt.h"
#include "llmc/train_state.h"

std::string model_signature(const ModelConfig& m) {
    return "L=" + std::to_string(m.num_layers) + " C=" + std::to_string(m.channels) +
           " H=" + std::to_string(m.num_heads) + " V=" + std::to_string(m.vocab_size) +
           " maxT=" + std::to_string(m.max_seq_len) + " gelu=" + (m.gelu_tanh ? "tanh" : "erf");
}

std::string recipe_signature(const TrainConfig& cfg) {
    if (cfg.precision == Precision::BF16) return "bf16";
    return std::string("fp8 ") + to_string(cfg.fp8.format) +
           " history=" + std::to_string(cfg.fp8.history_len) + " amax=" + to_string(cfg.fp8.amax_algo) +
           " margin=" + std::to_string(cfg.fp8.margin);
}

TrainState::TrainState(const TrainConfig& cfg, GptModel* model, TokenSource* train_data)
    : cfg_(cfg), model_(model), train_data_(train_data) {}

std::vector<HostTensor> TrainState::host_views() {
    std::vector<StateTensor> dev = model_->state_tensors();
    size_t total = 0;
    for (const StateTensor& t : dev) total += t.bytes;
    if (host_.size() != total) host_.assign(total, 0);
    std::vector<HostTensor> out;
    size_t off = 0;
    for (const StateTensor& t : dev) {
        out.push_back({t.name, t.dtype, t.shape, host_.data() + off, t.bytes});
        off += t.bytes;
    }
    return out;
}

CheckpointMeta TrainState::meta() const {
    CheckpointMeta m;
    m.step = progress.step;
    m.opt_step = progress.opt_step;
    m.train_data = train_data_->position();
    m.fp8_calibrating = model_->fp8_calibration_pending();
    m.model = model_signature(cfg_.model);
    m.recipe = recipe_signature(cfg_);
    m.config = to_json(cfg_);
    return m;
}

void TrainState::save(const std::string& dir, int keep) {
    std::vector<HostTensor> host = host_views();
    std::vector<StateTensor> dev = model_->state_tensors();
    for (size_t i = 0; i < dev.size(); i++)
        CHECK_CUDA(cudaMemcpy(host[i].data, dev[i].device, dev[i].bytes, cudaMemcpyDeviceToHost));
    write_checkpoint(dir, meta(), host, keep);
}

std::string TrainState::resume(const std::string& dir) {
    std::vector<HostTensor> host = host_views();
    std::string path;
    CheckpointMeta m = read_latest_checkpoint(dir, meta(), host, &path);
    std::vector<StateTensor> dev = model_->state_tensors();
    for (size_t i = 0; i < dev.size(); i++)
        CHECK_CUDA(cudaMemcpy(dev[i].device, host[i].data, dev[i].bytes, cudaMemcpyHostToDevice));
    model_->state_restored();
    model_->set_fp8_calibration_pending(m.fp8_calibrating);
    train_data_->seek(m.train_data);
    progress.step = m.step;
    progress.opt_step = m.opt_step;
    return path;
}
