// libFuzzer target for llmc/formats/tokenizer's file reader: the input is written to a file (one temporary
// path per process) and read with Tokenizer::load(). A bad file must be refused with std::runtime_error; any
// other exception is a finding, and so is a decision that differs from the format's own answer (oracle below,
// from the format in tokenizer.h). Whatever loads must hold exactly the file's entries and eot, save() must
// write back exactly the input bytes (the format has one encoding), and encode/decode must hold their
// contract on text made from the input: encode either throws "no token for byte" or gives ids in [0, n),
// never eot, that decode back to the text; a vocabulary with every single byte always encodes. Built and run
// by scripts/check/fuzz.sh.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz/fuzz_harness.h"
#include "llmc/formats/file_bytes.h"
#include "llmc/formats/tokenizer.h"

namespace {

// Never destroyed, so the atexit handler that removes the files may still use them.
struct Paths {
    std::string in, out;
};
const Paths& paths() {
    static const Paths* p = [] {
        const std::string base = fuzz_temp_path("tokenizer", "");
        auto* q = new Paths{base + ".bin", base + ".saved.bin"};
        atexit([] {
            std::remove(paths().in.c_str());
            std::remove(paths().out.c_str());
            std::remove((paths().out + ".tmp").c_str());
        });
        return q;
    }();
    return *p;
}

[[noreturn]] void finding(const char* what) { fuzz_finding("tokenizer", what); }

uint32_t le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// The format's own answer: the entries and eot (-1: none) if the file is valid, else false.
bool oracle(const uint8_t* d, size_t size, std::vector<std::string>* tokens, int* eot, uint32_t* kind) {
    if (size < 20 || memcmp(d, Tokenizer::kMagic, 8) != 0) return false;
    *kind = le32(d + 8);
    const uint32_t n = le32(d + 12), e = le32(d + 16);
    if (*kind > 1 || n == 0 || n > Tokenizer::kMaxVocab) return false;
    if (e != Tokenizer::kNoEot && e >= n) return false;
    size_t pos = 20;
    tokens->clear();
    for (uint32_t i = 0; i < n; i++) {
        if (size - pos < 4) return false;
        const uint32_t len = le32(d + pos);
        pos += 4;
        if (len > Tokenizer::kMaxTokenBytes || size - pos < len) return false;
        tokens->emplace_back(reinterpret_cast<const char*>(d + pos), len);
        pos += len;
    }
    if (pos != size) return false;
    if (*kind == 0) {  // bytes: the 256 single bytes in order, no eot
        if (n != 256 || e != Tokenizer::kNoEot) return false;
        for (uint32_t i = 0; i < 256; i++)
            if ((*tokens)[i] != std::string(1, static_cast<char>(i))) return false;
    }
    *eot = e == Tokenizer::kNoEot ? -1 : static_cast<int>(e);
    return true;
}

// Every single byte is an entry (other than eot): then encode can never fail.
bool has_every_byte(const std::vector<std::string>& tokens, int eot) {
    bool seen[256] = {};
    for (size_t i = 0; i < tokens.size(); i++)
        if (tokens[i].size() == 1 && static_cast<int>(i) != eot)
            seen[static_cast<unsigned char>(tokens[i][0])] = true;
    for (bool s : seen)
        if (!s) return false;
    return true;
}

// encode(text) either throws "no token for byte" (only if some byte has no entry) or round-trips.
void check_encode(const Tokenizer& t, const std::string& text, bool every_byte) {
    std::vector<int> ids;
    try {
        ids = t.encode(text);
    } catch (const std::runtime_error& e) {
        if (every_byte || strstr(e.what(), "no token for byte") == nullptr) finding("encode threw");
        return;
    }
    for (int id : ids)
        if (id < 0 || id >= t.vocab_size() || id == t.eot())
            finding("encode gave an id outside [0, n) or eot");
    if (t.decode(ids) != text) finding("decode(encode(text)) != text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const Paths& p = paths();
    fuzz_write_file("tokenizer", p.in, data, size);
    std::vector<std::string> tokens;
    int eot = -1;
    uint32_t kind = 0;
    const bool valid = oracle(data, size, &tokens, &eot, &kind);
    Tokenizer t = Tokenizer::bytes();
    try {
        t = Tokenizer::load(p.in);
    } catch (const std::runtime_error& e) {
        if (valid) {
            fprintf(stderr, "fuzz_tokenizer: refused a valid file: %s\n", e.what());
            abort();
        }
        if (strchr(e.what(), '\n')) finding("an error message of several lines");
        return 0;  // a refused file: expected for most inputs
    }
    // From here on nothing may throw, except encode's documented error (an escaping exception is a finding).
    if (!valid) finding("loaded an invalid file");
    if (t.vocab_size() != static_cast<int>(tokens.size()) || t.eot() != eot ||
        static_cast<uint32_t>(t.kind()) != kind)
        finding("vocabulary size, eot or kind differ from the file's");
    for (size_t i = 0; i < tokens.size(); i++)
        if (t.token_bytes(static_cast<int>(i)) != tokens[i]) finding("an entry differs from the file's");
    t.save(p.out);
    std::string saved;  // empty when unreadable: then the comparison below reports it
    read_whole_file(p.out, &saved);
    if (saved.size() != size || (size && memcmp(saved.data(), data, size) != 0))
        finding("save() does not write back the file's bytes");

    // Encode texts made from the input: its raw bytes, and a run of entries glued together.
    const bool every_byte = has_every_byte(tokens, eot);
    check_encode(t, std::string(reinterpret_cast<const char*>(data), size < 512 ? size : 512), every_byte);
    std::string glued;
    for (size_t i = 0; i < tokens.size() && glued.size() < 512; i += 1 + i % 7) glued += tokens[i];
    check_encode(t, glued, every_byte);
    // decode of any id: entries, eot, pad and invalid ids
    std::vector<int> ids = {-1, t.vocab_size(), t.vocab_size() + 47, 0};
    if (eot >= 0) ids.push_back(eot);
    std::string want = "<|invalid|><|pad|><|pad|>" + (eot == 0 ? std::string("<|endoftext|>") : tokens[0]) +
                       (eot >= 0 ? "<|endoftext|>" : "");
    if (t.decode(ids) != want) finding("decode of eot, pad or invalid ids");
    return 0;
}
