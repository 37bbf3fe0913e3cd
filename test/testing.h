// Minimal test harness shared by host tests (test/host_*.cpp), kernel tests (dev/test_*.cu) and model tests
// (test/gpu_*.cu). Each case prints one "[PASS] name", "[FAIL] name: why" or "[SKIP] name: why" line;
// scripts/run_tests.sh counts those lines. A binary exits 1 if any case failed.
#pragma once
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace testing {

struct Case {
    const char* name;
    std::function<void()> fn;
};
inline std::vector<Case>& registry() {
    static std::vector<Case> cases;
    return cases;
}
struct State {
    bool failed = false, skipped = false;
    std::string why;
};
inline State& state() {
    static State s;
    return s;
}
struct Register {
    Register(const char* name, std::function<void()> fn) { registry().push_back({name, std::move(fn)}); }
};

inline void fail(const char* file, int line, const std::string& msg) {
    if (!state().failed) state().why = std::string(file) + ":" + std::to_string(line) + ": " + msg;
    state().failed = true;
}

// Runs every registered case whose name contains `filter` (argv[1], optional).
inline int run_all(int argc, char** argv) {
    const char* filter = argc > 1 ? argv[1] : "";
    int failed = 0;
    for (const Case& c : registry()) {
        if (std::string(c.name).find(filter) == std::string::npos) continue;
        state() = State();
        c.fn();
        if (state().failed) {
            printf("[FAIL] %s: %s\n", c.name, state().why.c_str());
            failed++;
        } else if (state().skipped) {
            printf("[SKIP] %s: %s\n", c.name, state().why.c_str());
        } else {
            printf("[PASS] %s\n", c.name);
        }
        fflush(stdout);
    }
    return failed ? 1 : 0;
}

// Runs fn and returns the message of the std::runtime_error it throws ("" when it does not throw). Other
// exceptions propagate (and fail the test binary).
template <class Fn>
std::string error_of(Fn fn) {
    try {
        fn();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace testing

#define TEST_CONCAT2_(a, b) a##b
#define TEST_CONCAT_(a, b) TEST_CONCAT2_(a, b)
#define TEST(name)                                                       \
    static void name();                                                  \
    static testing::Register TEST_CONCAT_(register_, name)(#name, name); \
    static void name()

// Non-fatal expectations: record the first failure, keep going (return on your own if needed).
#define EXPECT_TRUE(cond)                                                  \
    do {                                                                   \
        if (!(cond)) testing::fail(__FILE__, __LINE__, "expected " #cond); \
    } while (0)
#define EXPECT_EQ(a, b)                                                                                    \
    do {                                                                                                   \
        auto va_ = (a);                                                                                    \
        auto vb_ = (b);                                                                                    \
        if (!(va_ == vb_))                                                                                 \
            testing::fail(                                                                                 \
                __FILE__, __LINE__,                                                                        \
                "expected " #a " == " #b " (" + std::to_string(va_) + " vs " + std::to_string(vb_) + ")"); \
    } while (0)
#define EXPECT_NEAR(a, b, tol)                                                                        \
    do {                                                                                              \
        double va_ = (a), vb_ = (b);                                                                  \
        if (!(std::fabs(va_ - vb_) <= (tol)))                                                         \
            testing::fail(__FILE__, __LINE__,                                                         \
                          "expected |" #a " - " #b "| <= " #tol " (" + std::to_string(va_) + " vs " + \
                              std::to_string(vb_) + ")");                                             \
    } while (0)
#define EXPECT_CONTAINS(haystack, needle)                                                           \
    do {                                                                                            \
        std::string h_ = (haystack), n_ = (needle);                                                 \
        if (h_.find(n_) == std::string::npos)                                                       \
            testing::fail(__FILE__, __LINE__, "expected \"" + h_ + "\" to contain \"" + n_ + "\""); \
    } while (0)
#define SKIP(msg)                        \
    do {                                 \
        testing::state().skipped = true; \
        testing::state().why = (msg);    \
        return;                          \
    } while (0)

#define TEST_MAIN() \
    int main(int argc, char** argv) { return testing::run_all(argc, argv); }
