// Bulk copies from global to shared memory by the tensor memory accelerator (cp.async.bulk, sm_90), their
// completion counted in bytes on an mbarrier in shared memory: one thread issues a whole contiguous row's
// copy (no per-thread cp.async, no registers held for it), and every thread waits on the mbarrier's phase.
// Usage: mbarriers_init<S>(bars) by the whole block; per fill, one thread calls mbarrier_expect_bytes(bar,
// total) then bulk_copy_to_shared(...) for each piece (total bytes in all); readers mbarrier_wait(bar,
// parity), the parity of the bar's k-th fill being k & 1. A buffer may be refilled once its readers are past
// a barrier after reading it (reads then the copy's writes need no proxy fence, as in the usual TMA load
// pipelines).
#pragma once
#include <cstdint>

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
// S mbarriers whose phases complete on one arrival (and the bytes each is told to expect), initialized before
// any thread of the block waits on them.
template <int S>
__device__ __forceinline__ void mbarriers_init(uint64_t* bars) {
    if (threadIdx.x == 0)
        for (int s = 0; s < S; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bars + s)) : "memory");
    __syncthreads();
}
// The stage's mbarrier expects `bytes` more (and this thread's arrival: count 1).
__device__ __forceinline__ void mbarrier_expect_bytes(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
// bytes (a multiple of 16, both addresses 16-byte aligned) from global src to shared dst, counted on bar.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes,
                                                    uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar))
        : "memory");
}
// Until the phase of bar with this parity has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n\t.reg .pred done;\n"
        "WAIT:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra WAIT;\n}" ::"r"(smem_addr(bar)),
        "r"(parity)
        : "memory");
}
