#include "llmc/formats/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "llmc/formats/file_checks.h"
#include "llmc/formats/json.h"

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // Python safetensors' limit (MAX_HEADER_SIZE)
constexpr size_t kIoChunk = size_t(1) << 30;       // largest single read/write/crc32 call

// A name taken from a file (or the caller), safe inside a one-line message: control and other non-printable
// ASCII bytes become \xNN, '\'' and '\\' are escaped, long names are cut.
std::string show(const std::string& s) {
    static const char* hex = "0123456789abcdef";
    std::string out = "'";
    size_t n = std::min<size_t>(s.size(), 200);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else if (c == '\'' || c == '\\') {
            out += '\\';
            out += (char)c;
        } else {
            out += (char)c;
        }
    }
    if (n < s.size()) out += "...";
    out += "'";
    return out;
}

std::string hex8(uint32_t v) {
    char buf[9];
    snprintf(buf, sizeof(buf), "%08x", v);
    return buf;
}

// Parses exactly 8 hex digits (either case).
bool parse_hex8(const std::string& s, uint32_t* out) {
    if (s.size() != 8) return false;
    uint32_t v = 0;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return true;
}

uint32_t crc_update(uint32_t crc, const void* data, size_t n) {
    const Bytef* p = static_cast<const Bytef*>(data);
    while (n > 0) {
        uInt c = (uInt)std::min(n, kIoChunk);
        crc = (uint32_t)crc32(crc, p, c);
        p += c;
        n -= c;
    }
    return crc;
}
uint32_t crc_of_bytes(const void* data, size_t n) {
    return crc_update((uint32_t)crc32(0L, Z_NULL, 0), data, n);
}

// Element count of `shape` and its size in bytes; false on a negative dim or overflow.
bool shape_bytes(const std::vector<int64_t>& shape, size_t elem_size, uint64_t* numel, uint64_t* nbytes) {
    uint64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0) return false;
        if (__builtin_mul_overflow(n, (uint64_t)d, &n)) return false;
    }
    if (n > (uint64_t)INT64_MAX) return false;
    uint64_t b;
    if (__builtin_mul_overflow(n, (uint64_t)elem_size, &b)) return false;
    if (b > (uint64_t)SIZE_MAX) return false;
    *numel = n;
    *nbytes = b;
    return true;
}

std::string shape_str(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

const std::string kCrcPrefix = "crc32.";

}  // namespace

size_t safetensors_dtype_size(const std::string& dtype) {
    static const std::pair<const char*, size_t> kTypes[] = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1},
        {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
        {"F32", 4},  {"I64", 8}, {"U64", 8}, {"F64", 8},     {"C64", 8},
    };
    for (const auto& t : kTypes)
        if (dtype == t.first) return t.second;
    return 0;
}

int64_t SafeTensor::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// ============================================================================================== Writer

void SafetensorsWriter::add(const std::string& name, const std::string& dtype,
                            const std::vector<int64_t>& shape, const void* data, size_t nbytes) {
    if (name.empty()) throw std::invalid_argument("safetensors: empty tensor name");
    if (name == "__metadata__")
        throw std::invalid_argument("safetensors: '__metadata__' is not a tensor name");
    if (tensors_.count(name)) throw std::invalid_argument("safetensors: duplicate tensor " + show(name));
    size_t es = safetensors_dtype_size(dtype);
    if (es == 0)
        throw std::invalid_argument("safetensors: tensor " + show(name) + ": unknown dtype " + show(dtype));
    uint64_t numel, want;
    if (!shape_bytes(shape, es, &numel, &want))
        throw std::invalid_argument("safetensors: tensor " + show(name) + ": bad shape " + shape_str(shape));
    if (want != nbytes)
        throw std::invalid_argument("safetensors: tensor " + show(name) + ": " + std::to_string(nbytes) +
                                    " bytes given, but " + dtype + " x " + shape_str(shape) + " needs " +
                                    std::to_string(want));
    if (nbytes > 0 && data == nullptr)
        throw std::invalid_argument("safetensors: tensor " + show(name) + ": null data");
    tensors_[name] = Entry{dtype, shape, data, nbytes};
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
    if (key.compare(0, kCrcPrefix.size(), kCrcPrefix) == 0)
        throw std::invalid_argument("safetensors: metadata key " + show(key) +
                                    " is reserved (the writer stores the checksums)");
    metadata_[key] = value;
}

std::string SafetensorsWriter::build_header() const {
    std::map<std::string, std::string> meta = metadata_;
    for (const auto& kv : tensors_)
        meta[kCrcPrefix + kv.first] = hex8(crc_of_bytes(kv.second.data, kv.second.nbytes));

    std::string h = "{";
    bool first = true;
    if (!meta.empty()) {
        h += "\"__metadata__\":{";
        for (const auto& kv : meta) {
            if (!first) h += ',';
            first = false;
            h += json::quote(kv.first) + ':' + json::quote(kv.second);
        }
        h += '}';
        first = false;
    }
    uint64_t offset = 0;
    for (const auto& kv : tensors_) {
        const Entry& e = kv.second;
        if (!first) h += ',';
        first = false;
        h += json::quote(kv.first) + ":{\"dtype\":" + json::quote(e.dtype) + ",\"shape\":[";
        for (size_t i = 0; i < e.shape.size(); i++) h += (i ? "," : "") + std::to_string(e.shape[i]);
        h += "],\"data_offsets\":[" + std::to_string(offset) + ',' + std::to_string(offset + e.nbytes) + "]}";
        offset += e.nbytes;
    }
    h += '}';
    h.append((8 - h.size() % 8) % 8, ' ');  // the data buffer starts 8-byte aligned, as Python pads it

    std::string out(8, '\0');
    uint64_t n = h.size();
    for (int i = 0; i < 8; i++) out[i] = (char)((n >> (8 * i)) & 0xff);
    return out + h;
}

std::string SafetensorsWriter::serialize() const {
    std::string out = build_header();
    for (const auto& kv : tensors_)
        if (kv.second.nbytes) out.append(static_cast<const char*>(kv.second.data), kv.second.nbytes);
    return out;
}

namespace {

[[noreturn]] void io_error(const std::string& path, const std::string& what, int err) {
    throw std::runtime_error(path + ": " + what + ": " + strerror(err));
}

// Removes the temporary file (and closes its descriptor) unless released.
struct TempFile {
    std::string path;
    int fd = -1;
    bool keep = false;
    ~TempFile() {
        if (fd >= 0) close(fd);
        if (!keep) unlink(path.c_str());
    }
};

void write_all(int fd, const void* data, size_t n, const std::string& path, const std::string& tmp) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        ssize_t w = write(fd, p, std::min(n, kIoChunk));
        if (w < 0) {
            if (errno == EINTR) continue;
            io_error(path, "writing " + tmp, errno);
        }
        if (w == 0) io_error(path, "writing " + tmp, ENOSPC);
        p += w;
        n -= (size_t)w;
    }
}

std::string parent_dir(const std::string& path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

}  // namespace

void SafetensorsWriter::write_atomic(const std::string& path) const {
    const std::string header = build_header();  // checksums first: the header holds them
    TempFile tmp;
    tmp.path = path + ".tmp." + std::to_string((long)getpid());
    tmp.fd = open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tmp.fd < 0) {
        int err = errno;
        tmp.keep = true;  // not ours: never unlink something we failed to create
        io_error(path, "cannot create " + tmp.path, err);
    }
    write_all(tmp.fd, header.data(), header.size(), path, tmp.path);
    for (const auto& kv : tensors_) write_all(tmp.fd, kv.second.data, kv.second.nbytes, path, tmp.path);
    if (fsync(tmp.fd) != 0) io_error(path, "fsync of " + tmp.path, errno);
    int fd = tmp.fd;
    tmp.fd = -1;
    if (close(fd) != 0) io_error(path, "closing " + tmp.path, errno);
    if (rename(tmp.path.c_str(), path.c_str()) != 0)
        io_error(path, "renaming " + tmp.path + " over it", errno);
    tmp.keep = true;  // it is `path` now
    const std::string dir = parent_dir(path);
    int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) io_error(path, "written, but cannot open its directory " + dir + " to fsync it", errno);
    if (fsync(dfd) != 0) {
        int err = errno;
        close(dfd);
        io_error(path, "written, but fsync of its directory " + dir + " failed", err);
    }
    if (close(dfd) != 0) io_error(path, "written, but closing its directory " + dir + " failed", errno);
}

// ============================================================================================== Reader

// Where the bytes come from: an open file (pread) or a copy of a file image in memory.
struct SafetensorsReader::Source {
    int fd = -1;
    bool in_memory = false;
    std::string bytes;  // in_memory
    uint64_t size = 0;

    ~Source() {
        if (fd >= 0) close(fd);
    }
    // Exactly n bytes at `offset` (the caller checked offset + n <= size) or throws "<path>: ...".
    void read_at(uint64_t offset, void* dst, size_t n, const std::string& path) const {
        if (n == 0) return;
        if (in_memory) {
            std::memcpy(dst, bytes.data() + offset, n);
            return;
        }
        char* p = static_cast<char*>(dst);
        while (n > 0) {
            ssize_t r = pread(fd, p, std::min(n, kIoChunk), (off_t)offset);
            if (r < 0) {
                if (errno == EINTR) continue;
                io_error(path, "read error at byte " + std::to_string(offset), errno);
            }
            if (r == 0)
                throw std::runtime_error(path + ": unexpected end of file at byte " + std::to_string(offset) +
                                         " (was the file truncated while open?)");
            p += r;
            n -= (size_t)r;
            offset += (uint64_t)r;
        }
    }
};

SafetensorsReader::SafetensorsReader(const std::string& path) : src_(new Source), path_(path) {
    std::string error;
    src_->fd = open_regular_file(path, &error);  // a FIFO or a folder: refused, not waited on
    if (src_->fd < 0) fail(error);
    struct stat st;
    if (fstat(src_->fd, &st) != 0) io_error(path, "cannot stat", errno);
    src_->size = (uint64_t)st.st_size;
    parse();
}

SafetensorsReader::SafetensorsReader(std::unique_ptr<Source> src, std::string label)
    : src_(std::move(src)), path_(std::move(label)) {
    parse();
}

SafetensorsReader SafetensorsReader::from_memory(const void* data, size_t size, const std::string& label) {
    auto src = std::make_unique<Source>();
    src->in_memory = true;
    if (size) src->bytes.assign(static_cast<const char*>(data), size);
    src->size = size;
    return SafetensorsReader(std::move(src), label);
}

SafetensorsReader::~SafetensorsReader() = default;
SafetensorsReader::SafetensorsReader(SafetensorsReader&&) noexcept = default;
SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&&) noexcept = default;

void SafetensorsReader::fail(const std::string& what) const { throw std::runtime_error(path_ + ": " + what); }

namespace {
// A non-negative JSON integer.
bool as_count(const json::Value& v, uint64_t* out) {
    if (!v.is_int() || v.as_int() < 0) return false;
    *out = (uint64_t)v.as_int();
    return true;
}

[[noreturn]] void fail_in(const std::string& path, const std::string& what) {
    throw std::runtime_error(path + ": " + what);
}

// The "__metadata__" object: string values only, no duplicate keys, checksums of 8 hex digits.
void parse_metadata(const json::Value& v, const std::string& path, std::map<std::string, std::string>* out) {
    if (v.is_null()) return;
    if (!v.is_object()) fail_in(path, "\"__metadata__\" is not an object");
    for (const json::Value::Member& kv : v.as_object()) {
        if (!kv.second.is_string()) fail_in(path, "metadata value of " + show(kv.first) + " is not a string");
        if (!out->emplace(kv.first, kv.second.as_string()).second)
            fail_in(path, "duplicate metadata key " + show(kv.first));
        uint32_t crc;
        if (kv.first.compare(0, kCrcPrefix.size(), kCrcPrefix) == 0 &&
            !parse_hex8(kv.second.as_string(), &crc))
            fail_in(path,
                    "metadata " + show(kv.first) + " is not 8 hex digits: " + show(kv.second.as_string()));
    }
}

// One tensor's entry: a known dtype, a shape of non-negative dims, data_offsets spanning exactly dtype size x
// element count bytes inside the data buffer (data_size bytes).
SafeTensor parse_tensor_entry(const std::string& name, const json::Value& v, uint64_t data_size,
                              const std::string& path) {
    const std::string t = "tensor " + show(name) + ": ";
    auto fail = [&](const std::string& what) { fail_in(path, t + what); };
    if (!v.is_object()) fail("entry is not an object");
    const json::Value* dtype = v.find("dtype");
    const json::Value* shape = v.find("shape");
    const json::Value* offsets = v.find("data_offsets");
    if (!dtype || !dtype->is_string()) fail("\"dtype\" missing or not a string");
    const size_t es = safetensors_dtype_size(dtype->as_string());
    if (es == 0) fail("unknown dtype " + show(dtype->as_string()));
    if (!shape || !shape->is_array()) fail("\"shape\" missing or not an array");
    SafeTensor st;
    st.name = name;
    st.dtype = dtype->as_string();
    for (const json::Value& d : shape->as_array()) {
        if (!d.is_int()) fail("\"shape\" holds a non-integer");
        if (d.as_int() < 0) fail("negative dimension " + std::to_string(d.as_int()) + " in shape");
        st.shape.push_back(d.as_int());
    }
    uint64_t numel, want;
    if (!shape_bytes(st.shape, es, &numel, &want)) fail("element count of shape overflows");
    if (!offsets || !offsets->is_array() || offsets->as_array().size() != 2)
        fail("\"data_offsets\" missing or not a [begin, end] pair");
    uint64_t begin, end;
    if (!as_count(offsets->as_array()[0], &begin) || !as_count(offsets->as_array()[1], &end))
        fail("\"data_offsets\" are not non-negative integers");
    const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
    if (begin > end) fail("data_offsets " + range + " end before they begin");
    if (end - begin != want)
        fail("data_offsets " + range + " span " + std::to_string(end - begin) + " bytes, but " + st.dtype +
             " x " + shape_str(st.shape) + " needs " + std::to_string(want));
    if (end > data_size)
        fail("data_offsets " + range + " run past the end of the data buffer (" + std::to_string(data_size) +
             " bytes; truncated file?)");
    st.offset = (size_t)begin;
    st.nbytes = (size_t)want;
    return st;
}

// The tensors must tile the data buffer: sorted by offset, each starts where the previous ended. Sorts
// `tensors` and rebuilds `index`.
void check_tiling(std::vector<SafeTensor>* tensors, std::unordered_map<std::string, size_t>* index,
                  uint64_t data_size, const std::string& path) {
    std::sort(tensors->begin(), tensors->end(), [](const SafeTensor& a, const SafeTensor& b) {
        if (a.offset != b.offset) return a.offset < b.offset;
        if (a.nbytes != b.nbytes) return a.nbytes < b.nbytes;
        return a.name < b.name;
    });
    uint64_t pos = 0;
    for (size_t i = 0; i < tensors->size(); i++) {
        const SafeTensor& st = (*tensors)[i];
        (*index)[st.name] = i;
        if (st.offset > pos)
            fail_in(path, "gap in the data buffer: bytes [" + std::to_string(pos) + ", " +
                              std::to_string(st.offset) + ") before tensor " + show(st.name) +
                              " belong to no tensor");
        if (st.offset < pos)
            fail_in(path, "tensors " + show((*tensors)[i - 1].name) + " and " + show(st.name) +
                              " overlap in the data buffer");
        pos = st.offset + st.nbytes;
    }
    if (pos != data_size)
        fail_in(path, "data buffer has " + std::to_string(data_size) + " bytes but the tensors cover only " +
                          std::to_string(pos) + " (trailing garbage, or a tensor missing from the header)");
}
}  // namespace

void SafetensorsReader::parse() {
    const uint64_t file_size = src_->size;
    if (file_size < 8)
        fail("file is " + std::to_string(file_size) +
             " bytes, too short for a safetensors file (8-byte header length missing)");
    unsigned char len_bytes[8];
    src_->read_at(0, len_bytes, 8, path_);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | len_bytes[i];
    if (n > kMaxHeaderBytes)
        fail("header length " + std::to_string(n) + " exceeds the 100 MB limit (not a safetensors file?)");
    if (n > file_size - 8)
        fail("header length " + std::to_string(n) + " runs past the end of the file (" +
             std::to_string(file_size) + " bytes; truncated?)");
    header_len_ = n;
    data_size_ = file_size - 8 - n;

    std::string text(n, '\0');
    src_->read_at(8, &text[0], n, path_);
    json::Value root;
    try {
        root = json::parse(text);
    } catch (const json::ParseError& e) {
        fail(std::string("header is not valid JSON: ") + e.what());
    }
    if (!root.is_object()) fail("header is not a JSON object");

    bool seen_metadata = false;
    for (const json::Value::Member& m : root.as_object()) {
        if (m.first == "__metadata__") {
            if (seen_metadata) fail("duplicate \"__metadata__\" entry");
            seen_metadata = true;
            parse_metadata(m.second, path_, &metadata_);
            continue;
        }
        if (index_.count(m.first)) fail("duplicate tensor name " + show(m.first));
        index_.emplace(m.first, tensors_.size());
        tensors_.push_back(parse_tensor_entry(m.first, m.second, data_size_, path_));
    }
    check_tiling(&tensors_, &index_, data_size_, path_);
}

const SafeTensor& SafetensorsReader::tensor(const std::string& name) const {
    auto it = index_.find(name);
    if (it == index_.end()) fail("no tensor " + show(name));
    return tensors_[it->second];
}

std::vector<std::string> SafetensorsReader::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const SafeTensor& t : tensors_) out.push_back(t.name);
    std::sort(out.begin(), out.end());
    return out;
}

const std::string& SafetensorsReader::metadata(const std::string& key) const {
    auto it = metadata_.find(key);
    if (it == metadata_.end()) fail("no metadata key " + show(key));
    return it->second;
}

void SafetensorsReader::check_crc(const SafeTensor& t, uint32_t computed) const {
    auto it = metadata_.find(kCrcPrefix + t.name);
    if (it == metadata_.end()) return;
    uint32_t stored = 0;
    parse_hex8(it->second, &stored);  // validated in parse()
    if (stored != computed)
        fail("tensor " + show(t.name) + " fails its checksum (stored " + hex8(stored) + ", computed " +
             hex8(computed) + ")");
}

void SafetensorsReader::read(const std::string& name, void* dst, size_t nbytes) const {
    const SafeTensor& t = tensor(name);
    if (nbytes != t.nbytes)
        fail("tensor " + show(name) + " has " + std::to_string(t.nbytes) +
             " bytes, but the destination has " + std::to_string(nbytes));
    if (nbytes > 0 && dst == nullptr) fail("tensor " + show(name) + ": null destination");
    src_->read_at(data_start() + t.offset, dst, nbytes, path_);
    check_crc(t, crc_of_bytes(dst, nbytes));
}

std::vector<uint8_t> SafetensorsReader::read(const std::string& name) const {
    std::vector<uint8_t> out(tensor(name).nbytes);
    read(name, out.data(), out.size());
    return out;
}

size_t SafetensorsReader::verify_all_checksums() const {
    std::vector<char> scratch;
    size_t checked = 0;
    for (const SafeTensor& t : tensors_) {
        if (!metadata_.count(kCrcPrefix + t.name)) continue;
        if (scratch.empty())
            scratch.resize(std::min<size_t>(std::max<size_t>(data_size_, 1), size_t(16) << 20));
        uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
        for (size_t done = 0; done < t.nbytes;) {
            size_t n = std::min(scratch.size(), t.nbytes - done);
            src_->read_at(data_start() + t.offset + done, scratch.data(), n, path_);
            crc = crc_update(crc, scratch.data(), n);
            done += n;
        }
        check_crc(t, crc);
        checked++;
    }
    return checked;
}
