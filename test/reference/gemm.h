// GEMM in float64: out[i, j] = sum_k A[i, k] B[j, k] (A [M, K], B [Nn, K] row-major: rows dot rows), with
// each element's error unit |a_i| |b_j| / sqrt(K), the typical size of such a dot product (the rms of the
// output for uncorrelated data), so that an accumulation tolerance stays meaningful for outputs near zero.
#pragma once
#include <cmath>
#include <vector>

struct RefGemm {
    std::vector<double> val, unit;  // [M, Nn]
};

inline RefGemm ref_gemm(const std::vector<double>& A, const std::vector<double>& B, int M, int Nn, int K) {
    RefGemm r;
    r.val.resize((size_t)M * Nn);
    r.unit.resize((size_t)M * Nn);
    std::vector<double> an(M), bn(Nn);
    for (int i = 0; i < M; i++) {
        double s = 0;
        for (int k = 0; k < K; k++) s += A[(size_t)i * K + k] * A[(size_t)i * K + k];
        an[i] = std::sqrt(s);
    }
    for (int j = 0; j < Nn; j++) {
        double s = 0;
        for (int k = 0; k < K; k++) s += B[(size_t)j * K + k] * B[(size_t)j * K + k];
        bn[j] = std::sqrt(s);
    }
    for (int i = 0; i < M; i++) {
        const double* a = &A[(size_t)i * K];
        for (int j = 0; j < Nn; j++) {
            const double* b = &B[(size_t)j * K];
            double s = 0;
            for (int k = 0; k < K; k++) s += a[k] * b[k];
            r.val[(size_t)i * Nn + j] = s;
            r.unit[(size_t)i * Nn + j] = an[i] * bn[j] / std::sqrt((double)K);
        }
    }
    return r;
}
