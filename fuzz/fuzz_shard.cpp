// libFuzzer target for llmc/formats/dataloader's shard reader: the input is written as a shard file (one
// temporary path per process, which is also the glob) and opened with DataLoader(path, B=2, T=4, vocab=300).
// A bad shard must be refused with DataError; any other exception is a finding. Whatever opens must hold
// exactly the tokens of the file (a valid header, N uint16 ids < vocab), and its batches must be the file's
// tokens in order (row b of a batch is tokens[pos + b*T ..], targets one later), wrapping to the start when
// the next batch would run past the end; reset() and seek(position()) must replay the same batches. Built and
// run by scripts/check/fuzz.sh.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_harness.h"
#include "llmc/formats/dataloader.h"

namespace {

constexpr int kB = 2, kT = 4, kVocab = 300, kBatches = 6;
constexpr size_t kBT = (size_t)kB * kT;

// Never destroyed, so the atexit handler that removes the file may still use it.
const std::string& shard_path() {
    static const std::string* path = [] {
        auto* p = new std::string(fuzz_temp_path("shard", ".bin"));
        atexit([] { std::remove(shard_path().c_str()); });
        return p;
    }();
    return *path;
}

int32_t le32(const uint8_t* p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

struct Batch {
    int in[kBT], tgt[kBT];
    bool operator==(const Batch& o) const {
        return memcmp(in, o.in, sizeof in) == 0 && memcmp(tgt, o.tgt, sizeof tgt) == 0;
    }
};

[[noreturn]] void finding(const char* what) { fuzz_finding("shard", what); }

// The format's own answer: the file's tokens if it is a valid shard for this loader, else false.
bool oracle(const uint8_t* data, size_t size, std::vector<uint16_t>* tok) {
    const size_t header = (size_t)kShardHeaderInts * 4;
    if (size < header || le32(data) != kShardMagic || le32(data + 4) != kShardVersion) return false;
    const int32_t n = le32(data + 8);
    if (n <= 0 || size != header + 2 * (size_t)n || (size_t)n < kBT + 1) return false;
    tok->resize((size_t)n);
    for (size_t i = 0; i < tok->size(); i++) {
        (*tok)[i] = (uint16_t)(data[header + 2 * i] | data[header + 2 * i + 1] << 8);
        if ((*tok)[i] >= kVocab) return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = shard_path();
    fuzz_write_file("shard", path, data, size);
    std::vector<uint16_t> tok;
    const bool valid = oracle(data, size, &tok);

    std::unique_ptr<DataLoader> dl;
    try {
        dl = std::make_unique<DataLoader>(path, kB, kT, kVocab);
    } catch (const DataError& e) {
        if (valid) {
            fprintf(stderr, "fuzz_shard: refused a valid shard: %s\n", e.what());
            abort();
        }
        return 0;  // a refused shard: expected for most inputs
    }
    // From here on nothing may throw (an escaping exception is a finding too).
    if (!valid) finding("opened an invalid shard");
    if (dl->num_shards() != 1 || dl->current_shard() != 0 || dl->shard_path(0) != path) finding("shards");
    if (dl->shard_tokens(0) != tok.size() || dl->total_tokens() != tok.size()) finding("token count");

    Batch got[kBatches];
    TokenPosition pos[kBatches];
    size_t p = 0;
    for (int i = 0; i < kBatches; i++) {
        pos[i] = dl->position();
        dl->next_batch(got[i].in, got[i].tgt);
        if (p + kBT + 1 > tok.size()) p = 0;  // wraps to the start of the (only) shard
        if (pos[i].a != 0 || pos[i].b > tok.size()) finding("position() outside the shard");
        for (size_t j = 0; j < kBT; j++) {
            const int x = got[i].in[j], y = got[i].tgt[j];
            if (x < 0 || x >= kVocab || y < 0 || y >= kVocab) finding("token id outside [0, vocab)");
            if (x != tok[p + j] || y != tok[p + j + 1]) finding("batch differs from the file's tokens");
        }
        p += kBT;
    }
    // Replays: from the start, and from a position reported earlier.
    Batch again;
    dl->reset();
    dl->next_batch(again.in, again.tgt);
    if (!(again == got[0])) finding("reset() does not replay the first batch");
    dl->seek(pos[kBatches / 2]);
    dl->next_batch(again.in, again.tgt);
    if (!(again == got[kBatches / 2])) finding("seek(position()) does not replay the batch");
    return 0;
}
