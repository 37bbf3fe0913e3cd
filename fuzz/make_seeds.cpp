// Writes seed inputs for the fuzz targets: valid safetensors files made by SafetensorsWriter (plus one laid
// out the way Python's safetensors writes it) into DIR/safetensors/, and their JSON headers into DIR/json/.
// Usage: make_seeds DIR (the two subdirectories must exist).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "llmc/safetensors.h"

namespace {

void save(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), (std::streamsize)bytes.size());
    if (!f) {
        fprintf(stderr, "make_seeds: cannot write %s\n", path.c_str());
        exit(1);
    }
}

// Saves a file image and, separately, its JSON header.
void save_seed(const std::string& dir, const std::string& name, const std::string& file) {
    save(dir + "/safetensors/" + name + ".safetensors", file);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | (unsigned char)file[i];
    save(dir + "/json/" + name + ".json", file.substr(8, n));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    const std::string dir = argv[1];

    {  // several dtypes and shapes, 0-d and empty tensors, metadata
        std::vector<float> wte(12);
        for (int i = 0; i < 12; i++) wte[i] = 0.25f * (float)i;
        uint16_t bf16[3] = {0x3f80, 0x4000, 0xc000};
        uint16_t f16[2] = {0x3c00, 0xbc00};
        int32_t tok[4] = {1, 50256, 7, 0};
        int64_t step = 1000;
        uint8_t fp8[5] = {0x38, 0x40, 0xb8, 0x00, 0x7e};
        SafetensorsWriter w;
        w.add("wte.weight", "F32", {3, 4}, wte.data(), wte.size() * 4);
        w.add("h.0.ln_1.bias", "BF16", {3}, bf16, sizeof(bf16));
        w.add("h.0.attn.w", "F16", {1, 2}, f16, sizeof(f16));
        w.add("tokens", "I32", {4}, tok, sizeof(tok));
        w.add("step", "I64", {}, &step, sizeof(step));
        w.add("fp8", "F8_E4M3", {5}, fp8, sizeof(fp8));
        w.add("empty", "F32", {0, 3}, nullptr, 0);
        w.set_metadata("format", "pt");
        w.set_metadata("config", "{\"layers\": 12, \"name\": \"gpt2 \\u00e9\"}");
        save_seed(dir, "mixed", w.serialize());
    }
    {  // one tensor, no user metadata
        float x[2] = {1.0f, -2.0f};
        SafetensorsWriter w;
        w.add("x", "F32", {2}, x, sizeof(x));
        save_seed(dir, "single", w.serialize());
    }
    save_seed(dir, "empty", SafetensorsWriter().serialize());
    {  // as Python's safetensors writes it: sorted by dtype then name, space padding, no checksums
        const std::string header =
            "{\"__metadata__\":{\"format\":\"pt\"},"
            "\"h.0.ln_1.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
            "\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]},"
            "\"h.0.attn.bias\":{\"dtype\":\"U8\",\"shape\":[2,2],\"data_offsets\":[32,36]}}  ";
        std::string file(8, '\0');
        for (int i = 0; i < 8; i++) file[i] = (char)((header.size() >> (8 * i)) & 0xff);
        file += header;
        for (int i = 0; i < 36; i++) file += (char)(i * 7);
        save_seed(dir, "python", file);
    }
    return 0;
}
