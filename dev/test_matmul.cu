// Tests for llmc/kernels/gemm/matmul.cu (cuBLASLt GEMMs). Each case runs the shipped launchers on fresh
// random inputs and compares with a float64 CPU reference computed from the very values the GPU reads
// (bf16-rounded inputs, or the FP8 bytes times their scale_inv). Then GPT-1.5B shapes: a sampled correctness
// spot check of every GEMM. Benchmarks (--bench): TFLOP/s of BF16 fwd/dgrad/wgrad and FP8 fwd/dgrad/wgrad,
// GB/s of dbias, at GPT-1.5B shapes.
//
// Tolerances. Every check is elementwise |got - ref| <= rel * |ref| + tau * |a_i| |b_j| / sqrt(K), where a_i
// and b_j are the two K-vectors whose dot product is the element, plus a normwise ||got - ref|| / ||ref|| <=
// l2. |a_i| |b_j| / sqrt(K) is the typical size of such a dot product (the rms of the output for uncorrelated
// data), so tau is "accumulation error relative to the typical output"; it stays meaningful for outputs that
// happen to be near zero. rel covers the one rounding of the FP32 result to the BF16 output (unit roundoff
// 2^-9, we allow 2^-8).
#include <cuda_fp8.h>

#include <cmath>
#include <string>
#include <vector>

#include "dev/dev_utils.h"
#include "llmc/gpu/context.h"
#include "llmc/kernels/gemm/gemm_fp8.cuh"
#include "llmc/kernels/gemm/matmul.cuh"
#include "test/reference/fp8.h"
#include "test/reference/gemm.h"
#include "test/require_gpu.h"
#include "test/temp_dir.h"

namespace {

GpuContext* gpu() {
    static GpuContext ctx = create_gpu_context(0, 90);
    return &ctx;
}

const cudaStream_t kStream = 0;  // the legacy stream, which dev::time_ms records its events on

// The FP8 GEMMs' operand over test bytes: a [rows, cols] tensor of type t (row-wise and/or transposed copy).
Fp8Tensor fp8_tensor(const void* data, const void* data_T, float* scale_inv, int rows, int cols,
                     cudaDataType_t t) {
    Fp8Tensor x;
    x.data = (__nv_fp8_storage_t*)data;
    x.data_T = (__nv_fp8_storage_t*)data_T;
    x.scale_inv = scale_inv;
    x.rows = rows;  // no slot: the GEMMs read only the bytes, the shape, the format and scale_inv
    x.cols = cols;
    x.format = t == CUDA_R_8F_E4M3 ? Fp8Dtype::E4M3 : Fp8Dtype::E5M2;
    return x;
}

struct Tol {
    double rel, tau, l2;
};
// BF16 inputs: products are exact in FP32, accumulation is FP32 (tensor cores add with ~2^-23 relative error
// per step, possibly truncating, i.e. biased); allow 2^-10 of the typical output plus a term growing like K *
// 2^-22 for the biased worst case at large K (K = 12288: 3.9e-3 in total). Normwise the error is the BF16
// output rounding, ~2^-9 / sqrt(3) rms; 2^-8 bounds it.
Tol bf16_tol(int K) {
    return {testing::kBf16Eps, std::ldexp(1.0, -10) + K * std::ldexp(1.0, -22), testing::kBf16Eps};
}
// FP8 without fast accumulation (dgrad, wgrad): FP8 products are exact; the tensor core adds the 32 products
// of one instruction with a ~2^-13 relative alignment error, and cuBLASLt promotes partial sums to true FP32
// every few instructions, so the error is a few 2^-13 of the typical output; 2^-7 leaves a wide margin.
Tol fp8_tol() { return {testing::kBf16Eps, std::ldexp(1.0, -7), std::ldexp(1.0, -7)}; }
// FP8 with fast accumulation (forward): no promotion, so the ~2^-13 error of every one of the K/32
// instruction steps lands in the running sum (biased toward zero in the worst case): tau = max(2^-7, K/32 *
// 2^-12). Normwise, K/32 * 2^-13 (K = 1600: 6e-3, K = 6400: 2.4e-2; Transformer Engine accepts ~1e-2 for
// this).
Tol fp8_fast_tol(int K) {
    return {testing::kBf16Eps, std::max(std::ldexp(1.0, -7), K / 32.0 * std::ldexp(1.0, -12)),
            std::max(std::ldexp(1.0, -7), K / 32.0 * std::ldexp(1.0, -13))};
}

using Mat = std::vector<double>;  // row-major

Mat to_double(const std::vector<float>& v) { return Mat(v.begin(), v.end()); }
template <class T>
std::vector<T> transpose(const std::vector<T>& a, int rows, int cols) {
    std::vector<T> t((size_t)rows * cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) t[(size_t)c * rows + r] = a[(size_t)r * cols + c];
    return t;
}

// Elementwise |got - ref| <= tol.rel * |ref| + tol.tau * unit, and normwise rel_l2 <= tol.l2.
bool check(const char* what, const std::vector<float>& got, const Mat& ref, const Mat& unit, Tol tol) {
    if (got.size() != ref.size()) {
        testing::fail(__FILE__, __LINE__, std::string(what) + ": size mismatch");
        return false;
    }
    testing::ErrorStats s;
    for (size_t i = 0; i < got.size(); i++)
        s.add((long)i, got[i], ref[i], tol.rel * std::fabs(ref[i]) + tol.tau * unit[i]);
    char note[32];
    snprintf(note, sizeof note, " (<= %.1e)", tol.l2);
    return s.check(what, tol.l2, note);
}

std::vector<float> randn_bf16(size_t n, float stddev = 1.0f) {
    std::vector<float> v = dev::random_normal(n, 0.0f, stddev);
    ref_round_to_bf16(v);
    return v;
}

bool bitwise_equal(const bf16* a, const bf16* b, size_t n) {
    return testing::same_bits(dev::from_device_bf16_bits(a, n), dev::from_device_bf16_bits(b, n));
}

// FP8 quantization on the host with the same conversion the cast kernels use (test/reference/fp8.h), with
// scale = fp8_max / amax; deq = value the GEMM sees = fp8 * scale_inv.
struct Quant {
    std::vector<uint8_t> bytes;
    float scale_inv;
    Mat deq;
};
Fp8Dtype dtype_of(cudaDataType_t t) { return t == CUDA_R_8F_E5M2 ? Fp8Dtype::E5M2 : Fp8Dtype::E4M3; }
Quant quantize(const std::vector<float>& x, cudaDataType_t t) {
    float amax = 0;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    const float scale = fp8_dtype_max(dtype_of(t)) / amax;
    Quant q;
    q.scale_inv = 1.0f / scale;
    q.bytes.resize(x.size());
    q.deq.resize(x.size());
    for (size_t i = 0; i < x.size(); i++) {
        q.bytes[i] = ref_fp8_quantize(x[i], scale, dtype_of(t));
        q.deq[i] = (double)ref_fp8_decode(q.bytes[i], dtype_of(t)) * (double)q.scale_inv;  // exact in double
    }
    return q;
}
float* scalar_to_device(float v) { return dev::to_device(std::vector<float>{v}); }

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// BF16

struct Shape {
    int N, C, OC;
};

TEST(bf16_forward) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    // (100, 200, 264): N not a multiple of anything, C and OC multiples of 8 but not of 64/128 tiles.
    for (Shape s : {Shape{256, 128, 384}, Shape{100, 200, 264}, Shape{64, 1600, 256}}) {
        for (bool with_bias : {true, false}) {
            printf(" N=%d C=%d OC=%d bias=%d\n", s.N, s.C, s.OC, with_bias);
            MatmulPlanCache cache;
            auto x = randn_bf16((size_t)s.N * s.C), w = randn_bf16((size_t)s.OC * s.C, 0.5f),
                 b = randn_bf16(s.OC);
            bf16 *d_x = dev::to_device_bf16(x), *d_w = dev::to_device_bf16(w), *d_b = dev::to_device_bf16(b);
            bf16* d_out = dev::device_alloc<bf16>((size_t)s.N * s.OC);
            for (int rep = 0; rep < 2; rep++)  // the second call must reuse the cached plan
                matmul_forward(&cache, ctx, d_out, d_x, d_w, with_bias ? d_b : nullptr, s.N, s.C, s.OC,
                               kStream);
            CHECK_CUDA(cudaDeviceSynchronize());
            EXPECT_EQ(cache.size(), (size_t)1);
            RefGemm r = ref_gemm(to_double(x), to_double(w), s.N, s.OC, s.C);
            if (with_bias)
                for (int i = 0; i < s.N; i++)
                    for (int j = 0; j < s.OC; j++) r.val[(size_t)i * s.OC + j] += b[j];
            check("out", dev::from_device_bf16(d_out, (size_t)s.N * s.OC), r.val, r.unit, bf16_tol(s.C));
            cudaFree(d_x), cudaFree(d_w), cudaFree(d_b), cudaFree(d_out);
        }
    }
}

// Reference and bound for D = A B + C0 (beta = 1 into a bf16 C0). cuBLASLt may round the product to bf16
// before adding C0 (seen on the H200: a 10-ulp error where |AB| ~ |C0| ~ 10 cancel to 0.34), so each addend
// may carry its own 2^-8 rounding: the bound grows by 2^-8 (|AB| + |C0|), expressed in units of tau.
static void accumulate_onto(RefGemm* r, const std::vector<float>& c0, const Tol& tol) {
    for (size_t e = 0; e < r->val.size(); e++) {
        r->unit[e] += (std::fabs(r->val[e]) + std::fabs((double)c0[e])) * std::ldexp(1.0, -8) / tol.tau;
        r->val[e] += c0[e];
    }
}

// The residual add in the forward's epilogue (beta 1, C = the residual, out of place): D = A B + bias + R,
// the bound of accumulate_onto (each addend may carry its own bf16 rounding). R is scaled like the residual
// stream
// (|R| ~ 4 |AB|); the residual stays untouched, and a repeat gives the same bits.
TEST(bf16_forward_residual) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    for (Shape s : {Shape{256, 128, 384}, Shape{100, 200, 264}}) {
        printf(" N=%d C=%d OC=%d\n", s.N, s.C, s.OC);
        MatmulPlanCache cache;
        auto x = randn_bf16((size_t)s.N * s.C), w = randn_bf16((size_t)s.OC * s.C, 0.5f),
             b = randn_bf16(s.OC);
        auto res = randn_bf16((size_t)s.N * s.OC, 4.0f * std::sqrt((float)s.C) * 0.5f);
        bf16 *d_x = dev::to_device_bf16(x), *d_w = dev::to_device_bf16(w), *d_b = dev::to_device_bf16(b);
        bf16* d_res = dev::to_device_bf16(res);
        bf16 *d_out = dev::device_alloc<bf16>((size_t)s.N * s.OC),
             *d_out2 = dev::device_alloc<bf16>((size_t)s.N * s.OC);
        matmul_forward(&cache, ctx, d_out, d_x, d_w, d_b, s.N, s.C, s.OC, kStream, d_res);
        matmul_forward(&cache, ctx, d_out2, d_x, d_w, d_b, s.N, s.C, s.OC, kStream, d_res);
        CHECK_CUDA(cudaDeviceSynchronize());
        EXPECT_EQ(cache.size(), (size_t)1);
        RefGemm r = ref_gemm(to_double(x), to_double(w), s.N, s.OC, s.C);
        for (int i = 0; i < s.N; i++)
            for (int j = 0; j < s.OC; j++) r.val[(size_t)i * s.OC + j] += b[j];
        const Tol tol = bf16_tol(s.C);
        accumulate_onto(&r, res, tol);
        check("out + residual", dev::from_device_bf16(d_out, (size_t)s.N * s.OC), r.val, r.unit, tol);
        EXPECT_TRUE(bitwise_equal(d_out, d_out2, (size_t)s.N * s.OC));
        const std::vector<float> res_after = dev::from_device_bf16(d_res, res.size());
        EXPECT_TRUE(res_after == res);
        cudaFree(d_x), cudaFree(d_w), cudaFree(d_b), cudaFree(d_res), cudaFree(d_out), cudaFree(d_out2);
    }
}

// Full backward: dinp, dweight (overwrite or accumulate onto random values), dbias; rerun for determinism.
static void backward_case(Shape s, bool accumulate) {
    GpuContext* ctx = gpu();
    const int N = s.N, C = s.C, OC = s.OC;
    printf(" N=%d C=%d OC=%d accumulate=%d\n", N, C, OC, accumulate);
    MatmulPlanCache cache;
    auto dout = randn_bf16((size_t)N * OC), x = randn_bf16((size_t)N * C),
         w = randn_bf16((size_t)OC * C, 0.5f);
    auto dw0 = randn_bf16((size_t)OC * C, 4.0f);
    bf16 *d_dout = dev::to_device_bf16(dout), *d_x = dev::to_device_bf16(x), *d_w = dev::to_device_bf16(w);
    bf16* d_dinp = dev::device_alloc<bf16>((size_t)N * C);
    bf16* d_dw = accumulate ? dev::to_device_bf16(dw0) : dev::device_alloc<bf16>((size_t)OC * C);
    auto db0 = randn_bf16(OC, 4.0f);
    bf16* d_db = accumulate ? dev::to_device_bf16(db0) : dev::device_alloc<bf16>(OC);
    float* d_scratch = dev::device_alloc<float>(matmul_dbias_scratch_bytes(N, OC) / sizeof(float));
    matmul_backward(&cache, ctx, d_dinp, d_dw, d_db, d_dout, d_x, d_w, N, C, OC, accumulate, d_scratch,
                    kStream);
    CHECK_CUDA(cudaDeviceSynchronize());

    Mat dout_d = to_double(dout), doutT = transpose(dout_d, N, OC);
    // dinp [N, C] = dout [N, OC] . (W^T [C, OC])^T, K = OC
    RefGemm rd = ref_gemm(dout_d, transpose(to_double(w), OC, C), N, C, OC);
    check("dinp", dev::from_device_bf16(d_dinp, (size_t)N * C), rd.val, rd.unit, bf16_tol(OC));
    // dweight [OC, C] = dout^T [OC, N] . (X^T [C, N])^T (+ dw0), K = N
    RefGemm rw = ref_gemm(doutT, transpose(to_double(x), N, C), OC, C, N);
    Tol dw_tol = bf16_tol(N);
    if (accumulate) accumulate_onto(&rw, dw0, dw_tol);
    check("dweight", dev::from_device_bf16(d_dw, (size_t)OC * C), rw.val, rw.unit, dw_tol);
    // dbias [OC] = dout^T [OC, N] . ones [N]: unit = |column| (the typical size of a sum of N values).
    // (+ db0 when accumulating: gradient accumulation adds the bias gradient too)
    RefGemm rb = ref_gemm(doutT, Mat(N, 1.0), OC, 1, N);
    Tol db_tol = bf16_tol(N);
    if (accumulate) accumulate_onto(&rb, db0, db_tol);
    check("dbias", dev::from_device_bf16(d_db, OC), rb.val, rb.unit, db_tol);

    if (!accumulate) {  // rerun into fresh buffers: bitwise identical
        bf16* d_dinp2 = dev::device_alloc<bf16>((size_t)N * C);
        bf16* d_dw2 = dev::device_alloc<bf16>((size_t)OC * C);
        bf16* d_db2 = dev::device_alloc<bf16>(OC);
        matmul_backward(&cache, ctx, d_dinp2, d_dw2, d_db2, d_dout, d_x, d_w, N, C, OC, false, d_scratch,
                        kStream);
        CHECK_CUDA(cudaDeviceSynchronize());
        EXPECT_TRUE(bitwise_equal(d_dinp, d_dinp2, (size_t)N * C));
        EXPECT_TRUE(bitwise_equal(d_dw, d_dw2, (size_t)OC * C));
        EXPECT_TRUE(bitwise_equal(d_db, d_db2, OC));
        cudaFree(d_dinp2), cudaFree(d_dw2), cudaFree(d_db2);
    }
    cudaFree(d_dout), cudaFree(d_x), cudaFree(d_w), cudaFree(d_dinp), cudaFree(d_dw), cudaFree(d_db),
        cudaFree(d_scratch);
}

TEST(bf16_backward) {
    REQUIRE_GPU();
    for (Shape s : {Shape{256, 128, 384}, Shape{100, 200, 264}, Shape{1000, 64, 1608}})
        for (bool acc : {false, true}) backward_case(s, acc);
}

// Optional outputs: dinp only; LM-head style (dinp + dweight, no bias); dweight + dbias without dinp.
TEST(bf16_backward_partial_outputs) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    const int N = 192, C = 128, OC = 512;
    MatmulPlanCache cache;
    auto dout = randn_bf16((size_t)N * OC), x = randn_bf16((size_t)N * C), w = randn_bf16((size_t)OC * C);
    bf16 *d_dout = dev::to_device_bf16(dout), *d_x = dev::to_device_bf16(x), *d_w = dev::to_device_bf16(w);
    Mat doutT = transpose(to_double(dout), N, OC);
    RefGemm rd = ref_gemm(to_double(dout), transpose(to_double(w), OC, C), N, C, OC);
    RefGemm rw = ref_gemm(doutT, transpose(to_double(x), N, C), OC, C, N);
    RefGemm rb = ref_gemm(doutT, Mat(N, 1.0), OC, 1, N);
    float* d_scratch = dev::device_alloc<float>(matmul_dbias_scratch_bytes(N, OC) / sizeof(float));
    {
        bf16* d_dinp = dev::device_alloc<bf16>((size_t)N * C);
        matmul_backward(&cache, ctx, d_dinp, nullptr, nullptr, d_dout, nullptr, d_w, N, C, OC, false, nullptr,
                        kStream);
        CHECK_CUDA(cudaDeviceSynchronize());
        check("dinp only", dev::from_device_bf16(d_dinp, (size_t)N * C), rd.val, rd.unit, bf16_tol(OC));
        cudaFree(d_dinp);
    }
    {
        bf16* d_dinp = dev::device_alloc<bf16>((size_t)N * C);
        bf16* d_dw = dev::device_alloc<bf16>((size_t)OC * C);
        matmul_backward(&cache, ctx, d_dinp, d_dw, nullptr, d_dout, d_x, d_w, N, C, OC, false, nullptr,
                        kStream);
        CHECK_CUDA(cudaDeviceSynchronize());
        check("lm head: dinp", dev::from_device_bf16(d_dinp, (size_t)N * C), rd.val, rd.unit, bf16_tol(OC));
        check("lm head: dweight", dev::from_device_bf16(d_dw, (size_t)OC * C), rw.val, rw.unit, bf16_tol(N));
        cudaFree(d_dinp), cudaFree(d_dw);
    }
    {
        bf16* d_dw = dev::device_alloc<bf16>((size_t)OC * C);
        bf16* d_db = dev::device_alloc<bf16>(OC);
        matmul_backward(&cache, ctx, nullptr, d_dw, d_db, d_dout, d_x, nullptr, N, C, OC, false, d_scratch,
                        kStream);
        CHECK_CUDA(cudaDeviceSynchronize());
        check("no dinp: dweight", dev::from_device_bf16(d_dw, (size_t)OC * C), rw.val, rw.unit, bf16_tol(N));
        check("no dinp: dbias", dev::from_device_bf16(d_db, OC), rb.val, rb.unit, bf16_tol(N));
        cudaFree(d_dw), cudaFree(d_db);
    }
    EXPECT_EQ(cache.size(), (size_t)2);  // one dgrad plan, one wgrad plan, reused across the three calls
    cudaFree(d_dout), cudaFree(d_x), cudaFree(d_w), cudaFree(d_scratch);
}

// The standalone dbias reduction: few rows (fewer than the 8 row lanes), a partial last column block, many
// splits.
TEST(dbias_kernel) {
    REQUIRE_GPU();
    const int sizes[][2] = {{5, 64}, {3000, 1608}, {12288, 1600}, {777, 4800}};
    for (const auto& no : sizes) {
        const int N = no[0], OC = no[1];
        auto dout = randn_bf16((size_t)N * OC);
        bf16* d_dout = dev::to_device_bf16(dout);
        bf16* d_db = dev::device_alloc<bf16>(OC);
        float* d_scratch = dev::device_alloc<float>(matmul_dbias_scratch_bytes(N, OC) / sizeof(float));
        matmul_dbias(d_db, d_dout, N, OC, d_scratch, kStream);
        CHECK_CUDA(cudaDeviceSynchronize());
        RefGemm rb = ref_gemm(transpose(to_double(dout), N, OC), Mat(N, 1.0), OC, 1, N);
        char what[64];
        snprintf(what, sizeof what, "dbias N=%d OC=%d", N, OC);
        check(what, dev::from_device_bf16(d_db, OC), rb.val, rb.unit, bf16_tol(N));
        cudaFree(d_dout), cudaFree(d_db), cudaFree(d_scratch);
    }
}

// ---------------------------------------------------------------------------------------------------------
// FP8

TEST(fp8_forward) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    for (Shape s : {Shape{208, 144, 400}, Shape{64, 1600, 256}, Shape{48, 6400, 128}}) {
        for (bool with_bias : {true, false}) {
            printf(" N=%d C=%d OC=%d bias=%d\n", s.N, s.C, s.OC, with_bias);
            MatmulPlanCache cache;
            Quant qx = quantize(dev::random_normal((size_t)s.N * s.C), CUDA_R_8F_E4M3);
            Quant qw = quantize(dev::random_normal((size_t)s.OC * s.C, 0.f, 0.05f), CUDA_R_8F_E4M3);
            auto b = randn_bf16(s.OC);
            auto* d_x = (__nv_fp8_e4m3*)dev::to_device(qx.bytes);
            auto* d_w = (__nv_fp8_e4m3*)dev::to_device(qw.bytes);
            float *d_xs = scalar_to_device(qx.scale_inv), *d_ws = scalar_to_device(qw.scale_inv);
            bf16* d_b = dev::to_device_bf16(b);
            bf16* d_out = dev::device_alloc<bf16>((size_t)s.N * s.OC);
            matmul_fp8_forward(&cache, ctx, d_out, fp8_tensor(d_x, nullptr, d_xs, s.N, s.C, CUDA_R_8F_E4M3),
                               fp8_tensor(d_w, nullptr, d_ws, s.OC, s.C, CUDA_R_8F_E4M3),
                               with_bias ? d_b : nullptr, kStream);
            CHECK_CUDA(cudaDeviceSynchronize());
            RefGemm r = ref_gemm(qx.deq, qw.deq, s.N, s.OC, s.C);
            if (with_bias)
                for (int i = 0; i < s.N; i++)
                    for (int j = 0; j < s.OC; j++) r.val[(size_t)i * s.OC + j] += b[j];
            check("fp8 out (fast accum)", dev::from_device_bf16(d_out, r.val.size()), r.val, r.unit,
                  fp8_fast_tol(s.C));
            cudaFree(d_x), cudaFree(d_w), cudaFree(d_xs), cudaFree(d_ws), cudaFree(d_b), cudaFree(d_out);
        }
    }
}

// The FP8 forward with the residual add in its epilogue (BF16 C, beta 1, out of place), with and without the
// bias: the fast-accumulation bound plus accumulate_onto's for the BF16 residual, and with GEMM autotuning
// on (its timing runs read C and write D: the residual must come out untouched).
TEST(fp8_forward_residual) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    for (Shape s : {Shape{208, 144, 400}, Shape{64, 1600, 256}}) {
        for (bool tuned : {false, true}) {
            printf(" N=%d C=%d OC=%d autotune=%d\n", s.N, s.C, s.OC, tuned);
            MatmulPlanCache cache;
            cache.tuning.autotune = tuned;
            Quant qx = quantize(dev::random_normal((size_t)s.N * s.C), CUDA_R_8F_E4M3);
            Quant qw = quantize(dev::random_normal((size_t)s.OC * s.C, 0.f, 0.05f), CUDA_R_8F_E4M3);
            auto b = randn_bf16(s.OC);
            auto res = randn_bf16((size_t)s.N * s.OC, 4.0f * 0.05f * std::sqrt((float)s.C));
            auto* d_x = (__nv_fp8_e4m3*)dev::to_device(qx.bytes);
            auto* d_w = (__nv_fp8_e4m3*)dev::to_device(qw.bytes);
            float *d_xs = scalar_to_device(qx.scale_inv), *d_ws = scalar_to_device(qw.scale_inv);
            bf16 *d_b = dev::to_device_bf16(b), *d_res = dev::to_device_bf16(res);
            bf16* d_out = dev::device_alloc<bf16>((size_t)s.N * s.OC);
            matmul_fp8_forward(&cache, ctx, d_out, fp8_tensor(d_x, nullptr, d_xs, s.N, s.C, CUDA_R_8F_E4M3),
                               fp8_tensor(d_w, nullptr, d_ws, s.OC, s.C, CUDA_R_8F_E4M3), d_b, kStream,
                               d_res);
            CHECK_CUDA(cudaDeviceSynchronize());
            RefGemm r = ref_gemm(qx.deq, qw.deq, s.N, s.OC, s.C);
            for (int i = 0; i < s.N; i++)
                for (int j = 0; j < s.OC; j++) r.val[(size_t)i * s.OC + j] += b[j];
            const Tol tol = fp8_fast_tol(s.C);
            accumulate_onto(&r, res, tol);
            check("fp8 out + residual", dev::from_device_bf16(d_out, r.val.size()), r.val, r.unit, tol);
            EXPECT_TRUE(dev::from_device_bf16(d_res, res.size()) == res);
            cudaFree(d_x), cudaFree(d_w), cudaFree(d_xs), cudaFree(d_ws), cudaFree(d_b), cudaFree(d_res),
                cudaFree(d_out);
        }
    }
}

TEST(fp8_dgrad) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    for (Shape s : {Shape{208, 144, 400}, Shape{64, 256, 1600}, Shape{32, 128, 6400}}) {
        for (cudaDataType_t gt : {CUDA_R_8F_E5M2, CUDA_R_8F_E4M3}) {
            printf(" N=%d C=%d OC=%d dout %s\n", s.N, s.C, s.OC, gt == CUDA_R_8F_E5M2 ? "e5m2" : "e4m3");
            MatmulPlanCache cache;
            Quant qw = quantize(dev::random_normal((size_t)s.OC * s.C, 0.f, 0.05f), CUDA_R_8F_E4M3);
            Quant qdy = quantize(dev::random_normal((size_t)s.N * s.OC, 0.f, 1e-3f), gt);
            auto* d_wT = (__nv_fp8_e4m3*)dev::to_device(transpose(qw.bytes, s.OC, s.C));  // [C, OC]
            uint8_t* d_dy = dev::to_device(qdy.bytes);
            float *d_ws = scalar_to_device(qw.scale_inv), *d_dys = scalar_to_device(qdy.scale_inv);
            bf16* d_dinp = dev::device_alloc<bf16>((size_t)s.N * s.C);
            matmul_fp8_dgrad(&cache, ctx, d_dinp, fp8_tensor(d_dy, nullptr, d_dys, s.N, s.OC, gt),
                             fp8_tensor(nullptr, d_wT, d_ws, s.OC, s.C, CUDA_R_8F_E4M3), kStream);
            CHECK_CUDA(cudaDeviceSynchronize());
            RefGemm r = ref_gemm(qdy.deq, transpose(qw.deq, s.OC, s.C), s.N, s.C, s.OC);
            check("fp8 dinp", dev::from_device_bf16(d_dinp, r.val.size()), r.val, r.unit, fp8_tol());
            cudaFree(d_wT), cudaFree(d_dy), cudaFree(d_ws), cudaFree(d_dys), cudaFree(d_dinp);
        }
    }
}

TEST(fp8_wgrad) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    for (Shape s : {Shape{1024, 144, 400}, Shape{4096, 64, 96}}) {
        for (cudaDataType_t gt : {CUDA_R_8F_E5M2, CUDA_R_8F_E4M3}) {
            for (bool accumulate : {false, true}) {
                printf(" N=%d C=%d OC=%d dout %s accumulate=%d\n", s.N, s.C, s.OC,
                       gt == CUDA_R_8F_E5M2 ? "e5m2" : "e4m3", accumulate);
                MatmulPlanCache cache;
                Quant qx = quantize(dev::random_normal((size_t)s.N * s.C), CUDA_R_8F_E4M3);
                Quant qdy = quantize(dev::random_normal((size_t)s.N * s.OC, 0.f, 1e-3f), gt);
                auto dw0 = randn_bf16((size_t)s.OC * s.C, 0.05f);
                auto* d_xT = (__nv_fp8_e4m3*)dev::to_device(transpose(qx.bytes, s.N, s.C));  // [C, N]
                uint8_t* d_dyT = dev::to_device(transpose(qdy.bytes, s.N, s.OC));            // [OC, N]
                float *d_xs = scalar_to_device(qx.scale_inv), *d_dys = scalar_to_device(qdy.scale_inv);
                bf16* d_dw =
                    accumulate ? dev::to_device_bf16(dw0) : dev::device_alloc<bf16>((size_t)s.OC * s.C);
                matmul_fp8_wgrad(&cache, ctx, d_dw, fp8_tensor(nullptr, d_dyT, d_dys, s.N, s.OC, gt),
                                 fp8_tensor(nullptr, d_xT, d_xs, s.N, s.C, CUDA_R_8F_E4M3), accumulate,
                                 kStream);
                CHECK_CUDA(cudaDeviceSynchronize());
                RefGemm r =
                    ref_gemm(transpose(qdy.deq, s.N, s.OC), transpose(qx.deq, s.N, s.C), s.OC, s.C, s.N);
                Tol tol = fp8_tol();
                if (accumulate) accumulate_onto(&r, dw0, tol);
                check("fp8 dweight", dev::from_device_bf16(d_dw, r.val.size()), r.val, r.unit, tol);
                cudaFree(d_xT), cudaFree(d_dyT), cudaFree(d_xs), cudaFree(d_dys), cudaFree(d_dw);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Autotuning (GemmTuning): the timed choice (the heuristic's answers; with `variants` then the variants with
// bitwise the winner's output) must give results within the same tolerances, the timing runs must not
// touch an accumulating output (beta = 1: a timing run writing D would add A B to it again and again), and a
// second plan cache on the same file must take the stored algorithms without timing.

TEST(autotuned_gemms) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    testing::TempDir dir("gemm_tuning");
    const Shape s{1024, 256, 384};
    Quant qx = quantize(dev::random_normal((size_t)s.N * s.C), CUDA_R_8F_E4M3);
    Quant qw = quantize(dev::random_normal((size_t)s.OC * s.C, 0.f, 0.05f), CUDA_R_8F_E4M3);
    Quant qdy = quantize(dev::random_normal((size_t)s.N * s.OC, 0.f, 1e-3f), CUDA_R_8F_E5M2);
    auto dw0 = randn_bf16((size_t)s.OC * s.C, 0.05f);
    auto* d_x = (__nv_fp8_e4m3*)dev::to_device(qx.bytes);
    auto* d_w = (__nv_fp8_e4m3*)dev::to_device(qw.bytes);
    auto* d_xT = (__nv_fp8_e4m3*)dev::to_device(transpose(qx.bytes, s.N, s.C));
    uint8_t* d_dyT = dev::to_device(transpose(qdy.bytes, s.N, s.OC));
    float *d_xs = scalar_to_device(qx.scale_inv), *d_ws = scalar_to_device(qw.scale_inv),
          *d_dys = scalar_to_device(qdy.scale_inv);
    bf16* d_out = dev::device_alloc<bf16>((size_t)s.N * s.OC);
    bf16* d_dw = dev::to_device_bf16(dw0);
    const RefGemm fwd = ref_gemm(qx.deq, qw.deq, s.N, s.OC, s.C);
    RefGemm wgrad = ref_gemm(transpose(qdy.deq, s.N, s.OC), transpose(qx.deq, s.N, s.C), s.OC, s.C, s.N);
    const Tol wtol = fp8_tol();
    accumulate_onto(&wgrad, dw0, wtol);
    for (bool variants : {false, true}) {  // the first round alone, and both (--gemm-variants)
        printf(" %s\n", variants ? "both rounds" : "the first round");
        std::vector<std::string> reports[2];
        for (int pass = 0; pass < 2; pass++) {  // 0: times and stores the choices, 1: reads them
            MatmulPlanCache cache;
            cache.tuning = {true, dir.file(variants ? "algos2.tsv" : "algos1.tsv")};
            cache.tuning.variants = variants;
            cudaFree(d_dw);  // start from dW0 again
            d_dw = dev::to_device_bf16(dw0);
            const Fp8Tensor x = fp8_tensor(d_x, d_xT, d_xs, s.N, s.C, CUDA_R_8F_E4M3);
            matmul_fp8_forward(&cache, ctx, d_out, x,
                               fp8_tensor(d_w, nullptr, d_ws, s.OC, s.C, CUDA_R_8F_E4M3), nullptr, kStream);
            matmul_fp8_wgrad(&cache, ctx, d_dw, fp8_tensor(nullptr, d_dyT, d_dys, s.N, s.OC, CUDA_R_8F_E5M2),
                             x, /*accumulate=*/true, kStream);
            CHECK_CUDA(cudaDeviceSynchronize());
            check("tuned fp8 out", dev::from_device_bf16(d_out, fwd.val.size()), fwd.val, fwd.unit,
                  fp8_fast_tol(s.C));
            check("tuned fp8 dweight (accumulated)", dev::from_device_bf16(d_dw, wgrad.val.size()), wgrad.val,
                  wgrad.unit, wtol);
            reports[pass] = matmul_plan_report(cache);
        }
        EXPECT_EQ(reports[0].size(), (size_t)2);
        EXPECT_EQ(reports[1].size(), (size_t)2);
        for (size_t i = 0; i < reports[0].size() && i < reports[1].size(); i++) {
            printf(" %s\n %s\n", reports[0][i].c_str(), reports[1][i].c_str());
            EXPECT_CONTAINS(reports[0][i], "timed: answer");
            // the second round ran where asked, and only there (gemm_refine_choice)
            EXPECT_EQ(reports[0][i].find("bitwise the same") != std::string::npos, variants);
            EXPECT_CONTAINS(reports[1][i], "from the cache file");
            // the same algorithm: the report's text up to ", timed" / ", from" names it
            EXPECT_TRUE(reports[0][i].substr(0, reports[0][i].rfind(", timed")) ==
                        reports[1][i].substr(0, reports[1][i].rfind(", from")));
        }
    }
    cudaFree(d_x), cudaFree(d_w), cudaFree(d_xT), cudaFree(d_dyT), cudaFree(d_xs), cudaFree(d_ws);
    cudaFree(d_dys), cudaFree(d_out), cudaFree(d_dw);
}

// ---------------------------------------------------------------------------------------------------------
// GPT-1.5B shapes: sampled spot checks, and the benchmarks

__host__ __device__ inline float hash_unit(uint64_t seed, uint64_t i) {  // uniform in [-1, 1)
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
}
// Unit-variance uniform values times `scale`, as bf16.
__global__ void fill_bf16_kernel(bf16* p, size_t n, uint64_t seed, float scale) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16(hash_unit(seed, i) * 1.7320508f * scale);
}
// Logical matrix [rows, cols] of unit-variance uniform values, quantized with `scale`, stored as is or
// transposed ([cols, rows]); both layouts hold the same values for the same seed.
__global__ void fill_fp8_kernel(uint8_t* p, int rows, int cols, bool transposed, uint64_t seed, float scale,
                                __nv_fp8_interpretation_t interp) {
    const size_t n = (size_t)rows * cols;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < n;
         t += (size_t)gridDim.x * blockDim.x) {
        size_t r = transposed ? t % rows : t / cols, c = transposed ? t / rows : t % cols;
        p[t] =
            __nv_cvt_float_to_fp8(hash_unit(seed, r * cols + c) * 1.7320508f * scale, __NV_SATFINITE, interp);
    }
}

namespace {

void fill_bf16(bf16* p, size_t n, uint64_t seed, float scale) {
    fill_bf16_kernel<<<1024, 256>>>(p, n, seed, scale);
    CHECK_LAUNCH();
}
// Returns scale_inv (the amax of the values is at most sqrt(3), so scale = fp8_max / sqrt(3)).
float fill_fp8(uint8_t* p, int rows, int cols, bool transposed, uint64_t seed, cudaDataType_t t) {
    const float scale = (float)(fp8_dtype_max(dtype_of(t)) / 1.7320508);
    fill_fp8_kernel<<<1024, 256>>>(p, rows, cols, transposed, seed, scale, ref_fp8_interp(dtype_of(t)));
    CHECK_LAUNCH();
    return 1.0f / scale;
}

// Reads `count` elements spaced `stride` apart from device memory as doubles.
Mat fetch_bf16(const bf16* base, size_t count, size_t stride) {
    std::vector<bf16> h(count);
    if (stride == 1)
        CHECK_CUDA(cudaMemcpy(h.data(), base, count * sizeof(bf16), cudaMemcpyDeviceToHost));
    else
        CHECK_CUDA(cudaMemcpy2D(h.data(), sizeof(bf16), base, stride * sizeof(bf16), sizeof(bf16), count,
                                cudaMemcpyDeviceToHost));
    Mat v(count);
    for (size_t i = 0; i < count; i++) v[i] = __bfloat162float(h[i]);
    return v;
}
Mat fetch_fp8(const uint8_t* base, size_t count, size_t stride, cudaDataType_t t, float scale_inv) {
    std::vector<uint8_t> h(count);
    if (stride == 1)
        CHECK_CUDA(cudaMemcpy(h.data(), base, count, cudaMemcpyDeviceToHost));
    else
        CHECK_CUDA(cudaMemcpy2D(h.data(), 1, base, stride, 1, count, cudaMemcpyDeviceToHost));
    Mat v(count);
    for (size_t i = 0; i < count; i++) v[i] = (double)ref_fp8_decode(h[i], dtype_of(t)) * (double)scale_inv;
    return v;
}

// Spot check of `samples` random elements (i, j) of a row-major [M, Nn] bf16 output: element = dot(a_i, b_j)
// (+ extra(i, j)), with a_i and b_j fetched by the callbacks (K values each).
template <class FA, class FB, class FE>
void spot_check(const char* what, const bf16* out, int M, int Nn, int K, FA fetch_a, FB fetch_b, FE extra,
                Tol tol, int samples = 48) {
    std::vector<float> got;
    Mat ref, unit;
    auto is = dev::random_ints(samples, 0, M), js = dev::random_ints(samples, 0, Nn);
    for (int s = 0; s < samples; s++) {
        const int i = is[s], j = js[s];
        Mat a = fetch_a(i), b = fetch_b(j);
        double dot = 0, na = 0, nb = 0;
        for (int k = 0; k < K; k++) dot += a[k] * b[k], na += a[k] * a[k], nb += b[k] * b[k];
        ref.push_back(dot + extra(i, j));
        unit.push_back(std::sqrt(na * nb / K));
        got.push_back((float)fetch_bf16(out + (size_t)i * Nn + j, 1, 1)[0]);
    }
    check(what, got, ref, unit, tol);
}

}  // namespace

namespace {

const int kN = 12288;  // B*T = 12 x 1024
struct Layer {
    const char* name;
    int C, OC;
    bool bias, fp8;
};
const Layer kLayers[] = {{"qkv", 1600, 4800, true, true},
                         {"attn_proj", 1600, 1600, true, true},
                         {"fc", 1600, 6400, true, true},
                         {"fc_proj", 6400, 1600, true, true},
                         {"lm_head", 1600, 50304, false, false}};

std::string layer_shape(const Layer& L) { return bench::fmt("%s,N=%d,C=%d,OC=%d", L.name, kN, L.C, L.OC); }

// One FP8 Linear's GEMM operands over random test bytes, X [N, C], W [OC, C], dY [N, OC] in the hybrid format
// (E4M3 activations and weights, E5M2 gradients), each with its transposed copy and scale_inv on the device
// (seeds seed + 5, 6, 7); freed with the object.
struct Fp8LinearOperands {
    static constexpr cudaDataType_t kXW = CUDA_R_8F_E4M3, kDy = CUDA_R_8F_E5M2;
    uint8_t *x8, *xT8, *w8, *wT8, *dy8, *dyT8;
    float xs, ws, dys;  // scale_inv of each, on the host
    float *d_xs, *d_ws, *d_dys;
    Fp8Tensor x, w, dy;

    Fp8LinearOperands(int N, int C, int OC, uint64_t seed)
        : x8(dev::device_alloc<uint8_t>((size_t)N * C)),
          xT8(dev::device_alloc<uint8_t>((size_t)N * C)),
          w8(dev::device_alloc<uint8_t>((size_t)OC * C)),
          wT8(dev::device_alloc<uint8_t>((size_t)OC * C)),
          dy8(dev::device_alloc<uint8_t>((size_t)N * OC)),
          dyT8(dev::device_alloc<uint8_t>((size_t)N * OC)),
          xs(fill_fp8(x8, N, C, false, seed + 5, kXW)),
          ws(fill_fp8(w8, OC, C, false, seed + 6, kXW)),
          dys(fill_fp8(dy8, N, OC, false, seed + 7, kDy)),
          d_xs(scalar_to_device(xs)),
          d_ws(scalar_to_device(ws)),
          d_dys(scalar_to_device(dys)),
          x(fp8_tensor(x8, xT8, d_xs, N, C, kXW)),
          w(fp8_tensor(w8, wT8, d_ws, OC, C, kXW)),
          dy(fp8_tensor(dy8, dyT8, d_dys, N, OC, kDy)) {
        fill_fp8(xT8, N, C, true, seed + 5, kXW);
        fill_fp8(wT8, OC, C, true, seed + 6, kXW);
        fill_fp8(dyT8, N, OC, true, seed + 7, kDy);
    }
    ~Fp8LinearOperands() {
        for (void* p : {(void*)x8, (void*)xT8, (void*)w8, (void*)wT8, (void*)dy8, (void*)dyT8, (void*)d_xs,
                        (void*)d_ws, (void*)d_dys})
            cudaFree(p);
    }
    Fp8LinearOperands(const Fp8LinearOperands&) = delete;
    Fp8LinearOperands& operator=(const Fp8LinearOperands&) = delete;
};

// The FP8 GEMMs of layer L in the hybrid format (E4M3 activations and weights, E5M2 gradients): forward
// into y (with bias b), dgrad and wgrad, each spot-checked against the CPU.
void fp8_spot_checks(MatmulPlanCache* cache_ptr, GpuContext* ctx, const Layer& L, bf16* y, const bf16* b,
                     const Mat& b_host, uint64_t seed) {
    MatmulPlanCache& cache = *cache_ptr;
    const int N = kN, C = L.C, OC = L.OC;
    auto no_extra = [](int, int) { return 0.0; };
    const Fp8LinearOperands op(N, C, OC, seed);
    bf16* dx2 = dev::device_alloc<bf16>((size_t)N * C);
    bf16* dw2 = dev::device_alloc<bf16>((size_t)OC * C);
    auto row8 = [](const uint8_t* m, int ld, cudaDataType_t t, float si) {
        return [=](int i) { return fetch_fp8(m + (size_t)i * ld, ld, 1, t, si); };
    };
    auto col8 = [](const uint8_t* m, int rows, int ld, cudaDataType_t t, float si) {
        return [=](int j) { return fetch_fp8(m + j, rows, ld, t, si); };
    };
    const cudaDataType_t e4 = Fp8LinearOperands::kXW, e5 = Fp8LinearOperands::kDy;
    matmul_fp8_forward(&cache, ctx, y, op.x, op.w, b, kStream);
    CHECK_CUDA(cudaDeviceSynchronize());
    spot_check(
        "fp8 fwd", y, N, OC, C, row8(op.x8, C, e4, op.xs), row8(op.w8, C, e4, op.ws),
        [&](int, int j) { return b_host[j]; }, fp8_fast_tol(C));
    matmul_fp8_dgrad(&cache, ctx, dx2, op.dy, op.w, kStream);
    CHECK_CUDA(cudaDeviceSynchronize());
    spot_check("fp8 dgrad", dx2, N, C, OC, row8(op.dy8, OC, e5, op.dys), col8(op.w8, OC, C, e4, op.ws),
               no_extra, fp8_tol());
    matmul_fp8_wgrad(&cache, ctx, dw2, op.dy, op.x, false, kStream);
    CHECK_CUDA(cudaDeviceSynchronize());
    spot_check("fp8 wgrad", dw2, OC, C, N, col8(op.dy8, N, OC, e5, op.dys), col8(op.x8, N, C, e4, op.xs),
               no_extra, fp8_tol());
    cudaFree(dx2), cudaFree(dw2);
}

}  // namespace

TEST(gpt15b_spot_check) {
    REQUIRE_GPU();
    GpuContext* ctx = gpu();
    const int N = kN;
    MatmulPlanCache cache;
    const uint64_t seed = dev::run_seed();
    for (const Layer& L : kLayers) {
        const int C = L.C, OC = L.OC;
        printf(" %s: N=%d C=%d OC=%d\n", L.name, N, C, OC);
        bf16* x = dev::device_alloc<bf16>((size_t)N * C);
        bf16* w = dev::device_alloc<bf16>((size_t)OC * C);
        bf16* b = dev::device_alloc<bf16>(OC);
        bf16* y = dev::device_alloc<bf16>((size_t)N * OC);
        bf16* dy = dev::device_alloc<bf16>((size_t)N * OC);
        bf16* dx = dev::device_alloc<bf16>((size_t)N * C);
        bf16* dw = dev::device_alloc<bf16>((size_t)OC * C);
        bf16* db = dev::device_alloc<bf16>(OC);
        float* scratch = dev::device_alloc<float>(matmul_dbias_scratch_bytes(N, OC) / sizeof(float));
        fill_bf16(x, (size_t)N * C, seed + 1, 1.0f);
        fill_bf16(w, (size_t)OC * C, seed + 2, 0.02f);
        fill_bf16(b, OC, seed + 3, 0.1f);
        fill_bf16(dy, (size_t)N * OC, seed + 4, 1e-4f);
        const bf16* bias = L.bias ? b : nullptr;

        auto row_of = [](const bf16* m, int ld) {
            return [=](int i) { return fetch_bf16(m + (size_t)i * ld, ld, 1); };
        };
        auto col_of = [](const bf16* m, int rows, int ld) {
            return [=](int j) { return fetch_bf16(m + j, rows, ld); };
        };
        auto no_extra = [](int, int) { return 0.0; };
        Mat b_host = fetch_bf16(b, OC, 1);
        // BF16 forward
        matmul_forward(&cache, ctx, y, x, w, bias, N, C, OC, kStream);
        CHECK_CUDA(cudaDeviceSynchronize());
        spot_check(
            "bf16 fwd", y, N, OC, C, row_of(x, C), row_of(w, C),
            [&](int, int j) { return L.bias ? b_host[j] : 0.0; }, bf16_tol(C));
        // BF16 dgrad: dx[i, c] = dy row i . W column c
        matmul_backward(&cache, ctx, dx, nullptr, nullptr, dy, nullptr, w, N, C, OC, false, nullptr, kStream);
        CHECK_CUDA(cudaDeviceSynchronize());
        spot_check("bf16 dgrad", dx, N, C, OC, row_of(dy, OC), col_of(w, OC, C), no_extra, bf16_tol(OC));
        // BF16 wgrad: dw[o, c] = dy column o . x column c
        matmul_backward(&cache, ctx, nullptr, dw, nullptr, dy, x, nullptr, N, C, OC, false, nullptr, kStream);
        CHECK_CUDA(cudaDeviceSynchronize());
        spot_check("bf16 wgrad", dw, OC, C, N, col_of(dy, N, OC), col_of(x, N, C), no_extra, bf16_tol(N));
        if (L.bias) {
            matmul_backward(&cache, ctx, nullptr, nullptr, db, dy, nullptr, nullptr, N, C, OC, false, scratch,
                            kStream);
            CHECK_CUDA(cudaDeviceSynchronize());
            spot_check(
                "dbias", db, 1, OC, N, [&](int) { return Mat(N, 1.0); }, col_of(dy, N, OC), no_extra,
                bf16_tol(N), 32);
        }
        cudaFree(x), cudaFree(w), cudaFree(dy), cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(scratch);

        if (L.fp8) fp8_spot_checks(&cache, ctx, L, y, b, b_host, seed);
        cudaFree(y), cudaFree(b);
    }
    printf("  plans cached: %zu\n", cache.size());
}

// BF16 GEMMs of every GPT-1.5B Linear (2*N*C*OC flops each; wgrad timed accumulating, as in training).
BENCH(gemm_bf16_gpt1p5b) {
    GpuContext* ctx = gpu();
    MatmulPlanCache cache;
    const uint64_t seed = dev::run_seed();
    const int N = kN;
    for (const Layer& L : kLayers) {
        const int C = L.C, OC = L.OC;
        bf16* x = dev::device_alloc<bf16>((size_t)N * C);
        bf16* w = dev::device_alloc<bf16>((size_t)OC * C);
        bf16* b = dev::device_alloc<bf16>(OC);
        bf16* y = dev::device_alloc<bf16>((size_t)N * OC);
        bf16* dy = dev::device_alloc<bf16>((size_t)N * OC);
        bf16* dx = dev::device_alloc<bf16>((size_t)N * C);
        bf16* dw = dev::device_alloc<bf16>((size_t)OC * C);
        fill_bf16(x, (size_t)N * C, seed + 1, 1.0f);
        fill_bf16(w, (size_t)OC * C, seed + 2, 0.02f);
        fill_bf16(b, OC, seed + 3, 0.1f);
        fill_bf16(dy, (size_t)N * OC, seed + 4, 1e-4f);
        fill_bf16(dw, (size_t)OC * C, seed + 5, 1e-3f);
        const bf16* bias = L.bias ? b : nullptr;
        const double flop = 2.0 * N * C * OC;
        const std::string shape = layer_shape(L);
        float ms = dev::time_ms([&] { matmul_forward(&cache, ctx, y, x, w, bias, N, C, OC, kStream); });
        bench::report_flops("bf16_forward", shape, ms, flop, bench::kPeakBf16Tflops);
        ms = dev::time_ms([&] {
            matmul_backward(&cache, ctx, dx, nullptr, nullptr, dy, nullptr, w, N, C, OC, false, nullptr,
                            kStream);
        });
        bench::report_flops("bf16_dgrad", shape, ms, flop, bench::kPeakBf16Tflops);
        ms = dev::time_ms([&] {
            matmul_backward(&cache, ctx, nullptr, dw, nullptr, dy, x, nullptr, N, C, OC, true, nullptr,
                            kStream);
        });
        bench::report_flops("bf16_wgrad_accumulate", shape, ms, flop, bench::kPeakBf16Tflops);
        cudaFree(x), cudaFree(w), cudaFree(b), cudaFree(y), cudaFree(dy), cudaFree(dx), cudaFree(dw);
    }
}

// The dbias reduction of every biased GPT-1.5B Linear (matmul_backward with dbias only). Bytes: dout read.
BENCH(dbias_gpt1p5b) {
    GpuContext* ctx = gpu();
    MatmulPlanCache cache;
    const int N = kN;
    for (const Layer& L : kLayers) {
        if (!L.bias) continue;
        const int C = L.C, OC = L.OC;
        bf16* dy = dev::device_alloc<bf16>((size_t)N * OC);
        bf16* db = dev::device_alloc<bf16>(OC);
        float* scratch = dev::device_alloc<float>(matmul_dbias_scratch_bytes(N, OC) / sizeof(float));
        fill_bf16(dy, (size_t)N * OC, dev::run_seed() + 4, 1e-4f);
        const float ms = dev::time_ms([&] {
            matmul_backward(&cache, ctx, nullptr, nullptr, db, dy, nullptr, nullptr, N, C, OC, false, scratch,
                            kStream);
        });
        bench::report_bandwidth("matmul_dbias", layer_shape(L), ms, 2.0 * N * OC);
        cudaFree(dy), cudaFree(db), cudaFree(scratch);
    }
}

// FP8 GEMMs (hybrid: E4M3 activations and weights, E5M2 gradients) of every GPT-1.5B FP8 Linear (2*N*C*OC
// flops each; wgrad timed accumulating).
BENCH(gemm_fp8_gpt1p5b) {
    GpuContext* ctx = gpu();
    MatmulPlanCache cache;
    const uint64_t seed = dev::run_seed();
    const int N = kN;
    for (const Layer& L : kLayers) {
        if (!L.fp8) continue;
        const int C = L.C, OC = L.OC;
        const Fp8LinearOperands op(N, C, OC, seed);
        const Fp8Tensor &x = op.x, &w = op.w, &dy = op.dy;
        bf16* b = dev::device_alloc<bf16>(OC);
        bf16* y = dev::device_alloc<bf16>((size_t)N * OC);
        bf16* dx = dev::device_alloc<bf16>((size_t)N * C);
        bf16* dw = dev::device_alloc<bf16>((size_t)OC * C);
        fill_bf16(b, OC, seed + 3, 0.1f);
        fill_bf16(dw, (size_t)OC * C, seed + 8, 1e-3f);
        const double flop = 2.0 * N * C * OC;
        const std::string shape = layer_shape(L);
        float ms = dev::time_ms([&] { matmul_fp8_forward(&cache, ctx, y, x, w, b, kStream); });
        bench::report_flops("fp8_forward", shape, ms, flop, bench::kPeakFp8Tflops);
        // Why the forward trails its wgrad: the same GEMM without the bias epilogue, and with L2 warm
        // (back-to-back launches, as the GEMM enumerations timed it).
        ms = dev::time_ms([&] { matmul_fp8_forward(&cache, ctx, y, x, w, nullptr, kStream); });
        bench::report_flops("fp8_forward_no_bias", shape, ms, flop, bench::kPeakFp8Tflops);
        ms = dev::time_ms_l2_warm([&] { matmul_fp8_forward(&cache, ctx, y, x, w, b, kStream); });
        bench::report_flops("fp8_forward_l2_warm", shape, ms, flop, bench::kPeakFp8Tflops);
        ms = dev::time_ms([&] { matmul_fp8_dgrad(&cache, ctx, dx, dy, w, kStream); });
        bench::report_flops("fp8_dgrad", shape, ms, flop, bench::kPeakFp8Tflops);
        ms = dev::time_ms([&] { matmul_fp8_wgrad(&cache, ctx, dw, dy, x, true, kStream); });
        bench::report_flops("fp8_wgrad_accumulate", shape, ms, flop, bench::kPeakFp8Tflops);
        ms = dev::time_ms_l2_warm([&] { matmul_fp8_wgrad(&cache, ctx, dw, dy, x, true, kStream); });
        bench::report_flops("fp8_wgrad_accumulate_l2_warm", shape, ms, flop, bench::kPeakFp8Tflops);
        cudaFree(b), cudaFree(y), cudaFree(dx), cudaFree(dw);
    }
}

TEST_MAIN()
