#include "llmc/run/generate.h"

#include <algorithm>
#include <vector>

#include "llmc/host/sampler.h"
#include "llmc/model/gpt.h"

std::string generate_text(GptModel* model, int B, int T, int vocab_size, const Tokenizer& tok,
                          const SampleSettings& s, uint64_t seed) {
    std::vector<int> context;
    if (!s.prompt.empty()) context = tok.encode(s.prompt);
    if (context.empty()) context.push_back(tok.eot() >= 0 ? tok.eot() : '\n');
    for (int& id : context) id = std::min(id, vocab_size - 1);
    // the tokenizer's ids are valid; the model's padded tail (e.g. 50257..50303) never is
    const int V_valid = std::min(vocab_size, tok.vocab_size());
    uint64_t rng = seed;
    std::vector<int> batch((size_t)B * T, 0), generated;
    for (int i = 0; i < s.tokens; i++) {
        const int n = std::min<int>((int)context.size(), T);
        std::copy(context.end() - n, context.end(), batch.begin());  // row 0; causal: the rest is ignored
        model->evaluate(batch.data(), nullptr);
        const std::vector<float> logits = model->logits_row(n - 1);
        const int next = sample_token(logits.data(), V_valid, s.temperature, s.top_k, &rng);
        context.push_back(next);
        generated.push_back(next);
    }
    return tok.decode(generated);
}
