// One AdamW step in float64 (PyTorch semantics: decoupled weight decay, bias-corrected moments, eps added to
// sqrt(vhat)) from fp32 state, with g = grad * grad_scale; the state is updated in place, rounded to fp32.
#pragma once
#include <cmath>
#include <vector>

struct RefAdamW {
    float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
};

inline void ref_adamw_step(std::vector<float>* master, std::vector<float>* m, std::vector<float>* v,
                           const std::vector<float>& grads, float grad_scale, const RefAdamW& h, int t) {
    const double b1 = h.beta1, b2 = h.beta2;
    const double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
    for (size_t i = 0; i < grads.size(); i++) {
        const double g = (double)grads[i] * grad_scale;
        const double mi = b1 * (*m)[i] + (1.0 - b1) * g;
        const double vi = b2 * (*v)[i] + (1.0 - b2) * g * g;
        double p = (double)(*master)[i] * (1.0 - (double)h.lr * h.weight_decay);
        p -= (double)h.lr * (mi / bc1) / (std::sqrt(vi / bc2) + (double)h.eps);
        (*master)[i] = (float)p;
        (*m)[i] = (float)mi;
        (*v)[i] = (float)vi;
    }
}
