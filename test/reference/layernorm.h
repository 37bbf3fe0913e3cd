// LayerNorm references (eps 1e-5, biased variance, as llmc/kernels/layernorm/layernorm.cuh): the forward and
// backward in float64, the kernel's exact fp32 output formula given its statistics, and the fused residual
// add.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "test/reference/bf16.h"

struct RefLayerNorm {
    std::vector<float> out, mean, rstd;  // out [N, C]; mean, rstd [N]
};
// Two-pass mean and variance in float64.
inline RefLayerNorm ref_layernorm_forward(const std::vector<float>& x, const std::vector<float>& w,
                                          const std::vector<float>& b, int N, int C) {
    RefLayerNorm r;
    r.out.resize((size_t)N * C);
    r.mean.resize(N);
    r.rstd.resize(N);
    for (int n = 0; n < N; n++) {
        const float* xr = &x[(size_t)n * C];
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += xr[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= C;
        const double s = 1.0 / std::sqrt(v + 1e-5);
        for (int c = 0; c < C; c++) r.out[(size_t)n * C + c] = (float)((xr[c] - m) * s * w[c] + b[c]);
        r.mean[n] = (float)m;
        r.rstd[n] = (float)s;
    }
    return r;
}

// The kernel's output from its own fp32 statistics, bit for bit: bf16(fma((x - mean) * rstd, w, b)) (nvcc
// contracts n * w + b into one FMA).
inline std::vector<float> ref_layernorm_forward_fp32(const std::vector<float>& x, const std::vector<float>& w,
                                                     const std::vector<float>& b,
                                                     const std::vector<float>& mean,
                                                     const std::vector<float>& rstd, int N, int C) {
    std::vector<float> y((size_t)N * C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            const float nrm = (x[(size_t)n * C + c] - mean[n]) * rstd[n];
            y[(size_t)n * C + c] = ref_bf16_round(std::fmaf(nrm, w[c], b[c]));
        }
    return y;
}

// The residual stream as the fused kernel stores it: the fp32 sum of two bf16 values, rounded once to bf16.
inline std::vector<float> ref_residual_add(const std::vector<float>& a, const std::vector<float>& b) {
    std::vector<float> r(a.size());
    for (size_t i = 0; i < a.size(); i++) r[i] = ref_bf16_round(a[i] + b[i]);
    return r;
}

struct RefLayerNormGrads {
    std::vector<float> dinp;             // dinp0 + the input gradient [N, C]
    std::vector<double> dweight, dbias;  // the sums over the N rows [C], unrounded
    // Sizes of the terms the kernel sums, for tolerances: max over rows of rstd * (max |w dout| + |mean(w
    // dout)| + max |xhat| |mean(w dout xhat)|), and the rms of dout * xhat and of dout.
    double dinp_scale = 0, dweight_term_rms = 0, dbias_term_rms = 0;
};
// Backward in float64 from the forward's saved fp32 mean and rstd (what the kernel reads).
inline RefLayerNormGrads ref_layernorm_backward(const std::vector<float>& x, const std::vector<float>& w,
                                                const std::vector<float>& dout,
                                                const std::vector<float>& dinp0,
                                                const std::vector<float>& mean,
                                                const std::vector<float>& rstd, int N, int C) {
    RefLayerNormGrads g;
    g.dinp.resize((size_t)N * C);
    g.dweight.assign(C, 0.0);
    g.dbias.assign(C, 0.0);
    std::vector<double> xhat(C), dn(C);
    double term_sq_w = 0, term_sq_b = 0;
    for (int n = 0; n < N; n++) {
        const size_t o = (size_t)n * C;
        const double m = mean[n], r = rstd[n];
        double s1 = 0, s2 = 0, dn_max = 0, xh_max = 0;
        for (int c = 0; c < C; c++) {
            xhat[c] = (x[o + c] - m) * r;
            dn[c] = (double)w[c] * dout[o + c];
            s1 += dn[c];
            s2 += dn[c] * xhat[c];
            g.dweight[c] += dout[o + c] * xhat[c];
            g.dbias[c] += dout[o + c];
            term_sq_w += dout[o + c] * xhat[c] * dout[o + c] * xhat[c];
            term_sq_b += (double)dout[o + c] * dout[o + c];
            dn_max = std::max(dn_max, std::fabs(dn[c]));
            xh_max = std::max(xh_max, std::fabs(xhat[c]));
        }
        s1 /= C;
        s2 /= C;
        for (int c = 0; c < C; c++) g.dinp[o + c] = (float)(dinp0[o + c] + r * (dn[c] - s1 - xhat[c] * s2));
        g.dinp_scale = std::max(g.dinp_scale, r * (dn_max + std::fabs(s1) + xh_max * std::fabs(s2)));
    }
    g.dweight_term_rms = std::sqrt(term_sq_w / ((double)N * C));
    g.dbias_term_rms = std::sqrt(term_sq_b / ((double)N * C));
    return g;
}
