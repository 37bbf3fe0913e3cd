// Host tests for llmc/host/logger: prepare_log_dir (create with parents, probe for writability, one-line
// errors on a path under a regular file or in an unwritable directory) and RunLogger's files.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "llmc/host/logger.h"
#include "test/temp_dir.h"
#include "test/testing.h"

// expr returns "" (success), else the test fails with the message.
#define EXPECT_OK(expr)                                                                          \
    do {                                                                                         \
        std::string m_ = (expr);                                                                 \
        if (!m_.empty()) testing::fail(__FILE__, __LINE__, std::string(#expr " failed: ") + m_); \
    } while (0)

namespace {

using testing::TempDir;

bool is_dir(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool write_file(const std::string& p, const std::string& text) {
    FILE* f = fopen(p.c_str(), "w");
    if (!f) return false;
    fputs(text.c_str(), f);
    return fclose(f) == 0;
}

// Entries of a directory other than . and .. (the probe file must not be left behind).
int count_entries(const std::string& dir) {
    std::string cmd = "ls -A '" + dir + "' | wc -l";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return -1;
    int n = -1;
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
    return n;
}

bool one_line(const std::string& msg) { return !msg.empty() && msg.find('\n') == std::string::npos; }

}  // namespace

TEST(prepare_log_dir_creates_parents) {
    TempDir t("host_logger");
    const std::string dir = t.path + "/a/b//c/";
    EXPECT_OK(prepare_log_dir(dir));
    EXPECT_TRUE(is_dir(t.path + "/a/b/c"));
    EXPECT_EQ(count_entries(t.path + "/a/b/c"), 0);  // the probe file is removed
    EXPECT_OK(prepare_log_dir(dir));                 // an existing directory is fine
    EXPECT_OK(prepare_log_dir(t.path + "/rel/../x"));
}

TEST(prepare_log_dir_under_a_regular_file) {
    TempDir t("host_logger");
    const std::string file = t.path + "/xyz_file";
    EXPECT_TRUE(write_file(file, "not a directory\n"));
    for (const std::string& dir : {file + "/sub", file + "/sub/deeper"}) {
        std::string msg = prepare_log_dir(dir);
        EXPECT_TRUE(one_line(msg));
        EXPECT_CONTAINS(msg, "log directory '" + dir + "': ");
        EXPECT_CONTAINS(msg, "'" + file + "' is not a directory");
    }
    // The path itself is a file.
    std::string msg = prepare_log_dir(file);
    EXPECT_TRUE(one_line(msg));
    EXPECT_CONTAINS(msg, "log directory '" + file + "': ");
    EXPECT_CONTAINS(msg, "not a directory");
    EXPECT_TRUE(testing::read_bytes(file) == "not a directory\n");  // untouched
}

TEST(prepare_log_dir_empty_path) {
    std::string msg = prepare_log_dir("");
    EXPECT_TRUE(one_line(msg));
    EXPECT_CONTAINS(msg, "log directory ''");
}

TEST(prepare_log_dir_unwritable) {
    if (geteuid() == 0) SKIP("running as root, which can write into any directory");
    TempDir t("host_logger");
    const std::string locked = t.path + "/locked";
    EXPECT_EQ(mkdir(locked.c_str(), 0755), 0);
    EXPECT_EQ(chmod(locked.c_str(), 0555), 0);
    // A directory that exists but refuses files.
    std::string msg = prepare_log_dir(locked);
    EXPECT_TRUE(one_line(msg));
    EXPECT_CONTAINS(msg, "log directory '" + locked + "': ");
    EXPECT_CONTAINS(msg, "Permission denied");
    // A directory to be created inside it.
    msg = prepare_log_dir(locked + "/run1/x");
    EXPECT_TRUE(one_line(msg));
    EXPECT_CONTAINS(msg, "log directory '" + locked + "/run1/x': cannot create '" + locked + "/run1'");
    EXPECT_CONTAINS(msg, "Permission denied");
    EXPECT_TRUE(!is_dir(locked + "/run1"));
}

TEST(run_logger_writes_config_and_records) {
    TempDir t("host_logger");
    const std::string dir = t.path + "/runs/one";
    {
        RunLogger logger(dir, "{\"x\": 1}\n");
        EXPECT_TRUE(logger.dir() == dir);
        logger.record("train", {{"step", 3}, {"loss", 1.5}});
    }
    EXPECT_TRUE(testing::read_bytes(dir + "/config.json") == "{\"x\": 1}\n");
    EXPECT_TRUE(testing::read_bytes(dir + "/train.jsonl") ==
                "{\"kind\": \"train\", \"step\": 3, \"loss\": 1.5}\n");
    EXPECT_EQ(count_entries(dir), 2);  // config.json, train.jsonl: no probe file left
}

TEST(format_duration_reads_as_time) {
    EXPECT_TRUE(format_duration(0) == "0s");
    EXPECT_TRUE(format_duration(42.4) == "42s");
    EXPECT_TRUE(format_duration(59.6) == "1m00s");
    EXPECT_TRUE(format_duration(725) == "12m05s");
    EXPECT_TRUE(format_duration(3 * 3600 + 2 * 60 + 29) == "3h02m");
    EXPECT_TRUE(format_duration(-1) == "?");
    EXPECT_TRUE(format_duration(NAN) == "?");
}

TEST(eta_from_the_steps_after_the_first) {
    Eta eta(100.0);
    EXPECT_NEAR(eta.after_step(130.0, 9), 9 * 30.0, 1e-9);  // only the (slow) first step so far
    EXPECT_NEAR(eta.after_step(132.0, 8), 8 * 2.0, 1e-9);   // then the steps after it
    EXPECT_NEAR(eta.after_step(136.0, 7), 7 * 3.0, 1e-9);   // (2 + 4) / 2 per step
    EXPECT_NEAR(eta.after_step(137.0, 0), 0.0, 1e-9);
}

TEST_MAIN()
