// The FP8 scale state of every scaled tensor ("slot"): amax history, scale, scale_inv and the format's max in
// one device allocation, and the two updates of the delayed-scaling recipe (Transformer Engine semantics; the
// recipe: README.md, "How FP8 works"). llmc/fp8/recipe.h decides when they run; llmc/kernels/cast/cast.cuh
// reads the scales and writes the staging amaxes.
#pragma once
#include <vector>

#include "llmc/fp8/fp8_scale_math.h"
#include "llmc/fp8/fp8_tensor.h"
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/host/config.h"

// All device arrays live in one allocation (`storage`, `storage_floats` floats: save/restore it whole).
struct Fp8ScaleState {
    int num_slots = 0;
    int history_len = 0;            // H >= 1 rows including the staging row; H = 1 keeps no past amaxes
    float* amax_history = nullptr;  // [H][num_slots]; row 0 = staging (this step's amax), then past amaxes
    float* scale = nullptr;         // [num_slots], quantization factor x_fp8 = x * scale
    float* scale_inv = nullptr;     // [num_slots], 1 / scale
    float* fp8_max = nullptr;       // [num_slots], 448 (E4M3) or 57344 (E5M2)
    std::vector<Fp8Dtype> dtypes;   // each slot's format, given to a tensor when it is bound (Fp8Tensor)
    float* storage = nullptr;
    size_t storage_floats = 0;
};

// One slot per entry of `dtypes` (see fp8_linear_slot_dtypes); scale = scale_inv = 1, history zeros.
// Synchronous (allocates and uploads).
Fp8ScaleState fp8_scale_state_create(const std::vector<Fp8Dtype>& dtypes, int history_len);
void fp8_scale_state_destroy(Fp8ScaleState* st);
// Staging amaxes, contiguous float[num_slots] (row 0 of the history): all-reduce MAX over it across
// data-parallel ranks before fp8_update_scales.
float* fp8_staging_amax(Fp8ScaleState* st);
// Slot `index` of the state (its scale, scale_inv and staging amax), and a tensor bound to it: its row-wise
// shape rows x cols and the slot's format.
Fp8ScaleSlot fp8_scale_slot(const Fp8ScaleState& st, int index);
void fp8_bind(Fp8Tensor* t, const Fp8ScaleState& st, int index, int rows, int cols);

// Once per optimizer step, one launch for all slots. Per slot with staging amax != 0:
// amax = max over the window (all H rows incl. staging, NaN/inf propagate) for Max, or the staging value for
// MostRecent; roll the history (row H-1 = this step, row 1 = oldest kept, the oldest dropped; row 0 zeroed);
// scale = (fp8_max / amax) / 2^margin if amax finite and > 0, else the old scale (inf result -> FLT_MAX);
// scale_inv = 1/scale. Slots with staging amax 0 (unused this step) are untouched.
void fp8_update_scales(Fp8ScaleState* st, AmaxAlgo algo, int margin, cudaStream_t stream);
// Step-0 calibration ("current scaling" once): for slots [first_slot, first_slot + count), scale from the
// staging amax (fp8_compute_scale, margin applied) with no roll; staging and history untouched, so the
// regular update still records this step. Use after an fp8_amax* pass over the tensor and before its real
// cast.
void fp8_calibrate_scales(Fp8ScaleState* st, int first_slot, int count, int margin, cudaStream_t stream);
