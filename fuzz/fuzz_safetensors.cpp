// libFuzzer target for llmc/formats/safetensors: open arbitrary bytes as a file image
// (SafetensorsReader::from_memory, which runs the same validation as opening a file). Whatever opens must
// hold tensors that tile the data buffer and read back; writing them again (SafetensorsWriter) and re-opening
// must give the same tensors, metadata and bytes, with checksums that verify. Built and run by
// scripts/check/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmc/formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::unique_ptr<SafetensorsReader> r;
    try {
        r = std::make_unique<SafetensorsReader>(SafetensorsReader::from_memory(data, size, "fuzz"));
    } catch (const std::runtime_error&) {
        return 0;
    }
    uint64_t covered = 0;
    for (const SafeTensor& t : r->tensors()) covered += t.nbytes;
    if (covered != r->data_size()) abort();

    // Read everything (a checksum mismatch is a legitimate error; the bytes are still filled in).
    std::vector<std::string> bytes;
    bool empty_name = false;
    for (const SafeTensor& t : r->tensors()) {
        if (!r->has(t.name) || &r->tensor(t.name) != &t) abort();
        std::string b(t.nbytes, '\0');
        try {
            r->read(t.name, &b[0], b.size());
        } catch (const std::runtime_error&) {
        }
        bytes.push_back(std::move(b));
        empty_name |= t.name.empty();
    }
    try {
        r->verify_all_checksums();
    } catch (const std::runtime_error&) {
    }
    if (empty_name) return 0;  // the writer refuses empty names

    SafetensorsWriter w;
    for (size_t i = 0; i < r->tensors().size(); i++) {
        const SafeTensor& t = r->tensors()[i];
        w.add(t.name, t.dtype, t.shape, bytes[i].data(), bytes[i].size());
    }
    for (const auto& kv : r->all_metadata())
        if (kv.first.compare(0, 6, "crc32.") != 0) w.set_metadata(kv.first, kv.second);
    const std::string out = w.serialize();
    SafetensorsReader r2 = SafetensorsReader::from_memory(out.data(), out.size(), "rewritten");
    if (r2.size() != r->size() || r2.names() != r->names()) abort();
    if (r2.verify_all_checksums() != r2.size()) abort();
    for (size_t i = 0; i < r->tensors().size(); i++) {
        const SafeTensor& a = r->tensors()[i];
        const SafeTensor& b = r2.tensor(a.name);
        if (a.dtype != b.dtype || a.shape != b.shape || a.nbytes != b.nbytes) abort();
        std::vector<uint8_t> got = r2.read(a.name);
        if (std::string(got.begin(), got.end()) != bytes[i]) abort();
    }
    for (const auto& kv : r->all_metadata())
        if (kv.first.compare(0, 6, "crc32.") != 0 &&
            (!r2.has_metadata(kv.first) || r2.metadata(kv.first) != kv.second))
            abort();
    return 0;
}
