#include "llmc/host/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

uint64_t rng_next_u64(uint64_t* state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rng_uniform(uint64_t* state) { return static_cast<double>(rng_next_u64(state) >> 11) * 0x1.0p-53; }

namespace {

// NaN as -inf, so comparisons are a strict weak order.
inline double clean(float x) { return std::isnan(x) ? -std::numeric_limits<double>::infinity() : x; }

}  // namespace

int sample_token(const float* logits, int V_valid, float temperature, int top_k, uint64_t* rng_state) {
    if (!logits) throw std::invalid_argument("sample_token: logits is null");
    if (V_valid <= 0)
        throw std::invalid_argument("sample_token: V_valid must be > 0, got " + std::to_string(V_valid));
    if (!(temperature >= 0.0f))
        throw std::invalid_argument("sample_token: temperature must be >= 0, got " +
                                    std::to_string(temperature));
    if (temperature > 0.0f && !rng_state) throw std::invalid_argument("sample_token: rng_state is null");

    int best = 0;
    double max = clean(logits[0]);
    for (int i = 1; i < V_valid; i++) {
        double x = clean(logits[i]);
        if (x > max) {
            max = x;
            best = i;
        }
    }
    if (temperature == 0.0f) return best;
    const double u = rng_uniform(rng_state);  // exactly one draw whenever temperature > 0
    if (std::isinf(max)) return best;         // +inf: the first +inf id; all -inf/NaN: id 0

    const double inv_t = 1.0 / static_cast<double>(temperature);
    auto weight = [&](int i) { return std::exp((clean(logits[i]) - max) * inv_t); };  // in [0, 1]
    if (top_k <= 0 || top_k >= V_valid) {
        double total = 0.0;
        for (int i = 0; i < V_valid; i++) total += weight(i);
        const double target = u * total;  // total >= 1 (the max's weight is 1)
        double acc = 0.0;
        int last = best;
        for (int i = 0; i < V_valid; i++) {
            double w = weight(i);
            if (w <= 0.0) continue;
            acc += w;
            last = i;
            if (target < acc) return i;
        }
        return last;  // rounding: u * total landed at or past the accumulated sum
    }

    // Top-k: the k largest logits, ties broken by the lower id.
    std::vector<int> idx(static_cast<size_t>(V_valid));
    for (int i = 0; i < V_valid; i++) idx[static_cast<size_t>(i)] = i;
    auto before = [&](int a, int b) {
        double xa = clean(logits[a]), xb = clean(logits[b]);
        return xa > xb || (xa == xb && a < b);
    };
    std::partial_sort(idx.begin(), idx.begin() + top_k, idx.end(), before);
    std::vector<double> w(static_cast<size_t>(top_k));
    double total = 0.0;
    for (int j = 0; j < top_k; j++)
        total += (w[static_cast<size_t>(j)] = weight(idx[static_cast<size_t>(j)]));
    const double target = u * total;
    double acc = 0.0;
    int last = idx[0];
    for (int j = 0; j < top_k; j++) {
        if (w[static_cast<size_t>(j)] <= 0.0) continue;
        acc += w[static_cast<size_t>(j)];
        last = idx[static_cast<size_t>(j)];
        if (target < acc) return last;
    }
    return last;
}
