// Text generation from the model being trained: the evaluation forward (which leaves the training state
// untouched, llmc/model/gpt.h) on a B x T batch whose row 0 holds the context, one forward per new token
// (cheap next to training, and no KV cache to keep in sync), the next token sampled on the host
// (llmc/host/sampler.h).
#pragma once
#include <cstdint>
#include <string>

#include "llmc/formats/tokenizer.h"

class GptModel;

struct SampleSettings {
    int tokens = 64;
    float temperature = 1.0f;
    int top_k = 40;
    std::string prompt;  // empty: start after the end-of-text token (bytes tokenizer: after a newline)
};

// Returns the generated text (prompt excluded). Deterministic in `seed`. The context is the last T tokens.
std::string generate_text(GptModel* model, int B, int T, int vocab_size, const Tokenizer& tok,
                          const SampleSettings& s, uint64_t seed);
