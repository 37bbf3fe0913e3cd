// One device allocation carved into named, 256-byte aligned buffers: entries are added first (sizes only),
// then allocated at once; the plan (bytes per name) can be printed before or after.
#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "llmc/gpu/cuda_common.cuh"
#include "llmc/host/check.h"

// A list of named device buffers carved out of one allocation (256-byte aligned views).
class Arena {
  public:
    template <class T>
    void add(const char* name, T** ptr, size_t count) {
        entries_.push_back({name, reinterpret_cast<void**>(ptr), count * sizeof(T)});
    }
    // Bytes allocate() will ask for (the entries added so far, each aligned).
    size_t planned_bytes() const {
        size_t total = 0;
        for (auto& e : entries_) total += align(e.bytes);
        return total;
    }
    size_t allocate(const char* what) {
        const size_t total = planned_bytes();
        CHECK_CUDA(cudaMalloc(&base_, total));
        size_t off = 0;
        for (auto& e : entries_) {
            *e.ptr = static_cast<char*>(base_) + off;
            off += align(e.bytes);
        }
        printf("memory: %-12s %8.2f GiB\n", what, total / 1073741824.0);
        return total;
    }
    void print_plan() const {
        // group entries by name: per-layer buffers share a name
        std::vector<std::pair<std::string, size_t>> groups;
        for (auto& e : entries_) {
            bool found = false;
            for (auto& g : groups)
                if (g.first == e.name) g.second += align(e.bytes), found = true;
            if (!found) groups.push_back({e.name, align(e.bytes)});
        }
        for (auto& g : groups) printf("memory:   %-18s %9.1f MiB\n", g.first.c_str(), g.second / 1048576.0);
    }
    // Fills the whole allocation with 0xFF bytes (NaN as bf16 and fp32): tests of what is read before
    // written.
    void fill_nan(cudaStream_t stream) const {
        CHECK_CUDA(cudaMemsetAsync(base_, 0xFF, planned_bytes(), stream));
    }
    ~Arena() {
        if (base_) cudaFree(base_);
    }

  private:
    static size_t align(size_t b) { return (b + 255) & ~size_t(255); }
    struct Entry {
        std::string name;
        void** ptr;
        size_t bytes;
    };
    std::vector<Entry> entries_;
    void* base_ = nullptr;
};
