// HellaSwag evaluation data (llm.c's rendering of the validation split), for the --eval-hellaswag scorer.
// Host-only.
//
// File format (written by scripts/data/prepare_hellaswag.py; serialize_hellaswag() below is the reference
// writer), all integers little-endian:
//   8 bytes   magic "HSWAG\0\0\0"
//   uint32    version, 1
//   uint32    vocab, the vocabulary size of the tokenizer that made it (256 bytes, 50257 GPT-2 BPE):
//             1 <= vocab <= 65536, and every token id is below it
//   uint32    count, the number of examples, >= 1
//   count times, one example:
//     uint32  label, the index of the right ending, 0..3
//     uint32  context length C >= 1, then uint32 ending lengths E0, E1, E2, E3, each >= 1
//     uint16  C + E0 + E1 + E2 + E3 token ids: the context, then ending 0, 1, 2, 3
//   nothing after the last example.
// The rendering is llm.c's (dev/data/hellaswag.py): the context is tokens(ctx) and ending i is
// tokens(" " + endings[i]), a completion of the context; row i of an example is context + ending i.
//
// Scoring (llm.c's): the model reads each row and the loss of every ending token is summed (acc: the ending
// with the lowest sum wins) and averaged over the ending's tokens (acc_norm: the lowest mean wins, llm.c's
// headline number). layout_hellaswag() lays one example out as 4 rows of inputs/targets for a B=4 x T
// forward pass and says which positions hold the ending's losses; score_hellaswag() turns the per-position
// losses into the sums, means and both predictions.
//
// Errors from read/parse are std::runtime_error with one line "hellaswag '<path>': <what>", naming the
// example (0-based) and its byte offset where one is at fault.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

constexpr int kHellaSwagEndings = 4;
constexpr uint32_t kHellaSwagVersion = 1;
constexpr char kHellaSwagMagic[8] = {'H', 'S', 'W', 'A', 'G', '\0', '\0', '\0'};

struct HellaSwagExample {
    int label = 0;                                            // the right ending, 0..3
    std::vector<int> context;                                 // >= 1 token
    std::array<std::vector<int>, kHellaSwagEndings> endings;  // >= 1 token each
};

struct HellaSwagSet {
    int vocab_size = 0;  // of the tokenizer that made the file: every token id is below it
    std::vector<HellaSwagExample> examples;
    // The longest row (context + one ending), in tokens: layout_hellaswag needs T >= max_row_tokens() - 1.
    int max_row_tokens() const;
};

// Reads and validates a whole file (format above). The model's vocabulary `vocab_size` must hold the file's
// (a padded vocabulary is fine: 50304 >= 50257). Throws std::runtime_error (one line) for a missing or
// unreadable file, bad magic or version, a truncated file, bytes after the last example, a count, label or
// length out of range, a token id >= the file's vocab, or a file vocab above `vocab_size`.
HellaSwagSet read_hellaswag(const std::string& path, int vocab_size);
// The same from memory; `name` stands for the path in messages.
HellaSwagSet parse_hellaswag(const void* data, size_t size, const std::string& name, int vocab_size);
// The file's bytes for `set` (throws std::invalid_argument for a set the format cannot hold).
std::string serialize_hellaswag(const HellaSwagSet& set);

// One example as kHellaSwagEndings rows of T positions, row-major (row r at [r*T, (r+1)*T)). Row r's tokens
// are context + ending r (L tokens): inputs hold its first L-1 tokens, targets the same shifted by one
// (targets[t] = tokens[t+1], the token position t predicts), both padded with pad_token to T. Positions
// t in [begin[r], end[r]) = [C-1, L-1) are the ones whose target is an ending token; the losses elsewhere
// (context, padding) are not part of the score. Throws std::invalid_argument if a row needs more than T
// positions (L - 1 > T) or pad_token < 0.
struct HellaSwagRows {
    int T = 0;
    std::vector<int> inputs, targets;  // kHellaSwagEndings * T each
    std::array<int, kHellaSwagEndings> begin{}, end{};
};
HellaSwagRows layout_hellaswag(const HellaSwagExample& ex, int T, int pad_token);

// From the per-position losses of the rows (kHellaSwagEndings * T floats, row-major, losses[r*T + t] = the
// loss of targets[r*T + t]): the sum and mean of each ending's token losses and the predicted ending by each
// (the lowest; the first on ties), and whether each prediction is the label.
struct HellaSwagScore {
    std::array<double, kHellaSwagEndings> sum{}, mean{};
    int pred_sum = 0, pred_mean = 0;
    bool correct_sum = false, correct_mean = false;  // acc and acc_norm of this example
};
HellaSwagScore score_hellaswag(const HellaSwagRows& rows, const float* losses, int label);
