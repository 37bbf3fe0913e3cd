// Host tests for llmc/formats/safetensors (and llmc/formats/json): round trips, metadata, checksums, every
// kind of corrupt file (built by hand), crash-safe writing, and a file laid out byte for byte as Python's
// safetensors writes it. Files go to a fresh mkdtemp directory.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "llmc/formats/json.h"
#include "llmc/formats/safetensors.h"
#include "test/temp_dir.h"
#include "test/testing.h"

namespace {

using testing::TempDir;

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), (std::streamsize)bytes.size());
}
bool exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

std::string le64(uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; i++) s[i] = (char)((n >> (8 * i)) & 0xff);
    return s;
}
// A safetensors file from a header text (used as is, no padding) and a data buffer.
std::string make_file(const std::string& header, const std::string& data) {
    return le64(header.size()) + header + data;
}

std::string random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string s(n, '\0');
    for (auto& c : s) c = (char)(rng() & 0xff);
    return s;
}

// `fn` must throw std::runtime_error with a one-line message containing every needle.
template <typename Fn>
void expect_error(Fn fn, const std::vector<std::string>& needles, int line) {
    try {
        fn();
        testing::fail(__FILE__, line, "expected an error mentioning \"" + needles[0] + "\"");
    } catch (const std::runtime_error& e) {
        std::string msg = e.what();
        for (const std::string& n : needles)
            if (msg.find(n) == std::string::npos)
                testing::fail(__FILE__, line, "message \"" + msg + "\" does not contain \"" + n + "\"");
        if (msg.find('\n') != std::string::npos)
            testing::fail(__FILE__, line, "message is not one line: " + msg);
    } catch (const std::exception& e) {
        testing::fail(__FILE__, line, std::string("expected std::runtime_error, got: ") + e.what());
    }
}
#define EXPECT_ERROR(expr, ...) expect_error([&]() { expr; }, {__VA_ARGS__}, __LINE__)

// Opening `bytes` (written to a file) must fail with a message "<path>: ..." containing `needle`.
void expect_bad_file(const TempDir& dir, const std::string& bytes, const std::string& needle, int line) {
    std::string path = dir.file("bad.safetensors");
    write_file(path, bytes);
    expect_error([&]() { SafetensorsReader r(path); }, {path + ": ", needle}, line);
    // The in-memory reader gives the same verdict.
    expect_error([&]() { SafetensorsReader::from_memory(bytes.data(), bytes.size(), "mem"); },
                 {"mem: ", needle}, line);
}
#define EXPECT_BAD_FILE(bytes, needle) expect_bad_file(dir, bytes, needle, __LINE__)

struct TestTensor {
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::string bytes;
};

std::vector<TestTensor> sample_tensors() {
    std::vector<TestTensor> t = {
        {"wte.weight", "F32", {4, 3}, ""},
        {"h.0.ln_1.bias", "BF16", {5}, ""},
        {"h.0.attn.w", "F16", {2, 2, 2}, ""},
        {"tokens", "I32", {7}, ""},
        {"step", "I64", {}, ""},
        {"mask", "U8", {3}, ""},
        {"fp8.e4m3", "F8_E4M3", {1, 9}, ""},
        {"fp8.e5m2", "F8_E5M2", {2}, ""},
        {"empty", "F32", {0, 4}, ""},
        {"flags", "BOOL", {2}, ""},
        {"d", "F64", {1}, ""},
    };
    uint64_t seed = 1;
    for (auto& x : t) {
        uint64_t numel = 1;
        for (int64_t d : x.shape) numel *= (uint64_t)d;
        x.bytes = random_bytes(numel * safetensors_dtype_size(x.dtype), seed++);
    }
    return t;
}

void add_all(SafetensorsWriter& w, const std::vector<TestTensor>& ts) {
    for (const auto& t : ts) w.add(t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size());
}

std::string crc_hex(const std::string& bytes) {
    char buf[9];
    snprintf(buf, sizeof(buf), "%08lx", crc32(0L, (const Bytef*)bytes.data(), (uInt)bytes.size()));
    return buf;
}

}  // namespace

// ------------------------------------------------------------------------------------------------ JSON

TEST(json_parses_and_writes) {
    json::Value v =
        json::parse(" {\"a\": [1, -2, 3.5, true, false, null], \"s\": \"x\\\"\\n\\u00e9\\ud83d\\ude00\"} ");
    EXPECT_TRUE(v.is_object());
    EXPECT_EQ(v.find("a")->as_array().size(), (size_t)6);
    EXPECT_EQ(v.find("a")->as_array()[1].as_int(), (int64_t)-2);
    EXPECT_NEAR(v.find("a")->as_array()[2].as_double(), 3.5, 0);
    EXPECT_TRUE(v.find("s")->as_string() == "x\"\n\xc3\xa9\xf0\x9f\x98\x80");
    EXPECT_TRUE(json::dump(v) ==
                "{\"a\":[1,-2,3.5,true,false,null],\"s\":\"x\\\"\\n\xc3\xa9\xf0\x9f\x98\x80\"}");
    EXPECT_TRUE(json::parse(json::dump(v)) == v);
    EXPECT_EQ(json::parse("-9223372036854775808").as_int(), INT64_MIN);
    EXPECT_TRUE(json::parse("9223372036854775808").is_double());  // past int64: a double
    EXPECT_TRUE(json::dump(json::parse("-0.0")) == "-0.0");
}

TEST(json_pretty_writes_one_entry_per_line) {
    const json::Value v =
        json::parse("{\"a\": 1, \"b\": [true, \"x\\\"y\"], \"c\": {}, \"d\": [], \"e\": {\"f\": 2.5}}");
    EXPECT_TRUE(json::dump_pretty(v) ==
                "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    \"x\\\"y\"\n  ],\n  \"c\": {},\n  \"d\": [],\n"
                "  \"e\": {\n    \"f\": 2.5\n  }\n}\n");
    EXPECT_TRUE(json::parse(json::dump_pretty(v)) == v);
    EXPECT_TRUE(json::dump_pretty(json::Value::integer(7), 4) == "7\n");
}

TEST(json_rejects_bad_input) {
    const char* bad[] = {"",      "{",        "[1,]",         "{\"a\" 1}",   "01",        "1.",  "-",
                         "1e",    "\"\\x\"",  "\"\\ud800\"",  "\"\\udc00\"", "\"a\nb\"",  "tru", "[] []",
                         "1e999", "\"\xff\"", "\"\xc0\x80\"", "{1:2}",       "[\"a\":1]", "nul"};
    for (const char* s : bad) {
        try {
            json::parse(s);
            testing::fail(__FILE__, __LINE__, std::string("accepted bad JSON: ") + s);
        } catch (const json::ParseError& e) {
            if (std::string(e.what()).find("offset ") != 0)
                testing::fail(__FILE__, __LINE__, std::string("message lacks offset: ") + e.what());
        }
    }
    std::string deep(json::kMaxDepth + 1, '[');
    deep += std::string(json::kMaxDepth + 1, ']');
    try {
        json::parse(deep);
        testing::fail(__FILE__, __LINE__, "accepted nesting past kMaxDepth");
    } catch (const json::ParseError& e) {
        EXPECT_CONTAINS(e.what(), "nesting deeper");
    }
    std::string ok_deep(json::kMaxDepth, '[');
    ok_deep += std::string(json::kMaxDepth, ']');
    EXPECT_TRUE(json::parse(ok_deep).is_array());
}

// ------------------------------------------------------------------------------------------ round trip

TEST(dtype_sizes) {
    EXPECT_EQ(safetensors_dtype_size("F32"), (size_t)4);
    EXPECT_EQ(safetensors_dtype_size("BF16"), (size_t)2);
    EXPECT_EQ(safetensors_dtype_size("F16"), (size_t)2);
    EXPECT_EQ(safetensors_dtype_size("I32"), (size_t)4);
    EXPECT_EQ(safetensors_dtype_size("I64"), (size_t)8);
    EXPECT_EQ(safetensors_dtype_size("U8"), (size_t)1);
    EXPECT_EQ(safetensors_dtype_size("F8_E4M3"), (size_t)1);
    EXPECT_EQ(safetensors_dtype_size("F8_E5M2"), (size_t)1);
    EXPECT_EQ(safetensors_dtype_size("f32"), (size_t)0);
    EXPECT_TRUE(!safetensors_dtype_known("F4"));
}

TEST(round_trip_dtypes_and_shapes) {
    TempDir dir("host_safetensors");
    auto ts = sample_tensors();
    SafetensorsWriter w;
    add_all(w, ts);
    std::string path = dir.file("model.safetensors");
    w.write_atomic(path);
    EXPECT_TRUE(!exists(path + ".tmp." + std::to_string(getpid())));

    SafetensorsReader r(path);
    EXPECT_EQ(r.size(), ts.size());
    EXPECT_EQ(r.header_size() % 8, (uint64_t)0);  // data starts 8-byte aligned
    std::vector<std::string> names = r.names();
    for (size_t i = 1; i < names.size(); i++) EXPECT_TRUE(names[i - 1] < names[i]);
    // Data is laid out in name order.
    for (size_t i = 1; i < r.tensors().size(); i++)
        EXPECT_TRUE(r.tensors()[i - 1].name < r.tensors()[i].name);
    for (const auto& t : ts) {
        EXPECT_TRUE(r.has(t.name));
        const SafeTensor& st = r.tensor(t.name);
        EXPECT_TRUE(st.dtype == t.dtype);
        EXPECT_TRUE(st.shape == t.shape);
        EXPECT_EQ(st.nbytes, t.bytes.size());
        std::string got(st.nbytes, '\0');
        r.read(t.name, &got[0], got.size());
        EXPECT_TRUE(got == t.bytes);
    }
    EXPECT_EQ(r.tensor("step").numel(), (int64_t)1);  // 0-d: one element
    EXPECT_EQ(r.tensor("empty").numel(), (int64_t)0);
    EXPECT_EQ(r.verify_all_checksums(), ts.size());
    // serialize() gives the same bytes, and the in-memory reader agrees.
    std::string bytes = w.serialize();
    EXPECT_TRUE(bytes == read_file(path));
    SafetensorsReader m = SafetensorsReader::from_memory(bytes.data(), bytes.size());
    EXPECT_TRUE(m.read("wte.weight") == r.read("wte.weight"));
}

TEST(empty_file_round_trip) {
    TempDir dir("host_safetensors");
    SafetensorsWriter w;
    std::string path = dir.file("empty.safetensors");
    w.write_atomic(path);
    SafetensorsReader r(path);
    EXPECT_EQ(r.size(), (size_t)0);
    EXPECT_EQ(r.data_size(), (uint64_t)0);
}

TEST(metadata_round_trip) {
    TempDir dir("host_safetensors");
    auto ts = sample_tensors();
    SafetensorsWriter w;
    add_all(w, ts);
    w.set_metadata("format", "pt");
    w.set_metadata("config", "{\"layers\": 12, \"name\": \"gpt2\"}");
    w.set_metadata("weird \"key\"\n", "tab\there, unicode \xc3\xa9, backslash \\, ctrl \x01");
    w.set_metadata("empty", "");
    w.set_metadata("format", "pt2");  // replaces
    try {
        w.set_metadata("crc32.wte.weight", "00000000");
        testing::fail(__FILE__, __LINE__, "set_metadata accepted a reserved crc32.* key");
    } catch (const std::invalid_argument& e) {
        EXPECT_CONTAINS(e.what(), "reserved");
    }
    std::string path = dir.file("meta.safetensors");
    w.write_atomic(path);
    SafetensorsReader r(path);
    EXPECT_TRUE(r.metadata("format") == "pt2");
    EXPECT_TRUE(r.metadata("config") == "{\"layers\": 12, \"name\": \"gpt2\"}");
    EXPECT_TRUE(r.metadata("weird \"key\"\n") == "tab\there, unicode \xc3\xa9, backslash \\, ctrl \x01");
    EXPECT_TRUE(r.has_metadata("empty") && r.metadata("empty").empty());
    EXPECT_TRUE(!r.has_metadata("nope"));
    EXPECT_ERROR(r.metadata("nope"), path + ": ", "nope");
    // One checksum per tensor: zlib's CRC-32, 8 lowercase hex digits.
    for (const auto& t : ts) EXPECT_TRUE(r.metadata("crc32." + t.name) == crc_hex(t.bytes));
    EXPECT_EQ(r.all_metadata().size(), ts.size() + 4);
}

TEST(writer_rejects_bad_tensors) {
    SafetensorsWriter w;
    float x[6] = {};
    w.add("a", "F32", {2, 3}, x, sizeof(x));
    auto expect_invalid = [](std::function<void()> fn, const std::string& needle, int line) {
        try {
            fn();
            testing::fail(__FILE__, line, "expected std::invalid_argument: " + needle);
        } catch (const std::invalid_argument& e) {
            if (std::string(e.what()).find(needle) == std::string::npos)
                testing::fail(__FILE__, line, std::string("message lacks ") + needle + ": " + e.what());
        }
    };
    expect_invalid([&] { w.add("a", "F32", {2, 3}, x, sizeof(x)); }, "duplicate", __LINE__);
    expect_invalid([&] { w.add("b", "F31", {2, 3}, x, sizeof(x)); }, "unknown dtype", __LINE__);
    expect_invalid([&] { w.add("b", "F32", {2, 2}, x, sizeof(x)); }, "needs 16", __LINE__);
    expect_invalid([&] { w.add("b", "F32", {-1, 3}, x, sizeof(x)); }, "bad shape", __LINE__);
    expect_invalid([&] { w.add("", "F32", {2, 3}, x, sizeof(x)); }, "empty tensor name", __LINE__);
    expect_invalid(
        [&] {
            w.add("__metadata__", "F32", {2, 3}, x, sizeof(x));
        },
        "not a tensor name", __LINE__);
    EXPECT_EQ(w.size(), (size_t)1);
}

TEST(missing_tensor_and_wrong_size) {
    TempDir dir("host_safetensors");
    float x[6] = {1, 2, 3, 4, 5, 6};
    SafetensorsWriter w;
    w.add("a", "F32", {2, 3}, x, sizeof(x));
    std::string path = dir.file("m.safetensors");
    w.write_atomic(path);
    SafetensorsReader r(path);
    EXPECT_TRUE(!r.has("b"));
    EXPECT_ERROR(r.tensor("b"), path + ": no tensor 'b'");
    float y[5];
    EXPECT_ERROR(r.read("a", y, sizeof(y)), path + ": tensor 'a' has 24 bytes, but the destination has 20");
    EXPECT_ERROR(SafetensorsReader(dir.file("absent.safetensors")),
                 dir.file("absent.safetensors") + ": cannot open", "No such file");
    EXPECT_ERROR(SafetensorsReader(dir.path), dir.path + ": not a regular file");
}

// ------------------------------------------------------------------------------ corrupt files (by hand)

static const std::string kGoodHeader =
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
    "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]}}";

TEST(hand_built_good_file_reads) {
    TempDir dir("host_safetensors");
    std::string path = dir.file("good.safetensors");
    write_file(path, make_file(kGoodHeader, std::string("\x00\x00\x80\x3f\x00\x00\x00\x40xyz", 11)));
    SafetensorsReader r(path);
    float a[2];
    r.read("a", a, sizeof(a));
    EXPECT_NEAR(a[0], 1.0, 0);
    EXPECT_NEAR(a[1], 2.0, 0);
    EXPECT_TRUE(r.read("b") == std::vector<uint8_t>({'x', 'y', 'z'}));
    EXPECT_EQ(r.verify_all_checksums(), (size_t)0);  // no checksums in this file: nothing to verify
}

TEST(rejects_short_file) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE("", "file is 0 bytes, too short");
    EXPECT_BAD_FILE(std::string("\x10\x00\x00", 3), "file is 3 bytes, too short");
}

TEST(rejects_bad_header_length) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(le64(1000) + "{}", "header length 1000 runs past the end of the file (10 bytes");
    EXPECT_BAD_FILE(le64(200'000'000) + "{}", "header length 200000000 exceeds the 100 MB limit");
    EXPECT_BAD_FILE(le64(UINT64_MAX) + "{}", "exceeds the 100 MB limit");
}

TEST(rejects_invalid_json) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"a\":", ""), "header is not valid JSON: offset 5: unexpected end of input");
    EXPECT_BAD_FILE(make_file("", ""), "header is not valid JSON");
    EXPECT_BAD_FILE(make_file("{\"a\":{}} x", ""), "header is not valid JSON");
    EXPECT_BAD_FILE(make_file("{\"\xff\":{}}", ""), "invalid UTF-8");
    EXPECT_BAD_FILE(make_file(std::string(1000, '[') + std::string(1000, ']'), ""), "nesting deeper");
}

TEST(rejects_non_object_header) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("[1,2]", ""), "header is not a JSON object");
    EXPECT_BAD_FILE(make_file("\"hi\"", ""), "header is not a JSON object");
}

TEST(rejects_wrong_types) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"a\":5}", ""), "tensor 'a': entry is not an object");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":4,\"shape\":[],\"data_offsets\":[0,4]}}", "1234"),
                    "tensor 'a': \"dtype\" missing or not a string");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"shape\":[],\"data_offsets\":[0,4]}}", "1234"), "\"dtype\" missing");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]}}", "1234"),
                    "tensor 'a': \"shape\" missing or not an array");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", "1234"),
                    "tensor 'a': \"shape\" holds a non-integer");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", "1234"),
                    "\"shape\" holds a non-integer");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "1234"),
                    "tensor 'a': \"data_offsets\" missing or not a [begin, end] pair");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", "1234"),
                    "\"data_offsets\" missing or not a [begin, end] pair");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}", "1234"),
                    "tensor 'a': \"data_offsets\" are not non-negative integers");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", "1234"),
                    "\"data_offsets\" are not non-negative integers");
    EXPECT_BAD_FILE(make_file("{\"__metadata__\":[]}", ""), "\"__metadata__\" is not an object");
}

TEST(rejects_unknown_dtype) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", "1234"),
                    "tensor 'a': unknown dtype 'F33'");
}

TEST(rejects_bad_shapes) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,0]}}", ""),
                    "tensor 'a': negative dimension -1 in shape");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                              "\"data_offsets\":[0,0]}}",
                              ""),
                    "tensor 'a': element count of shape overflows");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],"
                              "\"data_offsets\":[0,0]}}",
                              ""),
                    "element count of shape overflows");  // numel fits, numel x 8 bytes does not
}

TEST(rejects_offsets_not_matching_size) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", "1234"),
                    "tensor 'a': data_offsets [0, 4] span 4 bytes, but F32 x [2] needs 8");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", "1234"),
                    "tensor 'a': data_offsets [4, 0] end before they begin");
}

TEST(rejects_offsets_outside_buffer) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "1234"),
                    "tensor 'a': data_offsets [0, 8] run past the end of the data buffer (4 bytes");
    EXPECT_BAD_FILE(
        make_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[18446744073709551612,0]}}",
                  "1234"),
        "\"data_offsets\" are not non-negative integers");  // past int64: never a valid offset
}

TEST(rejects_overlap_gap_and_trailing_bytes) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                              "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
                              "123456"),
                    "tensors 'a' and 'b' overlap in the data buffer");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                              "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]}}",
                              "123456"),
                    "gap in the data buffer: bytes [2, 4) before tensor 'b' belong to no tensor");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}", "1234"),
                    "gap in the data buffer: bytes [0, 2)");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", "1234"),
                    "data buffer has 4 bytes but the tensors cover only 2");
    EXPECT_BAD_FILE(make_file("{}", "1234"), "data buffer has 4 bytes but the tensors cover only 0");
    // An empty tensor inside another one is an overlap too.
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                              "\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,2]}}",
                              "1234"),
                    "overlap");
}

TEST(rejects_duplicate_names) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                              "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
                              "1234"),
                    "duplicate tensor name 'a'");
    EXPECT_BAD_FILE(make_file("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", ""),
                    "duplicate metadata key 'k'");
    EXPECT_BAD_FILE(make_file("{\"__metadata__\":{},\"__metadata__\":{}}", ""), "duplicate \"__metadata__\"");
}

TEST(rejects_bad_metadata) {
    TempDir dir("host_safetensors");
    EXPECT_BAD_FILE(make_file("{\"__metadata__\":{\"step\":5}}", ""),
                    "metadata value of 'step' is not a string");
    EXPECT_BAD_FILE(make_file("{\"__metadata__\":{\"n\":null}}", ""),
                    "metadata value of 'n' is not a string");
    EXPECT_BAD_FILE(make_file("{\"__metadata__\":{\"crc32.a\":\"12345\"}}", ""),
                    "metadata 'crc32.a' is not 8 hex digits: '12345'");
    // null __metadata__ is what Python's reader accepts too: no metadata.
    std::string path = dir.file("nullmeta.safetensors");
    write_file(path, make_file("{\"__metadata__\":null}", ""));
    EXPECT_EQ(SafetensorsReader(path).all_metadata().size(), (size_t)0);
}

TEST(error_messages_stay_one_line) {
    TempDir dir("host_safetensors");
    // A hostile tensor name with a newline and a quote: escaped in the message.
    EXPECT_BAD_FILE(make_file("{\"x\\ny'\":{\"dtype\":\"Q\",\"shape\":[],\"data_offsets\":[0,0]}}", ""),
                    "tensor 'x\\x0ay\\'': unknown dtype 'Q'");
}

// --------------------------------------------------------------------------------------- checksums

TEST(flipped_data_byte_fails_checksum) {
    TempDir dir("host_safetensors");
    auto ts = sample_tensors();
    SafetensorsWriter w;
    add_all(w, ts);
    std::string path = dir.file("flip.safetensors");
    w.write_atomic(path);
    uint64_t offset;
    {
        SafetensorsReader r(path);
        offset = r.data_start() + r.tensor("tokens").offset + 5;
    }
    std::string bytes = read_file(path);
    bytes[offset] ^= 0x10;
    write_file(path, bytes);
    SafetensorsReader r(path);  // the header is fine: opening works
    std::vector<int32_t> tok(7);
    const TestTensor* tokens = nullptr;
    for (const auto& t : ts)
        if (t.name == "tokens") tokens = &t;
    EXPECT_ERROR(
        r.read("tokens", tok.data(), tok.size() * 4),
        path + ": tensor 'tokens' fails its checksum (stored " + crc_hex(tokens->bytes) + ", computed ");
    EXPECT_ERROR(r.verify_all_checksums(), path + ": tensor 'tokens' fails its checksum");
    EXPECT_TRUE(r.read("wte.weight").size() == 48);  // the others still read
}

TEST(truncated_file) {
    TempDir dir("host_safetensors");
    auto ts = sample_tensors();
    SafetensorsWriter w;
    add_all(w, ts);
    std::string bytes = w.serialize();
    // Cut anywhere in the data buffer: the last tensor runs past its end. Cut in the header: the length does.
    EXPECT_BAD_FILE(bytes.substr(0, bytes.size() - 1), "run past the end of the data buffer");
    EXPECT_BAD_FILE(bytes.substr(0, 100), "runs past the end of the file (100 bytes; truncated?)");
    EXPECT_BAD_FILE(bytes.substr(0, 7), "file is 7 bytes, too short");
}

// ------------------------------------------------------------------------------------- atomic writes

TEST(write_atomic_replaces_and_leaves_no_temp) {
    TempDir dir("host_safetensors");
    std::string path = dir.file("ckpt.safetensors");
    for (int gen = 0; gen < 3; gen++) {
        std::vector<float> x(10, (float)gen);
        SafetensorsWriter w;
        w.add("x", "F32", {10}, x.data(), x.size() * 4);
        w.write_atomic(path);
        SafetensorsReader r(path);
        std::vector<float> y(10);
        r.read("x", y.data(), 40);
        EXPECT_NEAR(y[9], gen, 0);
    }
    EXPECT_TRUE(!exists(path + ".tmp." + std::to_string(getpid())));
}

TEST(write_atomic_cannot_create_keeps_old_file) {
    TempDir dir("host_safetensors");
    std::string sub = dir.file("ro");
    mkdir(sub.c_str(), 0755);
    std::string path = sub + "/ckpt.safetensors";
    float old_data[2] = {1, 2};
    SafetensorsWriter old;
    old.add("x", "F32", {2}, old_data, sizeof(old_data));
    old.write_atomic(path);
    const std::string before = read_file(path);

    float new_data[2] = {3, 4};
    SafetensorsWriter w;
    w.add("x", "F32", {2}, new_data, sizeof(new_data));
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    chmod(sub.c_str(), 0555);
    if (access(sub.c_str(), W_OK) == 0) {
        // root ignores directory permissions: make the temporary file impossible to create another way
        // (a directory squats on its name), which takes the same error path.
        chmod(sub.c_str(), 0755);
        mkdir(tmp.c_str(), 0755);
        EXPECT_ERROR(w.write_atomic(path), path + ": cannot create " + tmp + ": Is a directory");
        rmdir(tmp.c_str());
    } else {
        EXPECT_ERROR(w.write_atomic(path), path + ": cannot create " + tmp + ": Permission denied");
        chmod(sub.c_str(), 0755);
    }
    EXPECT_TRUE(read_file(path) == before);
    EXPECT_TRUE(!exists(tmp));
    float got[2];
    SafetensorsReader(path).read("x", got, sizeof(got));
    EXPECT_NEAR(got[1], 2.0, 0);
    // A directory that does not exist at all.
    EXPECT_ERROR(w.write_atomic(dir.file("no/such/dir/x.safetensors")), "cannot create",
                 "No such file or directory");
}

TEST(write_atomic_disk_full_keeps_old_file) {
    // A file size limit makes write() fail part-way (EFBIG), like a full disk (ENOSPC) would.
    TempDir dir("host_safetensors");
    std::string path = dir.file("ckpt.safetensors");
    float old_data[2] = {1, 2};
    SafetensorsWriter old;
    old.add("x", "F32", {2}, old_data, sizeof(old_data));
    old.write_atomic(path);
    const std::string before = read_file(path);

    std::vector<float> big(1 << 16, 3.0f);
    SafetensorsWriter w;
    w.add("x", "F32", {(int64_t)big.size()}, big.data(), big.size() * 4);
    struct rlimit saved;
    getrlimit(RLIMIT_FSIZE, &saved);
    struct rlimit small = saved;
    small.rlim_cur = 64 * 1024;
    auto old_handler = signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &small) != 0) {
        signal(SIGXFSZ, old_handler);
        SKIP("cannot lower RLIMIT_FSIZE");
    }
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    EXPECT_ERROR(w.write_atomic(path), path + ": writing " + tmp + ": File too large");
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old_handler);
    EXPECT_TRUE(!exists(tmp));
    EXPECT_TRUE(read_file(path) == before);
}

TEST(stale_temp_file_does_not_disturb_reading) {
    // A writer that died mid-write leaves "<path>.tmp.<its pid>" behind; the real file is untouched.
    TempDir dir("host_safetensors");
    std::string path = dir.file("ckpt.safetensors");
    float data[3] = {1, 2, 3};
    SafetensorsWriter w;
    w.add("x", "F32", {3}, data, sizeof(data));
    w.write_atomic(path);
    const std::string full = w.serialize();
    write_file(path + ".tmp.999999", full.substr(0, full.size() / 2));
    const std::string mine = path + ".tmp." + std::to_string(getpid());
    write_file(mine, std::string(100000, 'z'));  // one with our own pid: truncated and reused
    SafetensorsReader r(path);
    float got[3];
    r.read("x", got, sizeof(got));
    EXPECT_NEAR(got[2], 3.0, 0);
    w.write_atomic(path);  // writing again works and replaces the file
    EXPECT_TRUE(read_file(path) == full);
    EXPECT_TRUE(!exists(mine));
    EXPECT_TRUE(exists(path + ".tmp.999999"));  // not ours to remove
}

// ------------------------------------------------------------------------------ interoperability

TEST(reads_file_as_python_safetensors_writes_it) {
    // Bytes of safetensors.numpy.save({"wte.weight": float32 [[0.5,-1,2],[3.25,0,-0.125]],
    // "h.0.ln_1.bias": float32 [1,2], "h.0.attn.bias": uint8 [[1,0],[1,1]]}, metadata={"format": "pt"})
    // (safetensors 0.8): compact JSON, tensors sorted by dtype then name, header padded with spaces to a
    // multiple of 8, no checksums.
    const std::string header =
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"h.0.ln_1.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]},"
        "\"h.0.attn.bias\":{\"dtype\":\"U8\",\"shape\":[2,2],\"data_offsets\":[32,36]}}  ";
    const unsigned char data[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x3f,
                                  0x00, 0x00, 0x80, 0xbf, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x50, 0x40,
                                  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xbe, 0x01, 0x00, 0x01, 0x01};
    EXPECT_EQ(header.size(), (size_t)232);
    TempDir dir("host_safetensors");
    std::string path = dir.file("model.safetensors");
    write_file(path, std::string("\xe8\x00\x00\x00\x00\x00\x00\x00", 8) + header +
                         std::string((const char*)data, sizeof(data)));
    SafetensorsReader r(path);
    EXPECT_TRUE(r.names() == std::vector<std::string>({"h.0.attn.bias", "h.0.ln_1.bias", "wte.weight"}));
    EXPECT_TRUE(r.metadata("format") == "pt");
    const SafeTensor& wte = r.tensor("wte.weight");
    EXPECT_TRUE(wte.dtype == "F32" && wte.shape == std::vector<int64_t>({2, 3}));
    float w[6];
    r.read("wte.weight", w, sizeof(w));
    const float want[6] = {0.5f, -1.0f, 2.0f, 3.25f, 0.0f, -0.125f};
    for (int i = 0; i < 6; i++) EXPECT_NEAR(w[i], want[i], 0);
    float b[2];
    r.read("h.0.ln_1.bias", b, sizeof(b));
    EXPECT_NEAR(b[1], 2.0, 0);
    EXPECT_TRUE(r.read("h.0.attn.bias") == std::vector<uint8_t>({1, 0, 1, 1}));
    EXPECT_EQ(r.verify_all_checksums(), (size_t)0);
}

TEST(writes_what_python_expects) {
    // The exact bytes a reader like Python's parses: compact header, sorted, aligned, checksums in metadata.
    float x[2] = {1.0f, 2.0f};
    uint8_t m[3] = {1, 2, 3};
    SafetensorsWriter w;
    w.add("b", "F32", {2}, x, sizeof(x));
    w.add("a", "U8", {3}, m, sizeof(m));
    w.set_metadata("format", "pt");
    std::string bytes = w.serialize();
    std::string header =
        "{\"__metadata__\":{\"crc32.a\":\"" + crc_hex(std::string((char*)m, 3)) + "\",\"crc32.b\":\"" +
        crc_hex(std::string((char*)x, 8)) +
        "\",\"format\":\"pt\"},\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[3,11]}}";
    header.append((8 - header.size() % 8) % 8, ' ');
    EXPECT_TRUE(bytes == le64(header.size()) + header + std::string((char*)m, 3) + std::string((char*)x, 8));
}

TEST(reads_tensor_past_4gb) {
    // A sparse file with a 5 GB tensor followed by a small one: offsets past 2^32 must work.
    TempDir dir("host_safetensors");
    const uint64_t big = 5'000'000'000ull;
    std::string header = "{\"big\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(big) +
                         "],\"data_offsets\":[0," + std::to_string(big) +
                         "]},\"tail\":{\"dtype\":\"U8\",\"shape\":[4],"
                         "\"data_offsets\":[" +
                         std::to_string(big) + "," + std::to_string(big + 4) + "]}}";
    std::string path = dir.file("huge.safetensors");
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    std::string head = le64(header.size()) + header;
    bool ok = fd >= 0 && write(fd, head.data(), head.size()) == (ssize_t)head.size() &&
              pwrite(fd, "tail", 4, (off_t)(head.size() + big)) == 4;
    if (fd >= 0) close(fd);
    if (!ok) SKIP("cannot create a sparse 5 GB file here");
    SafetensorsReader r(path);
    EXPECT_EQ((uint64_t)r.tensor("tail").offset, big);
    EXPECT_EQ(r.data_size(), big + 4);
    EXPECT_TRUE(r.read("tail") == std::vector<uint8_t>({'t', 'a', 'i', 'l'}));
}

TEST_MAIN()
