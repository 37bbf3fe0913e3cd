// An FP8 tensor as its producer and the GEMMs that read it see it (Transformer Engine's Tensor: data, dtype,
// shape and its scaling): the bytes (a row-wise copy [rows, cols] and/or the transposed copy [cols, rows]),
// the scale_inv it was written with, and its slot of the FP8 scale state (llmc/fp8/scale_state.cuh): the
// scale a producer quantizes with, the staging amax it max-es the tensor's amax into, and the slot's
// scale_inv it writes next to the bytes; a GEMM dequantizes with the tensor's scale_inv. Shape, format (E4M3
// or E5M2) and slot are set once, when the tensor is bound (fp8_bind): from then on every cast, producer and
// GEMM reads them from the tensor, so no caller pairs buffers, shapes, scale pointers and formats by hand.
#pragma once
#include <cuda_fp8.h>

#include "llmc/fp8/fp8_scale_math.h"

// A tensor's slot of the scale state: device pointers into the state's arrays (stable: the state is
// allocated once), and the slot's number (the recipe's calibration and health name slots by it).
struct Fp8ScaleSlot {
    int index = -1;
    const float* scale = nullptr;      // x_fp8 = x * scale
    const float* scale_inv = nullptr;  // 1 / scale, as the update computed it
    float* amax = nullptr;             // the staging amax (this step's max |x|)
};

struct Fp8Tensor {
    __nv_fp8_storage_t* data = nullptr;    // [rows, cols]; null where only the transposed copy is kept
    __nv_fp8_storage_t* data_T = nullptr;  // [cols, rows]
    float* scale_inv = nullptr;  // one float on the device: the scale_inv the bytes were written with
    Fp8ScaleSlot slot;
    int rows = 0, cols = 0;            // of the row-wise copy
    Fp8Dtype format = Fp8Dtype::E4M3;  // the slot's

    long numel() const { return (long)rows * cols; }
    // The same tensor with only its transposed copy written (e.g. recomputing a saved copy).
    Fp8Tensor transposed_only() const {
        Fp8Tensor t = *this;
        t.data = nullptr;
        return t;
    }
};
