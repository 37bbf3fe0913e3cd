// bf16 rounding on the host with CUDA's own conversion (round to nearest even, NaN kept), so a reference
// sees exactly the values a kernel stores.
#pragma once
#include <cuda_bf16.h>

#include <vector>

inline float ref_bf16_round(float x) { return __bfloat162float(__float2bfloat16(x)); }

inline void ref_round_to_bf16(std::vector<float>& v) {
    for (float& x : v) x = ref_bf16_round(x);
}
