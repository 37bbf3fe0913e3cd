// Softmax cross-entropy in float64 over rows of V logits: loss_n = logsumexp(x_n) - x_n[target_n] and
// dlogits = (softmax(x_n) - onehot(target_n)) * dloss.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

inline void ref_classifier(const std::vector<float>& logits, const std::vector<int>& targets, float dloss,
                           int N, int V, std::vector<float>* losses, std::vector<float>* dlogits) {
    losses->resize(N);
    dlogits->resize((size_t)N * V);
    for (int n = 0; n < N; n++) {
        const float* x = logits.data() + (size_t)n * V;
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++) mx = std::max(mx, (double)x[v]);
        for (int v = 0; v < V; v++) sum += std::exp((double)x[v] - mx);
        const double lse = mx + std::log(sum);
        (*losses)[n] = (float)(lse - x[targets[n]]);
        for (int v = 0; v < V; v++)
            (*dlogits)[(size_t)n * V + v] =
                (float)((std::exp((double)x[v] - lse) - (v == targets[n] ? 1.0 : 0.0)) * (double)dloss);
    }
}
