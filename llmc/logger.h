// Run logs: the resolved configuration (config.json) and one JSON record per line (train.jsonl) in the log
// directory. Host-only.
#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

class RunLogger {
  public:
    // Creates `log_dir` (and parents) and writes config.json; exits with a one-line error if it cannot.
    RunLogger(const std::string& log_dir, const std::string& config_json);
    ~RunLogger();
    RunLogger(const RunLogger&) = delete;
    RunLogger& operator=(const RunLogger&) = delete;
    // Appends {"kind": kind, key: value, ...} to train.jsonl and flushes (values are numbers).
    void record(const char* kind, const std::vector<std::pair<const char*, double>>& fields);
    const std::string& dir() const { return dir_; }

  private:
    std::string dir_;
    FILE* jsonl_ = nullptr;
};
