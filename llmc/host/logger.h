// Run logs: the resolved configuration (config.json) and one JSON record per line (train.jsonl) in the log
// directory. Host-only.
#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

// Creates `dir` and its parents if needed, then checks that a file can be created there (a probe file is
// created and removed). Returns "" on success, else one line without a trailing newline, e.g.
// "log directory 'runs/a': cannot create 'runs': Permission denied". Call it before any GPU work so that a
// bad --log-dir is reported at once; RunLogger calls it too.
std::string prepare_log_dir(const std::string& dir);
// The same for any directory the run writes to; `label` starts the message ("checkpoint directory").
std::string prepare_writable_dir(const std::string& dir, const std::string& label);

// "42s", "12m05s", "3h02m" (seconds rounded; "?" for a negative or non-finite value).
std::string format_duration(double seconds);

// Time left at the current rate, for the step line: wall time per step since the end of the run's first step
// (which also builds the library plans, so it would overstate the rest) times the steps left; until a second
// step has run, the first step's time stands in. Validation, samples and checkpoints count: it is the time
// a person waits.
class Eta {
  public:
    explicit Eta(double start_s) : start_s_(start_s) {}
    // After a step, at wall time now_s (seconds, any fixed origin): the seconds the `steps_left` steps take.
    double after_step(double now_s, int steps_left);

  private:
    double start_s_, first_end_s_ = 0;
    int steps_ = 0;
};

class RunLogger {
  public:
    // prepare_log_dir(log_dir), then writes config.json; exits with a one-line error if either fails.
    // append: a resumed run adds to train.jsonl instead of starting it anew.
    RunLogger(const std::string& log_dir, const std::string& config_json, bool append = false);
    // A logger that records nothing (ranks other than 0 of a multi-GPU run).
    RunLogger() = default;
    ~RunLogger();
    RunLogger(const RunLogger&) = delete;
    RunLogger& operator=(const RunLogger&) = delete;
    // Appends {"kind": kind, key: value, ...} to train.jsonl and flushes (values are numbers).
    void record(const char* kind, const std::vector<std::pair<const char*, double>>& fields);
    // Appends {"kind": kind, "step": step, key: "text"} (the text JSON-escaped).
    void record_text(const char* kind, long step, const char* key, const std::string& text);
    const std::string& dir() const { return dir_; }

  private:
    std::string dir_;
    FILE* jsonl_ = nullptr;
};
