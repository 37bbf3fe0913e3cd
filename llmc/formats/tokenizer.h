// Tokenizer for text generation: decodes sampled token ids to text and encodes a prompt. Host-only.
//
// File format (tokenizer.bin, written by scripts/data/prepare_data.py next to the shards, for every
// tokenizer; all integers little-endian):
//   8 bytes   magic "GPTTOK1\0"
//   uint32    kind: 0 = bytes (UTF-8 bytes, vocabulary 256), 1 = gpt2-bpe (GPT-2 BPE via tiktoken)
//   uint32    n, the vocabulary size (number of entries); 1 <= n <= kMaxVocab
//   uint32    eot, the <|endoftext|> id (< n), or 0xFFFFFFFF for none
//   n times   uint32 length (<= kMaxTokenBytes), then that many bytes: the token's bytes, ids 0..n-1
//   nothing after the last entry
// A bytes file holds the 256 single-byte entries 0x00..0xFF in order, eot none (both checked on load). A gpt2
// file holds tiktoken's enc.decode_single_token_bytes(i) for i in 0..n_vocab-1 (50257 entries, eot 50256).
//
// Decoding: ids in [0, n) give their bytes, except the eot id, which gives "<|endoftext|>"; ids >= n (the
// padded ids of a padded vocabulary, 50257..50303 for GPT-2 padded to 50304) give "<|pad|>", negative ids
// "<|invalid|>". The result is raw bytes (a token may hold part of a UTF-8 character, so decode whole
// sequences, not one token at a time): pass it through sanitize_utf8() / escape_for_log() before printing,
// and through json::quote(sanitize_utf8(text)) for a JSON string.
//
// Encoding (for the prompt):
//   bytes: exact, one id per byte.
//   gpt2:  the file has no merge ranks, so this is not true BPE: it is greedy longest-prefix matching over
//          the vocabulary's byte strings (a trie). It is an approximation of BPE (the ids can differ from
//          tiktoken's, usually by splitting a word differently) that always produces valid ids (every one of
//          the 256 bytes is a GPT-2 token) and decodes back to exactly the input text. The eot entry is not
//          matched (like tiktoken's encode_ordinary): prepend eot() yourself to start a fresh document.
//   A vocabulary that lacks some single byte cannot encode every text: encode() throws std::runtime_error
//   ("tokenizer: no token for byte 0xNN at offset K") when it meets such a byte with no longer match.
//
// Errors from load() are std::runtime_error with a one-line message "tokenizer '<path>': <what>".
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

class Tokenizer {
  public:
    enum class Kind : uint32_t { Bytes = 0, Gpt2Bpe = 1 };
    static constexpr uint32_t kNoEot = 0xFFFFFFFFu;
    static constexpr uint32_t kMaxVocab = 1u << 24;       // entries in a file
    static constexpr uint32_t kMaxTokenBytes = 1u << 16;  // bytes in one entry
    static constexpr char kMagic[8] = {'G', 'P', 'T', 'T', 'O', 'K', '1', '\0'};

    // Reads a tokenizer file (format above). Throws std::runtime_error "tokenizer '<path>': <what>" for a
    // missing/unreadable file, bad magic, unknown kind, truncation, oversized counts or lengths, an eot id
    // out of range, bytes after the last entry, or a bytes-kind file that is not the 256 single bytes
    // without eot.
    static Tokenizer load(const std::string& path);
    // The built-in bytes tokenizer (vocabulary 256, no eot); no file needed.
    static Tokenizer bytes();
    // A tokenizer from its entries (id i = tokens[i]); eot < 0 for none. Throws std::invalid_argument for
    // an empty or oversized vocabulary, an oversized entry, an eot id out of range, or Kind::Bytes entries
    // that are not the 256 single bytes in order without eot.
    static Tokenizer from_vocab(Kind kind, std::vector<std::string> tokens, int eot);

    // Writes the file format above, atomically (a temporary file next to it, then rename). Throws
    // std::runtime_error "tokenizer '<path>': <what>" on an I/O error.
    void save(const std::string& path) const;

    std::string decode(const std::vector<int>& ids) const;
    std::string decode_token(int id) const;  // decode({id})
    std::vector<int> encode(const std::string& text) const;

    int vocab_size() const { return static_cast<int>(tokens_.size()); }
    int eot() const { return eot_; }  // -1 for none
    Kind kind() const { return kind_; }
    const char* kind_name() const { return kind_ == Kind::Bytes ? "bytes" : "gpt2-bpe"; }
    const std::string& token_bytes(int id) const { return tokens_.at(static_cast<size_t>(id)); }

  private:
    Tokenizer() = default;
    void build_trie();

    Kind kind_ = Kind::Bytes;
    std::vector<std::string> tokens_;
    int eot_ = -1;
    // Trie over the entries' bytes (for encode): node 0 is the root; node_token_[v] is the id whose bytes
    // spell the path to v (the lowest such id), or -1; edges_ maps (v << 8 | byte) to the child node.
    std::vector<int> node_token_;
    std::unordered_map<uint64_t, int> edges_;
};

// `s` with every byte that is not part of a valid UTF-8 sequence (stray continuation bytes, truncated
// sequences, overlong forms, surrogates, code points above U+10FFFF) replaced by U+FFFD, one per byte.
// Valid input comes back unchanged.
std::string sanitize_utf8(const std::string& s);
// The length of the longest prefix of `s` that can be sanitized now when more bytes may follow (streamed
// text): all of it but a trailing UTF-8 sequence still missing bytes. sanitize_utf8 of the prefix, then of
// the rest with what follows, equals sanitize_utf8 of the whole: the cut is at the start of a sequence.
size_t utf8_complete_prefix(const std::string& s);
// sanitize_utf8(s) made safe for one log line: '\\' -> "\\\\", '\n' -> "\\n", '\r' -> "\\r", '\t' -> "\\t",
// other C0 controls and DEL -> "\\xNN", C1 controls (U+0080..U+009F) and U+2028/U+2029 -> "\\uNNNN". For
// JSON use json::quote(sanitize_utf8(s)) (llmc/formats/json.h), which escapes '"', '\\' and controls.
std::string escape_for_log(const std::string& s);
