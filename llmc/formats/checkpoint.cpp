#include "llmc/formats/checkpoint.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "llmc/formats/safetensors.h"

namespace {

constexpr const char* kFormat = "train_gpt-checkpoint";
constexpr const char* kVersion = "1";
constexpr const char* kPrefix = "ckpt_";
constexpr const char* kSuffix = ".safetensors";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw std::runtime_error(path + ": " + what);
}

std::string shape_string(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

// Parses a whole non-negative decimal integer that fits int64; false if anything else.
bool parse_int(const std::string& s, int64_t* out) {
    if (s.empty() || s.size() > 19) return false;
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        if (v > (INT64_MAX - (c - '0')) / 10) return false;  // would overflow
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

// Step of a checkpoint file name, or -1 if it is not one (temporary files end in ".tmp.<pid>").
int64_t step_of(const std::string& name) {
    const size_t p = strlen(kPrefix), s = strlen(kSuffix);
    if (name.size() <= p + s || name.compare(0, p, kPrefix) != 0 ||
        name.compare(name.size() - s, s, kSuffix) != 0)
        return -1;
    int64_t step;
    return parse_int(name.substr(p, name.size() - p - s), &step) ? step : -1;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int64_t step) {
    char name[64];
    snprintf(name, sizeof name, "%s%08lld%s", kPrefix, (long long)step, kSuffix);
    return dir + "/" + name;
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
    std::vector<std::pair<int64_t, std::string>> found;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            const int64_t step = step_of(e->d_name);
            if (step >= 0) found.push_back({step, dir + "/" + e->d_name});
        }
        closedir(d);
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::string> out;
    for (auto& f : found) out.push_back(f.second);
    return out;
}

void write_checkpoint(const std::string& dir, const CheckpointMeta& meta,
                      const std::vector<HostTensor>& tensors, int keep) {
    SafetensorsWriter w;
    for (const HostTensor& t : tensors) w.add(t.name, t.dtype, t.shape, t.data, t.bytes);
    w.set_metadata("format", kFormat);
    w.set_metadata("version", kVersion);
    w.set_metadata("step", std::to_string(meta.step));
    w.set_metadata("opt_step", std::to_string(meta.opt_step));
    w.set_metadata("train_data.a", std::to_string(meta.train_data.a));
    w.set_metadata("train_data.b", std::to_string(meta.train_data.b));
    w.set_metadata("fp8.calibrating", meta.fp8_calibrating ? "1" : "0");
    w.set_metadata("model", meta.model);
    w.set_metadata("recipe", meta.recipe);
    w.set_metadata("config", meta.config);
    const std::string path = checkpoint_path(dir, meta.step);
    w.write_atomic(path);
    // Only after the new one is complete: older checkpoints beyond `keep` go.
    std::vector<std::string> all = list_checkpoints(dir);
    for (size_t i = std::max(keep, 1); i < all.size(); i++)
        if (all[i] != path) std::remove(all[i].c_str());
}

namespace {

// The metadata of an open checkpoint, checked: ours, this version, the expected model and recipe, whole
// numbers where numbers belong.
CheckpointMeta checked_meta(const SafetensorsReader& r, const std::string& path,
                            const CheckpointMeta& expect) {
    auto meta_of = [&](const char* key) -> const std::string& {
        if (!r.has_metadata(key))
            fail(path, std::string("not a train_gpt checkpoint (no '") + key + "' entry)");
        return r.metadata(key);
    };
    if (meta_of("format") != kFormat) fail(path, "not a train_gpt checkpoint");
    if (meta_of("version") != kVersion)
        fail(path, "checkpoint version " + meta_of("version") + ", this build reads version " + kVersion);
    CheckpointMeta m;
    m.model = meta_of("model");
    m.recipe = meta_of("recipe");
    m.config = meta_of("config");
    if (m.model != expect.model)
        throw CheckpointMismatch(path + ": checkpoint of a different model (" + m.model + "), this run is " +
                                 expect.model);
    if (m.recipe != expect.recipe)
        throw CheckpointMismatch(path + ": checkpoint trained with '" + m.recipe + "', this run uses '" +
                                 expect.recipe +
                                 "' (pass the same --precision, FP8 and --adam-moments flags)");
    int64_t a = 0, b = 0, calibrating = 0;
    if (!parse_int(meta_of("step"), &m.step) || !parse_int(meta_of("opt_step"), &m.opt_step) ||
        !parse_int(meta_of("train_data.a"), &a) || !parse_int(meta_of("train_data.b"), &b) ||
        !parse_int(meta_of("fp8.calibrating"), &calibrating) || calibrating > 1 || m.opt_step > m.step)
        fail(path, "corrupt checkpoint metadata (step, opt_step, train_data or fp8.calibrating)");
    m.train_data = {(uint64_t)a, (uint64_t)b};
    m.fp8_calibrating = calibrating == 1;
    return m;
}

}  // namespace

CheckpointMeta read_checkpoint_meta(const std::string& path, const CheckpointMeta& expect) {
    return checked_meta(SafetensorsReader(path), path, expect);
}

CheckpointMeta read_checkpoint(const std::string& path, const CheckpointMeta& expect,
                               const std::vector<HostTensor>& tensors) {
    SafetensorsReader r(path);
    const CheckpointMeta m = checked_meta(r, path, expect);
    if (r.size() != tensors.size())
        fail(path, "has " + std::to_string(r.size()) + " tensors, this run's state has " +
                       std::to_string(tensors.size()));
    for (const HostTensor& t : tensors) {
        if (!r.has(t.name)) fail(path, "tensor '" + t.name + "' is missing");
        const SafeTensor& f = r.tensor(t.name);
        if (f.dtype != t.dtype || f.shape != t.shape)
            fail(path, "tensor '" + t.name + "' is " + f.dtype + " " + shape_string(f.shape) + ", expected " +
                           t.dtype + " " + shape_string(t.shape));
        r.read(t.name, t.data, t.bytes);  // verifies the checksum
    }
    return m;
}

std::string find_resumable_checkpoint(const std::string& dir, const CheckpointMeta& expect) {
    if (DIR* d = opendir(dir.c_str()))
        closedir(d);
    else
        throw std::runtime_error("--resume: cannot open the folder '" + dir + "': " + std::strerror(errno));
    const std::vector<std::string> all = list_checkpoints(dir);
    if (all.empty())
        throw std::runtime_error("--resume: no checkpoint (ckpt_*.safetensors) in '" + dir + "'");
    std::string last_error;
    for (const std::string& path : all) {
        try {
            read_checkpoint_meta(path, expect);
            return path;
        } catch (const CheckpointMismatch&) {
            throw;
        } catch (const std::runtime_error& e) {
            last_error = e.what();
        }
    }
    throw std::runtime_error("--resume: no valid checkpoint in '" + dir + "' (last: " + last_error + ")");
}

std::string latest_checkpoint_config(const std::string& dir) {
    for (const std::string& path : list_checkpoints(dir)) {
        try {
            SafetensorsReader r(path);
            if (r.has_metadata("format") && r.metadata("format") == kFormat && r.has_metadata("config"))
                return r.metadata("config");
        } catch (const std::runtime_error&) {
            // damaged or not ours: the next older one
        }
    }
    return "";
}

CheckpointMeta read_latest_checkpoint(const std::string& dir, const CheckpointMeta& expect,
                                      const std::vector<HostTensor>& tensors, std::string* path_out) {
    std::vector<std::string> all = list_checkpoints(dir);
    if (all.empty())
        throw std::runtime_error("--resume: no checkpoint (ckpt_*.safetensors) in '" + dir + "'");
    std::string last_error;
    for (const std::string& path : all) {
        try {
            CheckpointMeta m = read_checkpoint(path, expect, tensors);
            if (path_out) *path_out = path;
            return m;
        } catch (const CheckpointMismatch&) {
            throw;
        } catch (const std::runtime_error& e) {
            last_error = e.what();
            fprintf(stderr, "warning: skipping checkpoint: %s\n", e.what());
        }
    }
    throw std::runtime_error("--resume: no valid checkpoint in '" + dir + "' (last: " + last_error + ")");
}
