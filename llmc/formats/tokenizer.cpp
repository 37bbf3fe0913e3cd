#include "llmc/formats/tokenizer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "llmc/formats/file_bytes.h"
#include "llmc/formats/json.h"

namespace {

const char* const kEotText = "<|endoftext|>";
const char* const kPadText = "<|pad|>";
const char* const kInvalidText = "<|invalid|>";

[[noreturn]] void file_error(const std::string& path, const std::string& what) {
    throw std::runtime_error("tokenizer '" + escape_for_log(path) + "': " + what);
}

uint32_t get_u32(const unsigned char* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Reads the whole file; throws for a missing/unreadable one.
std::string read_file(const std::string& path) {
    std::string data;
    if (std::string e = read_whole_file(path, &data); !e.empty()) file_error(path, e);
    return data;
}

// Why tokens/eot cannot be a bytes-kind vocabulary ("" if they can): encode's bytes path gives each byte its
// value as id, so the entries must be the 256 single bytes in order, and no id may be eot (a text byte would
// become an end-of-text token and decode as "<|endoftext|>").
std::string bytes_kind_problem(const std::vector<std::string>& tokens, int eot) {
    if (tokens.size() != 256) return "kind bytes needs 256 entries, got " + std::to_string(tokens.size());
    for (size_t i = 0; i < 256; i++)
        if (tokens[i].size() != 1 || static_cast<unsigned char>(tokens[i][0]) != i)
            return "kind bytes: entry " + std::to_string(i) + " is not the single byte " + std::to_string(i);
    if (eot != -1) return "kind bytes has no eot, got eot id " + std::to_string(eot);
    return "";
}

}  // namespace

constexpr char Tokenizer::kMagic[8];

Tokenizer Tokenizer::bytes() {
    std::vector<std::string> tokens(256);
    for (int i = 0; i < 256; i++) tokens[i] = std::string(1, static_cast<char>(i));
    return from_vocab(Kind::Bytes, std::move(tokens), -1);
}

Tokenizer Tokenizer::from_vocab(Kind kind, std::vector<std::string> tokens, int eot) {
    if (tokens.empty()) throw std::invalid_argument("tokenizer: empty vocabulary");
    if (tokens.size() > kMaxVocab)
        throw std::invalid_argument("tokenizer: vocabulary of " + std::to_string(tokens.size()) +
                                    " entries exceeds the limit " + std::to_string(kMaxVocab));
    for (size_t i = 0; i < tokens.size(); i++)
        if (tokens[i].size() > kMaxTokenBytes)
            throw std::invalid_argument("tokenizer: entry " + std::to_string(i) + " has " +
                                        std::to_string(tokens[i].size()) + " bytes, over the limit " +
                                        std::to_string(kMaxTokenBytes));
    if (eot < -1 || eot >= static_cast<int64_t>(tokens.size()))
        throw std::invalid_argument("tokenizer: eot id " + std::to_string(eot) + " out of range for " +
                                    std::to_string(tokens.size()) + " entries");
    if (kind == Kind::Bytes) {
        const std::string why = bytes_kind_problem(tokens, eot);
        if (!why.empty()) throw std::invalid_argument("tokenizer: " + why);
    }
    Tokenizer t;
    t.kind_ = kind;
    t.tokens_ = std::move(tokens);
    t.eot_ = eot;
    t.build_trie();
    return t;
}

void Tokenizer::build_trie() {
    node_token_.assign(1, -1);
    edges_.clear();
    size_t total = 0;
    for (const std::string& s : tokens_) total += s.size();
    edges_.reserve(total);
    for (size_t id = 0; id < tokens_.size(); id++) {
        if (static_cast<int>(id) == eot_) continue;  // encode is "ordinary": never produces eot
        const std::string& s = tokens_[id];
        if (s.empty()) continue;
        int node = 0;
        for (unsigned char c : s) {
            uint64_t key = static_cast<uint64_t>(node) << 8 | c;
            auto it = edges_.find(key);
            if (it == edges_.end()) {
                int child = static_cast<int>(node_token_.size());
                node_token_.push_back(-1);
                edges_.emplace(key, child);
                node = child;
            } else {
                node = it->second;
            }
        }
        if (node_token_[node] < 0) node_token_[node] = static_cast<int>(id);  // duplicates: lowest id wins
    }
}

Tokenizer Tokenizer::load(const std::string& path) {
    std::string data = read_file(path);
    const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data());
    const size_t size = data.size();
    const size_t header = sizeof(kMagic) + 12;
    if (size < sizeof(kMagic) || memcmp(p, kMagic, sizeof(kMagic)) != 0)
        file_error(path, "bad magic (not a tokenizer file written by prepare_data.py)");
    if (size < header)
        file_error(path, "truncated header (" + std::to_string(size) + " bytes, need " +
                             std::to_string(header) + ")");
    uint32_t kind = get_u32(p + 8), n = get_u32(p + 12), eot = get_u32(p + 16);
    if (kind != static_cast<uint32_t>(Kind::Bytes) && kind != static_cast<uint32_t>(Kind::Gpt2Bpe))
        file_error(path, "unknown kind " + std::to_string(kind) + " (0 bytes, 1 gpt2-bpe)");
    if (n == 0 || n > kMaxVocab)
        file_error(path, "vocabulary size " + std::to_string(n) + " out of range [1, " +
                             std::to_string(kMaxVocab) + "]");
    if (eot != kNoEot && eot >= n)
        file_error(path,
                   "eot id " + std::to_string(eot) + " out of range for " + std::to_string(n) + " entries");
    // Each entry takes at least 4 bytes: catches a wildly wrong count before allocating for it.
    if ((size - header) / 4 < n)
        file_error(path, "truncated: " + std::to_string(n) + " entries cannot fit in " +
                             std::to_string(size - header) + " bytes");
    std::vector<std::string> tokens;
    tokens.reserve(n);
    size_t pos = header;
    for (uint32_t i = 0; i < n; i++) {
        if (size - pos < 4)
            file_error(path, "truncated at entry " + std::to_string(i) + " of " + std::to_string(n) +
                                 " (offset " + std::to_string(pos) + ")");
        uint32_t len = get_u32(p + pos);
        pos += 4;
        if (len > kMaxTokenBytes)
            file_error(path, "entry " + std::to_string(i) + " length " + std::to_string(len) +
                                 " exceeds the limit " + std::to_string(kMaxTokenBytes));
        if (size - pos < len)
            file_error(path, "truncated in entry " + std::to_string(i) + " of " + std::to_string(n) +
                                 " (needs " + std::to_string(len) + " bytes at offset " +
                                 std::to_string(pos) + ", " + std::to_string(size - pos) + " left)");
        tokens.emplace_back(data, pos, len);
        pos += len;
    }
    if (pos != size)
        file_error(path, std::to_string(size - pos) + " bytes after the last of " + std::to_string(n) +
                             " entries (entry count does not match the file)");
    const int eot_id = eot == kNoEot ? -1 : static_cast<int>(eot);
    if (kind == static_cast<uint32_t>(Kind::Bytes)) {
        const std::string why = bytes_kind_problem(tokens, eot_id);
        if (!why.empty()) file_error(path, why);
    }
    return from_vocab(static_cast<Kind>(kind), std::move(tokens), eot_id);
}

void Tokenizer::save(const std::string& path) const {
    std::string out(kMagic, sizeof(kMagic));
    put_u32_le(out, static_cast<uint32_t>(kind_));
    put_u32_le(out, static_cast<uint32_t>(tokens_.size()));
    put_u32_le(out, eot_ < 0 ? kNoEot : static_cast<uint32_t>(eot_));
    for (const std::string& s : tokens_) {
        put_u32_le(out, static_cast<uint32_t>(s.size()));
        out += s;
    }
    std::string tmp = path + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f) file_error(path, std::string("cannot create '") + escape_for_log(tmp) + "': " + strerror(errno));
    bool ok = fwrite(out.data(), 1, out.size(), f) == out.size();
    int err = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        remove(tmp.c_str());
        file_error(path, std::string("write error: ") + strerror(err));
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        err = errno;
        remove(tmp.c_str());
        file_error(path, std::string("cannot rename the temporary file into place: ") + strerror(err));
    }
}

std::string Tokenizer::decode_token(int id) const {
    if (id < 0) return kInvalidText;
    if (id >= vocab_size()) return kPadText;
    if (id == eot_) return kEotText;
    return tokens_[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
    std::string out;
    for (int id : ids) {
        if (id >= 0 && id < vocab_size() && id != eot_)
            out += tokens_[static_cast<size_t>(id)];
        else
            out += decode_token(id);
    }
    return out;
}

std::vector<int> Tokenizer::encode(const std::string& text) const {
    std::vector<int> ids;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    if (kind_ == Kind::Bytes) {
        ids.reserve(n);
        for (size_t i = 0; i < n; i++) ids.push_back(p[i]);
        return ids;
    }
    size_t i = 0;
    while (i < n) {
        // Walk the trie from i as far as the text matches; remember the longest prefix that is a token.
        int node = 0, best_id = -1;
        size_t best_len = 0;
        for (size_t j = i; j < n; j++) {
            auto it = edges_.find(static_cast<uint64_t>(node) << 8 | p[j]);
            if (it == edges_.end()) break;
            node = it->second;
            if (node_token_[node] >= 0) {
                best_id = node_token_[node];
                best_len = j - i + 1;
            }
        }
        if (best_id < 0) {
            char hex[8];
            snprintf(hex, sizeof(hex), "0x%02X", p[i]);
            throw std::runtime_error(std::string("tokenizer: no token for byte ") + hex + " at offset " +
                                     std::to_string(i));
        }
        ids.push_back(best_id);
        i += best_len;
    }
    return ids;
}

namespace {

const char* const kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The one walk over s's UTF-8: a byte that starts no valid sequence becomes U+FFFD; each valid code point cp
// (its bytes s[i, i + len)) goes to append(cp, i, len, &out).
template <typename Append>
std::string map_utf8(const std::string& s, Append append) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    std::string out;
    out.reserve(n);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = json::utf8_sequence(p + i, n - i, &cp);
        if (len == 0) {
            out += kReplacement;
            i++;
            continue;
        }
        append(cp, i, len, &out);
        i += len;
    }
    return out;
}

}  // namespace

std::string sanitize_utf8(const std::string& s) {
    return map_utf8(s, [&](uint32_t, size_t i, size_t len, std::string* out) { out->append(s, i, len); });
}

size_t utf8_complete_prefix(const std::string& s) {
    // A byte that is not a continuation byte (10xxxxxx) starts a decision of sanitize_utf8 wherever it is:
    // no sequence before it can take it in. Hold back from the last such byte if its sequence needs more
    // bytes than there are (a UTF-8 sequence is at most 4 bytes, so only the last 3 can be incomplete).
    const size_t n = s.size();
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        const unsigned char c = (unsigned char)s[n - back];
        if ((c & 0xC0) == 0x80) continue;
        const size_t needs = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return needs > back ? n - back : n;
    }
    return n;
}

std::string escape_for_log(const std::string& s) {
    return map_utf8(s, [&](uint32_t cp, size_t i, size_t len, std::string* out) {
        char buf[12];
        if (cp == '\\') {
            *out += "\\\\";
        } else if (cp == '\n') {
            *out += "\\n";
        } else if (cp == '\r') {
            *out += "\\r";
        } else if (cp == '\t') {
            *out += "\\t";
        } else if (cp < 0x20 || cp == 0x7F) {
            snprintf(buf, sizeof(buf), "\\x%02X", cp);
            *out += buf;
        } else if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029) {
            snprintf(buf, sizeof(buf), "\\u%04X", cp);
            *out += buf;
        } else {
            out->append(s, i, len);
        }
    });
}
