// Where the fuzz targets write their temporary files: /dev/shm when usable (tmpfs: each run rewrites the
// file, and disk I/O would dominate), else $TMPDIR or /tmp.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <string>

inline std::string fuzz_temp_dir() {
    if (access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
    const char* t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}
