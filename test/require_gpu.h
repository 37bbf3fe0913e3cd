// REQUIRE_GPU(): the calling test is skipped when no CUDA device is usable, so GPU test binaries also run
// (and report every test as skipped) on machines without one.
#pragma once
#include <string>

#include "llmc/gpu/context.h"
#include "test/testing.h"

#define REQUIRE_GPU()                                                       \
    do {                                                                    \
        std::string why_;                                                   \
        if (!cuda_device_available(&why_)) SKIP("no CUDA device: " + why_); \
    } while (0)
