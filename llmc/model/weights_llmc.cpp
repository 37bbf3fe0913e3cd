// llm.c's model files (llmc/model/weights_llmc.h).
#include "llmc/model/weights_llmc.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "llmc/formats/file_bytes.h"
#include "llmc/formats/file_checks.h"
#include "llmc/model/layout.h"
#include "llmc/model/weights_io.h"

namespace {

constexpr int kHeaderInts = 256;
constexpr size_t kHeaderBytes = kHeaderInts * sizeof(int32_t);
enum HeaderField { kMagic, kVersion, kMaxSeq, kVocab, kLayers, kHeads, kChannels, kPaddedVocab };

uint16_t to_bf16(float f) {  // round to nearest even, as torch's .to(torch.bfloat16); NaN stays NaN
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float from_bf16(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// An open regular file, read with pread; "<path>: ..." errors.
struct File {
    explicit File(const std::string& p) : path(p) {
        std::string error;
        fd = open_regular_file(path, &error);
        if (fd < 0) throw std::runtime_error(path + ": " + error);
        size = lseek(fd, 0, SEEK_END);
    }
    ~File() {
        if (fd >= 0) close(fd);
    }
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    void read_at(off_t offset, void* dst, size_t n) const {
        char* p = static_cast<char*>(dst);
        for (size_t done = 0; done < n;) {
            const ssize_t got = pread(fd, p + done, n - done, offset + (off_t)done);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0)
                throw std::runtime_error(path + ": read error" +
                                         (got < 0 ? ": " + std::string(strerror(errno)) : ""));
            done += (size_t)got;
        }
    }
    std::string path;
    int fd = -1;
    off_t size = 0;
};

// The file's shape against the model's; the padded vocabulary it holds (<= m.vocab_size) and whether it is
// bfloat16. Throws "<file>: <problem>".
struct LlmcHeader {
    int padded_vocab;
    bool bf16;
};

LlmcHeader check_header(const File& f, const ModelConfig& m) {
    auto fail = [&](const std::string& what) { return std::runtime_error(f.path + ": " + what); };
    if (f.size < (off_t)kHeaderBytes) throw fail("shorter than llm.c's 1024-byte header");
    int32_t h[kHeaderInts];
    f.read_at(0, h, kHeaderBytes);
    if (h[kMagic] != kLlmcMagic)
        throw fail("not an llm.c model file (magic " + std::to_string(h[kMagic]) + ", expected " +
                   std::to_string(kLlmcMagic) + ")");
    if (h[kVersion] != kLlmcVersionF32 && h[kVersion] != kLlmcVersionBf16)
        throw fail("llm.c model version " + std::to_string(h[kVersion]) +
                   " (3: float32 and 5: bfloat16 are read)");
    const struct {
        const char* what;
        int file, model;
    } dims[] = {{"layers", h[kLayers], m.num_layers},
                {"heads", h[kHeads], m.num_heads},
                {"channels", h[kChannels], m.channels},
                {"max_seq_len", h[kMaxSeq], m.max_seq_len}};
    for (const auto& d : dims)
        if (d.file != d.model)
            throw fail("a model of " + std::to_string(d.file) + " " + d.what + ", this one has " +
                       std::to_string(d.model) + " (--model, --layers, --channels, --heads, --max-seq)");
    const int Vp = h[kPaddedVocab], V = h[kVocab];
    if (V < 1 || Vp < V)
        throw fail("vocab_size " + std::to_string(V) + " and padded_vocab_size " + std::to_string(Vp) +
                   " do not make a vocabulary");
    if (Vp > m.vocab_size)
        throw fail("a padded vocabulary of " + std::to_string(Vp) +
                   " rows, larger than this model's --vocab " + std::to_string(m.vocab_size));
    const bool bf16 = h[kVersion] == kLlmcVersionBf16;
    const size_t model_wte = (size_t)m.vocab_size * m.channels;
    const size_t count = num_parameters(m) - model_wte + (size_t)Vp * m.channels;
    const off_t want = (off_t)(kHeaderBytes + count * (bf16 ? 2 : 4));
    if (f.size != want)
        throw fail(std::to_string(f.size) + " bytes, the header's shape needs " + std::to_string(want) +
                   (f.size < want ? " (truncated?)" : ""));
    return {Vp, bf16};
}

// count values at byte `offset` of the file, as floats into dst.
void read_values(const File& f, off_t offset, bool bf16, float* dst, size_t count) {
    if (!bf16) {
        f.read_at(offset, dst, count * 4);
        return;
    }
    std::vector<uint16_t> buf(1 << 20);
    for (size_t done = 0; done < count;) {
        const size_t n = std::min(buf.size(), count - done);
        f.read_at(offset + (off_t)(done * 2), buf.data(), n * 2);
        for (size_t i = 0; i < n; i++) dst[done + i] = from_bf16(buf[i]);
        done += n;
    }
}

}  // namespace

bool is_llmc_model_file(const std::string& path) {
    std::string error;
    const int fd = open_regular_file(path, &error);
    if (fd < 0) return false;
    int32_t magic = 0;
    const bool ok = pread(fd, &magic, 4, 0) == 4 && magic == kLlmcMagic;
    close(fd);
    return ok;
}

void export_llmc(const std::string& path, const ModelConfig& m, const std::vector<float>& params, bool bf16) {
    if (params.size() != num_parameters(m))
        throw std::invalid_argument("export_llmc: " + std::to_string(params.size()) +
                                    " parameters given, the model has " + std::to_string(num_parameters(m)));
    int32_t h[kHeaderInts] = {};
    h[kMagic] = kLlmcMagic;
    h[kVersion] = bf16 ? kLlmcVersionBf16 : kLlmcVersionF32;
    h[kMaxSeq] = m.max_seq_len;
    h[kVocab] = hf_vocab_size(m.vocab_size);
    h[kLayers] = m.num_layers;
    h[kHeads] = m.num_heads;
    h[kChannels] = m.channels;
    h[kPaddedVocab] = m.vocab_size;
    if (!bf16) {
        write_file_atomic(path, {{h, kHeaderBytes}, {params.data(), params.size() * 4}});
        return;
    }
    std::vector<uint16_t> half(params.size());
    for (size_t i = 0; i < params.size(); i++) half[i] = to_bf16(params[i]);
    write_file_atomic(path, {{h, kHeaderBytes}, {half.data(), half.size() * 2}});
}

void check_import_llmc(const std::string& path, const ModelConfig& m) {
    const File f(path);
    check_header(f, m);
}

std::vector<float> import_llmc(const std::string& path, const ModelConfig& m) {
    const File f(path);
    const LlmcHeader h = check_header(f, m);
    const size_t C = m.channels, file_wte = (size_t)h.padded_vocab * C, model_wte = (size_t)m.vocab_size * C;
    std::vector<float> params(num_parameters(m), 0.0f);  // rows past the file's vocabulary stay zero
    const size_t bytes = h.bf16 ? 2 : 4;
    read_values(f, (off_t)kHeaderBytes, h.bf16, params.data(), file_wte);
    read_values(f, (off_t)(kHeaderBytes + file_wte * bytes), h.bf16, params.data() + model_wte,
                params.size() - model_wte);
    return params;
}
