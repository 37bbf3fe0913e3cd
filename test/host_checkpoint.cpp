// Host tests for llmc/formats/checkpoint: write/read round trip, keep-K pruning, newest-valid fallback with
// damaged files (truncated, flipped byte, garbage), and one-line errors for mismatched model/recipe/tensors.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "llmc/formats/checkpoint.h"
#include "llmc/formats/safetensors.h"
#include "test/temp_dir.h"
#include "test/testing.h"

using testing::error_of;

namespace {

using testing::TempDir;

// A small state: two tensors with random contents.
struct State {
    std::vector<float> a, b;
    explicit State(std::mt19937_64& rng) : a(6 * 5), b(7) {
        std::normal_distribution<float> d;
        for (float& x : a) x = d(rng);
        for (float& x : b) x = d(rng);
    }
    std::vector<HostTensor> views() {
        return {{"master.w", "F32", {6, 5}, a.data(), a.size() * 4},
                {"adam_m.w", "F32", {7}, b.data(), b.size() * 4}};
    }
};

CheckpointMeta meta_at(int64_t step) {
    CheckpointMeta m;
    m.step = step;
    m.opt_step = step - 1;
    m.train_data = {3, 4096 + (uint64_t)step};
    m.fp8_calibrating = false;
    m.model = "L=1 C=5 H=1 V=6 maxT=4 gelu=erf";
    m.recipe = "fp8 hybrid history=16 amax=max margin=0";
    m.config = "{}";
    return m;
}

std::vector<char> slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void spit(const std::string& p, const std::vector<char>& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), (std::streamsize)bytes.size());
}

}  // namespace

TEST(round_trip_and_keep_k) {
    TempDir dir("host_checkpoint");
    std::mt19937_64 rng(std::random_device{}());
    State s(rng);
    for (int64_t step : {10, 20, 30}) write_checkpoint(dir.path, meta_at(step), s.views(), 2);
    std::vector<std::string> all = list_checkpoints(dir.path);
    EXPECT_EQ(all.size(), (size_t)2);  // keep 2: step 10 deleted
    if (all.size() == 2) {
        EXPECT_TRUE(all[0] == checkpoint_path(dir.path, 30) && all[1] == checkpoint_path(dir.path, 20));
    }
    State t(rng);  // other contents, overwritten by the read
    std::string path;
    CheckpointMeta m = read_latest_checkpoint(dir.path, meta_at(0), t.views(), &path);
    EXPECT_TRUE(path == checkpoint_path(dir.path, 30));
    EXPECT_EQ(m.step, (int64_t)30);
    EXPECT_EQ(m.opt_step, (int64_t)29);
    EXPECT_EQ(m.train_data.a, (uint64_t)3);
    EXPECT_EQ(m.train_data.b, (uint64_t)4126);
    EXPECT_TRUE(memcmp(s.a.data(), t.a.data(), s.a.size() * 4) == 0 &&
                memcmp(s.b.data(), t.b.data(), 28) == 0);
}

TEST(damaged_newest_falls_back_to_previous) {
    TempDir dir("host_checkpoint");
    std::mt19937_64 rng(std::random_device{}());
    State s(rng);
    write_checkpoint(dir.path, meta_at(1), s.views(), 5);
    State s2(rng);
    write_checkpoint(dir.path, meta_at(2), s2.views(), 5);
    const std::string newest = checkpoint_path(dir.path, 2);
    std::vector<char> good = slurp(newest);
    // each kind of damage, one at a time: the previous checkpoint (step 1) is loaded instead
    std::vector<std::vector<char>> damaged = {std::vector<char>(good.begin(), good.begin() + good.size() / 2),
                                              good,
                                              std::vector<char>(100, 'x'),
                                              {}};
    damaged[1][good.size() - 3] ^= 0x40;  // a data byte: fails its crc32
    for (const auto& bytes : damaged) {
        spit(newest, bytes);
        State t(rng);
        std::string path;
        CheckpointMeta m = read_latest_checkpoint(dir.path, meta_at(0), t.views(), &path);
        EXPECT_EQ(m.step, (int64_t)1);
        EXPECT_TRUE(memcmp(s.a.data(), t.a.data(), s.a.size() * 4) == 0);
    }
    // nothing valid at all: one line naming the directory
    spit(checkpoint_path(dir.path, 1), std::vector<char>(10, 0));
    State t(rng);
    std::string e = error_of([&] { read_latest_checkpoint(dir.path, meta_at(0), t.views(), nullptr); });
    EXPECT_CONTAINS(e, "no valid checkpoint in '" + dir.path + "'");
    EXPECT_TRUE(e.find('\n') == std::string::npos);
}

TEST(stale_temporary_file_is_ignored) {
    TempDir dir("host_checkpoint");
    std::mt19937_64 rng(std::random_device{}());
    State s(rng);
    write_checkpoint(dir.path, meta_at(5), s.views(), 2);
    // what a kill -9 in the middle of a write leaves behind
    spit(checkpoint_path(dir.path, 6) + ".tmp.12345", std::vector<char>(1000, 'z'));
    EXPECT_EQ(list_checkpoints(dir.path).size(), (size_t)1);
    State t(rng);
    EXPECT_EQ(read_latest_checkpoint(dir.path, meta_at(0), t.views(), nullptr).step, (int64_t)5);
}

TEST(mismatches_are_one_line_errors) {
    TempDir dir("host_checkpoint");
    std::mt19937_64 rng(std::random_device{}());
    State s(rng);
    write_checkpoint(dir.path, meta_at(3), s.views(), 2);
    const std::string path = checkpoint_path(dir.path, 3);
    CheckpointMeta other = meta_at(0);
    other.model = "L=2 C=5 H=1 V=6 maxT=4 gelu=erf";
    std::string e = error_of([&] { read_latest_checkpoint(dir.path, other, s.views(), nullptr); });
    EXPECT_CONTAINS(e, path + ": checkpoint of a different model");
    other = meta_at(0);
    other.recipe = "bf16";
    e = error_of([&] { read_checkpoint(path, other, s.views()); });
    EXPECT_CONTAINS(e, "this run uses 'bf16'");
    std::vector<float> wrong(6 * 4);
    std::vector<HostTensor> v = s.views();
    v[0] = {"master.w", "F32", {6, 4}, wrong.data(), wrong.size() * 4};
    e = error_of([&] { read_checkpoint(path, meta_at(0), v); });
    EXPECT_CONTAINS(e, "tensor 'master.w' is F32 [6, 5], expected F32 [6, 4]");
    v = s.views();
    v[1].name = "adam_v.w";
    e = error_of([&] { read_checkpoint(path, meta_at(0), v); });
    EXPECT_CONTAINS(e, "tensor 'adam_v.w' is missing");
    for (const std::string& msg : {e}) EXPECT_TRUE(msg.find('\n') == std::string::npos);
    // a safetensors file that is not a checkpoint (e.g. a weights export)
    SafetensorsWriter w;
    w.add("master.w", "F32", {6, 5}, s.a.data(), s.a.size() * 4);
    w.write_atomic(dir.path + "/weights.safetensors");
    e = error_of([&] { read_checkpoint(dir.path + "/weights.safetensors", meta_at(0), v); });
    EXPECT_CONTAINS(e, "not a train_gpt checkpoint");
}

TEST(unwritable_directory_keeps_previous) {
    TempDir dir("host_checkpoint");
    std::mt19937_64 rng(std::random_device{}());
    State s(rng);
    write_checkpoint(dir.path, meta_at(1), s.views(), 2);
    // a directory where the new checkpoint's temporary file would go: the write fails like a full disk
    const std::string blocker = checkpoint_path(dir.path, 2) + ".tmp." + std::to_string((long)getpid());
    mkdir(blocker.c_str(), 0755);
    std::string e = error_of([&] { write_checkpoint(dir.path, meta_at(2), s.views(), 1); });
    EXPECT_TRUE(!e.empty() && e.find('\n') == std::string::npos);
    State t(rng);
    EXPECT_EQ(read_latest_checkpoint(dir.path, meta_at(0), t.views(), nullptr).step, (int64_t)1);
    // a directory that does not exist at all
    e = error_of([&] { write_checkpoint(dir.path + "/missing/sub", meta_at(2), s.views(), 1); });
    EXPECT_CONTAINS(e, "missing/sub");
}

TEST_MAIN()
