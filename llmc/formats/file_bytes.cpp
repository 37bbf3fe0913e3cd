// Whole files as bytes (llmc/formats/file_bytes.h).
#include "llmc/formats/file_bytes.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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
