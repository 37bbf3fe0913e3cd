#include "llmc/host/logger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "llmc/formats/json.h"
#include "llmc/host/check.h"

std::string prepare_log_dir(const std::string& dir) { return prepare_writable_dir(dir, "log directory"); }

std::string prepare_writable_dir(const std::string& dir, const std::string& label) {
    const std::string what = label + " '" + dir + "': ";
    if (dir.empty()) return what + "empty path";
    // mkdir each prefix ending before a '/', then the whole path; existing ones are fine here, the stat
    // below finds a prefix that exists but is not a directory (mkdir then fails with ENOTDIR).
    for (size_t i = 1; i <= dir.size(); i++) {
        if (i < dir.size() && dir[i] != '/') continue;
        const std::string prefix = dir.substr(0, i);
        if (prefix.back() == '/') continue;  // "a//b"
        if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
            const int err = errno;
            if (err == ENOTDIR) {  // name the component that is a file
                for (size_t j = 1; j < i; j++) {
                    if (dir[j] != '/') continue;
                    struct stat st;
                    const std::string p = dir.substr(0, j);
                    if (stat(p.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
                        return what + "'" + p + "' is not a directory";
                }
            }
            return what + (prefix == dir ? std::string() : "cannot create '" + prefix + "': ") +
                   strerror(err);
        }
    }
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) return what + strerror(errno);
    if (!S_ISDIR(st.st_mode)) return what + "exists and is not a directory";
    // A directory can exist and still refuse files (permissions, read-only file system, quota).
    const std::string probe = dir + "/.train_gpt_probe." + std::to_string((long)getpid());
    const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return what + "cannot create a file in it: " + strerror(errno);
    close(fd);
    unlink(probe.c_str());
    return "";
}

std::string format_duration(double seconds) {
    if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
    const long s = std::lround(seconds);
    char buf[32];
    if (s < 60)
        snprintf(buf, sizeof buf, "%lds", s);
    else if (s < 3600)
        snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
    return buf;
}

double Eta::after_step(double now_s, int steps_left) {
    if (++steps_ == 1) first_end_s_ = now_s;
    const double per_step = steps_ == 1 ? now_s - start_s_ : (now_s - first_end_s_) / (steps_ - 1);
    return per_step * steps_left;
}

RunLogger::RunLogger(const std::string& log_dir, const std::string& config_json, bool append)
    : dir_(log_dir) {
    const std::string err = prepare_log_dir(dir_);
    if (!err.empty()) fatal("%s", err.c_str());
    std::string cfg_path = dir_ + "/config.json";
    FILE* f = fopen(cfg_path.c_str(), "w");
    if (!f) fatal("cannot write %s: %s", cfg_path.c_str(), strerror(errno));
    fputs(config_json.c_str(), f);
    fclose(f);
    std::string log_path = dir_ + "/train.jsonl";
    jsonl_ = fopen(log_path.c_str(), append ? "a" : "w");
    if (!jsonl_) fatal("cannot write %s: %s", log_path.c_str(), strerror(errno));
}

RunLogger::~RunLogger() {
    if (jsonl_) fclose(jsonl_);
}

void RunLogger::record(const char* kind, const std::vector<std::pair<const char*, double>>& fields) {
    if (!jsonl_) return;
    fprintf(jsonl_, "{\"kind\": \"%s\"", kind);
    for (const auto& kv : fields) {
        if (std::isfinite(kv.second))
            fprintf(jsonl_, ", \"%s\": %.9g", kv.first, kv.second);
        else
            fprintf(jsonl_, ", \"%s\": null", kv.first);
    }
    fprintf(jsonl_, "}\n");
    fflush(jsonl_);
}

void RunLogger::record_text(const char* kind, long step, const char* key, const std::string& text) {
    if (!jsonl_) return;
    fprintf(jsonl_, "{\"kind\": \"%s\", \"step\": %ld, \"%s\": %s}\n", kind, step, key,
            json::quote(text).c_str());
    fflush(jsonl_);
}
