// HellaSwag accuracy during a run (--eval-hellaswag): llm.c's completion-style scoring of a HellaSwag file
// (llmc/formats/hellaswag.h: each example is 4 rows of context + ending; the ending with the lowest summed
// token loss is the acc prediction, the lowest mean the acc_norm one) through batches of B x T rows.
// Host code: the forward pass and the sum over ranks are passed in (the driver binds them to GptModel and
// Communicator), so the packing, the split over ranks and the dump are tested without a GPU.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "llmc/formats/hellaswag.h"

// B*T per-position losses of one batch of B rows of T tokens (inputs and targets row-major).
using TokenLossesFn = std::function<std::vector<float>(const int* inputs_BT, const int* targets_BT)>;
// The element-wise sum of a few integers over the ranks (the identity on one GPU).
using SumOverRanksFn = std::function<std::vector<int>(const std::vector<int>&)>;

struct HellaSwagEvalShape {
    int B = 0, T = 0;         // the model's batch: B >= 4 rows of T positions
    int rank = 0, world = 1;  // rank r scores examples r, r + world, r + 2 world, ...
};

// One scored example of this rank.
struct HellaSwagExampleResult {
    int index = 0;  // in the file, 0-based
    int label = 0;
    HellaSwagScore score;
};

struct HellaSwagResult {
    int examples = 0, correct_sum = 0, correct_mean = 0;  // over all ranks
    std::vector<HellaSwagExampleResult> local;            // this rank's examples, in file order
    double acc() const { return examples ? (double)correct_sum / examples : 0; }
    double acc_norm() const { return examples ? (double)correct_mean / examples : 0; }
};

// Forward calls every rank makes for `examples` examples: floor(B/4) examples per call, the examples dealt
// out over `world` ranks; every rank makes the same number (the forward with targets is collective), the
// ranks with fewer examples padding with unscored rows.
int hellaswag_batches(int examples, int B, int world);

// Scores this rank's examples of `set` (layout_hellaswag rows, padded with token 0, unused rows too),
// calling `forward` hellaswag_batches() times, and sums the counts over the ranks with `sum` (called once,
// on every rank). Throws std::invalid_argument for B < 4, a bad rank/world, or a row longer than T + 1
// tokens (the driver checks the file before the GPU), std::runtime_error if forward returns other than
// B*T losses.
HellaSwagResult evaluate_hellaswag(const HellaSwagSet& set, const HellaSwagEvalShape& shape,
                                   const TokenLossesFn& forward, const SumOverRanksFn& sum);

// --eval-hellaswag-dump's text: a '#' header naming the columns, then one line per example, "index label
// sum0 sum1 sum2 sum3 mean0 mean1 mean2 mean3 choice_sum choice_mean" (losses %.9g, in nats).
std::string format_hellaswag_dump(const std::vector<HellaSwagExampleResult>& results);
// Where a rank writes its dump: `path` itself on one GPU, else path.rank<R> (each rank its own examples;
// `sort -n` of the parts' lines gives one GPU's order).
std::string hellaswag_dump_path(const std::string& path, int rank, int world);
// Writes the text through a temporary file renamed over `path`; std::runtime_error (one line) on failure.
void write_hellaswag_dump(const std::string& path, const std::vector<HellaSwagExampleResult>& results);
