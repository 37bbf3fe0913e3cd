// Host tests for llmc/host/sampler: argmax at temperature 0, top-k support, empirical frequencies against the
// softmax, determinism of the uint64 RNG state, V_valid excluding a padded tail, non-finite logits.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmc/host/sampler.h"
#include "test/testing.h"

namespace {

std::vector<double> softmax(const std::vector<float>& logits, double t) {
    double mx = -1e300;
    for (float x : logits) mx = std::max(mx, static_cast<double>(x));
    std::vector<double> p(logits.size());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); i++) sum += (p[i] = std::exp((logits[i] - mx) / t));
    for (double& x : p) x /= sum;
    return p;
}

// Fails if any observed frequency is more than 5 sigma from p (sigma = sqrt(p(1-p)/n)); an id with p == 0
// must never appear.
void expect_frequencies(const std::vector<float>& logits, float t, int top_k, const std::vector<double>& p,
                        int n, uint64_t seed, int v_valid = -1) {
    if (v_valid < 0) v_valid = static_cast<int>(logits.size());
    std::vector<int> count(logits.size(), 0);
    uint64_t rng = seed;
    for (int d = 0; d < n; d++) {
        int id = sample_token(logits.data(), v_valid, t, top_k, &rng);
        if (id < 0 || id >= v_valid) {
            testing::fail(__FILE__, __LINE__, "id out of range: " + std::to_string(id));
            return;
        }
        count[static_cast<size_t>(id)]++;
    }
    for (size_t i = 0; i < p.size(); i++) {
        double f = static_cast<double>(count[i]) / n;
        if (p[i] == 0.0) {
            if (count[i] != 0)
                testing::fail(
                    __FILE__, __LINE__,
                    "id " + std::to_string(i) + " has p=0 but appeared " + std::to_string(count[i]));
            continue;
        }
        double sigma = std::sqrt(p[i] * (1 - p[i]) / n);
        if (std::fabs(f - p[i]) > 5 * sigma + 1e-12)
            testing::fail(__FILE__, __LINE__,
                          "id " + std::to_string(i) + ": frequency " + std::to_string(f) + " vs p " +
                              std::to_string(p[i]) + " (5 sigma = " + std::to_string(5 * sigma) + ")");
    }
}

const std::vector<float> kLogits = {1.0f, 3.0f, -2.0f, 2.5f, 0.0f, 2.9f, -1.0f, 0.5f};  // max id 1, then 5, 3

}  // namespace

TEST(rng_is_deterministic_and_uniform) {
    uint64_t a = 42, b = 42;
    for (int i = 0; i < 100; i++) EXPECT_TRUE(rng_next_u64(&a) == rng_next_u64(&b));
    EXPECT_TRUE(a == b);
    uint64_t s = 0;
    double sum = 0, mn = 1, mx = 0;
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        double u = rng_uniform(&s);
        EXPECT_TRUE(u >= 0.0 && u < 1.0);
        sum += u;
        mn = std::min(mn, u);
        mx = std::max(mx, u);
    }
    EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
    EXPECT_TRUE(mn < 0.001 && mx > 0.999);
}

TEST(temperature_zero_is_argmax_and_does_not_draw) {
    uint64_t rng = 7;
    EXPECT_EQ(sample_token(kLogits.data(), 8, 0.0f, 0, &rng), 1);
    EXPECT_EQ(sample_token(kLogits.data(), 8, 0.0f, 3, &rng), 1);
    EXPECT_TRUE(rng == 7u);
    EXPECT_EQ(sample_token(kLogits.data(), 8, 0.0f, 0, nullptr), 1);  // no RNG needed
    std::vector<float> ties = {0.0f, 5.0f, 5.0f};
    EXPECT_EQ(sample_token(ties.data(), 3, 0.0f, 0, nullptr), 1);  // lowest id on ties
}

TEST(top_k_one_is_always_argmax) {
    uint64_t rng = 123;
    for (int d = 0; d < 2000; d++) {
        int id = sample_token(kLogits.data(), 8, 1.5f, 1, &rng);
        if (id != 1) {
            EXPECT_EQ(id, 1);
            return;
        }
    }
    // ties at the cut go to the lower id
    std::vector<float> ties = {0.0f, 5.0f, 5.0f};
    for (int d = 0; d < 200; d++) EXPECT_EQ(sample_token(ties.data(), 3, 1.0f, 1, &rng), 1);
}

TEST(top_k_two_only_the_two_largest_with_right_frequencies) {
    const float t = 0.7f;
    std::vector<float> two = {kLogits[1], kLogits[5]};
    std::vector<double> q = softmax(two, t);
    std::vector<double> p(8, 0.0);
    p[1] = q[0];
    p[5] = q[1];
    expect_frequencies(kLogits, t, 2, p, 20000, 2024);
}

TEST(full_softmax_frequencies_match) {
    for (float t : {1.0f, 0.5f, 2.0f}) {
        expect_frequencies(kLogits, t, 0, softmax(kLogits, t), 20000, 99 + static_cast<uint64_t>(t * 10));
        if (testing::state().failed) return;
    }
    // top_k >= V_valid is the same as all
    expect_frequencies(kLogits, 1.0f, 8, softmax(kLogits, 1.0), 20000, 5);
    expect_frequencies(kLogits, 1.0f, 100, softmax(kLogits, 1.0), 20000, 6);
    // top_k = 4 renormalizes over ids 1, 5, 3, 0
    std::vector<float> four = {kLogits[1], kLogits[5], kLogits[3], kLogits[0]};
    std::vector<double> q = softmax(four, 1.0);
    std::vector<double> p(8, 0.0);
    p[1] = q[0], p[5] = q[1], p[3] = q[2], p[0] = q[3];
    expect_frequencies(kLogits, 1.0f, 4, p, 20000, 8);
}

TEST(same_rng_state_same_samples) {
    uint64_t a = 0xDEADBEEF, b = 0xDEADBEEF;
    for (int d = 0; d < 500; d++) {
        int top_k = d % 5;
        int x = sample_token(kLogits.data(), 8, 1.0f, top_k, &a);
        int y = sample_token(kLogits.data(), 8, 1.0f, top_k, &b);
        if (x != y) {
            EXPECT_EQ(x, y);
            return;
        }
    }
    EXPECT_TRUE(a == b);
    // exactly one draw per sample at temperature > 0, whatever top_k
    uint64_t c = 11, d = 11;
    sample_token(kLogits.data(), 8, 0.8f, 1, &c);
    rng_next_u64(&d);
    EXPECT_TRUE(c == d);
    sample_token(kLogits.data(), 8, 0.8f, 0, &c);
    rng_next_u64(&d);
    EXPECT_TRUE(c == d);
    // different states give different sequences
    uint64_t e = 1, f = 2;
    int diff = 0;
    for (int k = 0; k < 200; k++)
        diff += sample_token(kLogits.data(), 8, 2.0f, 0, &e) != sample_token(kLogits.data(), 8, 2.0f, 0, &f);
    EXPECT_TRUE(diff > 0);
}

TEST(v_valid_excludes_the_tail) {
    // the padded tail holds the largest logits: never chosen
    std::vector<float> logits = {0.0f, 1.0f, 0.5f, 100.0f, 100.0f, std::numeric_limits<float>::quiet_NaN()};
    uint64_t rng = 3;
    EXPECT_EQ(sample_token(logits.data(), 3, 0.0f, 0, &rng), 1);
    for (int d = 0; d < 5000; d++) {
        int id = sample_token(logits.data(), 3, 5.0f, d % 4, &rng);
        if (id < 0 || id >= 3) {
            EXPECT_TRUE(id >= 0 && id < 3);
            return;
        }
    }
    std::vector<float> head(logits.begin(), logits.begin() + 3);
    std::vector<double> p = softmax(head, 1.0);
    p.resize(logits.size(), 0.0);
    expect_frequencies(logits, 1.0f, 0, p, 20000, 77, 3);
    std::vector<double> p2 = softmax({head[1], head[2]}, 1.0);
    expect_frequencies(logits, 1.0f, 2, {0.0, p2[0], p2[1], 0.0, 0.0, 0.0}, 20000, 79, 3);
}

TEST(extreme_inputs_are_safe) {
    uint64_t rng = 9;
    // huge logits and a tiny temperature: no overflow, effectively argmax
    std::vector<float> big = {3e38f, -3e38f, 2.9e38f, 1e30f};
    for (int d = 0; d < 100; d++) EXPECT_EQ(sample_token(big.data(), 4, 1e-6f, 0, &rng), 0);
    std::vector<float> close = {10.0f, 10.0f + 1e-3f, 9.0f};
    for (int d = 0; d < 100; d++) EXPECT_EQ(sample_token(close.data(), 3, 1e-30f, 0, &rng), 1);
    // a huge temperature: close to uniform, all valid
    std::vector<double> uniform(3, 1.0 / 3);
    std::vector<float> small = {1.0f, 2.0f, 3.0f};
    expect_frequencies(small, 1e30f, 0, uniform, 20000, 10);
    // NaN is never chosen; -inf never chosen; +inf wins
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> odd = {nan, 1.0f, -inf, 1.0f};
    for (int d = 0; d < 1000; d++) {
        int id = sample_token(odd.data(), 4, 1.0f, d % 3, &rng);
        if (id != 1 && id != 3) {
            EXPECT_TRUE(id == 1 || id == 3);
            return;
        }
    }
    std::vector<float> pinf = {1.0f, inf, nan, inf};
    EXPECT_EQ(sample_token(pinf.data(), 4, 1.0f, 0, &rng), 1);
    EXPECT_EQ(sample_token(pinf.data(), 4, 1.0f, 2, &rng), 1);
    std::vector<float> none = {nan, -inf};
    EXPECT_EQ(sample_token(none.data(), 2, 1.0f, 0, &rng), 0);
    EXPECT_EQ(sample_token(none.data(), 2, 0.0f, 0, &rng), 0);
    // a single valid entry
    EXPECT_EQ(sample_token(small.data(), 1, 1.0f, 5, &rng), 0);
}

TEST(bad_arguments_throw) {
    uint64_t rng = 1;
    int threw = 0;
    auto expect_throw = [&](auto fn) {
        try {
            fn();
        } catch (const std::invalid_argument&) {
            threw++;
        }
    };
    expect_throw([&] { sample_token(nullptr, 8, 1.0f, 0, &rng); });
    expect_throw([&] { sample_token(kLogits.data(), 0, 1.0f, 0, &rng); });
    expect_throw([&] { sample_token(kLogits.data(), 8, -1.0f, 0, &rng); });
    expect_throw([&] { sample_token(kLogits.data(), 8, std::nanf(""), 0, &rng); });
    expect_throw([&] { sample_token(kLogits.data(), 8, 1.0f, 0, nullptr); });
    EXPECT_EQ(threw, 5);
}

TEST_MAIN()
