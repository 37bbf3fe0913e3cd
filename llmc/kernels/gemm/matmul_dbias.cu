// The bias gradient of the GEMMs (llmc/kernels/gemm/matmul.cuh): dbias_O = column sums of dout_NO,
// deterministic.
#include <algorithm>

#include "llmc/kernels/gemm/matmul.cuh"

// dbias kernels: column sums of dout_NO. Pass 1: a block of (32, 8) threads owns 256 columns (each thread 8
// contiguous columns, one 16-byte load per row) and a slice of rows; threadIdx.y strides over the rows, the 8
// partial rows are summed in shared memory in a fixed order and written as FP32 partials [splits, OC].
// Pass 2 sums the partials of each column in split order. No atomics: bitwise deterministic.

constexpr int kDbiasColsPerBlock = 256;  // 32 threads x 8 bf16
constexpr int kDbiasRowLanes = 8;

__global__ void __launch_bounds__(256)
    matmul_dbias_partial_kernel(float* partial_SO, const bf16* dout_NO, int N, int OC, int rows_per_split) {
    __shared__ float sums[kDbiasRowLanes][kDbiasColsPerBlock];
    const int col = blockIdx.x * kDbiasColsPerBlock + threadIdx.x * x128::size;
    const int row_begin = blockIdx.y * rows_per_split;
    const int row_end = min(N, row_begin + rows_per_split);
    float acc[x128::size] = {};
    if (col < OC) {
        const bf16* p = dout_NO + col;
#pragma unroll 4
        for (int r = row_begin + threadIdx.y; r < row_end; r += kDbiasRowLanes) {
            x128 v = load128cs(p + (size_t)r * OC);
#pragma unroll
            for (int k = 0; k < x128::size; k++) acc[k] += __bfloat162float(v[k]);
        }
    }
#pragma unroll
    for (int k = 0; k < x128::size; k++) sums[threadIdx.y][threadIdx.x * x128::size + k] = acc[k];
    __syncthreads();
    const int local = threadIdx.y * 32 + threadIdx.x;  // 0..255: one column per thread for the fold
    float s = 0.0f;
#pragma unroll
    for (int y = 0; y < kDbiasRowLanes; y++) s += sums[y][local];
    const int out_col = blockIdx.x * kDbiasColsPerBlock + local;
    if (out_col < OC) partial_SO[(size_t)blockIdx.y * OC + out_col] = s;
}

// One thread per column sums its partials in split order. The splits are many (220 at OC = 1600) and the
// threads few (one per column), so the loads of 16 splits are issued before their adds (the same additions in
// the same order), and blocks of 64 threads spread the columns over more SMs.
constexpr int kDbiasFinalThreads = 64;
__global__ void matmul_dbias_final_kernel(bf16* dbias_O, const float* partial_SO, int splits, int OC,
                                          bool accumulate) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= OC) return;
    float s = 0.0f;
#pragma unroll 16
    for (int i = 0; i < splits; i++) s += partial_SO[(size_t)i * OC + c];
    if (accumulate) s += __bfloat162float(dbias_O[c]);
    dbias_O[c] = __float2bfloat16(s);
}

// Split of the N rows for the dbias reduction: enough blocks to fill the GPU (~12 blocks of 256 threads per
// SM on 132 SMs) while each thread still reads several rows. Depends on (N, OC) only, so the scratch size is
// known without a device.
static void dbias_split(int N, int OC, int* splits, int* rows_per_split) {
    const int col_blocks = ceil_div(OC, kDbiasColsPerBlock);
    int s = ceil_div(1536, col_blocks);
    s = std::max(1, std::min(s, ceil_div(N, 32)));
    *rows_per_split = ceil_div(N, s);
    *splits = ceil_div(N, *rows_per_split);
}

size_t matmul_dbias_scratch_bytes(int N, int OC) {
    int splits, rows;
    dbias_split(N, OC, &splits, &rows);
    return (size_t)splits * OC * sizeof(float);
}

void matmul_dbias(bf16* dbias_O, const bf16* dout_NO, int N, int OC, float* dbias_scratch,
                  cudaStream_t stream, bool accumulate) {
    CHECK(N > 0 && OC > 0 && OC % 8 == 0, "matmul_dbias: OC=%d must be a positive multiple of 8 (N=%d)", OC,
          N);
    CHECK(dbias_scratch != nullptr, "matmul_dbias: dbias_scratch is required");
    CHECK(aligned16(dout_NO), "matmul_dbias: dout (%p) must be 16-byte aligned", (const void*)dout_NO);
    int splits, rows_per_split;
    dbias_split(N, OC, &splits, &rows_per_split);
    dim3 grid(ceil_div(OC, kDbiasColsPerBlock), splits), block(32, kDbiasRowLanes);
    matmul_dbias_partial_kernel<<<grid, block, 0, stream>>>(dbias_scratch, dout_NO, N, OC, rows_per_split);
    CHECK_LAUNCH();
    matmul_dbias_final_kernel<<<ceil_div(OC, kDbiasFinalThreads), kDbiasFinalThreads, 0, stream>>>(
        dbias_O, dbias_scratch, splits, OC, accumulate);
    CHECK_LAUNCH();
}
