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
