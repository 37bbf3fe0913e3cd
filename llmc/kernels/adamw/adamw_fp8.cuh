// AdamW fused with the FP8 cast of the weight it updates (one GPU: the whole FP32 master of a Linear is
// here). Instead of AdamW writing the master and fp8_cast_transpose reading it back, one pass updates master,
// m and v and quantizes the new weight into W and W^T.
#pragma once
#include "llmc/kernels/adamw/adamw.cuh"
#include "llmc/kernels/cast/cast.cuh"

// For one Linear weight [O, I] = [w.rows, w.cols] (multiples of 16, pointers 16-byte aligned): the AdamW
// update of adamw_update (device step scalars, grad_scale, apply flag), then the new master weight cast into
// the FP8 tensor `w` (llmc/fp8/fp8_tensor.h: W [O, I] and W^T [I, O], with its slot's scale, already updated
// for this step), the amax of the master into the slot's staging amax and the scale_inv used into
// w.scale_inv. Bitwise the same as adamw_update(params_P = nullptr) followed by fp8_cast_transpose of the
// master. apply[0]
// == 0 (a skipped step): master, m and v are untouched and W, W^T are cast from them as they are.
// MT: the moments' storage, float or bf16 (as adamw_update).
template <class MT>
void adamw_update_fp8_weight(float* master_OI, MT* m_OI, MT* v_OI, const bf16* grads_OI, float beta1,
                             float beta2, float eps, const AdamWStepScalars* step_dev,
                             const float* grad_scale, const int* apply, const Fp8Tensor& w,
                             cudaStream_t stream);

// The same for the weights of several layers in one launch (one per kind of Linear instead of one per layer:
// at GPT-2 124M a single weight is 36-144 tiles, a fraction of one wave of blocks): layer l's master, moments
// and gradient at l * layers.layer_stride elements from the given pointers, its FP8 tensor layers.add()-ed in
// order. Each element's arithmetic is the per-layer call's, so the same bits.
struct AdamWFp8Layers {
    static constexpr int kMax = 48;  // what the kernel's parameter space holds; more layers: several calls
    __nv_fp8_storage_t* w[kMax];
    __nv_fp8_storage_t* w_T[kMax];
    float* w_scale_inv[kMax];
    float* staging[kMax];
    const float* scale[kMax];
    const float* scale_inv[kMax];
    size_t layer_stride = 0;
    int count = 0;
    void add(const Fp8Tensor& w);  // its W, W^T, scale_inv and slot
};
template <class MT>
void adamw_update_fp8_weights(float* master_LOI, MT* m_LOI, MT* v_LOI, const bf16* grads_LOI, float beta1,
                              float beta2, float eps, const AdamWStepScalars* step_dev,
                              const float* grad_scale, const int* apply, const AdamWFp8Layers& layers, int O,
                              int I, Fp8Dtype format, cudaStream_t stream);
