// Whole files as bytes and little-endian integers in them, for the small binary readers and writers
// (llmc/formats/tokenizer, llmc/formats/hellaswag). Host-only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// Reads all of `path` into *data: "" on success, else the reason in one line ("cannot open: ..." or
// "read error: ..."; a FIFO or a folder: "not a regular file (...)", without waiting on it), for the caller
// to prefix with what the file is.
std::string read_whole_file(const std::string& path, std::string* data);

// Writes the concatenation of `parts` (pointer, bytes) to `path` crash-safely: a temporary file beside it,
// fsync, rename over `path`, fsync of the folder; a crash leaves the old file or the new one, never a mix.
// Throws std::runtime_error, one line: "<path>: <what failed>: <reason>".
void write_file_atomic(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts);

// Appends v as 4 little-endian bytes.
inline void put_u32_le(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; i++) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
