// How our kernels are launched: with Hopper's programmatic dependent launch (PDL) when it is on (--pdl), a
// kernel may start while the kernel before it in the stream is still finishing (its launch and block setup
// overlap that kernel's last wave), and it waits for that kernel (pdl_wait) before it touches memory. So
// every kernel launched through launch_kernel() begins with pdl_wait(): the results are the same bit for bit,
// only the gaps between kernels change. Without the attribute pdl_wait() returns at once. A captured step
// keeps the dependency as a programmatic edge of the graph. Library kernels (cuBLASLt, cuDNN) launch as they
// do.
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "llmc/host/check.h"

// Device, first statement of every kernel of ours: wait until the previous kernel in the stream has completed
// and its writes are visible, then let the next kernel launch (its blocks take the SM slots this kernel's
// last blocks leave; it waits in turn).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The process's setting (off until set; train_gpt sets it from --pdl before the model is built).
void set_programmatic_launch(bool on);
bool programmatic_launch();

// kernel<<<grid, block, smem, stream>>>(args...), with the programmatic-serialization attribute when it is
// on. The kernel must begin with pdl_wait().
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   Args&&... args) {
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = programmatic_launch() ? 1 : 0;
    CHECK_CUDA(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}
