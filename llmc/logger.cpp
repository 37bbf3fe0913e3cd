#include "llmc/logger.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "llmc/check.h"

static void make_dirs(const std::string& path) {
    std::string partial;
    for (size_t i = 0; i <= path.size(); i++) {
        if (i == path.size() || path[i] == '/') {
            if (!partial.empty() && mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
                fatal("cannot create log directory %s: %s", partial.c_str(), strerror(errno));
        }
        if (i < path.size()) partial += path[i];
    }
}

RunLogger::RunLogger(const std::string& log_dir, const std::string& config_json) : dir_(log_dir) {
    make_dirs(dir_);
    std::string cfg_path = dir_ + "/config.json";
    FILE* f = fopen(cfg_path.c_str(), "w");
    if (!f) fatal("cannot write %s: %s", cfg_path.c_str(), strerror(errno));
    fputs(config_json.c_str(), f);
    fclose(f);
    std::string log_path = dir_ + "/train.jsonl";
    jsonl_ = fopen(log_path.c_str(), "w");
    if (!jsonl_) fatal("cannot write %s: %s", log_path.c_str(), strerror(errno));
}

RunLogger::~RunLogger() {
    if (jsonl_) fclose(jsonl_);
}

void RunLogger::record(const char* kind, const std::vector<std::pair<const char*, double>>& fields) {
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
