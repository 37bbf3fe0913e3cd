// Host tests of the FP8 delayed-scaling arithmetic (llmc/fp8/fp8_scale_math.h): the scale formula and its
// special cases, amax combining, and the reference model of the history/scale update that the kernel test
// compares with; the health log's headroom per role (llmc/fp8/fp8_health.h).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>

#include "llmc/fp8/fp8_health.h"
#include "llmc/fp8/fp8_scale_math.h"
#include "llmc/host/config.h"
#include "test/testing.h"

static uint32_t bits(float f) { return fp8_float_bits(f); }

TEST(scale_hand_cases) {
    EXPECT_EQ(fp8_compute_scale(2.0f, kFp8E4M3Max, 0, 1.0f), 224.0f);
    EXPECT_EQ(fp8_compute_scale(2.0f, kFp8E4M3Max, 1, 1.0f), 112.0f);
    EXPECT_EQ(fp8_compute_scale(2.0f, kFp8E4M3Max, 3, 1.0f), 28.0f);
    EXPECT_EQ(fp8_compute_scale(2.0f, kFp8E5M2Max, 0, 1.0f), 28672.0f);
    EXPECT_EQ(fp8_compute_scale(448.0f, kFp8E4M3Max, 0, 5.0f), 1.0f);
    EXPECT_EQ(fp8_compute_scale(0.5f, kFp8E5M2Max, 2, 5.0f), 28672.0f);
    EXPECT_EQ(fp8_compute_scale(3.0f, kFp8E4M3Max, 0, 1.0f), 448.0f / 3.0f);
}

TEST(scale_keeps_old_for_unusable_amax) {
    EXPECT_EQ(fp8_compute_scale(0.0f, kFp8E4M3Max, 0, 7.0f), 7.0f);
    EXPECT_EQ(fp8_compute_scale(-0.0f, kFp8E4M3Max, 0, 7.0f), 7.0f);
    EXPECT_EQ(fp8_compute_scale(INFINITY, kFp8E4M3Max, 0, 7.0f), 7.0f);
    EXPECT_EQ(fp8_compute_scale(NAN, kFp8E4M3Max, 0, 7.0f), 7.0f);
    EXPECT_EQ(fp8_compute_scale(-2.0f, kFp8E4M3Max, 0, 7.0f), 7.0f);
    EXPECT_TRUE(!fp8_amax_usable(0.0f) && !fp8_amax_usable(INFINITY) && !fp8_amax_usable(-INFINITY));
    EXPECT_TRUE(!fp8_amax_usable(NAN) && !fp8_amax_usable(-1.0f));
    EXPECT_TRUE(fp8_amax_usable(1e-40f) && fp8_amax_usable(FLT_MAX) && fp8_amax_usable(1.0f));
}

TEST(scale_overflow_gives_flt_max) {
    EXPECT_EQ(fp8_compute_scale(1e-40f, kFp8E4M3Max, 0, 1.0f), FLT_MAX);  // denormal amax
    EXPECT_EQ(fp8_compute_scale(1e-36f, kFp8E4M3Max, 0, 1.0f), FLT_MAX);  // 4.48e38 > FLT_MAX
    EXPECT_EQ(fp8_compute_scale(1e-40f, kFp8E5M2Max, 1, 1.0f), FLT_MAX);
    EXPECT_EQ(fp8_compute_scale(FLT_MIN, kFp8E5M2Max, 0, 1.0f), FLT_MAX);
    // The quotient is taken exactly, then scaled by 2^-margin: with a large margin a denormal amax gives a
    // finite scale (the same value as Transformer Engine's (fp8_max * 2^-margin) / amax).
    const float a = 1e-38f;
    EXPECT_EQ(fp8_compute_scale(a, kFp8E4M3Max, 10, 1.0f), (float)(448.0 / 1024.0 / (double)a));
    // Just below the overflow threshold stays finite.
    const float big = fp8_compute_scale(448.0f / 3.0e38f, kFp8E4M3Max, 0, 1.0f);
    EXPECT_TRUE(std::isfinite(big) && big > 2.9e38f);
}

// For normal amaxes the result must equal the plain IEEE float computation (fp8_max / amax) / 2^margin.
TEST(scale_matches_float_arithmetic) {
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> expo(-100.0f, 100.0f);
    int checked = 0;
    for (int i = 0; i < 200000; i++) {
        const float amax = std::exp2(expo(rng)) * (1.0f + (float)(rng() % 1000) / 1000.0f);
        const int margin = (int)(rng() % 4);
        const float fmax = (i & 1) ? kFp8E4M3Max : kFp8E5M2Max;
        volatile float q = fmax / amax;  // IEEE float division
        const float want = std::ldexp((float)q, -margin);
        if (!std::isfinite(want) || want < FLT_MIN) continue;
        if (bits(fp8_compute_scale(amax, fmax, margin, 1.0f)) != bits(want)) {
            EXPECT_EQ(fp8_compute_scale(amax, fmax, margin, 1.0f), want);
            return;
        }
        checked++;
    }
    EXPECT_TRUE(checked > 100000);
}

TEST(scale_inv) {
    EXPECT_EQ(fp8_compute_scale_inv(1.0f), 1.0f);
    EXPECT_EQ(fp8_compute_scale_inv(224.0f), 1.0f / 224.0f);
    EXPECT_EQ(fp8_compute_scale_inv(448.0f / 3.0f), 1.0f / (448.0f / 3.0f));
    const float tiny = fp8_compute_scale_inv(FLT_MAX);  // a float denormal, not flushed
    EXPECT_TRUE(tiny > 0.0f && tiny < FLT_MIN);
}

TEST(amax_combine) {
    EXPECT_EQ(fp8_amax_combine(1.0f, 2.0f), 2.0f);
    EXPECT_EQ(fp8_amax_combine(-3.0f, 2.0f), 3.0f);
    EXPECT_EQ(fp8_amax_combine(0.0f, 1e-40f), 1e-40f);  // denormals count
    EXPECT_TRUE(std::isinf(fp8_amax_combine(INFINITY, 2.0f)));
    EXPECT_TRUE(std::isnan(fp8_amax_combine(NAN, 2.0f)));
    EXPECT_TRUE(std::isnan(fp8_amax_combine(2.0f, -NAN)));
    EXPECT_TRUE(std::isnan(fp8_amax_combine(INFINITY, NAN)));  // NaN wins over inf
}

TEST(slot_layout) {
    std::vector<Fp8Dtype> h = fp8_linear_slot_dtypes(Fp8Format::Hybrid, 2);
    std::vector<Fp8Dtype> e = fp8_linear_slot_dtypes(Fp8Format::E4M3, 2);
    EXPECT_EQ((int)h.size(), 6);
    EXPECT_TRUE(h[fp8_slot(1, kFp8X)] == Fp8Dtype::E4M3 && h[fp8_slot(1, kFp8W)] == Fp8Dtype::E4M3);
    EXPECT_TRUE(h[fp8_slot(1, kFp8DY)] == Fp8Dtype::E5M2 && e[fp8_slot(1, kFp8DY)] == Fp8Dtype::E4M3);
    EXPECT_EQ(fp8_dtype_max(Fp8Dtype::E4M3), 448.0f);
    EXPECT_EQ(fp8_dtype_max(Fp8Dtype::E5M2), 57344.0f);
}

// The reference update on hand-derived sequences (two slots, H = 4).
TEST(update_reference_window_and_roll) {
    const int S = 2, H = 4;
    std::vector<float> hist(H * S, 0.0f), scale(S, 1.0f), scale_inv(S, 1.0f), fmax = {448.0f, 448.0f};
    // Slot 0 sees 8, 1, 1, 1, 1: the 8 governs exactly H = 4 steps. Slot 1 is unused except at step 2.
    const float seq0[5] = {8, 1, 1, 1, 1}, seq1[5] = {0, 0, 4, 0, 0};
    const float want0[5] = {56, 56, 56, 56, 448}, want1[5] = {1, 1, 112, 112, 112};
    for (int step = 0; step < 5; step++) {
        hist[0] = seq0[step];
        hist[1] = seq1[step];
        fp8_update_reference(hist, scale, scale_inv, fmax, S, H, AmaxAlgo::Max, 0);
        EXPECT_EQ(scale[0], want0[step]);
        EXPECT_EQ(scale[1], want1[step]);
        EXPECT_EQ(scale_inv[0], fp8_compute_scale_inv(want0[step]));
        EXPECT_EQ(hist[0], 0.0f);                  // staging cleared
        EXPECT_EQ(hist[(H - 1) * S], seq0[step]);  // newest row = this step
    }
    // Slot 0 after 5 steps: rows 1..3 = the last three amaxes, oldest first.
    EXPECT_EQ(hist[1 * S], 1.0f);
    EXPECT_EQ(hist[2 * S], 1.0f);
    // Slot 1 rolled once (step 2) and then stayed put: its 4 sits in the newest row.
    EXPECT_EQ(hist[(H - 1) * S + 1], 4.0f);
    EXPECT_EQ(hist[1 * S + 1], 0.0f);

    // MostRecent: the scale follows each step's amax; the history still rolls.
    std::vector<float> h2(H, 0.0f), sc2(1, 1.0f), si2(1, 1.0f), fm2 = {57344.0f};
    const float seq[3] = {8, 1, 2};
    for (int step = 0; step < 3; step++) {
        h2[0] = seq[step];
        fp8_update_reference(h2, sc2, si2, fm2, 1, H, AmaxAlgo::MostRecent, 0);
        EXPECT_EQ(sc2[0], 57344.0f / seq[step]);
    }
    EXPECT_EQ(h2[1], 8.0f);
    EXPECT_EQ(h2[2], 1.0f);
    EXPECT_EQ(h2[3], 2.0f);

    // H = 1: no past kept, Max behaves like MostRecent.
    std::vector<float> h3(1, 0.0f), sc3(1, 1.0f), si3(1, 1.0f), fm3 = {448.0f};
    h3[0] = 8.0f;
    fp8_update_reference(h3, sc3, si3, fm3, 1, 1, AmaxAlgo::Max, 0);
    h3[0] = 1.0f;
    fp8_update_reference(h3, sc3, si3, fm3, 1, 1, AmaxAlgo::Max, 0);
    EXPECT_EQ(sc3[0], 448.0f);
    EXPECT_EQ(h3[0], 0.0f);
}

// inf / NaN in the window keep the old scale for as long as they stay in the window (H steps).
TEST(update_reference_nonfinite_window) {
    const int H = 3;
    std::vector<float> hist(H, 0.0f), scale(1, 5.0f), scale_inv(1, 0.2f), fmax = {448.0f};
    const float seq[4] = {NAN, 2.0f, 2.0f, 2.0f};
    const float want[4] = {5.0f, 5.0f, 5.0f, 224.0f};
    for (int step = 0; step < 4; step++) {
        hist[0] = seq[step];
        fp8_update_reference(hist, scale, scale_inv, fmax, 1, H, AmaxAlgo::Max, 0);
        EXPECT_EQ(scale[0], want[step]);
    }
    // With MostRecent only the current value matters.
    std::vector<float> h2(H, 0.0f), s2(1, 5.0f), i2(1, 0.2f);
    h2[0] = INFINITY;
    fp8_update_reference(h2, s2, i2, fmax, 1, H, AmaxAlgo::MostRecent, 0);
    EXPECT_EQ(s2[0], 5.0f);
    h2[0] = 2.0f;
    fp8_update_reference(h2, s2, i2, fmax, 1, H, AmaxAlgo::MostRecent, 0);
    EXPECT_EQ(s2[0], 224.0f);
}

// Headroom: exact powers of two give exact binades (224 * 2 = 448 is E4M3's max; 28672 * 2 = E5M2's).
TEST(headroom_hand_cases) {
    EXPECT_EQ(fp8_headroom_binades(2.0f, 224.0f, kFp8E4M3Max), 0.0);
    EXPECT_EQ(fp8_headroom_binades(0.25f, 224.0f, kFp8E4M3Max), 3.0);
    EXPECT_EQ(fp8_headroom_binades(8.0f, 224.0f, kFp8E4M3Max), -2.0);
    EXPECT_EQ(fp8_headroom_binades(2.0f, 28672.0f, kFp8E5M2Max), 0.0);
    EXPECT_EQ(fp8_headroom_binades(1.0f / 64, 28672.0f, kFp8E5M2Max), 7.0);
}

// Per role over random slots with chosen headrooms (amax = fp8_max / (scale * 2^h), h an integer, so the
// headroom is exact): median and max against a sort of each role's values; unusable amaxes (0, inf, NaN)
// are left out; a role with none gives NaN.
TEST(headroom_by_role) {
    std::mt19937 rng(std::random_device{}());
    const int linears = 1 + (int)(rng() % 40), n = linears * kFp8RolesPerLinear;
    const std::vector<Fp8Dtype> dtypes = fp8_linear_slot_dtypes(Fp8Format::Hybrid, linears);
    std::vector<float> amax(n), scale(n);
    std::vector<std::vector<double>> want(kFp8RolesPerLinear);
    for (int i = 0; i < n; i++) {
        scale[i] = std::ldexp(1.0f, (int)(rng() % 40) - 10);
        const int h = (int)(rng() % 21) - 4;
        amax[i] = (float)std::ldexp((double)fp8_dtype_max(dtypes[i]) / scale[i], -h);
        if (rng() % 5 == 0) {
            const float bad[3] = {0.0f, INFINITY, NAN};
            amax[i] = bad[rng() % 3];
        } else {
            want[i % kFp8RolesPerLinear].push_back(h);
        }
    }
    float median[kFp8RolesPerLinear], largest[kFp8RolesPerLinear];
    fp8_headroom_by_role(amax, scale, dtypes, median, largest);
    for (int r = 0; r < kFp8RolesPerLinear; r++) {
        std::vector<double>& w = want[r];
        if (w.empty()) {
            EXPECT_TRUE(std::isnan(median[r]) && std::isnan(largest[r]));
            continue;
        }
        std::sort(w.begin(), w.end());
        EXPECT_EQ(median[r], (float)w[(w.size() - 1) / 2]);
        EXPECT_EQ(largest[r], (float)w.back());
    }
    std::vector<float> none(n, 0.0f);
    fp8_headroom_by_role(none, scale, dtypes, median, largest);
    for (int r = 0; r < kFp8RolesPerLinear; r++) EXPECT_TRUE(std::isnan(median[r]) && std::isnan(largest[r]));
}

TEST_MAIN()
