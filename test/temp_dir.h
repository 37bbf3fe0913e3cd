// A fresh directory for one host test: $TMPDIR/<prefix>_XXXXXX ($TMPDIR unset or empty: /tmp), removed with
// everything in it by the destructor, including parts a test made unwritable or unreadable.
#pragma once
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace testing {

// Removes `p` and everything under it (symbolic links are removed, not followed), first giving the owner
// rwx on each directory. False if something could not be removed.
inline bool remove_tree(const std::string& p) {
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) return errno == ENOENT;
    if (!S_ISDIR(st.st_mode)) return unlink(p.c_str()) == 0;
    chmod(p.c_str(), st.st_mode | S_IRWXU);
    std::vector<std::string> names;  // read them all before removing any
    if (DIR* d = opendir(p.c_str())) {
        while (const dirent* e = readdir(d)) {
            const std::string name = e->d_name;
            if (name != "." && name != "..") names.push_back(name);
        }
        closedir(d);
    }
    bool ok = true;
    for (const std::string& name : names) ok = remove_tree(p + "/" + name) && ok;
    return rmdir(p.c_str()) == 0 && ok;
}

class TempDir {
  public:
    // Exits the test binary if the directory cannot be created.
    explicit TempDir(const std::string& prefix) {
        const char* base = getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "_XXXXXX";
        if (!mkdtemp(&tmpl[0])) {
            perror(("mkdtemp " + tmpl).c_str());
            exit(1);
        }
        path = tmpl;
    }
    ~TempDir() {
        if (!remove_tree(path)) fprintf(stderr, "warning: could not remove %s\n", path.c_str());
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string file(const std::string& name) const { return path + "/" + name; }

    std::string path;
};

// A whole file written from / read into bytes (tests; failures show up in the assertions that follow).
inline void write_bytes(const std::string& path, const std::string& data) {
    FILE* f = fopen(path.c_str(), "wb");
    if (!f) return;
    fwrite(data.data(), 1, data.size(), f);
    fclose(f);
}
inline std::string read_bytes(const std::string& path) {
    std::string out;
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    fclose(f);
    return out;
}

}  // namespace testing
