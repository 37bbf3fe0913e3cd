#include "llmc/formats/hellaswag.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "llmc/formats/file_bytes.h"
#include "llmc/formats/tokenizer.h"  // escape_for_log

namespace {

constexpr size_t kHeaderBytes = sizeof(kHellaSwagMagic) + 12;
constexpr size_t kExampleHeaderBytes = 4 * (2 + kHellaSwagEndings);  // label, C, E0..E3
constexpr uint32_t kMaxVocab = 65536;                                // token ids are uint16

[[noreturn]] void file_error(const std::string& name, const std::string& what) {
    throw std::runtime_error("hellaswag '" + escape_for_log(name) + "': " + what);
}

// Reads the whole file; throws for a missing/unreadable one.
std::string read_file(const std::string& path) {
    std::string data;
    if (std::string e = read_whole_file(path, &data); !e.empty()) file_error(path, e);
    return data;
}

// A bounds-checked little-endian cursor over the file's bytes; every failure names the file.
class Cursor {
  public:
    Cursor(const uint8_t* p, size_t size, const std::string& name) : p_(p), size_(size), name_(name) {}
    size_t pos() const { return pos_; }
    size_t left() const { return size_ - pos_; }
    void skip(size_t n) { pos_ += n; }
    uint32_t u32() {
        const uint8_t* q = p_ + pos_;
        pos_ += 4;
        return uint32_t(q[0]) | uint32_t(q[1]) << 8 | uint32_t(q[2]) << 16 | uint32_t(q[3]) << 24;
    }
    int u16() {
        const uint8_t* q = p_ + pos_;
        pos_ += 2;
        return q[0] | q[1] << 8;
    }
    const uint8_t* bytes() const { return p_; }
    [[noreturn]] void fail(const std::string& what) const { file_error(name_, what); }

  private:
    const uint8_t* p_;
    size_t size_, pos_ = 0;
    const std::string& name_;
};

struct Header {
    uint32_t vocab, count;
};

Header parse_header(Cursor& c, int vocab_size) {
    if (c.left() < sizeof(kHellaSwagMagic) ||
        memcmp(c.bytes(), kHellaSwagMagic, sizeof(kHellaSwagMagic)) != 0)
        c.fail("bad magic (not a HellaSwag file written by scripts/data/prepare_hellaswag.py)");
    if (c.left() < kHeaderBytes)
        c.fail("truncated header (" + std::to_string(c.left()) + " bytes, need " +
               std::to_string(kHeaderBytes) + ")");
    c.skip(sizeof(kHellaSwagMagic));
    const uint32_t version = c.u32(), vocab = c.u32(), count = c.u32();
    if (version != kHellaSwagVersion)
        c.fail("version " + std::to_string(version) + ", expected " + std::to_string(kHellaSwagVersion));
    if (vocab == 0 || vocab > kMaxVocab)
        c.fail("vocabulary size " + std::to_string(vocab) + " out of range [1, " + std::to_string(kMaxVocab) +
               "]");
    if (vocab_size <= 0 || vocab > static_cast<uint32_t>(vocab_size))
        c.fail("made with a tokenizer of " + std::to_string(vocab) + " entries, the model's vocabulary has " +
               std::to_string(vocab_size) + " (prepare it with the model's tokenizer)");
    if (count == 0) c.fail("no examples");
    // Each example takes at least its lengths and 5 tokens: catches a wildly wrong count before allocating.
    if (c.left() / (kExampleHeaderBytes + 2 * (1 + kHellaSwagEndings)) < count)
        c.fail("truncated: " + std::to_string(count) + " examples cannot fit in " + std::to_string(c.left()) +
               " bytes");
    return {vocab, count};
}

// Reads n token ids into out; each must be below vocab.
void read_tokens(Cursor& c, const std::string& where, uint32_t n, uint32_t vocab, std::vector<int>& out) {
    out.resize(n);
    for (uint32_t i = 0; i < n; i++) {
        out[i] = c.u16();
        if (static_cast<uint32_t>(out[i]) >= vocab)
            c.fail(where + ": token id " + std::to_string(out[i]) + " >= the vocabulary size " +
                   std::to_string(vocab));
    }
}

HellaSwagExample parse_example(Cursor& c, uint32_t index, uint32_t vocab) {
    const std::string where = "example " + std::to_string(index) + " (byte " + std::to_string(c.pos()) + ")";
    if (c.left() < kExampleHeaderBytes)
        c.fail(where + ": truncated (" + std::to_string(c.left()) + " bytes left, its lengths need " +
               std::to_string(kExampleHeaderBytes) + ")");
    HellaSwagExample ex;
    const uint32_t label = c.u32();
    uint32_t len[1 + kHellaSwagEndings];
    uint64_t total = 0;
    for (uint32_t& n : len) total += n = c.u32();
    if (label >= static_cast<uint32_t>(kHellaSwagEndings))
        c.fail(where + ": label " + std::to_string(label) + " out of range [0, " +
               std::to_string(kHellaSwagEndings) + ")");
    for (int i = 0; i <= kHellaSwagEndings; i++)
        if (len[i] == 0)
            c.fail(where + ": " + (i == 0 ? "empty context" : "empty ending " + std::to_string(i - 1)));
    if (c.left() / 2 < total)
        c.fail(where + ": truncated (" + std::to_string(total) + " tokens, " + std::to_string(c.left()) +
               " bytes left)");
    ex.label = static_cast<int>(label);
    read_tokens(c, where, len[0], vocab, ex.context);
    for (int i = 0; i < kHellaSwagEndings; i++) read_tokens(c, where, len[1 + i], vocab, ex.endings[i]);
    return ex;
}

void put_tokens(std::string& out, const std::vector<int>& ids, int vocab) {
    for (int id : ids) {
        if (id < 0 || id >= vocab)
            throw std::invalid_argument("hellaswag: token id " + std::to_string(id) + " outside [0, " +
                                        std::to_string(vocab) + ")");
        out.push_back(static_cast<char>(id & 0xFF));
        out.push_back(static_cast<char>(id >> 8));
    }
}

}  // namespace

int HellaSwagSet::max_row_tokens() const {
    size_t longest = 0;
    for (const HellaSwagExample& ex : examples)
        for (const std::vector<int>& e : ex.endings)
            longest = std::max(longest, ex.context.size() + e.size());
    return static_cast<int>(longest);
}

HellaSwagSet parse_hellaswag(const void* data, size_t size, const std::string& name, int vocab_size) {
    Cursor c(static_cast<const uint8_t*>(data), size, name);
    const Header h = parse_header(c, vocab_size);
    HellaSwagSet set;
    set.vocab_size = static_cast<int>(h.vocab);
    set.examples.reserve(h.count);
    for (uint32_t i = 0; i < h.count; i++) set.examples.push_back(parse_example(c, i, h.vocab));
    if (c.left() != 0)
        c.fail(std::to_string(c.left()) + " bytes after the last of " + std::to_string(h.count) +
               " examples (the count does not match the file)");
    return set;
}

HellaSwagSet read_hellaswag(const std::string& path, int vocab_size) {
    const std::string data = read_file(path);
    return parse_hellaswag(data.data(), data.size(), path, vocab_size);
}

std::string serialize_hellaswag(const HellaSwagSet& set) {
    if (set.vocab_size <= 0 || static_cast<uint32_t>(set.vocab_size) > kMaxVocab || set.examples.empty())
        throw std::invalid_argument("hellaswag: a set needs a vocabulary size in [1, 65536] and examples");
    std::string out(kHellaSwagMagic, sizeof(kHellaSwagMagic));
    put_u32_le(out, kHellaSwagVersion);
    put_u32_le(out, static_cast<uint32_t>(set.vocab_size));
    put_u32_le(out, static_cast<uint32_t>(set.examples.size()));
    for (const HellaSwagExample& ex : set.examples) {
        bool empty = ex.context.empty();
        for (const std::vector<int>& e : ex.endings) empty = empty || e.empty();
        if (ex.label < 0 || ex.label >= kHellaSwagEndings || empty)
            throw std::invalid_argument(
                "hellaswag: an example needs a label in [0, 4), a context and 4 endings");
        put_u32_le(out, static_cast<uint32_t>(ex.label));
        put_u32_le(out, static_cast<uint32_t>(ex.context.size()));
        for (const std::vector<int>& e : ex.endings) put_u32_le(out, static_cast<uint32_t>(e.size()));
        put_tokens(out, ex.context, set.vocab_size);
        for (const std::vector<int>& e : ex.endings) put_tokens(out, e, set.vocab_size);
    }
    return out;
}

HellaSwagRows layout_hellaswag(const HellaSwagExample& ex, int T, int pad_token) {
    if (pad_token < 0)
        throw std::invalid_argument("hellaswag: pad token " + std::to_string(pad_token) + " < 0");
    HellaSwagRows rows;
    rows.T = T;
    rows.inputs.assign(static_cast<size_t>(kHellaSwagEndings) * (T > 0 ? T : 0), pad_token);
    rows.targets = rows.inputs;
    const int C = static_cast<int>(ex.context.size());
    for (int r = 0; r < kHellaSwagEndings; r++) {
        const std::vector<int>& e = ex.endings[r];
        const int L = C + static_cast<int>(e.size());
        if (C < 1 || e.empty() || L - 1 > T)
            throw std::invalid_argument("hellaswag: row " + std::to_string(r) + " of " + std::to_string(L) +
                                        " tokens (context " + std::to_string(C) + " + ending " +
                                        std::to_string(e.size()) + ") needs T >= " + std::to_string(L - 1) +
                                        ", T is " + std::to_string(T));
        auto token = [&](int i) { return i < C ? ex.context[i] : e[i - C]; };
        int* in = rows.inputs.data() + static_cast<size_t>(r) * T;
        int* tg = rows.targets.data() + static_cast<size_t>(r) * T;
        for (int t = 0; t < L - 1; t++) {
            in[t] = token(t);
            tg[t] = token(t + 1);
        }
        rows.begin[r] = C - 1;
        rows.end[r] = L - 1;
    }
    return rows;
}

HellaSwagScore score_hellaswag(const HellaSwagRows& rows, const float* losses, int label) {
    HellaSwagScore s;
    for (int r = 0; r < kHellaSwagEndings; r++) {
        const float* row = losses + static_cast<size_t>(r) * rows.T;
        for (int t = rows.begin[r]; t < rows.end[r]; t++) s.sum[r] += row[t];
        s.mean[r] = s.sum[r] / (rows.end[r] - rows.begin[r]);
        if (s.sum[r] < s.sum[s.pred_sum]) s.pred_sum = r;
        if (s.mean[r] < s.mean[s.pred_mean]) s.pred_mean = r;
    }
    s.correct_sum = s.pred_sum == label;
    s.correct_mean = s.pred_mean == label;
    return s;
}
