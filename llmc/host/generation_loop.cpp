#include "llmc/host/generation_loop.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "llmc/host/sampler.h"

std::vector<int> generate_tokens(std::vector<int> context, int T, int V_valid, const GenerationSettings& s,
                                 uint64_t seed, const NextLogits& next_logits,
                                 const std::function<void(int)>& on_token) {
    if (context.empty()) throw std::invalid_argument("generate_tokens: the context is empty");
    if (T < 1) throw std::invalid_argument("generate_tokens: T must be >= 1, got " + std::to_string(T));
    uint64_t rng = seed;
    std::vector<int> generated;
    for (int i = 0; i < s.tokens; i++) {
        const size_t n = std::min<size_t>(context.size(), (size_t)T);
        const std::vector<float> logits = next_logits(std::vector<int>(context.end() - n, context.end()));
        if (logits.size() < (size_t)V_valid)
            throw std::invalid_argument("generate_tokens: " + std::to_string(logits.size()) +
                                        " logits, fewer than V_valid " + std::to_string(V_valid));
        const int next = sample_token(logits.data(), V_valid, s.temperature, s.top_k, &rng);
        if (on_token) on_token(next);
        context.push_back(next);
        generated.push_back(next);
    }
    return generated;
}
