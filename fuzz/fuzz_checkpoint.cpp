// libFuzzer target for llmc/formats/checkpoint's reader: the input is written to a file (one temporary path
// per process) and read with read_checkpoint() into a fixed state of two F32 tensors ("master.w" [6,5],
// "adam_m.w" [7]), expecting the model and recipe of test/host_checkpoint.cpp. A bad file must be refused
// with std::runtime_error (CheckpointMismatch included); any other exception is a finding. Whatever reads
// must have our model and recipe, consistent counters, and exactly the tensor bytes the file holds (as
// SafetensorsReader sees them); writing it again with write_checkpoint() and reading that back must give
// the same metadata and bytes. Built and run by scripts/check/fuzz.sh.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz/fuzz_harness.h"
#include "llmc/formats/checkpoint.h"
#include "llmc/formats/safetensors.h"

namespace {

// Never destroyed, so the atexit handler that cleans up may still use them.
struct Paths {
    std::string file, dir;
};
const Paths& paths() {
    static const Paths* p = [] {
        const std::string base = fuzz_temp_path("checkpoint", "");
        auto* q = new Paths{base + ".safetensors", base + ".d"};
        atexit([] {
            std::remove(paths().file.c_str());
            for (const std::string& f : list_checkpoints(paths().dir)) std::remove(f.c_str());
            rmdir(paths().dir.c_str());
        });
        return q;
    }();
    return *p;
}

[[noreturn]] void finding(const char* what) { fuzz_finding("checkpoint", what); }

CheckpointMeta expected() {
    CheckpointMeta m;
    m.model = "L=1 C=5 H=1 V=6 maxT=4 gelu=erf";
    m.recipe = "fp8 hybrid history=16 amax=max margin=0";
    m.config = "{}";
    return m;
}

struct State {
    std::vector<float> w = std::vector<float>(6 * 5), m = std::vector<float>(7);
    std::vector<HostTensor> views() {
        return {{"master.w", "F32", {6, 5}, w.data(), w.size() * 4},
                {"adam_m.w", "F32", {7}, m.data(), m.size() * 4}};
    }
};

bool same_bytes(const HostTensor& t, const std::vector<uint8_t>& b) {
    return b.size() == t.bytes && (t.bytes == 0 || memcmp(b.data(), t.data, t.bytes) == 0);
}

bool same_meta(const CheckpointMeta& a, const CheckpointMeta& b) {
    return a.step == b.step && a.opt_step == b.opt_step && a.train_data.a == b.train_data.a &&
           a.train_data.b == b.train_data.b && a.fp8_calibrating == b.fp8_calibrating && a.model == b.model &&
           a.recipe == b.recipe && a.config == b.config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const Paths& p = paths();
    fuzz_write_file("checkpoint", p.file, data, size);
    const CheckpointMeta expect = expected();
    State s;
    std::vector<HostTensor> views = s.views();
    CheckpointMeta m;
    try {
        m = read_checkpoint(p.file, expect, views);
    } catch (const std::runtime_error&) {
        return 0;  // a refused file: expected for most inputs
    }
    // From here on nothing may throw (an escaping exception is a finding too).
    if (m.model != expect.model || m.recipe != expect.recipe) finding("accepted another model or recipe");
    if (m.step < 0 || m.opt_step < 0 || m.opt_step > m.step) finding("step / opt_step");
    SafetensorsReader r = SafetensorsReader::from_memory(data, size, "fuzz");
    if (r.size() != views.size()) finding("accepted a file with other tensors");
    for (const HostTensor& t : views) {
        const SafeTensor& f = r.tensor(t.name);
        if (f.dtype != t.dtype || f.shape != t.shape || f.nbytes != t.bytes) finding("tensor dtype or shape");
        if (!same_bytes(t, r.read(t.name))) finding("tensor bytes differ from the file's");
    }
    if (r.metadata("format") != "train_gpt-checkpoint" || r.metadata("config") != m.config)
        finding("metadata");

    // Round trip through the writer.
    mkdir(p.dir.c_str(), 0700);
    write_checkpoint(p.dir, m, views, 1);
    State s2;
    std::vector<HostTensor> views2 = s2.views();
    CheckpointMeta m2 = read_checkpoint(checkpoint_path(p.dir, m.step), expect, views2);
    if (!same_meta(m, m2)) finding("metadata changed in a write/read round trip");
    // Bytes, not floats: NaN payloads from the fuzzer are legitimate tensor contents.
    if (memcmp(s.w.data(), s2.w.data(), s.w.size() * 4) != 0 ||
        memcmp(s.m.data(), s2.m.data(), s.m.size() * 4) != 0)
        finding("tensor bytes changed in a write/read round trip");
    return 0;
}
