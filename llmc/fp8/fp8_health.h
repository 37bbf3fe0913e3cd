// FP8 scale health of one step, for the log (host struct; filled by llmc/fp8/recipe.h).
#pragma once

// The scale range after the update and how many slots saturated (amax * scale above the format's max, so
// values were clipped) or fell back (amax 0/inf/NaN: the old scale was kept).
struct Fp8Health {
    int slots = 0, saturated = 0, fell_back = 0;
    float min_scale = 0, max_scale = 0;
};
