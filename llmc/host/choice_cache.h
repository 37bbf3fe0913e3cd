// A small on-disk table of tuned choices that several processes share (the GEMM algorithms the trainer timed,
// llmc/kernels/gemm/matmul.cu): one text line per choice, "fingerprint<TAB>key<TAB>value", integers in
// decimal (key) and hex (value). The fingerprint names what a choice is valid for (GPU, library versions);
// lines of another fingerprint are kept but never returned. The first writer of a key wins: a process that
// tuned a key another process stored meanwhile adopts the stored value, so runs that share the file make the
// same choices (bitwise-reproducible training across processes). Reads and writes hold a flock on the file.
// Lines that do not parse are ignored. Host-only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

class ChoiceCache {
  public:
    // path "": nothing is read or written (every find() misses, publish() returns its value).
    ChoiceCache(std::string path, std::string fingerprint);

    // The value stored for key under this fingerprint, read from the file now.
    bool find(const std::vector<int64_t>& key, std::vector<uint64_t>* value) const;
    // Stores key -> value unless the file already holds key (then returns that value instead). On an error
    // (directory not creatable, file not writable) returns `value` and sets *error to a one-line reason.
    std::vector<uint64_t> publish(const std::vector<int64_t>& key, const std::vector<uint64_t>& value,
                                  std::string* error);

    const std::string& path() const { return path_; }

  private:
    std::string path_, fingerprint_;
};

// $XDG_CACHE_HOME/train_gpt/NAME, else $HOME/.cache/train_gpt/NAME, else "" (no home: no cache).
std::string default_cache_path(const std::string& name);
