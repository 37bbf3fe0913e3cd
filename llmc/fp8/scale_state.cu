// The FP8 scale state of every scaled tensor ("slot") and its two updates: the one-launch amax-history/scale
// update after each step and the step-0 calibration. The kernels here are the whole delayed-scaling
// arithmetic on the device; llmc/fp8/recipe.h owns when they run. See llmc/fp8/scale_state.cuh.
#include <vector>

#include "llmc/fp8/scale_state.cuh"

namespace {
// ---- the scale update ----
// Roll order (read from Transformer Engine's delayed_scaling.cu): the window amax is taken over ALL H rows
// BEFORE the roll (staging row 0 = this step, rows 1..H-1 = the previous H-1 steps, including old row 1, the
// oldest, which the roll then drops), so the window is always the last H step amaxes. The roll is TE's
// torch.roll(-1) layout: new[i] = old[i+1] (1 <= i < H-1), new[H-1] = old[0] (this step), new[0] = 0. After
// the update row H-1 holds this step's amax, row H-1-k the amax k steps ago, row 0 is zero. Unlike TE, slots
// with staging 0 are skipped (they saw no data this step, so there is nothing to record), and the window max
// propagates NaN (TE's fmaxf would drop it) so a NaN anywhere in the window, like an inf, keeps the old
// scale. Block: 32 slots (x, coalesced across slots) x 16 row lanes (y), 4 rows per lane per tile of 64 rows.
// In-place roll with one barrier per tile: tile p reads rows [base+1, base+64] and, after the barrier, writes
// rows [base, base+63]; row base+64 is next written by tile p+1 after its own barrier.
constexpr int kUpdSlots = 32;
constexpr int kUpdRowLanes = 16;
constexpr int kUpdRowsPerLane = 4;

__global__ void __launch_bounds__(kUpdSlots* kUpdRowLanes)
    update_scales_kernel(float* hist, float* scale, float* scale_inv, const float* __restrict__ fp8_max,
                         int num_slots, int H, bool algo_max, int margin) {
    __shared__ uint32_t red[kUpdRowLanes][kUpdSlots];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int slot = blockIdx.x * kUpdSlots + tx;
    const float staged = slot < num_slots ? hist[slot] : 0.0f;
    const bool active = slot < num_slots && fp8_abs_bits(staged) != 0;
    uint32_t window = 0;
    constexpr int kRowsPerTile = kUpdRowLanes * kUpdRowsPerLane;
    for (int base = 0; base < H; base += kRowsPerTile) {
        float a[kUpdRowsPerLane];
#pragma unroll
        for (int r = 0; r < kUpdRowsPerLane; r++) {
            const int i = base + r * kUpdRowLanes + ty;
            a[r] = 0.0f;
            if (active && i < H) {
                a[r] = i < H - 1 ? hist[(size_t)(i + 1) * num_slots + slot] : staged;
                window = max(window, fp8_abs_bits(a[r]));
            }
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < kUpdRowsPerLane; r++) {
            const int i = base + r * kUpdRowLanes + ty;
            if (active && i < H) hist[(size_t)i * num_slots + slot] = i > 0 ? a[r] : 0.0f;
        }
    }
    red[ty][tx] = window;
    __syncthreads();
    if (ty == 0 && active) {
        uint32_t m = 0;
#pragma unroll
        for (int y = 0; y < kUpdRowLanes; y++) m = max(m, red[y][tx]);
        const float amax = fp8_bits_float(algo_max ? m : fp8_abs_bits(staged));
        const float s = fp8_compute_scale(amax, fp8_max[slot], margin, scale[slot]);
        scale[slot] = s;
        scale_inv[slot] = fp8_compute_scale_inv(s);
    }
}

__global__ void calibrate_scales_kernel(float* scale, float* scale_inv, const float* staging,
                                        const float* fp8_max, int first, int count, int margin) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const int s = first + i;
    const float amax = fp8_bits_float(fp8_abs_bits(staging[s]));
    const float sc = fp8_compute_scale(amax, fp8_max[s], margin, scale[s]);
    scale[s] = sc;
    scale_inv[s] = fp8_compute_scale_inv(sc);
}

}  // namespace

Fp8ScaleState fp8_scale_state_create(const std::vector<Fp8Dtype>& dtypes, int history_len) {
    CHECK(!dtypes.empty(), "fp8 scale state needs at least one slot");
    CHECK(history_len >= 1, "fp8 amax history length must be >= 1, got %d", history_len);
    Fp8ScaleState st;
    st.num_slots = (int)dtypes.size();
    st.history_len = history_len;
    st.dtypes = dtypes;
    const size_t S = dtypes.size(), hist = (size_t)history_len * S;
    st.storage_floats = hist + 3 * S;
    std::vector<float> init(st.storage_floats, 0.0f);
    for (size_t s = 0; s < S; s++) {
        init[hist + s] = 1.0f;      // scale
        init[hist + S + s] = 1.0f;  // scale_inv
        init[hist + 2 * S + s] = fp8_dtype_max(dtypes[s]);
    }
    CHECK_CUDA(cudaMalloc(&st.storage, st.storage_floats * sizeof(float)));
    CHECK_CUDA(
        cudaMemcpy(st.storage, init.data(), st.storage_floats * sizeof(float), cudaMemcpyHostToDevice));
    st.amax_history = st.storage;
    st.scale = st.storage + hist;
    st.scale_inv = st.scale + S;
    st.fp8_max = st.scale_inv + S;
    return st;
}

void fp8_scale_state_destroy(Fp8ScaleState* st) {
    if (st->storage) CHECK_CUDA(cudaFree(st->storage));
    *st = Fp8ScaleState();
}

float* fp8_staging_amax(Fp8ScaleState* st) { return st->amax_history; }

Fp8ScaleSlot fp8_scale_slot(const Fp8ScaleState& st, int index) {
    CHECK(index >= 0 && index < st.num_slots, "fp8 slot %d out of range [0, %d)", index, st.num_slots);
    return {index, st.scale + index, st.scale_inv + index, st.amax_history + index};
}

void fp8_bind(Fp8Tensor* t, const Fp8ScaleState& st, int index, int rows, int cols) {
    t->slot = fp8_scale_slot(st, index);
    t->format = st.dtypes[index];
    t->rows = rows;
    t->cols = cols;
}

void fp8_update_scales(Fp8ScaleState* st, AmaxAlgo algo, int margin, cudaStream_t stream) {
    CHECK(margin >= 0 && margin <= 64, "fp8 margin must be in [0, 64], got %d", margin);
    update_scales_kernel<<<ceil_div(st->num_slots, kUpdSlots), dim3(kUpdSlots, kUpdRowLanes), 0, stream>>>(
        st->amax_history, st->scale, st->scale_inv, st->fp8_max, st->num_slots, st->history_len,
        algo == AmaxAlgo::Max, margin);
    CHECK_LAUNCH();
}

void fp8_calibrate_scales(Fp8ScaleState* st, int first_slot, int count, int margin, cudaStream_t stream) {
    CHECK(first_slot >= 0 && count >= 0 && first_slot + count <= st->num_slots,
          "fp8_calibrate_scales: slots [%d, %d) out of range [0, %d)", first_slot, first_slot + count,
          st->num_slots);
    CHECK(margin >= 0 && margin <= 64, "fp8 margin must be in [0, 64], got %d", margin);
    if (count == 0) return;
    calibrate_scales_kernel<<<ceil_div(count, 128), 128, 0, stream>>>(
        st->scale, st->scale_inv, st->amax_history, st->fp8_max, first_slot, count, margin);
    CHECK_LAUNCH();
}
