// The process's programmatic-dependent-launch setting (llmc/gpu/launch.cuh).
#include <atomic>

#include "llmc/gpu/launch.cuh"

namespace {
std::atomic<bool> g_programmatic_launch{false};
}

void set_programmatic_launch(bool on) { g_programmatic_launch = on; }
bool programmatic_launch() { return g_programmatic_launch; }
