// What the fuzz targets of the file readers share: where their temporary files go, writing the input there,
// and reporting a finding (an invariant the reader broke: the target aborts, libFuzzer keeps the input).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

// /dev/shm when usable (tmpfs: each run rewrites the file, and disk I/O would dominate), else $TMPDIR or
// /tmp.
inline std::string fuzz_temp_dir() {
    if (access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
    const char* t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

// This process's temporary path for target `target`: DIR/fuzz_<target>_<pid><suffix>.
inline std::string fuzz_temp_path(const char* target, const char* suffix) {
    return fuzz_temp_dir() + "/fuzz_" + target + "_" + std::to_string(getpid()) + suffix;
}

// The input as the file `path` (created or truncated); a failure to write it stops the target.
inline void fuzz_write_file(const char* target, const std::string& path, const uint8_t* data, size_t size) {
    FILE* f = fopen(path.c_str(), "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        fprintf(stderr, "fuzz_%s: cannot write the temporary file %s: ", target, path.c_str());
        perror("");
        abort();
    }
}

[[noreturn]] inline void fuzz_finding(const char* target, const char* what) {
    fprintf(stderr, "fuzz_%s: invariant violated: %s\n", target, what);
    abort();
}
