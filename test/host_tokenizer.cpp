// Host tests for llmc/formats/tokenizer: file round trip, bytes encode/decode, greedy longest-match encode on
// a hand-made vocabulary, decode of eot and padded ids, one-line errors for corrupt files, UTF-8 sanitizing
// and log escaping.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmc/formats/json.h"
#include "llmc/formats/tokenizer.h"
#include "test/temp_dir.h"
#include "test/testing.h"

namespace {

using testing::TempDir;

using testing::read_bytes;
using testing::write_bytes;

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; i++) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A file built by hand (independently of Tokenizer::save).
std::string make_file(uint32_t kind, const std::vector<std::string>& tokens, uint32_t eot) {
    std::string out("GPTTOK1\0", 8);
    put_u32(out, kind);
    put_u32(out, static_cast<uint32_t>(tokens.size()));
    put_u32(out, eot);
    for (const std::string& t : tokens) {
        put_u32(out, static_cast<uint32_t>(t.size()));
        out += t;
    }
    return out;
}

// Loads `data` written to a file; returns the error message ("" if it loaded).
std::string load_error(const TempDir& dir, const std::string& data) {
    std::string path = dir.path + "/bad.bin";
    write_bytes(path, data);
    try {
        Tokenizer::load(path);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

std::vector<std::string> small_vocab() {
    return {"a", "b", "c", "ab", "abc", "bc", "abcd", " ", " a", "EOT"};
}

std::vector<std::string> bytes_vocab() {
    std::vector<std::string> v;
    for (int i = 0; i < 256; i++) v.push_back(std::string(1, static_cast<char>(i)));
    return v;
}

std::string random_bytes(std::mt19937& rng, size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng() & 0xFF);
    return s;
}

}  // namespace

TEST(bytes_tokenizer_encode_decode_exact) {
    Tokenizer t = Tokenizer::bytes();
    EXPECT_EQ(t.vocab_size(), 256);
    EXPECT_EQ(t.eot(), -1);
    EXPECT_TRUE(t.kind() == Tokenizer::Kind::Bytes);
    std::mt19937 rng(1234);
    for (int trial = 0; trial < 200; trial++) {
        std::string s = random_bytes(rng, rng() % 300);
        std::vector<int> ids = t.encode(s);
        EXPECT_EQ(ids.size(), s.size());
        bool ids_ok = true;
        for (size_t i = 0; i < s.size(); i++) ids_ok = ids_ok && ids[i] == static_cast<unsigned char>(s[i]);
        EXPECT_TRUE(ids_ok);
        EXPECT_TRUE(t.decode(ids) == s);
    }
    EXPECT_TRUE(t.encode("").empty());
    EXPECT_TRUE(t.decode({}).empty());
}

TEST(decode_eot_pad_invalid) {
    Tokenizer t = Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, small_vocab(), 9);
    EXPECT_EQ(t.eot(), 9);
    EXPECT_TRUE(t.decode({0, 9, 1}) == "a<|endoftext|>b");
    EXPECT_TRUE(t.decode({10, 11, 50303}) == "<|pad|><|pad|><|pad|>");
    EXPECT_TRUE(t.decode({-1}) == "<|invalid|>");
    EXPECT_TRUE(t.decode_token(4) == "abc");
    Tokenizer b = Tokenizer::bytes();
    EXPECT_TRUE(b.decode({65, 256, 300}) == "A<|pad|><|pad|>");
}

TEST(greedy_encode_prefers_longest_match) {
    Tokenizer t = Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, small_vocab(), 9);
    // ids: a0 b1 c2 ab3 abc4 bc5 abcd6 ' '7 ' a'8 EOT9
    std::vector<int> ids = t.encode("abcdabcab a");
    // longest matches: "abcd" (not "abc" + ...), then "abc", "ab", " a"
    std::vector<int> want = {6, 4, 3, 8};
    EXPECT_TRUE(ids == want);
    EXPECT_TRUE(t.decode(ids) == "abcdabcab a");
    // a longer prefix that is not a token falls back to the longest one that is: "abcb" -> abc, b
    EXPECT_TRUE(t.encode("abcb") == std::vector<int>({4, 1}));
    // "bca" -> bc, a
    EXPECT_TRUE(t.encode("bca") == std::vector<int>({5, 0}));
    // the eot entry's bytes are never matched (ordinary encode): "EOT" has no token for 'E'
    bool threw = false;
    try {
        t.encode("EOT");
    } catch (const std::runtime_error& e) {
        threw = true;
        EXPECT_CONTAINS(e.what(), "no token for byte 0x45 at offset 0");
    }
    EXPECT_TRUE(threw);
}

TEST(greedy_encode_round_trips_random_text_with_full_byte_vocab) {
    // A GPT-2-like vocabulary: all 256 bytes, plus multi-byte merges, duplicates and an empty entry.
    std::vector<std::string> vocab;
    for (int i = 0; i < 256; i++) vocab.push_back(std::string(1, static_cast<char>(i)));
    std::mt19937 rng(7);
    const char alphabet[] = "ab c";
    for (int i = 0; i < 400; i++) {
        std::string s;
        int len = 2 + rng() % 7;
        for (int k = 0; k < len; k++) s.push_back(alphabet[rng() % 4]);
        vocab.push_back(s);
    }
    vocab.push_back("");
    vocab.push_back("<|endoftext|>");
    int eot = static_cast<int>(vocab.size()) - 1;
    Tokenizer t = Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, vocab, eot);
    for (int trial = 0; trial < 300; trial++) {
        std::string s;
        int len = rng() % 200;
        for (int k = 0; k < len; k++)
            s.push_back(rng() % 8 ? alphabet[rng() % 4] : static_cast<char>(rng() & 0xFF));
        std::vector<int> ids = t.encode(s);
        bool valid = true;
        for (int id : ids) valid = valid && id >= 0 && id < t.vocab_size() && id != eot;
        EXPECT_TRUE(valid);
        EXPECT_TRUE(t.decode(ids) == s);
        // greedy: no token could have been extended, i.e. each step took the longest vocabulary prefix
        size_t pos = 0;
        bool longest = true;
        for (int id : ids) {
            size_t len_taken = t.token_bytes(id).size();
            for (size_t v = 0; v < vocab.size(); v++) {
                if (static_cast<int>(v) == eot) continue;
                const std::string& cand = vocab[v];
                if (cand.size() > len_taken && s.compare(pos, cand.size(), cand) == 0) longest = false;
            }
            pos += len_taken;
        }
        EXPECT_TRUE(longest);
        if (testing::state().failed) return;
    }
    // "<|endoftext|>" in text is encoded as ordinary bytes, not as the eot id
    std::vector<int> ids = t.encode("x<|endoftext|>");
    for (int id : ids) EXPECT_TRUE(id != eot);
    EXPECT_TRUE(t.decode(ids) == "x<|endoftext|>");
}

TEST(duplicate_entries_encode_to_lowest_id) {
    Tokenizer t = Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, {"x", "xy", "xy", "y"}, -1);
    EXPECT_TRUE(t.encode("xyx") == std::vector<int>({1, 0}));
}

TEST(file_round_trip_save_and_hand_built) {
    TempDir dir("host_tokenizer");
    EXPECT_TRUE(!dir.path.empty());
    std::vector<std::string> vocab = small_vocab();
    vocab.push_back(std::string("\0\xff\n", 3));  // arbitrary bytes survive
    Tokenizer t = Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, vocab, 9);
    std::string path = dir.path + "/tokenizer.bin";
    t.save(path);
    EXPECT_TRUE(access((path + ".tmp").c_str(), F_OK) != 0);  // renamed into place
    // save writes exactly the documented format
    EXPECT_TRUE(read_bytes(path) == make_file(1, vocab, 9));
    Tokenizer u = Tokenizer::load(path);
    EXPECT_EQ(u.vocab_size(), static_cast<int>(vocab.size()));
    EXPECT_EQ(u.eot(), 9);
    EXPECT_TRUE(u.kind() == Tokenizer::Kind::Gpt2Bpe);
    bool same = true;
    for (int i = 0; i < u.vocab_size(); i++) same = same && u.token_bytes(i) == vocab[static_cast<size_t>(i)];
    EXPECT_TRUE(same);
    EXPECT_TRUE(u.encode("abcdabcab a") == t.encode("abcdabcab a"));

    // bytes kind, both ways
    std::string bpath = dir.path + "/bytes.bin";
    Tokenizer::bytes().save(bpath);
    Tokenizer b = Tokenizer::load(bpath);
    EXPECT_TRUE(b.kind() == Tokenizer::Kind::Bytes);
    EXPECT_EQ(b.vocab_size(), 256);
    EXPECT_EQ(b.eot(), -1);
    std::vector<std::string> bytes_vocab;
    for (int i = 0; i < 256; i++) bytes_vocab.push_back(std::string(1, static_cast<char>(i)));
    EXPECT_TRUE(read_bytes(bpath) == make_file(0, bytes_vocab, 0xFFFFFFFFu));
    std::string s = "h\xc3\xa9llo\n\x01";
    EXPECT_TRUE(b.decode(b.encode(s)) == s);
}

TEST(save_error_is_one_line) {
    Tokenizer t = Tokenizer::bytes();
    bool threw = false;
    try {
        t.save("/nonexistent_dir_for_host_tokenizer/tokenizer.bin");
    } catch (const std::runtime_error& e) {
        threw = true;
        std::string m = e.what();
        EXPECT_CONTAINS(m, "tokenizer '/nonexistent_dir_for_host_tokenizer/tokenizer.bin': cannot create");
        EXPECT_TRUE(m.find('\n') == std::string::npos);
    }
    EXPECT_TRUE(threw);
}

TEST(corrupt_files_give_one_line_errors) {
    TempDir dir("host_tokenizer");
    std::string good = make_file(1, small_vocab(), 9);
    EXPECT_TRUE(load_error(dir, good).empty());

    struct Case {
        std::string data;
        const char* want;
    };
    std::string long_len = good.substr(0, 20);
    put_u32(long_len, Tokenizer::kMaxTokenBytes + 1);
    long_len += std::string(100, 'x');
    std::string bad_bytes_vocab;
    {
        std::vector<std::string> v;
        for (int i = 0; i < 256; i++) v.push_back(std::string(1, static_cast<char>(i)));
        v[65] = "B";
        bad_bytes_vocab = make_file(0, v, 0xFFFFFFFFu);
    }
    std::string huge_count = good;
    huge_count[12] = '\xff';
    huge_count[13] = '\xff';
    huge_count[14] = '\xff';
    huge_count[15] = '\x00';  // 16M - 1 entries claimed, a few present
    std::string zero_count = make_file(1, {}, 0xFFFFFFFFu);
    std::vector<Case> cases = {
        {"", "bad magic"},
        {"GPTTOK2", "bad magic"},
        {std::string("GPTTOK2\0", 8) + good.substr(8), "bad magic"},
        {good.substr(0, 15), "truncated header"},
        {make_file(7, small_vocab(), 9), "unknown kind 7"},
        {make_file(1, small_vocab(), 10), "eot id 10 out of range for 10 entries"},
        {zero_count, "vocabulary size 0 out of range"},
        {huge_count, "truncated: 16777215 entries cannot fit"},
        {good.substr(0, good.size() - 1), "truncated in entry 9 of 10"},
        {good.substr(0, good.size() - 5), "truncated at entry 9 of 10"},
        {good + "zz", "2 bytes after the last of 10 entries"},
        {long_len, "entry 0 length 65537 exceeds the limit 65536"},
        {make_file(0, small_vocab(), 0xFFFFFFFFu), "kind bytes needs 256 entries, got 10"},
        {bad_bytes_vocab, "kind bytes: entry 65 is not the single byte 65"},
        // found by reasoning over fuzz_tokenizer's round trip: with an eot, text byte 65 would encode as eot
        {make_file(0, bytes_vocab(), 65), "kind bytes has no eot, got eot id 65"},
    };
    for (const Case& c : cases) {
        std::string m = load_error(dir, c.data);
        EXPECT_CONTAINS(m, std::string("tokenizer '") + dir.path + "/bad.bin': ");
        EXPECT_CONTAINS(m, c.want);
        EXPECT_TRUE(m.find('\n') == std::string::npos);
        if (testing::state().failed) return;
    }
    // count over the limit
    std::string over = good;
    uint32_t n = Tokenizer::kMaxVocab + 1;
    for (int i = 0; i < 4; i++) over[12 + i] = static_cast<char>((n >> (8 * i)) & 0xFF);
    EXPECT_CONTAINS(load_error(dir, over), "vocabulary size 16777217 out of range [1, 16777216]");
    // missing file
    std::string missing;
    try {
        Tokenizer::load(dir.path + "/missing.bin");
    } catch (const std::runtime_error& e) {
        missing = e.what();
    }
    EXPECT_CONTAINS(missing, "/missing.bin': cannot open: No such file or directory");
    // a path with a newline still gives one line
    std::string nl;
    try {
        Tokenizer::load(dir.path + "/a\nb");
    } catch (const std::runtime_error& e) {
        nl = e.what();
    }
    EXPECT_CONTAINS(nl, "a\\nb");
    EXPECT_TRUE(nl.find('\n') == std::string::npos);
}

TEST(from_vocab_rejects_bad_arguments) {
    int threw = 0;
    try {
        Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, {}, -1);
    } catch (const std::invalid_argument&) {
        threw++;
    }
    try {
        Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, {"a"}, 1);
    } catch (const std::invalid_argument&) {
        threw++;
    }
    try {
        Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, {std::string(Tokenizer::kMaxTokenBytes + 1, 'a')},
                              -1);
    } catch (const std::invalid_argument&) {
        threw++;
    }
    // Kind::Bytes encodes each byte as its value: only the 256 single bytes in order, without eot
    try {
        Tokenizer::from_vocab(Tokenizer::Kind::Bytes, bytes_vocab(), 65);
    } catch (const std::invalid_argument& e) {
        threw += std::string(e.what()).find("kind bytes has no eot") != std::string::npos;
    }
    try {
        Tokenizer::from_vocab(Tokenizer::Kind::Bytes, {"a", "b"}, -1);
    } catch (const std::invalid_argument& e) {
        threw += std::string(e.what()).find("kind bytes needs 256 entries, got 2") != std::string::npos;
    }
    EXPECT_EQ(threw, 5);
    EXPECT_EQ(Tokenizer::from_vocab(Tokenizer::Kind::Bytes, bytes_vocab(), -1).vocab_size(), 256);
}

TEST(sanitize_utf8_replaces_invalid_bytes) {
    const std::string fffd = "\xEF\xBF\xBD";
    std::string valid = "plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 end";
    EXPECT_TRUE(sanitize_utf8(valid) == valid);
    EXPECT_TRUE(sanitize_utf8("a\xff"
                              "b") == "a" + fffd + "b");
    EXPECT_TRUE(sanitize_utf8("\x80") == fffd);                        // stray continuation
    EXPECT_TRUE(sanitize_utf8("x\xe2\x82") == "x" + fffd + fffd);      // truncated sequence, one per byte
    EXPECT_TRUE(sanitize_utf8("\xc0\xaf") == fffd + fffd);             // overlong '/'
    EXPECT_TRUE(sanitize_utf8("\xed\xa0\x80") == fffd + fffd + fffd);  // surrogate U+D800
    EXPECT_TRUE(sanitize_utf8("\xf4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // > U+10FFFF
    // token-by-token decoding can split a character; the whole sequence is fine
    Tokenizer b = Tokenizer::bytes();
    std::vector<int> ids = b.encode("\xe2\x82\xac");
    EXPECT_TRUE(sanitize_utf8(b.decode({ids[0], ids[1]})) == fffd + fffd);
    EXPECT_TRUE(sanitize_utf8(b.decode(ids)) == "\xe2\x82\xac");
    // random bytes always come out as valid UTF-8 (json's parser is a strict checker)
    std::mt19937 rng(99);
    for (int trial = 0; trial < 300; trial++) {
        std::string s = random_bytes(rng, rng() % 64);
        std::string q = json::quote(sanitize_utf8(s));
        bool ok = true;
        try {
            json::Value v = json::parse(q);
            ok = v.is_string() && v.as_string() == sanitize_utf8(s);
        } catch (const json::ParseError&) {
            ok = false;
        }
        EXPECT_TRUE(ok);
        std::string line = escape_for_log(s);
        bool one_line = true;
        for (unsigned char c : line) one_line = one_line && c >= 0x20 && c != 0x7F;
        EXPECT_TRUE(one_line);
        if (testing::state().failed) return;
    }
}

// Streamed text (--generate writes each token as it comes): sanitizing the complete prefix of what has
// arrived and holding back the rest gives, chunk by chunk, exactly sanitize_utf8 of the whole text; and
// nothing complete is held back (ASCII and whole characters go out at once).
TEST(streamed_utf8_equals_the_whole_text_sanitized) {
    std::mt19937 rng(7);
    // bytes that make every case likely: ASCII, continuation bytes, 2/3/4-byte leads, invalid leads
    const unsigned char pool[] = {'a',  '\n', 0x80, 0x8F, 0xBF, 0xC2, 0xC0, 0xDF, 0xE0, 0xE2,
                                  0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xF8, 0xFF, 0xA0, 0x9F, 0x90};
    for (int trial = 0; trial < 20000; trial++) {
        std::string whole, pending, streamed;
        const int len = 1 + (int)(rng() % 12);
        for (int i = 0; i < len; i++) whole += (char)pool[rng() % sizeof(pool)];
        for (size_t at = 0; at < whole.size();) {
            const size_t chunk = std::min<size_t>(1 + rng() % 3, whole.size() - at);
            pending += whole.substr(at, chunk);
            at += chunk;
            const size_t complete = utf8_complete_prefix(pending);
            EXPECT_TRUE(complete + 3 >= pending.size());  // at most a sequence's first 3 bytes wait
            streamed += sanitize_utf8(pending.substr(0, complete));
            pending.erase(0, complete);
        }
        streamed += sanitize_utf8(pending);
        if (streamed != sanitize_utf8(whole)) {
            std::string hex;
            for (unsigned char c : whole) hex += " " + std::to_string(c);
            return testing::fail(__FILE__, __LINE__, "streamed text differs for bytes" + hex);
        }
    }
    EXPECT_EQ(utf8_complete_prefix("ab\xC3\xA9"), 4u);    // "abé": complete
    EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82"), 2u);    // "ab" + 2 of the euro sign's 3 bytes
    EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98"), 0u);  // 3 of an emoji's 4
    EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98\x80"), 4u);
    EXPECT_EQ(utf8_complete_prefix("x\x80\x80\x80\x80"), 5u);  // stray continuation bytes: decided
}

TEST(escape_for_log_is_one_line) {
    EXPECT_TRUE(escape_for_log("a\nb\tc\rd\\e") == "a\\nb\\tc\\rd\\\\e");
    EXPECT_TRUE(escape_for_log(std::string("\x01\x1b[31m\x7f", 7)) == "\\x01\\x1B[31m\\x7F");
    EXPECT_TRUE(escape_for_log(std::string("\0", 1)) == "\\x00");
    EXPECT_TRUE(escape_for_log("\xc2\x85|\xe2\x80\xa8") == "\\u0085|\\u2028");
    EXPECT_TRUE(escape_for_log("caf\xc3\xa9 \xff") == "caf\xc3\xa9 \xEF\xBF\xBD");
}

// scripts/data/prepare_data.py --tokenizer bytes writes a tokenizer.bin this loader accepts, and the shard
// decodes back to the text (the format is the same on both sides). Needs python3 and the repository root as
// the working directory (make test); skipped otherwise.
TEST(prepare_data_writes_a_loadable_tokenizer_file) {
    if (access("scripts/data/prepare_data.py", R_OK) != 0)
        SKIP("scripts/data/prepare_data.py not found (run from the repo root)");
    if (system("python3 --version >/dev/null 2>&1") != 0) SKIP("python3 not found");
    TempDir dir("host_tokenizer");
    std::string text = "In the beginning \xc3\xa9t\xc3\xa9\n\tline two\n";
    for (int i = 0; i < 50; i++) text += "more text " + std::to_string(i) + "\n";
    write_bytes(dir.path + "/in.txt", text);
    std::string cmd = "python3 scripts/data/prepare_data.py --tokenizer bytes --val-fraction 0 --out-dir '" +
                      dir.path + "/out' '" + dir.path + "/in.txt' >'" + dir.path + "/log.txt' 2>&1";
    if (system(cmd.c_str()) != 0) {
        testing::fail(__FILE__, __LINE__, "prepare_data.py failed: " + read_bytes(dir.path + "/log.txt"));
        return;
    }
    std::string path = dir.path + "/out/tokenizer.bin";
    EXPECT_CONTAINS(read_bytes(dir.path + "/log.txt"), "wrote " + path);
    EXPECT_TRUE(access((path + ".tmp").c_str(), F_OK) != 0);
    Tokenizer t = Tokenizer::load(path);
    EXPECT_TRUE(t.kind() == Tokenizer::Kind::Bytes);
    EXPECT_EQ(t.vocab_size(), 256);
    EXPECT_EQ(t.eot(), -1);
    std::string shard = read_bytes(dir.path + "/out/in_train_000000.bin");
    EXPECT_EQ(shard.size(), 1024 + 2 * text.size());
    if (shard.size() != 1024 + 2 * text.size()) return;
    std::vector<int> ids;
    for (size_t i = 0; i < text.size(); i++)
        ids.push_back(static_cast<unsigned char>(shard[1024 + 2 * i]) |
                      static_cast<unsigned char>(shard[1024 + 2 * i + 1]) << 8);
    EXPECT_TRUE(t.decode(ids) == text);
    EXPECT_TRUE(t.encode(text) == ids);
}

TEST_MAIN()
