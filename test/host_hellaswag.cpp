// Host tests for llmc/formats/hellaswag: the reference writer and the reader agree;
// scripts/data/prepare_hellaswag.py writes files the reader accepts with llm.c's rendering (context, " " +
// ending); every prefix of a valid file and each kind of corrupt field is refused with a one-line error
// naming the file and the example; the layout's rows, targets and completion ranges; the sum/mean scores and
// both predictions.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmc/formats/hellaswag.h"
#include "test/temp_dir.h"
#include "test/testing.h"

namespace {

using testing::TempDir;

using testing::read_bytes;
using testing::write_bytes;

std::vector<int> bytes_of(const std::string& s) {
    std::vector<int> ids;
    for (unsigned char c : s) ids.push_back(c);
    return ids;
}

HellaSwagSet sample_set() {
    HellaSwagSet set;
    set.vocab_size = 300;
    std::mt19937 rng(11);
    for (int i = 0; i < 5; i++) {
        HellaSwagExample ex;
        ex.label = i % 4;
        ex.context.resize(1 + rng() % 9);
        for (int& t : ex.context) t = static_cast<int>(rng() % 300);
        for (std::vector<int>& e : ex.endings) {
            e.resize(1 + rng() % 6);
            for (int& t : e) t = static_cast<int>(rng() % 300);
        }
        set.examples.push_back(ex);
    }
    set.examples[1].context[0] = 299;  // the largest id allowed
    return set;
}

bool same(const HellaSwagSet& a, const HellaSwagSet& b) {
    if (a.vocab_size != b.vocab_size || a.examples.size() != b.examples.size()) return false;
    for (size_t i = 0; i < a.examples.size(); i++) {
        const HellaSwagExample &x = a.examples[i], &y = b.examples[i];
        if (x.label != y.label || x.context != y.context || x.endings != y.endings) return false;
    }
    return true;
}

std::string parse_error(const std::string& data, int vocab = 300) {
    return testing::error_of([&] { parse_hellaswag(data.data(), data.size(), "mem.bin", vocab); });
}

// The message of the std::invalid_argument fn throws ("" when it does not throw).
template <class Fn>
std::string invalid_argument_of(Fn fn) {
    try {
        fn();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

void put_u32_at(std::string& s, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace

TEST(writer_and_reader_round_trip) {
    TempDir dir("host_hellaswag");
    const HellaSwagSet set = sample_set();
    const std::string path = dir.file("hs.bin");
    write_bytes(path, serialize_hellaswag(set));
    const HellaSwagSet back = read_hellaswag(path, 300);
    EXPECT_TRUE(same(set, back));
    EXPECT_TRUE(same(set, read_hellaswag(path, 50304)));  // a bigger (padded) model vocabulary is fine
    int longest = 0;
    for (const HellaSwagExample& ex : set.examples)
        for (const std::vector<int>& e : ex.endings)
            longest = std::max(longest, static_cast<int>(ex.context.size() + e.size()));
    EXPECT_EQ(back.max_row_tokens(), longest);
    // the documented layout: magic, version 1, vocab, count, then the first example's label and lengths
    const std::string bytes = serialize_hellaswag(set);
    EXPECT_TRUE(bytes.compare(0, 8, std::string("HSWAG\0\0\0", 8)) == 0);
    EXPECT_EQ(static_cast<unsigned char>(bytes[8]), 1u);
    EXPECT_EQ(static_cast<unsigned char>(bytes[12]) | static_cast<unsigned char>(bytes[13]) << 8, 300);
    EXPECT_EQ(static_cast<unsigned char>(bytes[16]), 5u);
    EXPECT_EQ(static_cast<unsigned char>(bytes[20]), static_cast<unsigned>(set.examples[0].label));
    EXPECT_EQ(static_cast<unsigned char>(bytes[24]), set.examples[0].context.size());
}

// scripts/data/prepare_hellaswag.py --tokenizer bytes on a JSONL in HellaSwag's layout, given as --input and
// as a download: the reader gets llm.c's rendering back. Needs python3 and the repository root as the working
// directory (make test).
TEST(prepare_hellaswag_writes_what_the_reader_reads) {
    if (access("scripts/data/prepare_hellaswag.py", R_OK) != 0)
        SKIP("scripts/data/prepare_hellaswag.py not found (run from the repo root)");
    if (system("python3 --version >/dev/null 2>&1") != 0) SKIP("python3 not found");
    TempDir dir("host_hellaswag");
    write_bytes(
        dir.file("val.jsonl"),
        "{\"ind\": 24, \"ctx_a\": \"A man is sitting on a roof.\", \"ctx\": \"A man is sitting on a roof. "
        "he\", "
        "\"label\": 3, \"endings\": [\"is using wrap.\", \"is ripping tiles off.\", \"is holding a cube.\", "
        "\"starts pulling up roofing.\"], \"source_id\": \"x\"}\n"
        "\n"
        "{\"ctx\": \"Caf\\u00e9\", \"label\": 0, \"endings\": [\"smile.\", \"a\", \"\", \"\\u4e2d\"]}\n");
    const std::string cmd = "python3 scripts/data/prepare_hellaswag.py --tokenizer bytes --input '" +
                            dir.file("val.jsonl") + "' --out '" + dir.file("out/hs.bin") + "' >'" +
                            dir.file("log.txt") + "' 2>&1";
    if (system(cmd.c_str()) != 0) {
        testing::fail(__FILE__, __LINE__, "prepare_hellaswag.py failed: " + read_bytes(dir.file("log.txt")));
        return;
    }
    EXPECT_CONTAINS(read_bytes(dir.file("log.txt")), "2 examples, tokenizer bytes (vocabulary 256)");
    const HellaSwagSet set = read_hellaswag(dir.file("out/hs.bin"), 256);
    EXPECT_EQ(set.vocab_size, 256);
    EXPECT_EQ(set.examples.size(), 2u);
    if (set.examples.size() != 2) return;
    const HellaSwagExample &a = set.examples[0], &b = set.examples[1];
    EXPECT_EQ(a.label, 3);
    EXPECT_TRUE(a.context == bytes_of("A man is sitting on a roof. he"));
    EXPECT_TRUE(a.endings[0] == bytes_of(" is using wrap."));
    EXPECT_TRUE(a.endings[3] == bytes_of(" starts pulling up roofing."));
    EXPECT_EQ(b.label, 0);
    EXPECT_TRUE(b.context == bytes_of("Caf\xc3\xa9"));
    EXPECT_TRUE(b.endings[2] == bytes_of(" "));  // an empty ending is still " "
    EXPECT_TRUE(b.endings[3] == bytes_of(" \xe4\xb8\xad"));
    // without --input: downloaded from --url (a file:// URL here, offline) next to --out, once
    const std::string dl = "python3 scripts/data/prepare_hellaswag.py --tokenizer bytes --url 'file://" +
                           dir.file("val.jsonl") + "' --out '" + dir.file("dl/hs.bin") + "' >>'" +
                           dir.file("dl.txt") + "' 2>&1";
    EXPECT_TRUE(system(dl.c_str()) == 0 && system(dl.c_str()) == 0);
    EXPECT_TRUE(read_bytes(dir.file("dl/hellaswag_val.jsonl")) == read_bytes(dir.file("val.jsonl")));
    EXPECT_TRUE(read_bytes(dir.file("dl/hs.bin")) == read_bytes(dir.file("out/hs.bin")));
    EXPECT_CONTAINS(read_bytes(dir.file("dl.txt")), "(downloaded earlier)");
    // a GPT-2 sized file is refused by a bytes-sized model, naming both sizes
    EXPECT_CONTAINS(testing::error_of([&] { read_hellaswag(dir.file("out/hs.bin"), 200); }),
                    "made with a tokenizer of 256 entries, the model's vocabulary has 200");
}

// The script's own errors: one line, the last, non-zero exit, no output file.
TEST(prepare_hellaswag_errors_are_one_line) {
    if (access("scripts/data/prepare_hellaswag.py", R_OK) != 0)
        SKIP("scripts/data/prepare_hellaswag.py not found (run from the repo root)");
    if (system("python3 --version >/dev/null 2>&1") != 0) SKIP("python3 not found");
    TempDir dir("host_hellaswag");
    struct Case {
        std::string jsonl, want;
    };
    const std::vector<Case> cases = {
        {"{\"ctx\": \"a\", \"label\": 1}\n", "line 1: no field 'endings'"},
        {"{\"ctx\": \"a\", \"label\": 4, \"endings\": [\"a\", \"b\", \"c\", \"d\"]}\n",
         "'label' must be an integer in [0, 4), got 4"},
        {"{\"ctx\": \"a\", \"label\": 0, \"endings\": [\"a\", \"b\", \"c\"]}\n",
         "'endings' must be a list of 4 strings"},
        {"{\"ctx\": \"\", \"label\": 0, \"endings\": [\"a\", \"b\", \"c\", \"d\"]}\n",
         "'ctx' must be a non-empty string"},
        {"\n{\"ctx\": \"a\",\n", "line 2: not JSON"},
        {"", "no examples"},
    };
    for (const Case& c : cases) {
        write_bytes(dir.file("in.jsonl"), c.jsonl);
        const std::string cmd = "python3 scripts/data/prepare_hellaswag.py --tokenizer bytes --input '" +
                                dir.file("in.jsonl") + "' --out '" + dir.file("out.bin") + "' >'" +
                                dir.file("out.txt") + "' 2>'" + dir.file("err.txt") + "'";
        const int rc = system(cmd.c_str());
        const std::string err = read_bytes(dir.file("err.txt"));
        EXPECT_TRUE(rc != 0);
        EXPECT_TRUE(read_bytes(dir.file("out.txt")).empty());
        EXPECT_CONTAINS(err, "error: ");
        EXPECT_CONTAINS(err, c.want);
        EXPECT_TRUE(err.find('\n') == err.size() - 1);  // exactly one line
        EXPECT_TRUE(access(dir.file("out.bin").c_str(), F_OK) != 0);
        if (testing::state().failed) return;
    }
}

// Every proper prefix of a valid file is refused (truncation anywhere), as are bytes after the end.
TEST(every_truncation_is_refused) {
    const std::string good = serialize_hellaswag(sample_set());
    EXPECT_TRUE(parse_error(good).empty());
    for (size_t n = 0; n < good.size(); n++) {
        const std::string m = parse_error(good.substr(0, n));
        EXPECT_CONTAINS(m, "hellaswag 'mem.bin': ");
        EXPECT_TRUE(m.find('\n') == std::string::npos);
        if (testing::state().failed) return;
    }
    EXPECT_CONTAINS(parse_error(good + "x"), "1 bytes after the last of 5 examples");
}

TEST(corrupt_fields_give_one_line_errors) {
    const HellaSwagSet set = sample_set();
    const std::string good = serialize_hellaswag(set);
    const size_t ex1 = 20 + 24 +
                       2 * (set.examples[0].context.size() + set.examples[0].endings[0].size() +
                            set.examples[0].endings[1].size() + set.examples[0].endings[2].size() +
                            set.examples[0].endings[3].size());
    struct Case {
        size_t at;
        uint32_t value;
        std::string want;
        int vocab;
    };
    const std::string e1 = "example 1 (byte " + std::to_string(ex1) + "): ";
    const std::vector<Case> cases = {
        {0, 0, "bad magic", 300},  // at 0: the first magic byte changed
        {8, 2, "version 2, expected 1", 300},
        {12, 0, "vocabulary size 0 out of range [1, 65536]", 300},
        {12, 65537, "vocabulary size 65537 out of range", 300},
        {12, 301, "made with a tokenizer of 301 entries, the model's vocabulary has 300", 300},
        {16, 0, "no examples", 300},
        {16, 1000000, "truncated: 1000000 examples cannot fit", 300},
        {ex1, 4, e1 + "label 4 out of range [0, 4)", 300},
        {ex1 + 4, 0, e1 + "empty context", 300},
        {ex1 + 12, 0, e1 + "empty ending 1", 300},
        {ex1 + 4, 0x7FFFFFFF, e1 + "truncated (", 300},
        {ex1 + 24, 299 | 299u << 16, "", 300},  // two largest ids: still valid
        {ex1 + 24, 300, e1 + "token id 300 >= the vocabulary size 300", 300},
    };
    for (const Case& c : cases) {
        std::string bad = good;
        if (c.at == 0)
            bad[0] = 'X';
        else
            put_u32_at(bad, c.at, c.value);
        const std::string m = parse_error(bad, c.vocab);
        if (c.want.empty()) {
            EXPECT_TRUE(m.empty());
        } else {
            EXPECT_CONTAINS(m, "hellaswag 'mem.bin': " + c.want);
        }
        EXPECT_TRUE(m.find('\n') == std::string::npos);
        if (testing::state().failed) return;
    }
    std::string fewer = good;
    put_u32_at(fewer, 16, 4);
    EXPECT_CONTAINS(parse_error(fewer),
                    "bytes after the last of 4 examples (the count does not match the file)");
    EXPECT_CONTAINS(parse_error(good, 0), "the model's vocabulary has 0");
    // missing file, and a path with a newline still gives one line
    EXPECT_CONTAINS(testing::error_of([] { read_hellaswag("/nonexistent_dir_hs/x.bin", 300); }),
                    "hellaswag '/nonexistent_dir_hs/x.bin': cannot open: No such file or directory");
    const std::string nl = testing::error_of([] { read_hellaswag("/nonexistent_dir_hs/a\nb", 300); });
    EXPECT_CONTAINS(nl, "a\\nb");
    EXPECT_TRUE(nl.find('\n') == std::string::npos);
}

TEST(layout_rows_targets_and_ranges) {
    HellaSwagExample ex;
    ex.label = 2;
    ex.context = {10, 11, 12};
    ex.endings = {std::vector<int>{20}, {21, 22}, {23, 24, 25}, {26, 27, 28, 29}};
    const int T = 6, pad = 7;  // the longest row has 3 + 4 = 7 tokens: needs T >= 6
    const HellaSwagRows rows = layout_hellaswag(ex, T, pad);
    EXPECT_EQ(rows.T, T);
    EXPECT_EQ(rows.inputs.size(), 4u * T);
    const std::vector<int> want_in = {10, 11, 12, 7,  7,  7,  // context + [20], last token dropped
                                      10, 11, 12, 21, 7,  7,  //
                                      10, 11, 12, 23, 24, 7,  //
                                      10, 11, 12, 26, 27, 28};
    const std::vector<int> want_tg = {11, 12, 20, 7,  7,  7,  // inputs shifted by one
                                      11, 12, 21, 22, 7,  7,  //
                                      11, 12, 23, 24, 25, 7,  //
                                      11, 12, 26, 27, 28, 29};
    EXPECT_TRUE(rows.inputs == want_in);
    EXPECT_TRUE(rows.targets == want_tg);
    for (int r = 0; r < 4; r++) {
        EXPECT_EQ(rows.begin[r], 2);  // the last context position predicts the first ending token
        EXPECT_EQ(rows.end[r], 2 + static_cast<int>(ex.endings[r].size()));
        for (int t = rows.begin[r]; t < rows.end[r]; t++)
            EXPECT_EQ(rows.targets[r * T + t], ex.endings[r][t - rows.begin[r]]);
    }
    EXPECT_CONTAINS(invalid_argument_of([&] { layout_hellaswag(ex, 5, pad); }),
                    "row 3 of 7 tokens (context 3 + ending 4) needs T >= 6, T is 5");
    EXPECT_CONTAINS(invalid_argument_of([&] { layout_hellaswag(ex, 6, -1); }), "pad token -1 < 0");
    HellaSwagExample no_ctx = ex;
    no_ctx.context.clear();
    EXPECT_CONTAINS(invalid_argument_of([&] { layout_hellaswag(no_ctx, 6, pad); }), "context 0");
}

TEST(score_sums_means_and_predictions) {
    HellaSwagExample ex;
    ex.label = 1;
    ex.context = {1, 2};
    ex.endings = {std::vector<int>{3, 3, 3, 3}, {4}, {5, 5}, {6, 6}};
    const int T = 5;
    const HellaSwagRows rows = layout_hellaswag(ex, T, 0);
    // per-position losses; context and padding positions hold large values that must not count
    std::vector<float> loss(4 * T, 100.0f);
    auto set = [&](int r, std::vector<float> v) {
        for (size_t i = 0; i < v.size(); i++) loss[r * T + rows.begin[r] + i] = v[i];
    };
    set(0, {0.5f, 0.5f, 0.5f, 0.5f});  // sum 2.0, mean 0.5
    set(1, {1.0f});                    // sum 1.0, mean 1.0
    set(2, {0.8f, 0.8f});              // sum 1.6, mean 0.8
    set(3, {0.5f, 1.0f});              // sum 1.5, mean 0.75
    const HellaSwagScore s = score_hellaswag(rows, loss.data(), ex.label);
    EXPECT_NEAR(s.sum[0], 2.0, 1e-6);
    EXPECT_NEAR(s.mean[0], 0.5, 1e-6);
    EXPECT_NEAR(s.sum[2], 1.6, 1e-6);
    EXPECT_NEAR(s.mean[3], 0.75, 1e-6);
    EXPECT_EQ(s.pred_sum, 1);   // the lowest sum: ending 1 (the label)
    EXPECT_EQ(s.pred_mean, 0);  // the lowest mean: ending 0
    EXPECT_TRUE(s.correct_sum);
    EXPECT_TRUE(!s.correct_mean);
    // ties go to the first of the tied endings
    set(0, {1.0f, 1.0f, 1.0f, 1.0f});  // sum 4, mean 1
    set(1, {3.0f});                    // sum 3, mean 3
    set(2, {0.5f, 0.5f});              // sum 1, mean 0.5
    set(3, {0.25f, 0.75f});            // sum 1, mean 0.5
    const HellaSwagScore t = score_hellaswag(rows, loss.data(), 3);
    EXPECT_EQ(t.pred_sum, 2);
    EXPECT_EQ(t.pred_mean, 2);
    EXPECT_TRUE(!t.correct_sum && !t.correct_mean);
}

TEST(writer_rejects_what_the_format_cannot_hold) {
    HellaSwagSet set = sample_set();
    set.examples[0].label = 4;
    EXPECT_CONTAINS(invalid_argument_of([&] { serialize_hellaswag(set); }), "a label in [0, 4)");
    set = sample_set();
    set.examples[2].endings[1][0] = 300;
    EXPECT_CONTAINS(invalid_argument_of([&] { serialize_hellaswag(set); }), "token id 300 outside [0, 300)");
    set = sample_set();
    set.examples.clear();
    EXPECT_CONTAINS(invalid_argument_of([&] { serialize_hellaswag(set); }), "needs a vocabulary size");
}

TEST_MAIN()
