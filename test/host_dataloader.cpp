// Host tests for llmc/formats/dataloader: shard reading, batching, shard wrap-around, rank striding, corrupt
// files. Shards are written to a fresh mkdtemp directory with random tokens; every expectation is computed
// from the tokens that were written.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "llmc/formats/dataloader.h"
#include "test/temp_dir.h"
#include "test/testing.h"

namespace {

using testing::TempDir;

std::vector<uint16_t> random_tokens(size_t n, int vocab, std::mt19937_64& rng) {
    std::vector<uint16_t> t(n);
    for (auto& x : t) x = (uint16_t)(rng() % (uint64_t)vocab);
    return t;
}

// The batch a reader at token offset `pos` of `shard` must return.
void expected_batch(const std::vector<uint16_t>& shard, size_t pos, int B, int T, std::vector<int>* inp,
                    std::vector<int>* tgt) {
    inp->resize((size_t)B * T);
    tgt->resize((size_t)B * T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            (*inp)[(size_t)b * T + t] = shard[pos + (size_t)b * T + t];
            (*tgt)[(size_t)b * T + t] = shard[pos + (size_t)b * T + t + 1];
        }
}

// Runs `fn`, which must throw DataError whose message contains `needle` (the file name) and is one line.
template <typename Fn>
void expect_data_error(Fn fn, const std::string& needle, const std::string& also = "") {
    try {
        fn();
        testing::fail(__FILE__, __LINE__, "expected DataError mentioning " + needle);
    } catch (const DataError& e) {
        std::string msg = e.what();
        if (msg.find(needle) == std::string::npos)
            testing::fail(__FILE__, __LINE__, "message \"" + msg + "\" does not name " + needle);
        if (!also.empty() && msg.find(also) == std::string::npos)
            testing::fail(__FILE__, __LINE__, "message \"" + msg + "\" does not say " + also);
        if (msg.find('\n') != std::string::npos)
            testing::fail(__FILE__, __LINE__, "message is not one line: " + msg);
    } catch (const std::exception& e) {
        testing::fail(__FILE__, __LINE__, std::string("expected DataError, got: ") + e.what());
    }
}

std::vector<char> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void write_file(const std::string& path, const std::vector<char>& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), (std::streamsize)bytes.size());
}
void set_header_int(const std::string& path, int index, int32_t value) {
    std::vector<char> bytes = read_file(path);
    std::memcpy(bytes.data() + 4 * index, &value, 4);
    write_file(path, bytes);
}

}  // namespace

TEST(write_shard_format) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(1);
    std::vector<uint16_t> tokens = random_tokens(777, 50304, rng);
    std::string path = dir.file("a.bin");
    write_shard(path, tokens);
    std::vector<char> bytes = read_file(path);
    EXPECT_EQ(bytes.size(), (size_t)(1024 + 2 * tokens.size()));
    int32_t header[256];
    std::memcpy(header, bytes.data(), sizeof(header));
    EXPECT_EQ(header[0], 20240520);
    EXPECT_EQ(header[1], 1);
    EXPECT_EQ(header[2], (int32_t)tokens.size());
    for (int i = 3; i < 256; i++) EXPECT_EQ(header[i], 0);
    EXPECT_TRUE(std::memcmp(bytes.data() + 1024, tokens.data(), 2 * tokens.size()) == 0);
    struct stat st;
    EXPECT_TRUE(stat((path + ".tmp").c_str(), &st) != 0);  // renamed away
}

TEST(batches_are_consecutive_slices) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(2);
    const int B = 3, T = 7, V = 1000;
    std::vector<uint16_t> shard = random_tokens(5 * B * T + 4, V, rng);  // 5 full batches (+ the extra token)
    write_shard(dir.file("x_train_000000.bin"), shard);
    DataLoader dl(dir.file("x_train_*.bin"), B, T, V);
    EXPECT_EQ(dl.num_shards(), (size_t)1);
    EXPECT_EQ(dl.total_tokens(), shard.size());
    std::vector<int> inp(B * T), tgt(B * T), ei, et;
    for (int k = 0; k < 5; k++) {
        std::fill(inp.begin(), inp.end(), -1);
        std::fill(tgt.begin(), tgt.end(), -1);
        dl.next_batch(inp.data(), tgt.data());
        expected_batch(shard, (size_t)k * B * T, B, T, &ei, &et);
        EXPECT_TRUE(inp == ei);
        EXPECT_TRUE(tgt == et);
        // targets are the inputs shifted by one within each row
        for (int b = 0; b < B; b++)
            for (int t = 0; t + 1 < T; t++) EXPECT_EQ(tgt[b * T + t], inp[b * T + t + 1]);
    }
    // The 6th batch would need 6*B*T+1 tokens: the single shard starts over.
    dl.next_batch(inp.data(), tgt.data());
    expected_batch(shard, 0, B, T, &ei, &et);
    EXPECT_TRUE(inp == ei && tgt == et);
    EXPECT_EQ(dl.current_shard(), (size_t)0);
    // reset() returns to the first batch
    dl.next_batch(inp.data(), tgt.data());
    dl.reset();
    dl.next_batch(inp.data(), tgt.data());
    EXPECT_TRUE(inp == ei && tgt == et);
}

TEST(wraps_to_next_shard_and_back) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(3);
    const int B = 2, T = 5, V = 512, BT = B * T;
    // Sizes chosen so each shard leaves a different remainder that must be skipped: 2, 1 and 3 batches.
    std::vector<std::vector<uint16_t>> shards = {random_tokens(2 * BT + 1, V, rng),
                                                 random_tokens(BT + 6, V, rng),
                                                 random_tokens(3 * BT + BT / 2, V, rng)};
    // Written out of order; the loader must sort by name.
    write_shard(dir.file("d_002.bin"), shards[2]);
    write_shard(dir.file("d_000.bin"), shards[0]);
    write_shard(dir.file("d_001.bin"), shards[1]);
    DataLoader dl(dir.file("d_*.bin"), B, T, V);
    EXPECT_EQ(dl.num_shards(), (size_t)3);
    EXPECT_TRUE(dl.shard_path(0) == dir.file("d_000.bin"));
    // Expected walk: (shard, offset) for two full passes.
    std::vector<std::pair<size_t, size_t>> walk;
    for (int pass = 0; pass < 2; pass++)
        for (size_t s = 0; s < shards.size(); s++)
            for (size_t pos = 0; pos + BT + 1 <= shards[s].size(); pos += BT) walk.push_back({s, pos});
    EXPECT_EQ(walk.size(), (size_t)12);
    std::vector<int> inp(BT), tgt(BT), ei, et;
    for (size_t k = 0; k < walk.size(); k++) {
        dl.next_batch(inp.data(), tgt.data());
        expected_batch(shards[walk[k].first], walk[k].second, B, T, &ei, &et);
        if (!(inp == ei && tgt == et)) {
            testing::fail(__FILE__, __LINE__,
                          "batch " + std::to_string(k) + " (shard " + std::to_string(walk[k].first) +
                              ", offset " + std::to_string(walk[k].second) + ") differs");
            return;
        }
        EXPECT_EQ(dl.current_shard(), walk[k].first);
    }
    dl.reset();
    EXPECT_EQ(dl.current_shard(), (size_t)0);
    dl.next_batch(inp.data(), tgt.data());
    expected_batch(shards[0], 0, B, T, &ei, &et);
    EXPECT_TRUE(inp == ei && tgt == et);
}

// Data parallel + accumulation: micro-step k of rank r trains on rows [(k * ranks + r) * B, + B) of one
// global batch, so over all (k, r) the rows of one GPU's batch of B * micro * ranks rows are covered exactly
// once, in order, whatever the split (from shards: the same contiguous tokens).
TEST(global_batch_rows_partition_the_step) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(7);
    const int T = 5, V = 500;
    write_shard(dir.file("g_000000.bin"), random_tokens(10 * 24 * T + 1, V, rng));
    for (int B : {1, 3})
        for (int micro : {1, 2, 4})
            for (int ranks : {1, 2, 3}) {
                const int rows = B * micro * ranks;
                DataLoader one(dir.file("g_*.bin"), rows, T, V);  // the one-GPU, one-micro-step view
                std::vector<int> ei(rows * T), et(rows * T);
                one.next_batch(ei.data(), et.data());
                std::vector<int> seen(rows, 0);
                for (int r = 0; r < ranks; r++) {
                    DataLoader src(dir.file("g_*.bin"), rows, T, V);
                    GlobalBatch gb(B, T, micro, ranks, r);
                    EXPECT_EQ(gb.rows(), rows);
                    gb.next(&src);
                    for (int k = 0; k < micro; k++) {
                        const int first = (k * ranks + r) * B;
                        seen[first]++;
                        EXPECT_TRUE(
                            std::equal(gb.inputs_of(k), gb.inputs_of(k) + B * T, ei.begin() + first * T));
                        EXPECT_TRUE(
                            std::equal(gb.targets_of(k), gb.targets_of(k) + B * T, et.begin() + first * T));
                    }
                }
                for (int row = 0; row < rows; row += B) EXPECT_EQ(seen[row], 1);
            }
    bool threw = false;
    try {
        GlobalBatch bad(2, T, 1, 2, 2);  // rank outside [0, ranks)
    } catch (const DataError&) {
        threw = true;
    }
    EXPECT_TRUE(threw);
}

TEST(rank_striding_world_size_2) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(4);
    const int B = 2, T = 4, V = 300, BT = B * T, W = 2;
    // Shard 0: 5 batches' worth, so rank 0 reads offsets 0, 2BT, 4BT and rank 1 reads BT, 3BT (5BT would
    // need 6BT+1 tokens). Shard 1: exactly W*BT+1 tokens, one batch per rank.
    std::vector<std::vector<uint16_t>> shards = {random_tokens(5 * BT + 1, V, rng),
                                                 random_tokens(W * BT + 1, V, rng)};
    write_shard(dir.file("r_000.bin"), shards[0]);
    write_shard(dir.file("r_001.bin"), shards[1]);
    for (int rank = 0; rank < W; rank++) {
        DataLoader dl(dir.file("r_*.bin"), B, T, V, rank, W);
        std::vector<std::pair<size_t, size_t>> walk;
        for (int pass = 0; pass < 2; pass++)
            for (size_t s = 0; s < shards.size(); s++)
                for (size_t pos = (size_t)rank * BT; pos + BT + 1 <= shards[s].size(); pos += (size_t)W * BT)
                    walk.push_back({s, pos});
        EXPECT_EQ(walk.size(), (size_t)(rank == 0 ? 8 : 6));
        std::vector<int> inp(BT), tgt(BT), ei, et;
        for (size_t k = 0; k < walk.size(); k++) {
            dl.next_batch(inp.data(), tgt.data());
            expected_batch(shards[walk[k].first], walk[k].second, B, T, &ei, &et);
            if (!(inp == ei && tgt == et)) {
                testing::fail(__FILE__, __LINE__,
                              "rank " + std::to_string(rank) + " batch " + std::to_string(k) + " differs");
                return;
            }
        }
    }
    // The two ranks' first batches are disjoint consecutive slices.
    DataLoader r0(dir.file("r_*.bin"), B, T, V, 0, W), r1(dir.file("r_*.bin"), B, T, V, 1, W);
    std::vector<int> i0(BT), t0(BT), i1(BT), t1(BT);
    r0.next_batch(i0.data(), t0.data());
    r1.next_batch(i1.data(), t1.data());
    EXPECT_EQ(t0[BT - 1], i1[0]);  // rank 0's last target is rank 1's first input
}

TEST(random_tokens_deterministic_and_in_range) {
    const int B = 4, T = 64, V = 50304;
    RandomTokenSource a(B, T, V, 3985), b(B, T, V, 3985), c(B, T, V, 3986);
    std::vector<int> ia(B * T), ta(B * T), ib(B * T), tb(B * T), ic(B * T), tc(B * T);
    a.next_batch(ia.data(), ta.data());
    b.next_batch(ib.data(), tb.data());
    c.next_batch(ic.data(), tc.data());
    EXPECT_TRUE(ia == ib && ta == tb);
    EXPECT_TRUE(ia != ic);
    EXPECT_TRUE(ia != ta);  // inputs and targets are independent draws
    int lo = V, hi = -1;
    for (int x : ia) lo = std::min(lo, x), hi = std::max(hi, x);
    for (int x : ta) lo = std::min(lo, x), hi = std::max(hi, x);
    EXPECT_TRUE(lo >= 0 && hi < V);
    EXPECT_TRUE(hi > V * 9 / 10 && lo < V / 10);  // 512 uniform draws span the range
    a.next_batch(ib.data(), tb.data());
    EXPECT_TRUE(ib != ia);  // the stream advances
    a.reset();
    a.next_batch(ib.data(), tb.data());
    EXPECT_TRUE(ib == ia && tb == ta);
    // Mean of uniform [0, V) is (V-1)/2; with n = 2*B*T draws its standard error is V/sqrt(12 n) ~ 640.
    double mean = 0;
    for (int i = 0; i < B * T; i++) mean += ia[i] + ta[i];
    mean /= 2.0 * B * T;
    EXPECT_NEAR(mean, (V - 1) / 2.0, 5 * V / std::sqrt(12.0 * 2 * B * T));
}

TEST(make_token_source_dispatch) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(5);
    std::vector<uint16_t> shard = random_tokens(100, 256, rng);
    write_shard(dir.file("s.bin"), shard);
    auto file_src = make_token_source(dir.file("s.bin"), 2, 8, 256, 1);
    EXPECT_TRUE(dynamic_cast<DataLoader*>(file_src.get()) != nullptr);
    auto rand_src = make_token_source("random", 2, 8, 256, 1);
    EXPECT_TRUE(dynamic_cast<RandomTokenSource*>(rand_src.get()) != nullptr);
    std::vector<int> i1(16), t1(16), i2(16), t2(16);
    rand_src->next_batch(i1.data(), t1.data());
    RandomTokenSource same(2, 8, 256, 1);
    same.next_batch(i2.data(), t2.data());
    EXPECT_TRUE(i1 == i2 && t1 == t2);  // rank 0 uses the seed as is
}

TEST(error_no_match) {
    TempDir dir("host_dataloader");
    expect_data_error([&] { DataLoader dl(dir.file("nothing_*.bin"), 2, 4, 256); }, "nothing_*.bin",
                      "no file");
    expect_data_error([&] { DataLoader dl(dir.file("missing.bin"), 2, 4, 256); }, "missing.bin");
    expect_data_error([&] { make_token_source(dir.file("missing.bin"), 2, 4, 256, 0); }, "missing.bin");
    // A directory is not a shard.
    expect_data_error([&] { DataLoader dl(dir.path, 2, 4, 256); }, dir.path, "director");
}

TEST(error_wrong_magic) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(6);
    std::string path = dir.file("bad_magic.bin");
    write_shard(path, random_tokens(100, 256, rng));
    set_header_int(path, 0, 20240521);
    expect_data_error([&] { DataLoader dl(path, 2, 4, 256); }, "bad_magic.bin", "magic");
}

TEST(error_wrong_version) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(7);
    std::string path = dir.file("bad_version.bin");
    write_shard(path, random_tokens(100, 256, rng));
    set_header_int(path, 1, 2);
    expect_data_error([&] { DataLoader dl(path, 2, 4, 256); }, "bad_version.bin", "version");
}

TEST(error_truncated) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(8);
    // Tokens cut off.
    std::string path = dir.file("truncated.bin");
    write_shard(path, random_tokens(100, 256, rng));
    std::vector<char> bytes = read_file(path);
    bytes.resize(bytes.size() - 3);
    write_file(path, bytes);
    expect_data_error([&] { DataLoader dl(path, 2, 4, 256); }, "truncated.bin", "truncated");
    // Header cut off.
    std::string hpath = dir.file("short_header.bin");
    bytes.resize(100);
    write_file(hpath, bytes);
    expect_data_error([&] { DataLoader dl(hpath, 2, 4, 256); }, "short_header.bin", "truncated");
    // Longer than the header says.
    std::string lpath = dir.file("too_long.bin");
    write_shard(lpath, random_tokens(100, 256, rng));
    bytes = read_file(lpath);
    bytes.push_back(0);
    bytes.push_back(0);
    write_file(lpath, bytes);
    expect_data_error([&] { DataLoader dl(lpath, 2, 4, 256); }, "too_long.bin", "header says");
    // Empty file.
    std::string epath = dir.file("empty.bin");
    write_file(epath, {});
    expect_data_error([&] { DataLoader dl(epath, 2, 4, 256); }, "empty.bin");
}

TEST(error_too_few_tokens) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(9);
    const int B = 4, T = 8;
    std::string ok = dir.file("t_000.bin"), small = dir.file("t_001.bin");
    write_shard(ok, random_tokens(B * T + 1, 256, rng));  // exactly enough for one rank
    write_shard(small, random_tokens(B * T, 256, rng));   // one short
    { DataLoader dl(ok, B, T, 256); }                     // fine on its own
    expect_data_error([&] { DataLoader dl(dir.file("t_*.bin"), B, T, 256); }, "t_001.bin", "tokens");
    // With two ranks every shard needs 2*B*T+1 tokens.
    expect_data_error([&] { DataLoader dl(ok, B, T, 256, 1, 2); }, "t_000.bin", "world_size");
}

TEST(error_token_out_of_vocab) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(10);
    const int V = 256;
    std::vector<uint16_t> good = random_tokens(200, V, rng), bad = random_tokens(200, V, rng);
    bad[137] = V;  // exactly the vocabulary size: one too large
    write_shard(dir.file("v_000.bin"), good);
    write_shard(dir.file("v_001.bin"), bad);
    // First shard: checked when the loader starts.
    expect_data_error([&] { DataLoader dl(dir.file("v_001.bin"), 2, 4, V); }, "v_001.bin", "256");
    // Second shard: checked when the loader reaches it, before any of its batches are returned.
    DataLoader dl(dir.file("v_*.bin"), 2, 4, V);
    std::vector<int> inp(8), tgt(8);
    int batches = 0;
    expect_data_error(
        [&] {
            for (int k = 0; k < 100; k++, batches++) dl.next_batch(inp.data(), tgt.data());
        },
        "v_001.bin", "vocabulary");
    EXPECT_EQ(batches, (200 - 1) / 8);  // every batch of the good shard, then the error
    // With a larger vocabulary the same shard is fine.
    DataLoader ok(dir.file("v_*.bin"), 2, 4, V + 16);
}

TEST_MAIN()

// A source restored from position() continues with exactly the batches the original would have produced,
// across shard boundaries, for both source kinds; a position from other data is a DataError.
TEST(position_and_seek_continue_exactly) {
    TempDir dir("host_dataloader");
    std::mt19937_64 rng(std::random_device{}());
    const int B = 2, T = 7, V = 300, BT = B * T;
    write_shard(dir.file("p_000.bin"), random_tokens(3 * BT + 5, V, rng));
    write_shard(dir.file("p_001.bin"), random_tokens(2 * BT + 1, V, rng));
    for (std::string spec : {dir.file("p_*.bin"), std::string("random")}) {
        auto original = make_token_source(spec, B, T, V, 77);
        std::vector<int> inp(BT), tgt(BT), inp2(BT), tgt2(BT);
        const int before = 1 + (int)(rng() % 6);  // stop anywhere, incl. right at a shard boundary
        for (int k = 0; k < before; k++) original->next_batch(inp.data(), tgt.data());
        const TokenPosition p = original->position();
        auto resumed = make_token_source(spec, B, T, V, 77);
        resumed->seek(p);
        for (int k = 0; k < 8; k++) {
            original->next_batch(inp.data(), tgt.data());
            resumed->next_batch(inp2.data(), tgt2.data());
            if (inp != inp2 || tgt != tgt2) {
                testing::fail(__FILE__, __LINE__,
                              spec + ": batch " + std::to_string(k) + " after seek differs");
                break;
            }
        }
    }
    DataLoader dl(dir.file("p_*.bin"), B, T, V);
    expect_data_error([&] { dl.seek({5, 0}); }, dir.file("p_000.bin"), "shard 5");
    expect_data_error([&] { dl.seek({1, 1000000}); }, dir.file("p_000.bin"), "changed");
}
