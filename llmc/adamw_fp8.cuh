// AdamW fused with the FP8 cast of the weight it updates (one GPU: the whole FP32 master of a Linear is
// here). Instead of AdamW writing the master and fp8_cast_transpose reading it back, one pass updates master,
// m and v and quantizes the new weight into W and W^T.
#pragma once
#include "llmc/adamw.cuh"
#include "llmc/fp8.cuh"

// For one Linear weight [OC, C] (OC and C multiples of 16, pointers 16-byte aligned): the AdamW update of
// adamw_update (device step scalars, grad_scale, apply flag), then the new master weight cast with the FP8
// state's slot `slot` (its scale, already updated for this step) into w_OCC [OC, C] and wT_COC [C, OC], the
// amax of the master into the slot's staging amax and the scale_inv used into w_scale_inv. Bitwise the same
// as adamw_update(params_P = nullptr) followed by fp8_cast_transpose of the master. apply[0] == 0 (a skipped
// step): master, m and v are untouched and W, W^T are cast from them as they are.
void adamw_update_fp8_weight(float* master_OCC, float* m_OCC, float* v_OCC, const bf16* grads_OCC, int OC,
                             int C, float beta1, float beta2, float eps, const AdamWStepScalars* step_dev,
                             const float* grad_scale, const int* apply, __nv_fp8_storage_t* w_OCC,
                             __nv_fp8_storage_t* wT_COC, float* w_scale_inv, Fp8ScaleState* st, int slot,
                             cudaStream_t stream);
