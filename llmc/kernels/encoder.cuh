// Token + position embedding. Forward: out[b,t,:] = wte[inp[b,t],:] + wpe[t,:] (fp32 add, one bf16 rounding).
// Backward is deterministic: the host groups positions by token (build_token_buckets, once per batch, as the
// tokens are known on the host, uploaded with them), then one kernel sums each token's rows of dout in a
// fixed order into dwte, and another sums dout over the batch into dwpe. No atomics. C must be a multiple of
// 8; tensors 16-byte aligned. Shapes: wte_VC (V vocab rows), wpe_TC (maxT >= T rows), inp_N / dout_NC with N
// = B*T.
#pragma once
#include <vector>

#include "llmc/gpu/cuda_common.cuh"

// out_NC = wte[inp_N] + wpe[n % T]. inp_N is a device pointer of N = B*T token ids in [0, V).
void encoder_forward(bf16* out_NC, const int* inp_N, const bf16* wte_VC, const bf16* wpe_TC, int B, int T,
                     int C, cudaStream_t stream);

// Positions 0..N-1 grouped by token id: tokens = the distinct ids (ascending), positions = all n sorted by
// (token, n), and positions[offsets[i] .. offsets[i+1]) are the positions holding tokens[i].
// offsets has tokens.size() + 1 entries.
struct TokenBuckets {
    std::vector<int> offsets, positions, tokens;
};
void build_token_buckets(TokenBuckets* out, const int* inp_N_host, int N);

// Device copies of a TokenBuckets' three arrays, and num_buckets[0] = tokens.size() in device memory: the
// grid is fixed (max_buckets >= num_buckets blocks, e.g. N), so the launch does not depend on the batch and a
// training step can be captured as a CUDA graph once and replayed with new tokens.
// dwte_VC: rows of the tokens present are ACCUMULATED, dwte[tok] = bf16(dwte[tok] + sum of dout over its
// positions) (fp32 sum in a fixed order, one rounding; dwte already holds the tied LM head's gradient); other
// rows untouched. dwpe_TC: rows 0..T-1 OVERWRITTEN with dwpe[t] = sum_b dout[b,t] (accumulate_wpe: +=, for
// gradient accumulation); rows >= T untouched.
void encoder_backward(bf16* dwte_VC, bf16* dwpe_TC, const bf16* dout_NC, const int* bucket_offsets,
                      const int* bucket_positions, const int* bucket_tokens, const int* num_buckets,
                      int max_buckets, int B, int T, int C, cudaStream_t stream, bool accumulate_wpe = false);
