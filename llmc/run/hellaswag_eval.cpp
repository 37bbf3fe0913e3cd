#include "llmc/run/hellaswag_eval.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace {

constexpr int kPadToken = 0;  // any valid id: padded positions are never scored

// The examples rank `rank` scores: rank, rank + world, ...
std::vector<int> examples_of_rank(int count, int rank, int world) {
    std::vector<int> mine;
    for (int i = rank; i < count; i += world) mine.push_back(i);
    return mine;
}

// Lays `examples` out as consecutive groups of 4 rows of one B x T batch (the rest of it stays padding).
std::vector<HellaSwagRows> pack_batch(const HellaSwagSet& set, const std::vector<int>& examples, int T,
                                      std::vector<int>* inputs, std::vector<int>* targets) {
    std::fill(inputs->begin(), inputs->end(), kPadToken);
    std::fill(targets->begin(), targets->end(), kPadToken);
    std::vector<HellaSwagRows> rows;
    const size_t group = static_cast<size_t>(kHellaSwagEndings) * T;
    for (size_t j = 0; j < examples.size(); j++) {
        rows.push_back(layout_hellaswag(set.examples[examples[j]], T, kPadToken));
        std::copy(rows.back().inputs.begin(), rows.back().inputs.end(), inputs->begin() + j * group);
        std::copy(rows.back().targets.begin(), rows.back().targets.end(), targets->begin() + j * group);
    }
    return rows;
}

}  // namespace

int hellaswag_batches(int examples, int B, int world) {
    const int per_batch = B / kHellaSwagEndings, per_rank = (examples + world - 1) / world;
    return per_batch > 0 ? (per_rank + per_batch - 1) / per_batch : 0;
}

HellaSwagResult evaluate_hellaswag(const HellaSwagSet& set, const HellaSwagEvalShape& shape,
                                   const TokenLossesFn& forward, const SumOverRanksFn& sum) {
    const int B = shape.B, T = shape.T, per_batch = B / kHellaSwagEndings;
    if (per_batch < 1 || T < 1 || shape.world < 1 || shape.rank < 0 || shape.rank >= shape.world)
        throw std::invalid_argument("hellaswag: needs B >= 4, T >= 1 and 0 <= rank < world, got B " +
                                    std::to_string(B) + ", T " + std::to_string(T) + ", rank " +
                                    std::to_string(shape.rank) + " of " + std::to_string(shape.world));
    const int count = static_cast<int>(set.examples.size());
    const std::vector<int> mine = examples_of_rank(count, shape.rank, shape.world);
    const size_t N = static_cast<size_t>(B) * T, group = static_cast<size_t>(kHellaSwagEndings) * T;
    std::vector<int> inputs(N), targets(N);
    HellaSwagResult r;
    const int batches = hellaswag_batches(count, B, shape.world);
    for (int b = 0; b < batches; b++) {
        // past this rank's last example the batch is all padding: a forward that keeps the ranks in step
        const size_t first = std::min(mine.size(), static_cast<size_t>(b) * per_batch);
        const size_t last = std::min(mine.size(), first + per_batch);
        const std::vector<int> these(mine.begin() + first, mine.begin() + last);
        const std::vector<HellaSwagRows> rows = pack_batch(set, these, T, &inputs, &targets);
        const std::vector<float> losses = forward(inputs.data(), targets.data());
        if (losses.size() != N)
            throw std::runtime_error("hellaswag: the forward pass returned " + std::to_string(losses.size()) +
                                     " losses for " + std::to_string(N) + " positions");
        for (size_t j = 0; j < rows.size(); j++) {
            HellaSwagExampleResult e;
            e.index = these[j];
            e.label = set.examples[these[j]].label;
            e.score = score_hellaswag(rows[j], losses.data() + j * group, e.label);
            r.correct_sum += e.score.correct_sum;
            r.correct_mean += e.score.correct_mean;
            r.local.push_back(e);
        }
    }
    const std::vector<int> total = sum({static_cast<int>(r.local.size()), r.correct_sum, r.correct_mean});
    if (total.size() != 3) throw std::runtime_error("hellaswag: the sum over the ranks lost values");
    r.examples = total[0];
    r.correct_sum = total[1];
    r.correct_mean = total[2];
    return r;
}

std::string format_hellaswag_dump(const std::vector<HellaSwagExampleResult>& results) {
    std::string out = "# index label sum0 sum1 sum2 sum3 mean0 mean1 mean2 mean3 choice_sum choice_mean\n";
    char line[512];
    for (const HellaSwagExampleResult& e : results) {
        const HellaSwagScore& s = e.score;
        snprintf(line, sizeof line, "%d %d %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %d %d\n", e.index, e.label,
                 s.sum[0], s.sum[1], s.sum[2], s.sum[3], s.mean[0], s.mean[1], s.mean[2], s.mean[3],
                 s.pred_sum, s.pred_mean);
        out += line;
    }
    return out;
}

std::string hellaswag_dump_path(const std::string& path, int rank, int world) {
    return world > 1 ? path + ".rank" + std::to_string(rank) : path;
}

void write_hellaswag_dump(const std::string& path, const std::vector<HellaSwagExampleResult>& results) {
    const std::string text = format_hellaswag_dump(results);
    const std::string tmp = path + ".tmp." + std::to_string(static_cast<long>(getpid()));
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f) throw std::runtime_error("'" + path + "': cannot create " + tmp + ": " + strerror(errno));
    const bool written = fwrite(text.data(), 1, text.size(), f) == text.size();
    const int err = errno;
    if (fclose(f) != 0 || !written || rename(tmp.c_str(), path.c_str()) != 0) {
        const int why = written ? errno : err;
        remove(tmp.c_str());
        throw std::runtime_error("'" + path + "': cannot write: " + strerror(why));
    }
}
