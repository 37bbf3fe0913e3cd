#include "llmc/formats/dataloader.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "llmc/formats/file_checks.h"

namespace {

[[noreturn]] void data_error(const std::string& path, const std::string& what) {
    throw DataError("data file '" + path + "': " + what);
}

// Owns a FILE*; closes it on every exit path (including throws). Read: only a regular file (a FIFO is
// refused, not waited on).
struct File {
    FILE* f = nullptr;
    std::string error;                                                                 // why f is null
    File(const std::string& path, const char* mode) : f(fopen(path.c_str(), mode)) {}  // for writing
    explicit File(const std::string& path) {                                           // for reading
        const int fd = open_regular_file(path, &error);
        if (fd >= 0 && !(f = fdopen(fd, "rb"))) {
            error = std::string("cannot open: ") + std::strerror(errno);
            close(fd);
        }
    }
    ~File() {
        if (f) fclose(f);
    }
    File(const File&) = delete;
    File& operator=(const File&) = delete;
};

std::vector<std::string> glob_files(const std::string& pattern) {
    if (pattern.empty()) throw DataError("data: empty file pattern");
    glob_t g;
    std::memset(&g, 0, sizeof(g));
    int rc = glob(pattern.c_str(), GLOB_MARK, nullptr, &g);
    std::vector<std::string> files, dirs;
    if (rc == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            std::string p = g.gl_pathv[i];
            (!p.empty() && p.back() == '/' ? dirs : files).push_back(p);  // GLOB_MARK flags directories
        }
    }
    globfree(&g);
    if (rc == GLOB_NOSPACE) throw DataError("data: out of memory expanding '" + pattern + "'");
    if (rc == GLOB_ABORTED) throw DataError("data: read error expanding '" + pattern + "'");
    if (files.empty() && !dirs.empty())
        throw DataError("data: '" + pattern + "' matches only directories (" + dirs[0] +
                        "...); expected shard files, e.g. '" + dirs[0] + "*.bin'");
    if (files.empty())
        throw DataError("data: no file matches '" + pattern + "' (expected llm.c token shards, e.g. from " +
                        "scripts/data/prepare_data.py)");
    std::sort(files.begin(), files.end());  // byte order, independent of the locale
    return files;
}

// Validates the header and the file size of one shard; returns its token count.
size_t check_header(const std::string& path, const File& file) {
    if (!file.f) data_error(path, file.error);
    FILE* f = file.f;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) data_error(path, std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) data_error(path, "not a regular file");
    const size_t header_bytes = kShardHeaderInts * sizeof(int32_t);
    if ((size_t)st.st_size < header_bytes)
        data_error(path, "truncated: " + std::to_string(st.st_size) + " bytes, shorter than the " +
                             std::to_string(header_bytes) + "-byte header");
    int32_t header[kShardHeaderInts];
    if (fread(header, sizeof(int32_t), kShardHeaderInts, f) != (size_t)kShardHeaderInts)
        data_error(path, std::string("cannot read the header: ") + std::strerror(errno));
    if (header[0] != kShardMagic)
        data_error(path, "bad magic number " + std::to_string(header[0]) + " (expected " +
                             std::to_string(kShardMagic) + "; not an llm.c token shard?)");
    if (header[1] != kShardVersion)
        data_error(path, "unsupported version " + std::to_string(header[1]) + " (expected " +
                             std::to_string(kShardVersion) + ": uint16 tokens)");
    if (header[2] <= 0)
        data_error(path, "header token count " + std::to_string(header[2]) + " is not positive");
    size_t n = (size_t)header[2];
    size_t expect = header_bytes + n * sizeof(uint16_t);
    if ((size_t)st.st_size != expect)
        data_error(path, std::string((size_t)st.st_size < expect ? "truncated" : "too long") + ": " +
                             std::to_string(st.st_size) + " bytes but the header says " + std::to_string(n) +
                             " tokens (" + std::to_string(expect) + " bytes)");
    return n;
}

}  // namespace

DataLoader::DataLoader(const std::string& glob_pattern, int B, int T, int vocab_size, int rank,
                       int world_size)
    : B_(B), T_(T), vocab_size_(vocab_size), rank_(rank), world_size_(world_size) {
    if (B <= 0 || T <= 0 || vocab_size <= 0 || world_size <= 0 || rank < 0 || rank >= world_size)
        throw DataError("data: bad loader arguments B=" + std::to_string(B) + " T=" + std::to_string(T) +
                        " V=" + std::to_string(vocab_size) + " rank=" + std::to_string(rank) +
                        " world_size=" + std::to_string(world_size));
    files_ = glob_files(glob_pattern);
    const size_t need = (size_t)world_size_ * B_ * T_ + 1;
    for (const std::string& path : files_) {
        File file(path);
        size_t n = check_header(path, file);
        if (n < need)
            data_error(path, "only " + std::to_string(n) + " tokens, need at least " + std::to_string(need) +
                                 " (world_size*B*T+1 with B=" + std::to_string(B_) + ", T=" +
                                 std::to_string(T_) + ", world_size=" + std::to_string(world_size_) + ")");
        shard_sizes_.push_back(n);
    }
    load_shard(0);
    pos_ = (size_t)rank_ * B_ * T_;
}

size_t DataLoader::total_tokens() const {
    size_t total = 0;
    for (size_t n : shard_sizes_) total += n;
    return total;
}

void DataLoader::load_shard(size_t index) {
    const std::string& path = files_[index];
    File file(path);
    size_t n = check_header(path, file);  // again: the file may have changed since the constructor
    if (n != shard_sizes_[index])
        data_error(path, "changed while training: " + std::to_string(n) + " tokens, was " +
                             std::to_string(shard_sizes_[index]));
    tokens_.resize(n);
    if (fread(tokens_.data(), sizeof(uint16_t), n, file.f) != n)
        data_error(path,
                   std::string("short read: ") + (ferror(file.f) ? std::strerror(errno) : "end of file"));
    for (size_t i = 0; i < n; i++) {
        if (tokens_[i] >= vocab_size_)
            data_error(path, "token id " + std::to_string(tokens_[i]) + " at token " + std::to_string(i) +
                                 " is >= the vocabulary size " + std::to_string(vocab_size_) +
                                 " (pass a larger --vocab or re-tokenize)");
    }
    shard_ = index;
}

void DataLoader::next_batch(int* inputs_BT, int* targets_BT) {
    const size_t BT = (size_t)B_ * T_;
    if (pos_ + BT + 1 > tokens_.size()) {
        size_t next = (shard_ + 1) % files_.size();
        if (next != shard_) load_shard(next);  // a single shard is simply reread from its start
        pos_ = (size_t)rank_ * BT;
    }
    const uint16_t* src = tokens_.data() + pos_;
    for (size_t i = 0; i < BT; i++) {
        inputs_BT[i] = src[i];
        targets_BT[i] = src[i + 1];
    }
    pos_ += (size_t)world_size_ * BT;
}

void DataLoader::reset() {
    if (shard_ != 0) load_shard(0);
    pos_ = (size_t)rank_ * B_ * T_;
}

void DataLoader::seek(const TokenPosition& p) {
    if (p.a >= files_.size() || p.b > shard_sizes_[p.a])
        throw DataError("data position (shard " + std::to_string(p.a) + ", token " + std::to_string(p.b) +
                        ") does not exist in '" + files_[0] + "' and the " + std::to_string(files_.size()) +
                        " shards matching it: was the data changed since the checkpoint?");
    if (p.a != shard_) load_shard(p.a);
    pos_ = p.b;
}

RandomTokenSource::RandomTokenSource(int B, int T, int V, uint64_t seed)
    : B_(B), T_(T), V_(V), seed_(seed), rng_(seed) {
    if (B <= 0 || T <= 0 || V <= 0)
        throw DataError("random tokens: bad arguments B=" + std::to_string(B) + " T=" + std::to_string(T) +
                        " V=" + std::to_string(V));
}

void RandomTokenSource::next_batch(int* inputs_BT, int* targets_BT) {
    // Multiply-shift maps a 64-bit draw onto [0, V) identically on every standard library (unlike
    // std::uniform_int_distribution); the bias is below V / 2^64.
    auto draw = [&]() { return (int)(((unsigned __int128)rng_() * (uint64_t)V_) >> 64); };
    const size_t BT = (size_t)B_ * T_;
    for (size_t i = 0; i < BT; i++) inputs_BT[i] = draw();
    for (size_t i = 0; i < BT; i++) targets_BT[i] = draw();
    batches_++;
}

void RandomTokenSource::reset() {
    rng_.seed(seed_);
    batches_ = 0;
}

void RandomTokenSource::seek(const TokenPosition& p) {
    reset();
    rng_.discard(p.a * 2 * (uint64_t)B_ * T_);  // two draws per token: input and target
    batches_ = p.a;
}

std::unique_ptr<TokenSource> make_token_source(const std::string& spec, int B, int T, int vocab_size,
                                               uint64_t seed, int rank, int world_size) {
    if (spec == "random")
        return std::make_unique<RandomTokenSource>(B, T, vocab_size,
                                                   seed + 0x9E3779B97F4A7C15ull * (uint64_t)rank);
    return std::make_unique<DataLoader>(spec, B, T, vocab_size, rank, world_size);
}

void write_shard(const std::string& path, const std::vector<uint16_t>& tokens) {
    if (tokens.empty() || tokens.size() > (size_t)INT32_MAX)
        data_error(path, "cannot write a shard of " + std::to_string(tokens.size()) + " tokens");
    int32_t header[kShardHeaderInts] = {};
    header[0] = kShardMagic;
    header[1] = kShardVersion;
    header[2] = (int32_t)tokens.size();
    const std::string tmp = path + ".tmp";
    {
        File file(tmp, "wb");
        if (!file.f) data_error(tmp, std::string("cannot create: ") + std::strerror(errno));
        bool ok = fwrite(header, sizeof(int32_t), kShardHeaderInts, file.f) == (size_t)kShardHeaderInts &&
                  fwrite(tokens.data(), sizeof(uint16_t), tokens.size(), file.f) == tokens.size();
        ok = (fflush(file.f) == 0) && ok;
        if (!ok) {
            std::string why = std::strerror(errno);
            std::remove(tmp.c_str());
            data_error(tmp, "write failed: " + why);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        data_error(path, "cannot rename from " + tmp + ": " + why);
    }
}

GlobalBatch::GlobalBatch(int B, int T, int micro_steps, int ranks, int rank)
    : B_(B),
      T_(T),
      micro_steps_(micro_steps),
      ranks_(ranks),
      rank_(rank),
      inputs_((size_t)B * T * micro_steps * ranks),
      targets_(inputs_.size()) {
    if (B < 1 || T < 1 || micro_steps < 1 || ranks < 1 || rank < 0 || rank >= ranks)
        throw DataError("GlobalBatch: B=" + std::to_string(B) + " T=" + std::to_string(T) +
                        " micro_steps=" + std::to_string(micro_steps) + " rank " + std::to_string(rank) +
                        " of " + std::to_string(ranks));
}
