// FP8 scale health of one step, for the log (host struct; filled by llmc/fp8/recipe.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "llmc/fp8/fp8_scale_math.h"

// The scale range after the update and how many slots saturated (amax * scale above the format's max, so
// values were clipped) or fell back (amax 0/inf/NaN: the old scale was kept). Headroom per role (X, W, dY):
// the median and the largest over the slots, in binades (fp8_headroom_binades).
struct Fp8Health {
    int slots = 0, saturated = 0, fell_back = 0;
    float min_scale = 0, max_scale = 0;
    float headroom_median[kFp8RolesPerLinear] = {0, 0, 0};
    float headroom_max[kFp8RolesPerLinear] = {0, 0, 0};
};

// Headroom of one scaled tensor in binades: log2(fp8_max / (amax * scale)), amax the step's and scale the one
// it was quantized with. 0: its largest value met the format's max (a fresh scale with margin 0); k > 0: the
// format's top k binades went unused (a scale held down by an older, larger amax of the history, or the
// margin), so k more binades of small values fall below the smallest subnormal; < 0: values were clipped.
inline double fp8_headroom_binades(float amax, float scale, float fp8_max) {
    return std::log2((double)fp8_max / ((double)amax * (double)scale));
}

// Per role (slot % kFp8RolesPerLinear: kFp8X, kFp8W, kFp8DY), the lower median and the largest headroom over
// the slots whose amax is usable (finite, > 0); NaN for a role without one.
inline void fp8_headroom_by_role(const std::vector<float>& amax, const std::vector<float>& scale,
                                 const std::vector<Fp8Dtype>& dtypes, float median[kFp8RolesPerLinear],
                                 float largest[kFp8RolesPerLinear]) {
    for (int role = 0; role < kFp8RolesPerLinear; role++) {
        std::vector<double> h;
        for (size_t i = role; i < amax.size(); i += kFp8RolesPerLinear)
            if (fp8_amax_usable(amax[i]))
                h.push_back(fp8_headroom_binades(amax[i], scale[i], fp8_dtype_max(dtypes[i])));
        if (h.empty()) {
            median[role] = largest[role] = NAN;
            continue;
        }
        auto mid = h.begin() + (h.size() - 1) / 2;
        std::nth_element(h.begin(), mid, h.end());
        median[role] = (float)*mid;
        largest[role] = (float)*std::max_element(h.begin(), h.end());
    }
}
