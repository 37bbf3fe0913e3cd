// The token + position embedding (wte [V, C], wpe [maxT, C], tokens [B*T]) in float64: the forward, and the
// backward's sums of dout rows per token and per position.
#pragma once
#include <vector>

inline std::vector<float> ref_encoder_forward(const std::vector<float>& wte, const std::vector<float>& wpe,
                                              const std::vector<int>& tokens, int T, int C) {
    const size_t N = tokens.size();
    std::vector<float> out(N * C);
    for (size_t n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            out[n * C + c] = (float)((double)wte[(size_t)tokens[n] * C + c] + wpe[(n % T) * C + c]);
    return out;
}

struct RefEncoderGrads {
    std::vector<double> dwte, dwpe;  // [V, C] and [T, C]: the sums, without the initial gradient
    std::vector<char> present;       // [V]: the token occurs in the batch
};
inline RefEncoderGrads ref_encoder_backward(const std::vector<float>& dout, const std::vector<int>& tokens,
                                            int T, int C, int V) {
    RefEncoderGrads g;
    g.dwte.assign((size_t)V * C, 0.0);
    g.dwpe.assign((size_t)T * C, 0.0);
    g.present.assign(V, 0);
    for (size_t n = 0; n < tokens.size(); n++) {
        g.present[tokens[n]] = 1;
        for (int c = 0; c < C; c++) {
            g.dwte[(size_t)tokens[n] * C + c] += dout[n * C + c];
            g.dwpe[(n % T) * C + c] += dout[n * C + c];
        }
    }
    return g;
}
