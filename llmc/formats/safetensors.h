// safetensors checkpoint/export container: reader and writer. Host-only (no CUDA).
//
// File format (https://github.com/huggingface/safetensors):
//   8 bytes   N, little-endian uint64: the header length
//   N bytes   JSON object (UTF-8), optionally padded with spaces:
//               {"__metadata__": {"key": "value", ...},              (optional, string values only)
//                "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//   rest      the data buffer; [begin, end) are byte offsets into it, little-endian, row-major. The
//             tensors are contiguous and cover the buffer exactly (no gaps, no overlaps).
//
// What SafetensorsWriter writes (Python's safetensors reads it; we read what Python writes):
//   - compact JSON header, "__metadata__" first (keys sorted), then the tensors sorted by name, whose data
//     follows in the same order; the header is padded with spaces so the data starts at a multiple of 8.
//   - for every tensor, metadata "crc32.<name>" = zlib CRC-32 of its bytes as 8 lowercase hex digits.
//     SafetensorsReader::read() verifies it when present (files from elsewhere have none: nothing to check).
//
// Errors are std::runtime_error with a one-line message starting with the file's path (names taken from
// the file are escaped, so a hostile name cannot break the line).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

// Bytes per element of a safetensors dtype string ("F32" -> 4, "BF16" -> 2, "F8_E4M3" -> 1, ...); 0 for a
// dtype this library does not know (sub-byte types F4/F6_* included).
// Known: BOOL U8 I8 F8_E4M3 F8_E5M2 F8_E8M0 I16 U16 F16 BF16 I32 U32 F32 I64 U64 F64 C64.
size_t safetensors_dtype_size(const std::string& dtype);
inline bool safetensors_dtype_known(const std::string& dtype) { return safetensors_dtype_size(dtype) != 0; }

// One tensor of a file: its bytes are [offset, offset + nbytes) of the data buffer (which starts right
// after the header, at file position 8 + N).
struct SafeTensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;  // empty: a scalar (one element); a 0 anywhere: no elements
    size_t offset = 0, nbytes = 0;
    int64_t numel() const;
};

class SafetensorsWriter {
  public:
    // Registers a tensor. `data` is NOT copied: it must stay valid and unchanged until write_atomic() (or
    // serialize()) has returned. Throws std::invalid_argument for an empty or duplicate name, the name
    // "__metadata__", an unknown dtype, a negative dim, or nbytes != element count x dtype size.
    // data may be null when nbytes is 0.
    void add(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
             const void* data, size_t nbytes);
    // Sets (or replaces) a "__metadata__" entry. Keys starting with "crc32." are reserved for the checksums
    // (std::invalid_argument).
    void set_metadata(const std::string& key, const std::string& value);

    // Writes the file crash-safely: writes path + ".tmp.<pid>", fsyncs it, renames it over `path`, fsyncs
    // the directory. A crash at any point leaves either the previous `path` or the complete new one. On
    // any failure (cannot create, disk full, ...) throws std::runtime_error "<file>: <what>: <strerror>",
    // removes the temporary file and leaves `path` untouched.
    void write_atomic(const std::string& path) const;

    // The complete file contents in memory (same bytes write_atomic writes). For tests and small files.
    std::string serialize() const;

    size_t size() const { return tensors_.size(); }

  private:
    struct Entry {
        std::string dtype;
        std::vector<int64_t> shape;
        const void* data;
        size_t nbytes;
    };
    std::map<std::string, Entry> tensors_;  // sorted by name: the write order
    std::map<std::string, std::string> metadata_;

    // Header bytes (the 8-byte length included, padding included) and the data layout, checksums computed.
    std::string build_header() const;
};

class SafetensorsReader {
  public:
    // Opens `path` and validates the whole header against the file size up front; throws std::runtime_error
    // "<path>: <what is wrong>" for: file shorter than 8 bytes, header length past the end of the file or
    // over 100 MB, header not valid JSON / not an object / entries of the wrong type, unknown dtype,
    // negative dims or element count overflow, data_offsets that do not match dtype size x element count,
    // offsets outside the data buffer, overlapping tensors or gaps, duplicate names, non-string metadata
    // values, a "crc32.*" metadata value that is not 8 hex digits. Tensor data is read only on request
    // (pread, 64-bit offsets: multi-GB files are fine).
    explicit SafetensorsReader(const std::string& path);
    // The same checks on a file image in memory (the bytes are copied). `label` stands in for the path in
    // error messages.
    static SafetensorsReader from_memory(const void* data, size_t size,
                                         const std::string& label = "<memory>");

    ~SafetensorsReader();
    SafetensorsReader(SafetensorsReader&&) noexcept;
    SafetensorsReader& operator=(SafetensorsReader&&) noexcept;

    const std::string& path() const { return path_; }
    bool has(const std::string& name) const { return index_.count(name) != 0; }
    const SafeTensor& tensor(const std::string& name) const;  // throws "<path>: no tensor '<name>'"
    std::vector<std::string> names() const;                   // sorted
    size_t size() const { return tensors_.size(); }
    const std::vector<SafeTensor>& tensors() const { return tensors_; }  // in data (offset) order

    bool has_metadata(const std::string& key) const { return metadata_.count(key) != 0; }
    const std::string& metadata(const std::string& key) const;  // throws if absent
    const std::map<std::string, std::string>& all_metadata() const { return metadata_; }

    uint64_t header_size() const { return header_len_; }     // N
    uint64_t data_start() const { return 8 + header_len_; }  // file position of the data buffer
    uint64_t data_size() const { return data_size_; }

    // Reads tensor `name` into dst, which holds exactly nbytes == tensor(name).nbytes bytes (else throws),
    // then verifies its "crc32.<name>" metadata entry when there is one:
    // "<path>: tensor '<name>' fails its checksum (stored X, computed Y)".
    void read(const std::string& name, void* dst, size_t nbytes) const;
    // Convenience: the tensor's bytes (checked like read()).
    std::vector<uint8_t> read(const std::string& name) const;
    // Streams every tensor that has a checksum through CRC-32 (in chunks, not whole) and throws on the
    // first mismatch. Returns how many tensors were checked.
    size_t verify_all_checksums() const;

  private:
    struct Source;
    SafetensorsReader(std::unique_ptr<Source> src, std::string label);
    void parse();
    [[noreturn]] void fail(const std::string& what) const;
    void check_crc(const SafeTensor& t, uint32_t computed) const;

    std::unique_ptr<Source> src_;
    std::string path_;
    uint64_t header_len_ = 0, data_size_ = 0;
    std::vector<SafeTensor> tensors_;
    std::unordered_map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};
