// Whole files as bytes (llmc/formats/file_bytes.h).
#include "llmc/formats/file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

std::string read_whole_file(const std::string& path, std::string* data) {
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return std::string("cannot open: ") + strerror(errno);
    data->clear();
    char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof(buf), f)) > 0) data->append(buf, got);
    const bool bad = ferror(f) != 0;
    const int err = errno;
    fclose(f);
    return bad ? std::string("read error: ") + strerror(err) : "";
}
