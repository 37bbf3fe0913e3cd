// Encoder kernels, then the host bucketing and the launchers.
#include <algorithm>
#include <cstdint>

#include "llmc/kernels/encoder.cuh"

namespace {

constexpr int kEncBlock = 256;
// dwte kernel: a block of 32 x kGroups threads covers one token and 256 channels (32 lanes x 8); the token's
// positions are split round-robin over the kGroups warps (long buckets of frequent tokens stay parallel).
constexpr int kGroups = 4;

__global__ void __launch_bounds__(kEncBlock)
    encoder_forward_kernel(bf16* out, const int* inp, const bf16* wte, const bf16* wpe, int N, int T, int C) {
    const size_t idx = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * x128::size;
    if (idx >= (size_t)N * C) return;
    const int n = (int)(idx / C), c = (int)(idx % C);
    const int t = n % T;
    const int tok = __ldg(inp + n);
    const x128 a = load128(wte + (size_t)tok * C + c);
    const x128 b = load128(wpe + (size_t)t * C + c);
    x128 o;
#pragma unroll
    for (int i = 0; i < x128::size; i++)
        o[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
    store128(out + idx, o);
}

// One block per (token bucket, 256-channel tile). Warp g sums positions g, g + kGroups, ... of the bucket in
// order (4 rows loaded at a time for memory-level parallelism, added in order); warp 0 then adds the other
// warps' sums in order g = 1..kGroups-1 and the old dwte row, and rounds once.
__global__ void __launch_bounds__(32 * kGroups)
    encoder_backward_wte_kernel(bf16* dwte, const bf16* dout, const int* offsets, const int* positions,
                                const int* tokens, const int* num_buckets, int C) {
    __shared__ float partial[kGroups - 1][32][x128::size];
    const int bucket = blockIdx.x;
    if (bucket >= *num_buckets) return;  // a fixed grid of max_buckets blocks: the rest have no bucket
    const int lane = threadIdx.x, g = threadIdx.y;
    const int c = (blockIdx.y * 32 + lane) * x128::size;
    const int begin = offsets[bucket], end = offsets[bucket + 1];
    float acc[x128::size];
#pragma unroll
    for (int i = 0; i < x128::size; i++) acc[i] = 0.0f;
    if (c < C) {
        int p = begin + g;
        for (; p + 3 * kGroups < end; p += 4 * kGroups) {
            x128 v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) v[u] = load128(dout + (size_t)positions[p + u * kGroups] * C + c);
#pragma unroll
            for (int u = 0; u < 4; u++) {
#pragma unroll
                for (int i = 0; i < x128::size; i++) acc[i] += __bfloat162float(v[u][i]);
            }
        }
        for (; p < end; p += kGroups) {
            const x128 v = load128(dout + (size_t)positions[p] * C + c);
#pragma unroll
            for (int i = 0; i < x128::size; i++) acc[i] += __bfloat162float(v[i]);
        }
    }
    if (g > 0) {
#pragma unroll
        for (int i = 0; i < x128::size; i++) partial[g - 1][lane][i] = acc[i];
    }
    __syncthreads();
    if (g == 0 && c < C) {
#pragma unroll
        for (int h = 0; h < kGroups - 1; h++) {
#pragma unroll
            for (int i = 0; i < x128::size; i++) acc[i] += partial[h][lane][i];
        }
        bf16* row = dwte + (size_t)tokens[bucket] * C + c;
        const x128 old = load128(row);
        x128 o;
#pragma unroll
        for (int i = 0; i < x128::size; i++) o[i] = __float2bfloat16(__bfloat162float(old[i]) + acc[i]);
        store128(row, o);
    }
}

// One thread per (t, 8 channels): dwpe[t] = sum over b = 0..B-1 in order.
__global__ void __launch_bounds__(kEncBlock)
    encoder_backward_wpe_kernel(bf16* dwpe, const bf16* dout, int B, int T, int C, bool accumulate) {
    const size_t idx = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * x128::size;
    if (idx >= (size_t)T * C) return;
    float acc[x128::size];
#pragma unroll
    for (int i = 0; i < x128::size; i++) acc[i] = 0.0f;
    const size_t stride = (size_t)T * C;
#pragma unroll 4
    for (int b = 0; b < B; b++) {
        const x128 v = load128(dout + b * stride + idx);
#pragma unroll
        for (int i = 0; i < x128::size; i++) acc[i] += __bfloat162float(v[i]);
    }
    if (accumulate) {  // one rounding of old + new
        const x128 old = load128(dwpe + idx);
#pragma unroll
        for (int i = 0; i < x128::size; i++) acc[i] += __bfloat162float(old[i]);
    }
    x128 o;
#pragma unroll
    for (int i = 0; i < x128::size; i++) o[i] = __float2bfloat16(acc[i]);
    store128(dwpe + idx, o);
}

}  // namespace

void encoder_forward(bf16* out_NC, const int* inp_N, const bf16* wte_VC, const bf16* wpe_TC, int B, int T,
                     int C, cudaStream_t stream) {
    CHECK(C > 0 && C % 8 == 0, "encoder_forward: C = %d must be a positive multiple of 8", C);
    CHECK(B >= 0 && T > 0, "encoder_forward: B = %d, T = %d", B, T);
    CHECK(aligned16(out_NC) && aligned16(wte_VC) && aligned16(wpe_TC),
          "encoder_forward: tensors must be 16-byte aligned");
    const int N = B * T;
    if (N == 0) return;
    const size_t threads = (size_t)N * C / x128::size;
    encoder_forward_kernel<<<(unsigned)((threads + kEncBlock - 1) / kEncBlock), kEncBlock, 0, stream>>>(
        out_NC, inp_N, wte_VC, wpe_TC, N, T, C);
    CHECK_LAUNCH();
}

void build_token_buckets(TokenBuckets* out, const int* inp_N_host, int N) {
    CHECK(N >= 0, "build_token_buckets: N = %d", N);
    // A counting sort by token id, O(N + largest id). It runs on the host before every step's launch, with
    // the GPU idle: a comparison sort of the positions took 1.5-2 ms there at N = 12288-16384, this ~0.3 ms.
    // The placing pass visits n in ascending order, so each bucket's positions stay sorted by (token, n).
    int max_token = -1;
    for (int n = 0; n < N; n++) {
        CHECK(inp_N_host[n] >= 0, "build_token_buckets: negative token id %d at position %d", inp_N_host[n],
              n);
        max_token = std::max(max_token, inp_N_host[n]);
    }
    std::vector<int> next_slot((size_t)max_token + 1, 0);  // count of each id, then where its next n goes
    for (int n = 0; n < N; n++) next_slot[inp_N_host[n]]++;
    for (int tok = 0, start = 0; tok <= max_token; tok++) {
        const int count = next_slot[tok];
        next_slot[tok] = start;
        start += count;
    }
    out->positions.resize(N);
    for (int n = 0; n < N; n++) out->positions[next_slot[inp_N_host[n]]++] = n;
    out->tokens.clear();
    out->offsets.clear();
    out->tokens.reserve(N);
    out->offsets.reserve((size_t)N + 1);
    for (int i = 0; i < N; i++) {
        const int tok = inp_N_host[out->positions[i]];
        if (i == 0 || tok != out->tokens.back()) {
            out->tokens.push_back(tok);
            out->offsets.push_back(i);
        }
    }
    out->offsets.push_back(N);
}

void encoder_backward(bf16* dwte_VC, bf16* dwpe_TC, const bf16* dout_NC, const int* bucket_offsets,
                      const int* bucket_positions, const int* bucket_tokens, const int* num_buckets,
                      int max_buckets, int B, int T, int C, cudaStream_t stream, bool accumulate_wpe) {
    CHECK(C > 0 && C % 8 == 0, "encoder_backward: C = %d must be a positive multiple of 8", C);
    CHECK(B >= 0 && T > 0 && max_buckets >= 0, "encoder_backward: B = %d, T = %d, max_buckets = %d", B, T,
          max_buckets);
    CHECK(aligned16(dwte_VC) && aligned16(dwpe_TC) && aligned16(dout_NC),
          "encoder_backward: tensors must be 16-byte aligned");
    const size_t wpe_threads = (size_t)T * C / x128::size;
    encoder_backward_wpe_kernel<<<(unsigned)((wpe_threads + kEncBlock - 1) / kEncBlock), kEncBlock, 0,
                                  stream>>>(dwpe_TC, dout_NC, B, T, C, accumulate_wpe);
    CHECK_LAUNCH();
    if (max_buckets == 0) return;
    const dim3 grid(max_buckets, ceil_div(C, 32 * x128::size)), block(32, kGroups);
    encoder_backward_wte_kernel<<<grid, block, 0, stream>>>(dwte_VC, dout_NC, bucket_offsets,
                                                            bucket_positions, bucket_tokens, num_buckets, C);
    CHECK_LAUNCH();
}
