// See choice_cache.h. The file is only ever appended to, under an exclusive flock; readers take a shared one.
#include "llmc/host/choice_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "llmc/formats/file_checks.h"

namespace {

// Tabs and newlines would break the line format; anything else may appear in a fingerprint.
std::string clean(std::string s) {
    for (char& c : s)
        if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    return s;
}

std::string join_key(const std::vector<int64_t>& key) {
    std::ostringstream o;
    for (size_t i = 0; i < key.size(); i++) o << (i ? "," : "") << key[i];
    return o.str();
}

std::string join_value(const std::vector<uint64_t>& value) {
    std::ostringstream o;
    o << std::hex;
    for (size_t i = 0; i < value.size(); i++) o << (i ? "," : "") << value[i];
    return o.str();
}

bool parse_value(const std::string& text, std::vector<uint64_t>* value) {
    value->clear();
    std::istringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty() || item.size() > 16 ||
            item.find_first_not_of("0123456789abcdef") != std::string::npos)
            return false;
        value->push_back(std::strtoull(item.c_str(), nullptr, 16));
    }
    return !value->empty();
}

// The value of the line "fingerprint\tkey\t..." in `text`, if there is one that parses.
bool lookup(const std::string& text, const std::string& fingerprint, const std::string& key,
            std::vector<uint64_t>* value) {
    const std::string prefix = fingerprint + "\t" + key + "\t";
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.compare(0, prefix.size(), prefix) == 0 && parse_value(line.substr(prefix.size()), value))
            return true;
    return false;
}

std::string read_fd(int fd) {
    std::string text;
    char buf[65536];
    if (lseek(fd, 0, SEEK_SET) < 0) return text;
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, (size_t)n);
    return text;
}

// mkdir -p of the directory part of `path`.
bool make_parent_dirs(const std::string& path) {
    for (size_t i = 1; i < path.size(); i++)
        if (path[i] == '/') {
            const std::string dir = path.substr(0, i);
            if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return false;
        }
    return true;
}

}  // namespace

ChoiceCache::ChoiceCache(std::string path, std::string fingerprint)
    : path_(std::move(path)), fingerprint_(clean(std::move(fingerprint))) {}

bool ChoiceCache::find(const std::vector<int64_t>& key, std::vector<uint64_t>* value) const {
    if (path_.empty()) return false;
    std::string unused;
    const int fd = open_regular_file(path_, &unused);  // none yet, or a FIFO: nothing stored
    if (fd < 0) return false;
    flock(fd, LOCK_SH);
    const std::string text = read_fd(fd);
    close(fd);  // releases the lock
    return lookup(text, fingerprint_, join_key(key), value);
}

std::vector<uint64_t> ChoiceCache::publish(const std::vector<int64_t>& key,
                                           const std::vector<uint64_t>& value, std::string* error) {
    if (path_.empty()) return value;
    auto fail = [&](const char* what) {
        *error = std::string(what) + " " + path_ + ": " + std::strerror(errno);
        return value;
    };
    if (!make_parent_dirs(path_)) return fail("cannot create the directory of");
    // O_NONBLOCK: a FIFO is refused below, not read forever (a regular file ignores the flag)
    const int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) return fail("cannot open");
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        *error = "not a regular file: " + path_;
        return value;
    }
    flock(fd, LOCK_EX);
    std::vector<uint64_t> stored;
    const std::string k = join_key(key);
    if (lookup(read_fd(fd), fingerprint_, k, &stored)) {
        close(fd);
        return stored;
    }
    const std::string line = fingerprint_ + "\t" + k + "\t" + join_value(value) + "\n";
    const bool ok = write(fd, line.data(), line.size()) == (ssize_t)line.size();
    const int saved_errno = errno;
    close(fd);
    errno = saved_errno;
    return ok ? value : fail("cannot write");
}

std::string default_cache_path(const std::string& name) {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg == '/') return std::string(xdg) + "/train_gpt/" + name;
    const char* home = std::getenv("HOME");
    if (home && *home == '/') return std::string(home) + "/.cache/train_gpt/" + name;
    return "";
}
