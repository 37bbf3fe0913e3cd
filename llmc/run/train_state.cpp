#include "llmc/run/train_state.h"

#include <cuda_runtime.h>

#include "llmc/formats/dataloader.h"
#include "llmc/host/check.h"
#include "llmc/model/gpt.h"
#include "llmc/parallel/comm.h"

std::string model_signature(const ModelConfig& m) {
    return "L=" + std::to_string(m.num_layers) + " C=" + std::to_string(m.channels) +
           " H=" + std::to_string(m.num_heads) + " V=" + std::to_string(m.vocab_size) +
           " maxT=" + std::to_string(m.max_seq_len) + " gelu=" + (m.gelu_tanh ? "tanh" : "erf");
}

std::string recipe_signature(const TrainConfig& cfg) {
    const std::string moments = cfg.adam_bf16_moments ? " adam_moments=bf16" : "";
    if (cfg.precision == Precision::BF16) return "bf16" + moments;
    return std::string("fp8 ") + to_string(cfg.fp8.format) +
           " history=" + std::to_string(cfg.fp8.history_len) + " amax=" + to_string(cfg.fp8.amax_algo) +
           " margin=" + std::to_string(cfg.fp8.margin) + (cfg.fp8.lm_head ? " lm_head=fp8" : "") + moments;
}

TrainState::TrainState(const TrainConfig& cfg, GptModel* model, TokenSource* train_data, Communicator* comm)
    : cfg_(cfg), model_(model), train_data_(train_data), comm_(comm) {}

std::vector<HostTensor> TrainState::host_views() {
    std::vector<StateTensorInfo> layout = model_->state_layout();
    size_t total = 0;
    for (const StateTensorInfo& t : layout) total += t.bytes;
    if (host_.size() != total) host_.assign(total, 0);
    std::vector<HostTensor> out;
    size_t off = 0;
    for (const StateTensorInfo& t : layout) {
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
    m.config = to_json(cfg_, num_parameters(cfg_.model));
    return m;
}

void TrainState::save(const std::string& dir, int keep) {
    const bool writer = !comm_ || comm_->rank() == 0;
    std::string error;
    if (writer) {
        std::vector<HostTensor> host = host_views();
        std::vector<void*> ptrs;
        for (const HostTensor& t : host) ptrs.push_back(t.data);
        model_->state_to_host(ptrs);
        // the gather is done; the write takes as long as the disk does (a world of one arms nothing)
        if (comm_) comm_->arm(kCheckpointTimeoutS, "its own checkpoint write");
        try {
            write_checkpoint(dir, meta(), host, keep);
        } catch (const std::exception& e) {
            error = e.what();
        }
    } else {
        model_->state_to_host(std::vector<void*>(model_->state_layout().size(), nullptr));
    }
    // Every rank learns whether rank 0's write worked (and waits for it, however long the disk takes).
    if (comm_ && comm_->active() &&
        comm_->broadcast_int(error.empty() ? 1 : 0, kCheckpointTimeoutS, "rank 0 to write the checkpoint") ==
            0 &&
        error.empty())
        error = "rank 0 could not write the checkpoint (its message is on its stderr)";
    if (!error.empty()) throw std::runtime_error(error);
}

std::string TrainState::resume(const std::string& dir) {
    std::vector<HostTensor> host = host_views();
    std::string path;
    CheckpointMeta m = read_latest_checkpoint(dir, meta(), host, &path);
    std::vector<const void*> ptrs;
    for (const HostTensor& t : host) ptrs.push_back(t.data);
    model_->state_from_host(ptrs);
    model_->set_fp8_calibration_pending(m.fp8_calibrating);
    train_data_->seek(m.train_data);
    progress.step = m.step;
    progress.opt_step = m.opt_step;
    std::vector<uint8_t>().swap(host_);  // the whole state in host memory: only needed while saving
    return path;
}
