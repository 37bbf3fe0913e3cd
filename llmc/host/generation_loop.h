// The loop of text generation, apart from the model: each new token is sampled (llmc/host/sampler.h) from
// the logits a function returns for the context's last T tokens (the window the model reads), then appended
// to the context. The model's side is llmc/run/generate.h; a host test passes a made-up function. Host-only.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

// The next token's logits (at least V_valid floats) after `window`, the context's last min(size, T) tokens.
using NextLogits = std::function<std::vector<float>(const std::vector<int>& window)>;

struct GenerationSettings {
    int tokens = 64;           // how many to generate
    float temperature = 1.0f;  // 0: the most likely token (argmax, lowest id on ties)
    int top_k = 40;            // 0: the whole vocabulary
};

// Generates s.tokens ids after `context` (at least one token): each step passes the last min(n, T) tokens of
// the context so far to next_logits, picks one with sample_token over its first V_valid logits, calls
// on_token(id) (if set) and appends it. Returns the generated ids. Deterministic in `seed` (one RNG draw per
// token when temperature > 0, none at 0). Throws std::invalid_argument for an empty context, T < 1 or a
// logits vector shorter than V_valid.
std::vector<int> generate_tokens(std::vector<int> context, int T, int V_valid, const GenerationSettings& s,
                                 uint64_t seed, const NextLogits& next_logits,
                                 const std::function<void(int)>& on_token = nullptr);
