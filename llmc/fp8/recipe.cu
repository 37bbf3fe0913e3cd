// FP8 delayed scaling as one object (llmc/fp8/recipe.h).
#include <algorithm>
#include <cmath>

#include "llmc/fp8/recipe.h"
#include "llmc/gpu/step_guard.cuh"

DelayedScaling::DelayedScaling(const Fp8Config& cfg, const std::vector<Fp8Dtype>& dtypes, PhaseTimer* timer)
    : cfg_(cfg), timer_(timer), state_(fp8_scale_state_create(dtypes, cfg.history_len)) {
    const size_t bytes = state_.storage_floats * sizeof(float), slots = state_.num_slots * sizeof(float);
    CHECK_CUDA(cudaMalloc(&step_start_, bytes));
    CHECK_CUDA(cudaMalloc(&eval_backup_, bytes));
    CHECK_CUDA(cudaMalloc(&health_amax_, slots));
    CHECK_CUDA(cudaMalloc(&health_scale_, slots));
}

DelayedScaling::~DelayedScaling() {
    fp8_scale_state_destroy(&state_);
    for (float* p : {step_start_, eval_backup_, health_amax_, health_scale_}) cudaFree(p);
}

void DelayedScaling::copy_storage(float* dst, const float* src, cudaStream_t stream) const {
    CHECK_CUDA(
        cudaMemcpyAsync(dst, src, state_.storage_floats * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

void DelayedScaling::snapshot_step_start(cudaStream_t stream) {
    copy_storage(step_start_, state_.storage, stream);
}

// The evaluation forward records its amaxes (and, before the first step, its calibration) on the live state;
// end_eval puts the state back, and weights cast with it are cast again for training.
void DelayedScaling::begin_eval(cudaStream_t stream) {
    copy_storage(eval_backup_, state_.storage, stream);
    eval_weights_were_stale_ = weights_stale_;
}

void DelayedScaling::end_eval(cudaStream_t stream) {
    copy_storage(state_.storage, eval_backup_, stream);
    if (eval_weights_were_stale_) weights_stale_ = true;
}

void DelayedScaling::update(const int* apply_flag, cudaStream_t stream) {
    if (timer_) timer_->mark(kPhaseCast, stream);
    const size_t n = state_.num_slots;
    // every rank updates from the amaxes of all ranks: identical scales everywhere
    if (all_reduce_max_) all_reduce_max_(fp8_staging_amax(&state_), n);
    CHECK_CUDA(cudaMemcpyAsync(health_amax_, fp8_staging_amax(&state_), n * sizeof(float),
                               cudaMemcpyDeviceToDevice, stream));
    CHECK_CUDA(
        cudaMemcpyAsync(health_scale_, state_.scale, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    fp8_update_scales(&state_, cfg_.amax_algo, cfg_.margin, stream);
    restore_if_skipped(state_.storage, step_start_, state_.storage_floats, apply_flag, stream);
    calibrate_ = false;  // end_step() sets it back if the step was skipped
}

// Each rank measured the amax of its own rows; the scale comes from the largest, as one rank with all the
// rows would compute it, so no rank's cast clips another's data and all ranks cast alike.
void DelayedScaling::calibrate(int slot, cudaStream_t stream) {
    if (all_reduce_max_) all_reduce_max_(fp8_staging_amax(&state_) + slot, 1);
    fp8_calibrate_scales(&state_, slot, 1, cfg_.margin, stream);
}

void DelayedScaling::all_reduce_staged_amax(cudaStream_t stream) {
    if (all_reduce_max_) all_reduce_max_(fp8_staging_amax(&state_), state_.num_slots);
}

void DelayedScaling::restore(cudaStream_t stream) {
    copy_storage(state_.storage, step_start_, stream);
    weights_stale_ = true;
}

void DelayedScaling::end_step(bool applied) {
    if (!applied && calibrating_step_) {
        calibrate_ = true;      // the restored state is uncalibrated: calibrate again
        weights_stale_ = true;  // and cast the weights with calibration
    }
}

// |x * scale| above this is clipped by more than the format's own rounding (half a step above the max: E4M3
// has 3 mantissa bits, E5M2 2), so a calibrated scale whose float rounding lands a hair above max is not
// counted as saturated.
static double fp8_clip_threshold(Fp8Dtype d) {
    return fp8_dtype_max(d) * (1.0 + (d == Fp8Dtype::E4M3 ? 1.0 / 16 : 1.0 / 8));
}

// From the snapshots the update took: saturated slots (amax * scale > fp8 max) and slots that kept their old
// scale (amax 0, inf or NaN); the scale range after the update.
void DelayedScaling::health(Fp8Health* h) const {
    const int n = state_.num_slots;
    std::vector<float> amax(n), scale(n), after(n);
    CHECK_CUDA(cudaMemcpy(amax.data(), health_amax_, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(scale.data(), health_scale_, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(after.data(), state_.scale, n * sizeof(float), cudaMemcpyDeviceToHost));
    h->slots = n;
    h->saturated = h->fell_back = 0;
    for (int i = 0; i < n; i++) {
        if (!(std::isfinite(amax[i]) && amax[i] > 0))
            h->fell_back++;
        else if ((double)amax[i] * scale[i] > fp8_clip_threshold(state_.dtypes[i]))
            h->saturated++;
    }
    h->min_scale = *std::min_element(after.begin(), after.end());
    h->max_scale = *std::max_element(after.begin(), after.end());
    fp8_headroom_by_role(amax, scale, state_.dtypes, h->headroom_median, h->headroom_max);
}

std::vector<RecipeStateTensor> DelayedScaling::state_tensors() {
    const size_t S = state_.num_slots, H = state_.history_len;
    return {{"fp8.amax_history", {H, S}, state_.amax_history, H * S},
            {"fp8.scale", {S}, state_.scale, S},
            {"fp8.scale_inv", {S}, state_.scale_inv, S}};
}

std::vector<float> DelayedScaling::state_to_host(cudaStream_t stream) const {
    std::vector<float> out(state_.storage_floats);
    CHECK_CUDA(cudaMemcpyAsync(out.data(), state_.storage, out.size() * sizeof(float), cudaMemcpyDeviceToHost,
                               stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    return out;
}
