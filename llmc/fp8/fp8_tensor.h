// An FP8 tensor as its producer and the GEMMs that read it see it: the bytes (a row-wise copy [rows, cols]
// and/or the transposed copy [cols, rows]), the scale_inv it was written with, and its slot in the FP8 scale
// state (llmc/kernels/cast/cast.cuh): a producer quantizes with the slot's current scale, max-es the tensor's
// amax into the slot's staging amax and writes the slot's scale_inv next to the bytes; a GEMM dequantizes
// with that scale_inv. It carries its shape and its format (E4M3 or E5M2): the format is decided once, from
// the scale state's table of slot formats, when the tensor is bound to its slot (set_shape); from then on
// every cast, producer and GEMM reads it from the tensor. Kernels and GEMMs take the tensor as one argument,
// so no caller pairs buffers, scale_inv pointers, slot numbers and formats by hand.
#pragma once
#include <cuda_fp8.h>

#include "llmc/fp8/fp8_scale_math.h"

struct Fp8Tensor {
    __nv_fp8_storage_t* data = nullptr;    // [rows, cols]; null where only the transposed copy is kept
    __nv_fp8_storage_t* data_T = nullptr;  // [cols, rows]
    float* scale_inv = nullptr;            // one float on the device
    int slot = -1;
    int rows = 0, cols = 0;            // of the row-wise copy
    Fp8Dtype format = Fp8Dtype::E4M3;  // the slot's

    void set_shape(int r, int c, Fp8Dtype f) {
        rows = r;
        cols = c;
        format = f;
    }

    // The same tensor with only its transposed copy written (e.g. recomputing a saved copy).
    Fp8Tensor transposed_only() const {
        Fp8Tensor t = *this;
        t.data = nullptr;
        return t;
    }
};
