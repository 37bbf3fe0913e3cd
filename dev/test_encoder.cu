// Encoder (wte + wpe) forward and deterministic backward against float64 CPU references; benchmarks
// (--bench) at GPT-2 1.5B size.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "dev/byte_budget.h"
#include "dev/dev_utils.h"
#include "llmc/kernels/encoder.cuh"
#include "test/reference/encoder.h"

namespace {

using testing::kBf16Eps;  // one bf16 rounding of the output

// `used` distinct token ids drawn from [0, V) (a random subset, so absent rows are interleaved with present
// ones), or a Zipf-like heavy-headed distribution over all of V when `zipf` (frequent tokens give long
// buckets).
std::vector<int> make_tokens(int N, int V, int used, bool zipf) {
    std::vector<int> tokens(N);
    if (zipf) {
        const std::vector<float> u = dev::random_uniform(N, 0.0f, 1.0f);
        for (int n = 0; n < N; n++)
            tokens[n] = std::min(V - 1, (int)std::floor(std::exp(u[n] * std::log((double)V + 1))) - 1);
        return tokens;
    }
    std::vector<int> ids(V);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), dev::rng());
    const std::vector<int> pick = dev::random_ints(N, 0, used);
    for (int n = 0; n < N; n++) tokens[n] = ids[pick[n]];
    return tokens;
}

void check_forward(int B, int T, int C, int V) {
    printf("  B = %d, T = %d, C = %d, V = %d\n", B, T, C, V);
    const int N = B * T, maxT = T + 5;
    std::vector<float> wte = dev::random_normal((size_t)V * C), wpe = dev::random_normal((size_t)maxT * C);
    ref_round_to_bf16(wte);
    ref_round_to_bf16(wpe);
    const std::vector<int> inp = dev::random_ints(N, 0, V);
    const std::vector<float> ref = ref_encoder_forward(wte, wpe, inp, T, C);
    int* d_inp = dev::to_device(inp);
    bf16* d_wte = dev::to_device_bf16(wte);
    bf16* d_wpe = dev::to_device_bf16(wpe);
    bf16* d_out = dev::device_alloc<bf16>((size_t)N * C);
    encoder_forward(d_out, d_inp, d_wte, d_wpe, B, T, C, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    // The sum of two bf16 values is exact in fp32 (or rounded at 2^-24), then rounded once to bf16: rtol
    // 2^-8. An exactly cancelling sum is exactly 0 on both sides: atol 0.
    testing::expect_close("encoder forward", dev::from_device_bf16(d_out, (size_t)N * C), ref, 0.0, kBf16Eps);
    for (void* p : {(void*)d_inp, (void*)d_wte, (void*)d_wpe, (void*)d_out}) CHECK_CUDA(cudaFree(p));
}

void check_backward(int B, int T, int C, int V, int used, bool zipf) {
    const int N = B * T, maxT = T + 3;
    const std::vector<int> inp = make_tokens(N, V, used, zipf);
    TokenBuckets buckets;
    build_token_buckets(&buckets, inp.data(), N);
    const int num_buckets = (int)buckets.tokens.size();
    int longest = 0;
    for (int i = 0; i < num_buckets; i++)
        longest = std::max(longest, buckets.offsets[i + 1] - buckets.offsets[i]);
    printf("  B = %d, T = %d, C = %d, V = %d: %d buckets, longest %d positions\n", B, T, C, V, num_buckets,
           longest);

    // dwte starts with random values (the LM head's gradient); dwpe too (its rows >= T must survive).
    std::vector<float> dout = dev::random_normal((size_t)N * C), dwte0 = dev::random_normal((size_t)V * C),
                       dwpe0 = dev::random_normal((size_t)maxT * C);
    ref_round_to_bf16(dout);
    ref_round_to_bf16(dwte0);
    ref_round_to_bf16(dwpe0);

    const RefEncoderGrads ref = ref_encoder_backward(dout, inp, T, C, V);
    const std::vector<double>&acc_wte = ref.dwte, &acc_wpe = ref.dwpe;
    const std::vector<char>& present = ref.present;
    std::vector<float> ref_wpe((size_t)T * C);
    for (size_t i = 0; i < ref_wpe.size(); i++) ref_wpe[i] = (float)acc_wpe[i];
    double sq = 0;
    for (float x : dout) sq += (double)x * x;
    const double rms = std::sqrt(sq / dout.size());

    int* d_inp = dev::to_device(inp);
    int* d_off = dev::to_device(buckets.offsets);
    int* d_pos = dev::to_device(buckets.positions);
    int* d_tok = dev::to_device(buckets.tokens);
    // The model's fixed grid: N blocks (the most buckets a batch can have), the count in device memory.
    int* d_count = dev::to_device(std::vector<int>{num_buckets});
    bf16* d_dout = dev::to_device_bf16(dout);
    bf16* d_dwte = dev::to_device_bf16(dwte0);
    bf16* d_dwpe = dev::to_device_bf16(dwpe0);
    encoder_backward(d_dwte, d_dwpe, d_dout, d_off, d_pos, d_tok, d_count, N, B, T, C, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> got_wte = dev::from_device_bf16(d_dwte, (size_t)V * C);
    const std::vector<float> got_wpe = dev::from_device_bf16(d_dwpe, (size_t)maxT * C);

    // Present rows: init + sum of P terms. rtol: the single bf16 rounding. atol: fp32 accumulation of up to
    // P+1 terms of rms r grows like sqrt(P) * 2^-24 * |partial sums| ~ P * 2^-24 * r; 8x margin.
    std::vector<float> got_p, ref_p, got_abs, init_abs;
    for (int v = 0; v < V; v++) {
        for (int c = 0; c < C; c++) {
            const size_t i = (size_t)v * C + c;
            if (present[v]) {
                got_p.push_back(got_wte[i]);
                ref_p.push_back((float)(dwte0[i] + acc_wte[i]));
            } else {
                got_abs.push_back(got_wte[i]);
                init_abs.push_back(dwte0[i]);
            }
        }
    }
    testing::expect_close("dwte (present rows)", got_p, ref_p, 8.0 * (longest + 1) * std::ldexp(rms, -24),
                          kBf16Eps);
    // Absent rows are not touched: bit-exact.
    printf("  dwte absent rows: %zu values must be unchanged\n", got_abs.size());
    EXPECT_TRUE(testing::same_bits(got_abs, init_abs));
    // dwpe rows < T: sum over B terms (same reasoning); rows >= T untouched (bit-exact).
    testing::expect_close("dwpe (rows < T)",
                          std::vector<float>(got_wpe.begin(), got_wpe.begin() + (size_t)T * C), ref_wpe,
                          8.0 * B * std::ldexp(rms, -24), kBf16Eps);
    EXPECT_TRUE(testing::same_bits(std::vector<float>(got_wpe.begin() + (size_t)T * C, got_wpe.end()),
                                   std::vector<float>(dwpe0.begin() + (size_t)T * C, dwpe0.end())));

    // Determinism: from the same initial state, a second run gives bitwise identical results.
    bf16* d_dwte2 = dev::to_device_bf16(dwte0);
    bf16* d_dwpe2 = dev::to_device_bf16(dwpe0);
    encoder_backward(d_dwte2, d_dwpe2, d_dout, d_off, d_pos, d_tok, d_count, N, B, T, C, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(testing::same_bits(dev::from_device_bf16(d_dwte2, (size_t)V * C), got_wte));
    EXPECT_TRUE(testing::same_bits(dev::from_device_bf16(d_dwpe2, (size_t)maxT * C), got_wpe));

    // Gradient accumulation: dwpe rows < T become dwpe0 + sum (one bf16 rounding; same tolerances), rows >= T
    // still untouched.
    bf16* d_dwte3 = dev::to_device_bf16(dwte0);
    bf16* d_dwpe3 = dev::to_device_bf16(dwpe0);
    encoder_backward(d_dwte3, d_dwpe3, d_dout, d_off, d_pos, d_tok, d_count, N, B, T, C, 0,
                     /*accumulate_wpe=*/true);
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> got_wpe3 = dev::from_device_bf16(d_dwpe3, (size_t)maxT * C);
    std::vector<float> ref_wpe_acc(ref_wpe);
    for (size_t i = 0; i < ref_wpe_acc.size(); i++) ref_wpe_acc[i] = (float)((double)acc_wpe[i] + dwpe0[i]);
    testing::expect_close("dwpe (accumulate, rows < T)",
                          std::vector<float>(got_wpe3.begin(), got_wpe3.begin() + (size_t)T * C), ref_wpe_acc,
                          8.0 * (B + 1) * std::ldexp(rms, -24), kBf16Eps);
    EXPECT_TRUE(testing::same_bits(std::vector<float>(got_wpe3.begin() + (size_t)T * C, got_wpe3.end()),
                                   std::vector<float>(dwpe0.begin() + (size_t)T * C, dwpe0.end())));
    EXPECT_TRUE(testing::same_bits(dev::from_device_bf16(d_dwte3, (size_t)V * C), got_wte));
    CHECK_CUDA(cudaFree(d_dwte3));
    CHECK_CUDA(cudaFree(d_dwpe3));

    for (void* p : {(void*)d_inp, (void*)d_off, (void*)d_pos, (void*)d_tok, (void*)d_count, (void*)d_dout,
                    (void*)d_dwte, (void*)d_dwpe, (void*)d_dwte2, (void*)d_dwpe2})
        CHECK_CUDA(cudaFree(p));
}

}  // namespace

// Host-only: the bucket structure (sorted distinct tokens, positions sorted by (token, n), consistent
// offsets), against a comparison sort of the positions, for a small vocabulary (many positions per bucket)
// and GPT-2's (ids up to 50256, N = 16 x 1024).
static void check_token_buckets(int N, int vocab) {
    const std::vector<int> inp = dev::random_ints(N, 0, vocab);
    TokenBuckets b;
    build_token_buckets(&b, inp.data(), N);
    EXPECT_EQ(b.offsets.size(), b.tokens.size() + 1);
    EXPECT_EQ((int)b.positions.size(), N);
    EXPECT_EQ(b.offsets.front(), 0);
    EXPECT_EQ(b.offsets.back(), N);
    std::vector<int> expected(N);
    std::iota(expected.begin(), expected.end(), 0);
    std::stable_sort(expected.begin(), expected.end(), [&](int x, int y) { return inp[x] < inp[y]; });
    EXPECT_TRUE(b.positions == expected);
    std::vector<int> seen(N, 0);
    for (size_t i = 0; i < b.tokens.size(); i++) {
        if (i > 0) EXPECT_TRUE(b.tokens[i] > b.tokens[i - 1]);
        EXPECT_TRUE(b.offsets[i + 1] > b.offsets[i]);
        for (int p = b.offsets[i]; p < b.offsets[i + 1]; p++) {
            EXPECT_EQ(inp[b.positions[p]], b.tokens[i]);
            seen[b.positions[p]]++;
        }
    }
    for (int n = 0; n < N; n++) EXPECT_EQ(seen[n], 1);
}

TEST(token_buckets_structure) {
    check_token_buckets(1000, 37);
    check_token_buckets(16 * 1024, 50257);
    const std::vector<int> inp = dev::random_ints(4, 0, 10);
    TokenBuckets empty;
    build_token_buckets(&empty, inp.data(), 0);
    EXPECT_EQ(empty.tokens.size(), (size_t)0);
    EXPECT_EQ(empty.offsets.size(), (size_t)1);
}

// N = B*T not a multiple of the 256-thread block; C = 768, 1600 and a small C = 40 (less than a 256-wide
// tile).
TEST(encoder_forward_shapes) {
    check_forward(3, 77, 768, 1000);
    check_forward(2, 129, 1600, 50304);
    check_forward(4, 33, 40, 17);
}
// Small vocabularies: many positions per bucket, with absent token rows between present ones.
TEST(encoder_backward_shapes) {
    check_backward(3, 77, 768, 24, 16, false);   // ~14 positions per bucket, 8 absent rows
    check_backward(4, 64, 1600, 40, 7, false);   // ~37 positions per bucket
    check_backward(2, 33, 40, 5, 3, false);      // small C
    check_backward(4, 1024, 1600, 3, 2, false);  // two buckets of ~2048 positions
}
// GPT-1.5B sizes: B = 12, T = 1024, C = 1600, V = 50304; Zipf-like tokens (longest bucket ~ 6% of N).
TEST(encoder_gpt1p5b) {
    check_forward(12, 1024, 1600, 50304);
    check_backward(12, 1024, 1600, 50304, 0, true);
}

// ---- benchmarks at GPT-1.5B size: B = 12, T = 1024, C = 1600, V = 50304 ----

namespace {
constexpr int kB = 12, kT = 1024, kC = 1600, kV = 50304;
}

// Bytes: write out; read the N wte rows, wpe (T rows, re-read from L2 per batch row), tokens.
BENCH(encoder_forward_gpt1p5b) {
    const int N = kB * kT;
    int* d_inp = dev::to_device(dev::random_ints(N, 0, kV));
    bf16* d_wte = dev::to_device_bf16(dev::random_normal((size_t)kV * kC));
    bf16* d_wpe = dev::to_device_bf16(dev::random_normal((size_t)kT * kC));
    bf16* d_out = dev::device_alloc<bf16>((size_t)N * kC);
    const double bytes = 4.0 * N * kC + 2.0 * kT * kC + 4.0 * N;
    const float ms = dev::time_ms([&] { encoder_forward(d_out, d_inp, d_wte, d_wpe, kB, kT, kC, 0); });
    bench::report_budget("encoder_forward", bench::fmt("B=%d,T=%d,C=%d", kB, kT, kC), ms, bytes, 1);
    for (void* p : {(void*)d_inp, (void*)d_wte, (void*)d_wpe, (void*)d_out}) CHECK_CUDA(cudaFree(p));
}

// Zipf-like tokens. Bytes: dout read twice (dwte and dwpe kernels), dwte rows of present tokens read and
// written, dwpe written, the bucket arrays.
BENCH(encoder_backward_gpt1p5b) {
    const int N = kB * kT;
    const std::vector<int> inp = make_tokens(N, kV, 0, true);
    TokenBuckets buckets;
    build_token_buckets(&buckets, inp.data(), N);
    const int num_buckets = (int)buckets.tokens.size();
    int* d_off = dev::to_device(buckets.offsets);
    int* d_pos = dev::to_device(buckets.positions);
    int* d_tok = dev::to_device(buckets.tokens);
    int* d_count = dev::to_device(std::vector<int>{num_buckets});
    bf16* d_dout = dev::to_device_bf16(dev::random_normal((size_t)N * kC));
    bf16* d_dwte = dev::to_device_bf16(dev::random_normal((size_t)kV * kC));
    bf16* d_dwpe = dev::to_device_bf16(dev::random_normal((size_t)kT * kC));
    const double bytes = 4.0 * N * kC + 4.0 * num_buckets * kC + 2.0 * kT * kC + 12.0 * N;
    const float ms = dev::time_ms(
        [&] { encoder_backward(d_dwte, d_dwpe, d_dout, d_off, d_pos, d_tok, d_count, N, kB, kT, kC, 0); });
    bench::report_budget("encoder_backward", bench::fmt("B=%d,T=%d,C=%d,zipf", kB, kT, kC), ms, bytes, 1);
    for (void* p : {(void*)d_off, (void*)d_pos, (void*)d_tok, (void*)d_count, (void*)d_dout, (void*)d_dwte,
                    (void*)d_dwpe})
        CHECK_CUDA(cudaFree(p));
}

TEST_MAIN()
