// AdamW: one grid-stride kernel, 2 x 8 parameters per thread and iteration (x128 gradient/params, f128
// master, m, v), streaming loads/stores (nothing is reused within the step). A head (until the views are
// 16-byte aligned) and a tail (P not a multiple of 8) are done element by element; views whose misalignments
// differ fall back to the element path entirely.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "llmc/kernels/adamw/adamw.cuh"
#include "llmc/kernels/adamw/adamw_math.cuh"

namespace {

// ---------------------------------------------------------------------------------------------- kernels

// Vectors per thread and iteration, all loaded before any is updated: 2 puts 224 bytes of loads in flight
// per thread (83.7% -> 91.4% of the copy ceiling at P = 1.5e9 on the H200, at 2 instead of 4 blocks per SM;
// docs/performance.md). They do not alias, but the compiler cannot know: it would not hoist a load above a
// store.
constexpr int kVecsInFlight = 2;

// Vectors [head, head + 8 * nvec) take the 16-byte path; elements [0, head) and [head + 8 * nvec, P) the
// scalar one.
template <class MT>
__global__ void __launch_bounds__(256)
    adamw_kernel(float* master_P, bf16* params_P, MT* m_P, MT* v_P, const bf16* grads_P, size_t P,
                 size_t head, size_t nvec, AdamWCoefs c, AdamWStepScalars step_host,
                 const AdamWStepScalars* step_dev, const float* grad_scale, const int* apply,
                 ShardView view) {
    if (apply && !*apply) return;  // a skipped step: nothing changes
    const AdamWStepScalars t = step_dev ? *step_dev : step_host;
    const float scale = grad_scale ? *grad_scale : 1.0f;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t i0 = tid; i0 < nvec; i0 += stride * kVecsInFlight) {
        x128 g[kVecsInFlight];
        float p[kVecsInFlight][8], m[kVecsInFlight][8], v[kVecsInFlight][8];
#pragma unroll
        for (int u = 0; u < kVecsInFlight; u++) {
            const size_t i = i0 + u * stride;
            if (i < nvec) {
                const size_t off = head + i * 8, full = view.map(off);
                g[u] = load128_stream(grads_P + full);
                load_moments8(master_P + off, p[u]);
                load_moments8(m_P + off, m[u]);
                load_moments8(v_P + off, v[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < kVecsInFlight; u++) {
            const size_t i = i0 + u * stride;
            if (i < nvec) {
                const size_t off = head + i * 8, full = view.map(off);
                x128 out;
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    adamw_element(p[u][k], m[u][k], v[u][k], __bfloat162float(g[u][k]) * scale, c, t);
                    out[k] = __float2bfloat16_rn(p[u][k]);
                }
                store_moments8(master_P + off, p[u]);
                store_moments8(m_P + off, m[u]);
                store_moments8(v_P + off, v[u]);
                if (params_P) store128_stream(params_P + full, out);
            }
        }
    }
    const size_t nscalar = P - nvec * 8;
    for (size_t j = tid; j < nscalar; j += stride) {
        const size_t idx = j < head ? j : j + nvec * 8;
        const size_t full = view.map(idx);
        float p = master_P[idx], m = moment_to_float(m_P[idx]), v = moment_to_float(v_P[idx]);
        adamw_element(p, m, v, __bfloat162float(grads_P[full]) * scale, c, t);
        master_P[idx] = p;
        m_P[idx] = moment_from_float<MT>(m);
        v_P[idx] = moment_from_float<MT>(v);
        if (params_P) params_P[full] = __float2bfloat16_rn(p);
    }
}

}  // namespace

// -------------------------------------------------------------------------------------------- launchers

AdamWStepScalars adamw_step_scalars(float lr, float beta1, float beta2, float weight_decay, int t) {
    CHECK(t >= 1, "adamw_update: step t = %d must be >= 1", t);
    AdamWStepScalars s;
    s.decay = (float)(1.0 - (double)lr * (double)weight_decay);
    s.step_size = (float)((double)lr / (1.0 - std::pow((double)beta1, t)));
    s.bc2_sqrt = (float)std::sqrt(1.0 - std::pow((double)beta2, t));
    return s;
}

namespace {

template <class MT>
void launch_adamw(float* master_P, bf16* params_P, MT* m_P, MT* v_P, const bf16* grads_P, size_t P,
                  float beta1, float beta2, float eps, const AdamWStepScalars& step_host,
                  const AdamWStepScalars* step_dev, const float* grad_scale, const int* apply,
                  cudaStream_t stream, const ShardView& view) {
    if (P == 0) return;
    const AdamWCoefs c = adamw_coefs(beta1, beta2, eps);

    // Head: elements until the bf16 views are 16-byte aligned; the fp32 (and moment) views must then be
    // aligned too.
    // params_P == nullptr: no BF16 copy to write (its alignment then follows the gradients')
    const bf16* params_view = params_P ? params_P : grads_P;
    CHECK(((uintptr_t)params_view & 1) == 0 && ((uintptr_t)grads_P & 1) == 0 &&
              ((uintptr_t)master_P & 3) == 0 && ((uintptr_t)m_P % sizeof(MT)) == 0 &&
              ((uintptr_t)v_P % sizeof(MT)) == 0,
          "adamw_update: misaligned pointer");
    // A shard view (several GPUs) takes the vector path only from element 0 with whole vectors per chunk.
    size_t head = view.identity ? ((16 - ((uintptr_t)params_view & 15)) & 15) / 2 : 0;
    size_t nvec = 0;
    if (head < P && view.vectorizable() && aligned16(params_view + head) && aligned16(grads_P + head) &&
        aligned16(master_P + head) && aligned16(m_P + head) && aligned16(v_P + head)) {
        nvec = (P - head) / 8;
    } else {
        head = 0;
    }
    // threads that have something to do
    const size_t work = std::max((nvec + kVecsInFlight - 1) / kVecsInFlight, P - nvec * 8);
    // Grid-stride over exactly the blocks that are resident at once (no second wave to wait for).
    const int block = 256;
    const int num_sms = current_device_sms();
    int blocks_per_sm = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, adamw_kernel<MT>, block, 0));
    const int grid =
        (int)std::min<size_t>((work + block - 1) / block, (size_t)num_sms * std::max(blocks_per_sm, 1));
    adamw_kernel<<<grid, block, 0, stream>>>(master_P, params_P, m_P, v_P, grads_P, P, head, nvec, c,
                                             step_host, step_dev, grad_scale, apply, view);
    CHECK_LAUNCH();
}

}  // namespace

template <class MT>
void adamw_update(float* master_P, bf16* params_P, MT* m_P, MT* v_P, const bf16* grads_P, size_t P, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int t, const float* grad_scale,
                  cudaStream_t stream, const ShardView& view) {
    launch_adamw(master_P, params_P, m_P, v_P, grads_P, P, beta1, beta2, eps,
                 adamw_step_scalars(lr, beta1, beta2, weight_decay, t), nullptr, grad_scale, nullptr, stream,
                 view);
}

template <class MT>
void adamw_update(float* master_P, bf16* params_P, MT* m_P, MT* v_P, const bf16* grads_P, size_t P,
                  float beta1, float beta2, float eps, const AdamWStepScalars* step_dev,
                  const float* grad_scale, const int* apply, cudaStream_t stream, const ShardView& view) {
    CHECK(step_dev, "adamw_update: step scalars (device) required");
    launch_adamw(master_P, params_P, m_P, v_P, grads_P, P, beta1, beta2, eps, AdamWStepScalars{}, step_dev,
                 grad_scale, apply, stream, view);
}

// The two moment storage types.
#define INSTANTIATE_ADAMW(MT)                                                                                \
    template void adamw_update<MT>(float*, bf16*, MT*, MT*, const bf16*, size_t, float, float, float, float, \
                                   float, int, const float*, cudaStream_t, const ShardView&);                \
    template void adamw_update<MT>(float*, bf16*, MT*, MT*, const bf16*, size_t, float, float, float,        \
                                   const AdamWStepScalars*, const float*, const int*, cudaStream_t,          \
                                   const ShardView&);
INSTANTIATE_ADAMW(float)
INSTANTIATE_ADAMW(bf16)
