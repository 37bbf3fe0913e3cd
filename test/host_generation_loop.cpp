// Host tests for llmc/host/generation_loop: the window the model is asked about at each step (the context's
// last T tokens, checked against windows computed here from the returned ids), greedy decoding, top-k 1 as
// greedy, determinism in the seed, the per-token callback, and the argument errors. The model is made up:
// its logits are a hash of the whole window (its length, every token and its position), so a window one
// token short or long, or shifted, changes the next token.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmc/host/generation_loop.h"
#include "test/testing.h"

namespace {

constexpr int kVocab = 64;

// A made-up model: pseudo-random logits seeded by the window; records each window it is asked about.
struct FakeModel {
    std::vector<std::vector<int>> windows;
    std::vector<float> operator()(const std::vector<int>& window) {
        windows.push_back(window);
        return logits_of(window);
    }
    static std::vector<float> logits_of(const std::vector<int>& window) {
        uint64_t h = 1469598103934665603ull ^ window.size();
        for (size_t i = 0; i < window.size(); i++)
            h = (h ^ (uint64_t)(window[i] * 131 + (int)i)) * 1099511628211ull;
        std::vector<float> logits(kVocab);
        for (float& x : logits) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            x = (float)((h >> 40) % 1000) / 100.0f;  // distinct enough; ties go to the lower id either way
        }
        return logits;
    }
};

int argmax(const std::vector<float>& v) { return (int)(std::max_element(v.begin(), v.end()) - v.begin()); }

NextLogits as_function(FakeModel* m) {
    return [m](const std::vector<int>& w) { return (*m)(w); };
}

}  // namespace

// Every step asks about exactly the last min(n, T) tokens of prompt + generated so far, and greedy decoding
// picks the argmax of what the model answered: before the context fills the window, at T, and past it.
TEST(window_is_the_context_s_last_T_tokens) {
    for (int T : {1, 4, 8, 16}) {
        const std::vector<int> prompt = {5, 9, 2, 7, 1};
        FakeModel model;
        const GenerationSettings greedy{20, 0.0f, 0};
        const std::vector<int> out = generate_tokens(prompt, T, kVocab, greedy, 1, as_function(&model));
        EXPECT_EQ(out.size(), (size_t)20);
        EXPECT_EQ(model.windows.size(), (size_t)20);
        std::vector<int> all = prompt;
        for (size_t i = 0; i < out.size() && i < model.windows.size(); i++) {
            const size_t n = std::min(all.size(), (size_t)T);
            const std::vector<int> want(all.end() - n, all.end());
            if (model.windows[i] != want)
                return testing::fail(__FILE__, __LINE__,
                                     "T " + std::to_string(T) + " step " + std::to_string(i) +
                                         ": the model was "
                                         "asked about " +
                                         std::to_string(model.windows[i].size()) +
                                         " tokens, not the "
                                         "last " +
                                         std::to_string(n));
            EXPECT_EQ(out[i], argmax(FakeModel::logits_of(want)));
            all.push_back(out[i]);
        }
    }
}

// on_token sees every generated id once, in order, before the next step.
TEST(on_token_streams_each_id_in_order) {
    FakeModel model;
    std::vector<int> seen;
    size_t asked_when_last_seen = 0;
    const std::vector<int> out =
        generate_tokens({3}, 6, kVocab, {12, 0.8f, 10}, 42, as_function(&model), [&](int id) {
            seen.push_back(id);
            asked_when_last_seen = model.windows.size();
        });
    EXPECT_TRUE(seen == out);
    EXPECT_EQ(asked_when_last_seen, (size_t)12);
}

// Sampling among the top 1 is greedy whatever the temperature; the same seed gives the same tokens, another
// seed (almost surely, over 40 tokens of a flat distribution) others.
TEST(top_k_one_is_greedy_and_the_seed_decides) {
    FakeModel a, b, c, d, e;
    const std::vector<int> prompt = {1, 2, 3};
    const std::vector<int> greedy = generate_tokens(prompt, 8, kVocab, {40, 0.0f, 0}, 1, as_function(&a));
    const std::vector<int> top1 = generate_tokens(prompt, 8, kVocab, {40, 1.5f, 1}, 99, as_function(&b));
    EXPECT_TRUE(greedy == top1);
    const std::vector<int> s1 = generate_tokens(prompt, 8, kVocab, {40, 5.0f, 0}, 7, as_function(&c));
    const std::vector<int> s2 = generate_tokens(prompt, 8, kVocab, {40, 5.0f, 0}, 7, as_function(&d));
    const std::vector<int> s3 = generate_tokens(prompt, 8, kVocab, {40, 5.0f, 0}, 8, as_function(&e));
    EXPECT_TRUE(s1 == s2);
    EXPECT_TRUE(s1 != s3);
    EXPECT_TRUE(s1 != greedy);  // a temperature of 5 over logits in [0, 10) does not follow the argmax
}

// The logits past V_valid (a padded vocabulary) are never chosen.
TEST(ids_stay_below_v_valid) {
    FakeModel model;
    for (int id : generate_tokens({0}, 4, 10, {200, 3.0f, 0}, 5, as_function(&model)))
        EXPECT_TRUE(id >= 0 && id < 10);
}

TEST(bad_arguments_throw) {
    FakeModel model;
    bool threw = false;
    for (auto call : std::vector<std::function<void()>>{
             [&] { generate_tokens({}, 4, kVocab, {}, 1, as_function(&model)); },
             [&] { generate_tokens({1}, 0, kVocab, {}, 1, as_function(&model)); },
             [&] { generate_tokens({1}, 4, kVocab + 1, {}, 1, as_function(&model)); }}) {
        threw = false;
        try {
            call();
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
    }
}

TEST_MAIN()
