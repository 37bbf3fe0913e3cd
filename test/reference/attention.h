// Causal self-attention of one (batch b, head h) in float64, on the qkv layout of the model ([B*T, 3C]: q,
// k, v of head h at columns h*D.. of each C-wide part; dout and out [B*T, C]), forward and backward, with a
// rigorous per-element error bound for a flash-attention kernel that rounds as cuDNN's does (below).
#pragma once
#include <cmath>
#include <vector>

#include "test/numeric.h"

struct RefAttentionShape {
    int B, T, H, D;
};

// The error bound, u = 2^-8 (bf16):
//   Forward: flash attention rounds the (unnormalized) probabilities P to bf16 before the P V product and
//   rounds O to bf16: |dO_td| <= u * (sum_j p_tj |v_jd| + |o_td|). Stats: lse = max_j s + log sum_j exp(s -
//   max) is 1-Lipschitz in the scores, so |d lse| <= max_j |d s_tj|, with |d s| <= D 2^-24 * scale * sum_d
//   |q||k| (fp32 dot), plus exp2/log2 approximations (~2^-21 (1+|lse|)). Backward: D_t = dO_t . O_t uses the
//   bf16-rounded O, so |d D_t| <= u sum_d |dO_td| (sum_j p_tj|v_jd| + |o_td|)
//   (+ fp32 dot error); dS = P (dP - D) is rounded to bf16 before the dQ = dS K and dK = dS^T Q products, and
//   P is rounded to bf16 before dV = P^T dO; every output is rounded to bf16. Per dS element the error is
//   e_tj = p_tj (|d D_t| + D 2^-24 sum_d |dO_td||v_jd|) + u |dS_tj|; |d dQ_td| <= scale sum_j e_tj |k_jd| +
//   u|dQ|, |d dK_jd| <= scale sum_t e_tj |q_td| + u|dK|, |d dV_jd| <= u (sum_t p_tj |dO_td| + |dV_jd|). The
//   checks allow 2x these bounds, covering the fp32 accumulation terms over T (T 2^-24 << u) left out.
struct RefAttentionHead {
    std::vector<double> o, o_bound, dq, dq_bound, dk, dk_bound, dv, dv_bound;  // [T][D]
    std::vector<double> lse, lse_bound, row_max;                               // [T]
};

inline void ref_attention_head(const std::vector<float>& qkv, const std::vector<float>& dout,
                               const RefAttentionShape& s, int b, int h, RefAttentionHead* r) {
    const int T = s.T, D = s.D;
    const size_t C = (size_t)s.H * D;
    const double scale = 1.0 / std::sqrt((double)D), u = testing::kBf16Eps, e32 = D * testing::kFp32Eps;
    std::vector<double> q(T * D), k(T * D), v(T * D), dO(T * D);
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++) {
            const size_t row = ((size_t)b * T + t) * 3 * C + (size_t)h * D + d;
            q[t * D + d] = qkv[row];
            k[t * D + d] = qkv[row + C];
            v[t * D + d] = qkv[row + 2 * C];
            dO[t * D + d] = dout[((size_t)b * T + t) * C + (size_t)h * D + d];
        }
    auto zeros = [&](std::vector<double>& x, size_t n) { x.assign(n, 0.0); };
    zeros(r->o, T * D), zeros(r->o_bound, T * D), zeros(r->dq, T * D), zeros(r->dq_bound, T * D);
    zeros(r->dk, T * D), zeros(r->dk_bound, T * D), zeros(r->dv, T * D), zeros(r->dv_bound, T * D);
    zeros(r->lse, T), zeros(r->lse_bound, T), zeros(r->row_max, T);
    std::vector<double> P((size_t)T * T, 0.0), dS((size_t)T * T, 0.0), dS_err((size_t)T * T, 0.0);
    std::vector<double> A(T * D, 0.0);  // sum_j p_tj |v_jd|
    std::vector<double> srow(T);
    for (int t = 0; t < T; t++) {
        double m = -INFINITY, max_abs_dot = 0;
        for (int j = 0; j <= t; j++) {
            double dot = 0, abs_dot = 0;
            for (int d = 0; d < D; d++) {
                dot += q[t * D + d] * k[j * D + d];
                abs_dot += std::fabs(q[t * D + d] * k[j * D + d]);
            }
            srow[j] = scale * dot;
            max_abs_dot = std::fmax(max_abs_dot, scale * abs_dot);
            m = std::fmax(m, srow[j]);
        }
        double l = 0;
        for (int j = 0; j <= t; j++) l += std::exp(srow[j] - m);
        for (int j = 0; j <= t; j++) P[(size_t)t * T + j] = std::exp(srow[j] - m) / l;
        r->row_max[t] = m;
        r->lse[t] = m + std::log(l);
        r->lse_bound[t] = 2 * (e32 * max_abs_dot + std::ldexp(1.0, -21) * (1 + std::fabs(r->lse[t])));
        for (int j = 0; j <= t; j++) {
            const double p = P[(size_t)t * T + j];
            for (int d = 0; d < D; d++) {
                r->o[t * D + d] += p * v[j * D + d];
                A[t * D + d] += p * std::fabs(v[j * D + d]);
            }
        }
        for (int d = 0; d < D; d++)
            r->o_bound[t * D + d] = 2 * u * (A[t * D + d] + std::fabs(r->o[t * D + d]));
    }
    // Backward.
    for (int t = 0; t < T; t++) {
        double Dt = 0, dDt = 0;
        for (int d = 0; d < D; d++) {
            Dt += dO[t * D + d] * r->o[t * D + d];
            dDt += std::fabs(dO[t * D + d]) *
                   (u * (A[t * D + d] + std::fabs(r->o[t * D + d])) + e32 * std::fabs(r->o[t * D + d]));
        }
        for (int j = 0; j <= t; j++) {
            double dP = 0, abs_dP = 0;
            for (int d = 0; d < D; d++) {
                dP += dO[t * D + d] * v[j * D + d];
                abs_dP += std::fabs(dO[t * D + d] * v[j * D + d]);
            }
            const double p = P[(size_t)t * T + j], ds = p * (dP - Dt);
            dS[(size_t)t * T + j] = ds;
            dS_err[(size_t)t * T + j] = p * (dDt + e32 * abs_dP) + u * std::fabs(ds);
        }
    }
    for (int t = 0; t < T; t++)
        for (int j = 0; j <= t; j++) {
            const double p = P[(size_t)t * T + j], ds = dS[(size_t)t * T + j], de = dS_err[(size_t)t * T + j];
            for (int d = 0; d < D; d++) {
                r->dq[t * D + d] += scale * ds * k[j * D + d];
                r->dq_bound[t * D + d] += scale * de * std::fabs(k[j * D + d]);
                r->dk[j * D + d] += scale * ds * q[t * D + d];
                r->dk_bound[j * D + d] += scale * de * std::fabs(q[t * D + d]);
                r->dv[j * D + d] += p * dO[t * D + d];
                r->dv_bound[j * D + d] += u * p * std::fabs(dO[t * D + d]);
            }
        }
    for (int i = 0; i < T * D; i++) {
        r->dq_bound[i] = 2 * (r->dq_bound[i] + u * std::fabs(r->dq[i]));
        r->dk_bound[i] = 2 * (r->dk_bound[i] + u * std::fabs(r->dk[i]));
        r->dv_bound[i] = 2 * (r->dv_bound[i] + u * std::fabs(r->dv[i]));
    }
}
