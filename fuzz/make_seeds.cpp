// Writes seed inputs for the fuzz targets: valid safetensors files made by SafetensorsWriter (plus one laid
// out the way Python's safetensors writes it) into DIR/safetensors/, and their JSON headers into DIR/json/;
// token shards made by write_shard (valid, plus truncated / wrong magic / token >= vocab variants) into
// DIR/shard/; checkpoints made by write_checkpoint (valid, plus a flipped data byte and another recipe) into
// DIR/checkpoint/; tokenizer files made by Tokenizer::save (bytes, a small BPE-like vocabulary with eot,
// plus truncated / trailing-byte / wrong-kind / bytes-with-eot variants) into DIR/tokenizer/; HellaSwag eval
// files made by serialize_hellaswag (vocabulary 300, as fuzz_hellaswag reads them; plus truncated, bad-label
// and GPT-2-vocabulary variants) into DIR/hellaswag/.
// Usage: make_seeds DIR (the subdirectories must exist).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "llmc/formats/checkpoint.h"
#include "llmc/formats/dataloader.h"
#include "llmc/formats/hellaswag.h"
#include "llmc/formats/safetensors.h"
#include "llmc/formats/tokenizer.h"

namespace {

void save(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), (std::streamsize)bytes.size());
    if (!f) {
        fprintf(stderr, "make_seeds: cannot write %s\n", path.c_str());
        exit(1);
    }
}

std::string load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!f.good() && !f.eof()) {
        fprintf(stderr, "make_seeds: cannot read %s\n", path.c_str());
        exit(1);
    }
    return bytes;
}

// A scratch directory under /tmp, removed with its files by the destructor.
struct Scratch {
    std::string path;
    Scratch() {
        char tmpl[] = "/tmp/make_seeds_XXXXXX";
        if (!mkdtemp(tmpl)) {
            perror("make_seeds: mkdtemp");
            exit(1);
        }
        path = tmpl;
    }
    ~Scratch() {
        for (const std::string& f : list_checkpoints(path)) std::remove(f.c_str());
        std::remove((path + "/shard.bin").c_str());
        std::remove((path + "/tokenizer.bin").c_str());
        rmdir(path.c_str());
    }
};

// A shard of `tokens` as write_shard writes it.
std::string shard_bytes(const Scratch& tmp, const std::vector<uint16_t>& tokens) {
    const std::string path = tmp.path + "/shard.bin";
    write_shard(path, tokens);
    return load(path);
}

// Token shards for fuzz_shard (which reads them with B=2, T=4, vocab=300: at least 9 tokens, ids < 300).
void shard_seeds(const std::string& dir, const Scratch& tmp) {
    std::vector<uint16_t> tokens(37);
    for (size_t i = 0; i < tokens.size(); i++) tokens[i] = (uint16_t)((i * 97 + 5) % 300);
    tokens[3] = 299;
    const std::string valid = shard_bytes(tmp, tokens);
    save(dir + "/shard/valid.bin", valid);
    save(dir + "/shard/minimal.bin",
         shard_bytes(tmp, std::vector<uint16_t>(tokens.begin(), tokens.begin() + 9)));
    save(dir + "/shard/truncated.bin", valid.substr(0, valid.size() - 3));
    save(dir + "/shard/header_only.bin", valid.substr(0, 4 * kShardHeaderInts));
    std::string magic = valid;
    magic[0] ^= 0x01;
    save(dir + "/shard/bad_magic.bin", magic);
    std::vector<uint16_t> big = tokens;
    big[20] = 300;
    save(dir + "/shard/token_too_big.bin", shard_bytes(tmp, big));
}

// Checkpoints for fuzz_checkpoint, of the state it reads (as in test/host_checkpoint.cpp).
void checkpoint_seeds(const std::string& dir, const Scratch& tmp) {
    std::vector<float> w(6 * 5), m(7);
    for (size_t i = 0; i < w.size(); i++) w[i] = 0.125f * (float)i - 1.0f;
    for (size_t i = 0; i < m.size(); i++) m[i] = -0.5f * (float)i;
    const std::vector<HostTensor> views = {{"master.w", "F32", {6, 5}, w.data(), w.size() * 4},
                                           {"adam_m.w", "F32", {7}, m.data(), m.size() * 4}};
    CheckpointMeta meta;
    meta.step = 12;
    meta.opt_step = 11;
    meta.train_data = {3, 4108};
    meta.fp8_calibrating = false;
    meta.model = "L=1 C=5 H=1 V=6 maxT=4 gelu=erf";
    meta.recipe = "fp8 hybrid history=16 amax=max margin=0";
    meta.config = "{\"B\": 2, \"T\": 4}";
    write_checkpoint(tmp.path, meta, views, 1);
    const std::string valid = load(checkpoint_path(tmp.path, meta.step));
    save(dir + "/checkpoint/valid.safetensors", valid);
    std::string flipped = valid;
    flipped[flipped.size() - 5] ^= 0x40;  // inside adam_m.w: its crc32 no longer matches
    save(dir + "/checkpoint/flipped_byte.safetensors", flipped);
    meta.step = 13;
    meta.fp8_calibrating = true;
    meta.recipe = "bf16";
    write_checkpoint(tmp.path, meta, views, 1);
    save(dir + "/checkpoint/other_recipe.safetensors", load(checkpoint_path(tmp.path, meta.step)));
}

// A tokenizer file as Tokenizer::save writes it.
std::string tokenizer_bytes(const Scratch& tmp, const Tokenizer& t) {
    const std::string path = tmp.path + "/tokenizer.bin";
    t.save(path);
    return load(path);
}

// Tokenizer files for fuzz_tokenizer: both kinds, an eot, an empty and a duplicate entry, damaged variants.
void tokenizer_seeds(const std::string& dir, const Scratch& tmp) {
    save(dir + "/tokenizer/bytes.bin", tokenizer_bytes(tmp, Tokenizer::bytes()));
    std::vector<std::string> vocab;
    for (int i = 0; i < 256; i++) vocab.push_back(std::string(1, (char)i));
    for (const char* w : {"th", "the", " the", "in", "ing", "", "the", "<|endoftext|>"}) vocab.push_back(w);
    const std::string bpe =
        tokenizer_bytes(tmp, Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, vocab, (int)vocab.size() - 1));
    save(dir + "/tokenizer/bpe.bin", bpe);
    const std::string small = tokenizer_bytes(
        tmp, Tokenizer::from_vocab(Tokenizer::Kind::Gpt2Bpe, {"a", "b", "ab", "abc", " ", "\xff"}, -1));
    save(dir + "/tokenizer/small_no_eot.bin", small);
    save(dir + "/tokenizer/truncated.bin", bpe.substr(0, bpe.size() - 2));
    save(dir + "/tokenizer/trailing.bin", small + "x");
    std::string kind = small;
    kind[8] = 0;  // kind bytes with 6 entries
    save(dir + "/tokenizer/wrong_kind.bin", kind);
    std::string bytes_eot = load(dir + "/tokenizer/bytes.bin");
    bytes_eot.replace(16, 4, std::string("\x41\0\0\0", 4));  // kind bytes with an eot (must be refused)
    save(dir + "/tokenizer/bytes_with_eot.bin", bytes_eot);
}

// HellaSwag eval files for fuzz_hellaswag (model vocabulary 300).
void hellaswag_seeds(const std::string& dir) {
    HellaSwagSet set;
    set.vocab_size = 300;
    for (int i = 0; i < 3; i++) {
        HellaSwagExample ex;
        ex.label = i;
        for (int k = 0; k <= i + 2; k++) ex.context.push_back((k * 37 + i) % 300);
        for (int e = 0; e < kHellaSwagEndings; e++)
            for (int k = 0; k <= e; k++) ex.endings[e].push_back((k * 11 + e * 5 + 290) % 300);
        set.examples.push_back(ex);
    }
    set.examples[0].context[0] = 299;
    const std::string valid = serialize_hellaswag(set);
    save(dir + "/hellaswag/valid.bin", valid);
    HellaSwagSet one = set;
    one.examples.resize(1);
    save(dir + "/hellaswag/one.bin", serialize_hellaswag(one));
    save(dir + "/hellaswag/truncated.bin", valid.substr(0, valid.size() - 1));
    std::string label = valid;
    label[20] = 4;
    save(dir + "/hellaswag/bad_label.bin", label);
    set.vocab_size = 50257;  // refused for a 300-entry model
    save(dir + "/hellaswag/gpt2_vocab.bin", serialize_hellaswag(set));
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
    Scratch tmp;
    shard_seeds(dir, tmp);
    checkpoint_seeds(dir, tmp);
    tokenizer_seeds(dir, tmp);
    hellaswag_seeds(dir);
    return 0;
}
