#include "llmc/run/generate.h"

#include <algorithm>
#include <vector>

#include "llmc/host/generation_loop.h"
#include "llmc/model/gpt.h"

std::string generate_text(GptModel* model, int B, int T, int vocab_size, const Tokenizer& tok,
                          const SampleSettings& s, uint64_t seed, const std::function<void(int)>& on_token) {
    std::vector<int> context;
    if (!s.prompt.empty()) context = tok.encode(s.prompt);
    if (context.empty()) context.push_back(tok.eot() >= 0 ? tok.eot() : '\n');
    for (int& id : context) id = std::min(id, vocab_size - 1);
    // the tokenizer's ids are valid; the model's padded tail (e.g. 50257..50303) never is
    const int V_valid = std::min(vocab_size, tok.vocab_size());
    std::vector<int> batch((size_t)B * T, 0);
    auto next_logits = [&](const std::vector<int>& window) {
        std::copy(window.begin(), window.end(), batch.begin());  // row 0; causal: the rest is ignored
        model->evaluate(batch.data(), nullptr);
        return model->logits_row((int)window.size() - 1);
    };
    const std::vector<int> generated =
        generate_tokens(context, T, V_valid, {s.tokens, s.temperature, s.top_k}, seed, next_logits, on_token);
    return tok.decode(generated);
}
