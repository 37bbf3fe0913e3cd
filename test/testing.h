// The one test harness of the repository: host tests (test/host_*.cpp), kernel tests and benchmarks
// (dev/test_*.cu) and model tests (test/gpu_*.cu) register into the same registry and share one main().
//   TEST(name) { ... }    a test: prints one "[PASS] name", "[FAIL] name: why" or "[SKIP] name: why" line,
//                         which scripts/run_tests.sh counts; the binary exits 1 if any test failed.
//   BENCH(name) { ... }   a benchmark (dev/bench.h): timings only, asserts nothing, never counted as a test.
// TEST_MAIN() is the binary's main:
//   BIN [filter]          the tests whose name contains filter (all by default)
//   BIN --bench [filter]  the benchmarks only
//   BIN --list            the registered names, "test NAME" / "bench NAME", one a line; runs nothing (so the
//                         tests of a GPU binary can be counted on any machine)
// Comparing numbers (error measures, bitwise equality, format tolerances): test/numeric.h.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace testing {

enum class Kind { Test, Bench };
struct Case {
    const char* name;
    Kind kind;
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
    Register(const char* name, std::function<void()> fn, Kind kind = Kind::Test) {
        registry().push_back({name, kind, std::move(fn)});
    }
};

inline void fail(const char* file, int line, const std::string& msg) {
    if (!state().failed) state().why = std::string(file) + ":" + std::to_string(line) + ": " + msg;
    state().failed = true;
}

inline bool matches(const Case& c, Kind kind, const char* filter) {
    return c.kind == kind && std::string(c.name).find(filter) != std::string::npos;
}

// Runs every test whose name contains `filter`; 1 if any failed.
inline int run_tests(const char* filter) {
    int failed = 0;
    for (const Case& c : registry()) {
        if (!matches(c, Kind::Test, filter)) continue;
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

// Runs every benchmark whose name contains `filter` (progress on stderr; a benchmark that cannot run exits
// the binary with status 1 itself, see dev/bench.h).
inline int run_benchmarks(const char* filter) {
    for (const Case& c : registry()) {
        if (!matches(c, Kind::Bench, filter)) continue;
        fprintf(stderr, "bench: %s\n", c.name);
        c.fn();
    }
    return 0;
}

inline int run_all(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (const Case& c : registry()) printf("%s %s\n", c.kind == Kind::Test ? "test" : "bench", c.name);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) return run_benchmarks(argc > 2 ? argv[2] : "");
    return run_tests(argc > 1 ? argv[1] : "");
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
