// Whole files as bytes (llmc/formats/file_bytes.h).
#include "llmc/formats/file_bytes.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "llmc/formats/file_checks.h"

std::string read_whole_file(const std::string& path, std::string* data) {
    std::string error;
    const int fd = open_regular_file(path, &error);
    if (fd < 0) return error;
    FILE* f = fdopen(fd, "rb");
    if (!f) {
        const int err = errno;
        close(fd);
        return std::string("cannot open: ") + strerror(err);
    }
    data->clear();
    char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof(buf), f)) > 0) data->append(buf, got);
    const bool bad = ferror(f) != 0;
    const int err = errno;
    fclose(f);
    return bad ? std::string("read error: ") + strerror(err) : "";
}

namespace {

[[noreturn]] void io_fail(const std::string& path, const std::string& what, int err) {
    throw std::runtime_error(path + ": " + what + ": " + std::strerror(err));
}

std::string folder_of(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void write_file_atomic(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts) {
    const std::string tmp = path + ".tmp." + std::to_string((long)getpid());
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) io_fail(path, "cannot create " + tmp, errno);
    for (const auto& part : parts) {
        const char* p = static_cast<const char*>(part.first);
        for (size_t done = 0; done < part.second;) {
            const ssize_t w = write(fd, p + done, part.second - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                const int err = w < 0 ? errno : EIO;
                close(fd);
                unlink(tmp.c_str());
                io_fail(path, "writing " + tmp, err);
            }
            done += (size_t)w;
        }
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        const int err = errno;
        unlink(tmp.c_str());
        io_fail(path, "fsync/close of " + tmp, err);
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        unlink(tmp.c_str());
        io_fail(path, "renaming " + tmp + " over it", err);
    }
    const int dfd = open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}
