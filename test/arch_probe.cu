// create_gpu_context on GPU 0, for test/gpu_kernel_image.sh: built once with the Makefile's GPU_ARCH
// (build/test/arch_probe) and once with machine code for another GPU only (build/test/arch_probe_other).
// Prints the GPU when the context was made; create_gpu_context's one-line error otherwise.
#include <cstdio>

#include "llmc/gpu/context.h"

int main() {
    GpuContext ctx = create_gpu_context(0, 80);
    printf("arch_probe: context on %s (sm_%d%d)\n", ctx.props.name, ctx.props.major, ctx.props.minor);
    destroy_gpu_context(&ctx);
    return 0;
}
