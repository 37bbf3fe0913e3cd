// Host tests for llmc/host/choice_cache: a stored choice is found again by a fresh reader, the first writer
// of a key wins (a second publisher adopts the stored value), fingerprints keep GPUs/library versions apart,
// broken lines are ignored, and an unwritable location is a one-line error that leaves the value usable.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "llmc/host/choice_cache.h"
#include "test/temp_dir.h"
#include "test/testing.h"

namespace {

using testing::TempDir;

std::vector<uint64_t> random_value(std::mt19937_64& rng, int n) {
    std::vector<uint64_t> v(n);
    for (auto& x : v) x = rng();
    return v;
}

}  // namespace

TEST(stored_choice_is_found_by_another_reader) {
    TempDir dir("choice_cache");
    std::mt19937_64 rng(std::random_device{}());
    const std::vector<int64_t> key = {(int64_t)(rng() % 1000), -7, 1600, 6400};
    const std::vector<uint64_t> value = random_value(rng, 9);
    std::string error;
    ChoiceCache writer(dir.file("sub/dir/algos.tsv"), "H200 132 SMs cublasLt 130000");
    EXPECT_TRUE(writer.publish(key, value, &error) == value);
    EXPECT_TRUE(error.empty());
    std::vector<uint64_t> got;
    ChoiceCache reader(dir.file("sub/dir/algos.tsv"), "H200 132 SMs cublasLt 130000");
    EXPECT_TRUE(reader.find(key, &got));
    EXPECT_TRUE(got == value);
    std::vector<int64_t> other = key;
    other[1] = -8;
    EXPECT_TRUE(!reader.find(other, &got));
}

TEST(first_writer_wins) {
    TempDir dir("choice_cache");
    std::mt19937_64 rng(std::random_device{}());
    const std::vector<int64_t> key = {1, 2, 3};
    const std::vector<uint64_t> first = random_value(rng, 4), second = random_value(rng, 4);
    std::string error;
    ChoiceCache a(dir.file("c.tsv"), "gpu"), b(dir.file("c.tsv"), "gpu");
    EXPECT_TRUE(a.publish(key, first, &error) == first);
    EXPECT_TRUE(b.publish(key, second, &error) == first);  // b adopts a's choice
    std::vector<uint64_t> got;
    EXPECT_TRUE(b.find(key, &got) && got == first);
    EXPECT_TRUE(error.empty());
}

TEST(concurrent_publishers_agree) {
    // Several processes publish different values for the same keys at once: every one must end up with the
    // value stored first, and the file must hold one line per key.
    TempDir dir("choice_cache");
    const std::string path = dir.file("c.tsv");
    const int kProcs = 6, kKeys = 20;
    for (int p = 0; p < kProcs; p++) {
        if (fork() == 0) {
            ChoiceCache c(path, "gpu");
            std::string error;
            for (int k = 0; k < kKeys; k++) {
                std::vector<uint64_t> stored = c.publish({k}, {(uint64_t)p + 1, (uint64_t)k}, &error);
                std::vector<uint64_t> again;
                if (!error.empty() || !c.find({k}, &again) || again != stored) _exit(1);
            }
            _exit(0);
        }
    }
    for (int p = 0; p < kProcs; p++) {
        int status = 0;
        wait(&status);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    const std::string text = testing::read_bytes(path);
    int lines = 0;
    for (char ch : text) lines += ch == '\n';
    EXPECT_EQ(lines, kKeys);
}

TEST(fingerprints_and_broken_lines_are_kept_apart) {
    TempDir dir("choice_cache");
    const std::string path = dir.file("c.tsv");
    testing::write_bytes(path,
                         "gpu A\t5\tzz\n"      // value not hex: ignored
                         "gpu A\t5\n"          // no value: ignored
                         "gpu B\t5\tabc\n"     // another fingerprint
                         "gpu A\t5\t1f,2\n");  // the valid line for gpu A
    std::vector<uint64_t> got;
    ChoiceCache a(path, "gpu A"), b(path, "gpu B"), c(path, "gpu C");
    EXPECT_TRUE(a.find({5}, &got) && got == std::vector<uint64_t>({0x1f, 2}));
    EXPECT_TRUE(b.find({5}, &got) && got == std::vector<uint64_t>({0xabc}));
    EXPECT_TRUE(!c.find({5}, &got));
    ChoiceCache tabbed(path, "gpu\tA");  // a tab in the fingerprint must not forge another field
    EXPECT_TRUE(!tabbed.find({5}, &got) || got == std::vector<uint64_t>({0x1f, 2}));
}

TEST(unwritable_location_is_a_one_line_error) {
    if (geteuid() == 0) SKIP("running as root: permissions are not enforced");
    TempDir dir("choice_cache");
    mkdir(dir.file("ro").c_str(), 0555);
    ChoiceCache c(dir.file("ro/x/c.tsv"), "gpu");
    std::string error;
    const std::vector<uint64_t> value = {42};
    EXPECT_TRUE(c.publish({1}, value, &error) == value);
    EXPECT_CONTAINS(error, "ro/x");
    EXPECT_TRUE(error.find('\n') == std::string::npos);
    std::vector<uint64_t> got;
    EXPECT_TRUE(!c.find({1}, &got));
}

// A FIFO named as the cache: nothing found and a one-line error, at once (alarm: a reader that waits on the
// FIFO kills the test instead of hanging it).
TEST(a_fifo_is_no_cache_and_no_hang) {
    TempDir dir("choice_cache");
    const std::string path = dir.file("fifo.tsv");
    EXPECT_EQ(mkfifo(path.c_str(), 0644), 0);
    alarm(10);
    ChoiceCache c(path, "gpu");
    std::vector<uint64_t> got;
    EXPECT_TRUE(!c.find({1}, &got));
    std::string error;
    EXPECT_TRUE(c.publish({1}, {7}, &error) == std::vector<uint64_t>({7}));
    alarm(0);
    EXPECT_TRUE(error == "not a regular file: " + path);
}

TEST(no_path_means_no_cache) {
    ChoiceCache c("", "gpu");
    std::string error;
    EXPECT_TRUE(c.publish({1}, {7}, &error) == std::vector<uint64_t>({7}));
    std::vector<uint64_t> got;
    EXPECT_TRUE(!c.find({1}, &got));
    EXPECT_TRUE(error.empty());
}

TEST_MAIN()
