// Text generation from the model: the evaluation forward (which leaves the training state untouched,
// llmc/model/gpt.h) on a B x T batch whose row 0 holds the context window, one forward per new token (cheap
// next to training, and no KV cache to keep in sync); the loop and the sampling are host code
// (llmc/host/generation_loop.h). Used by the samples during training and by --generate.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "llmc/formats/tokenizer.h"

class GptModel;

struct SampleSettings {
    int tokens = 64;
    float temperature = 1.0f;
    int top_k = 40;
    std::string prompt;  // empty: start after the end-of-text token (bytes tokenizer: after a newline)
};

// Returns the generated text (prompt excluded); on_token (if set) gets each new token's id as it is chosen.
// Deterministic in `seed`. The context is the last T tokens.
std::string generate_text(GptModel* model, int B, int T, int vocab_size, const Tokenizer& tok,
                          const SampleSettings& s, uint64_t seed,
                          const std::function<void(int)>& on_token = nullptr);
