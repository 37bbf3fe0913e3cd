#include <nvtx3/nvToolsExtMemCudaRt.h>

#include "llmc/gpu/sanitizer_marks.h"

void mark_initialized(const void* ptr, size_t bytes, cudaStream_t stream) {
    static nvtxDomainHandle_t domain = nvtxDomainCreateA("train_gpt");
    nvtxMemVirtualRangeDesc_t range = {bytes, ptr};
    nvtxMemMarkInitializedBatch_t batch = {};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.regionDescCount = 1;
    batch.regionDescElementSize = sizeof(range);
    batch.regionDescElements = &range;
    nvtxMemCudaMarkInitialized(domain, stream, 0, &batch);
}
