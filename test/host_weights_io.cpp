// Host tests for llmc/model/weights_io: the parameter table, seed and Hugging Face exports (names, shapes,
// layout, config.json), import round trips (bitwise), vocabulary padding, hand-built HF files (no prefix,
// mask buffers, lm_head), F16/BF16 conversion and every import error. Files go to a fresh mkdtemp directory.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "llmc/formats/json.h"
#include "llmc/formats/safetensors.h"
#include "llmc/host/config.h"
#include "llmc/model/weights_io.h"
#include "test/numeric.h"
#include "test/temp_dir.h"
#include "test/testing.h"

using testing::error_of;

namespace {

using testing::TempDir;

std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

ModelConfig small_model() {  // L=2, C=64, H=4, V=96
    ModelConfig m;
    m.num_layers = 2;
    m.channels = 64;
    m.num_heads = 4;
    m.vocab_size = 96;
    m.max_seq_len = 32;
    m.gelu_tanh = false;
    return m;
}
ModelConfig padded_model() {  // GPT-2's padded vocabulary with a tiny body
    ModelConfig m;
    m.num_layers = 1;
    m.channels = 16;
    m.num_heads = 4;
    m.vocab_size = 50304;
    m.max_seq_len = 16;
    m.gelu_tanh = true;
    return m;
}

std::vector<float> random_params(const ModelConfig& m, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, 0.5f);
    std::vector<float> p(num_parameters(m));
    for (float& x : p) x = d(gen);
    return p;
}

// A safetensors file held in memory, editable, written back with SafetensorsWriter.
struct Tensor {
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};
using TensorMap = std::map<std::string, Tensor>;
TensorMap load_all(const std::string& path) {
    SafetensorsReader r(path);
    TensorMap out;
    for (const SafeTensor& t : r.tensors()) out[t.name] = {t.dtype, t.shape, r.read(t.name)};
    return out;
}
void save_all(const TensorMap& tensors, const std::string& path) {
    SafetensorsWriter w;
    for (const auto& kv : tensors)
        w.add(kv.first, kv.second.dtype, kv.second.shape, kv.second.bytes.data(), kv.second.bytes.size());
    w.write_atomic(path);
}
Tensor f32_tensor(const std::vector<int64_t>& shape, const std::vector<float>& v) {
    Tensor t{"F32", shape, std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    return t;
}
int64_t numel(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

// The canonical tensor `name` (parameter_table name) of `p`, layer `l` (-1: whole tensor).
const float* slice(const ModelConfig& m, const std::vector<float>& p, const std::string& name, int l,
                   size_t* n) {
    for (const ParamTensorInfo& t : parameter_table(m))
        if (t.name == name) {
            if (l < 0) {
                *n = t.numel;
                return p.data() + t.offset;
            }
            *n = t.numel / t.shape[0];
            return p.data() + t.offset + (size_t)l * *n;
        }
    return nullptr;
}

// An HF export of `m` rewritten without the "transformer." prefix (and without metadata).
TensorMap hf_unprefixed(const TempDir& dir, const ModelConfig& m, const std::vector<float>& p) {
    export_weights(dir.file("hf_src"), ExportFormat::HF, m, p);
    TensorMap in = load_all(dir.file("hf_src/model.safetensors")), out;
    for (auto& kv : in) out[kv.first.substr(std::strlen("transformer."))] = kv.second;
    return out;
}

}  // namespace

TEST(parameter_table_matches_config_count) {
    for (const ModelConfig& m : {small_model(), padded_model()}) {
        const auto table = parameter_table(m);
        EXPECT_EQ(table.size(), (size_t)kNumParamTensors);
        size_t off = 0;
        for (const auto& t : table) {
            EXPECT_EQ(t.offset, off);
            off += t.numel;
        }
        EXPECT_EQ(off, num_parameters(m));
    }
    const auto t = parameter_table(small_model());
    EXPECT_TRUE(t[4].name == "qkvw" && t[4].shape == (std::vector<size_t>{2, 192, 64}) && t[4].weight_decay);
    EXPECT_TRUE(t[12].name == "fcprojw" && t[12].shape == (std::vector<size_t>{2, 64, 256}));
    EXPECT_TRUE(t[15].name == "lnfb" && !t[15].weight_decay);
    EXPECT_EQ(hf_vocab_size(50304), 50257);
    EXPECT_EQ(hf_vocab_size(50257), 50257);
    EXPECT_EQ(hf_vocab_size(96), 96);
    EXPECT_EQ(hf_vocab_size(65536), 65536);
}

TEST(seed_export_names_shapes_roundtrip) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    const auto p = random_params(m, 1);
    const std::string f = dir.file("seed.safetensors");
    export_weights(f, ExportFormat::Seed, m, p);
    SafetensorsReader r(f);
    EXPECT_EQ(r.size(), (size_t)(4 + 12 * m.num_layers));
    EXPECT_TRUE(!r.has("lm_head.weight"));
    EXPECT_TRUE(r.metadata("format") == "pt");
    const json::Value cfg = json::parse(r.metadata("gpt_config"));
    EXPECT_EQ(cfg.find("n_head")->as_int(), 4);
    EXPECT_TRUE(cfg.find("gelu")->as_string() == "erf");
    EXPECT_TRUE(r.tensor("tok_embd.weight").shape == (std::vector<int64_t>{96, 64}));
    EXPECT_TRUE(r.tensor("pos_embd.weight").shape == (std::vector<int64_t>{32, 64}));
    EXPECT_TRUE(r.tensor("tsfmr_blks.1.attn.attn_proj.weight").shape == (std::vector<int64_t>{192, 64}));
    EXPECT_TRUE(r.tensor("tsfmr_blks.1.attn.out_proj.bias").shape == (std::vector<int64_t>{64}));
    EXPECT_TRUE(r.tensor("tsfmr_blks.0.ffn.0.weight").shape == (std::vector<int64_t>{256, 64}));
    EXPECT_TRUE(r.tensor("tsfmr_blks.0.ffn.2.weight").shape == (std::vector<int64_t>{64, 256}));
    EXPECT_TRUE(r.tensor("out_norm.bias").shape == (std::vector<int64_t>{64}));
    // layer 1's qkv weight is the slice of the stacked canonical tensor, same [out, in] layout
    size_t n;
    const float* q = slice(m, p, "qkvw", 1, &n);
    std::vector<uint8_t> bytes = r.read("tsfmr_blks.1.attn.attn_proj.weight");
    EXPECT_TRUE(bytes.size() == n * 4 && std::memcmp(bytes.data(), q, bytes.size()) == 0);
    const float* b = slice(m, p, "ln2b", 0, &n);
    bytes = r.read("tsfmr_blks.0.ffn_norm.bias");
    EXPECT_TRUE(bytes.size() == n * 4 && std::memcmp(bytes.data(), b, bytes.size()) == 0);

    EXPECT_TRUE(testing::same_bits(import_weights(f, m), p));
}

TEST(seed_padded_vocab_roundtrip) {
    TempDir dir("host_weights_io");
    const ModelConfig m = padded_model();
    const auto p = random_params(m, 2);
    export_weights(dir.file("s.safetensors"), ExportFormat::Seed, m, p);
    SafetensorsReader r(dir.file("s.safetensors"));
    EXPECT_TRUE(r.tensor("tok_embd.weight").shape == (std::vector<int64_t>{50304, 16}));
    EXPECT_TRUE(json::parse(r.metadata("gpt_config")).find("gelu")->as_string() == "tanh");
    EXPECT_TRUE(testing::same_bits(import_weights(dir.file("s.safetensors"), m), p));
}

TEST(hf_export_layout_and_roundtrip) {
    TempDir dir("host_weights_io");
    const ModelConfig m = padded_model();
    const auto p = random_params(m, 3);
    const std::string out = dir.file("a/b/hf");  // parents created
    export_weights(out, ExportFormat::HF, m, p);
    SafetensorsReader r(out + "/model.safetensors");
    const int C = m.channels;
    EXPECT_EQ(r.size(), (size_t)(4 + 12 * m.num_layers));
    EXPECT_TRUE(r.metadata("format") == "pt");
    EXPECT_TRUE(!r.has("lm_head.weight") && !r.has("transformer.lm_head.weight"));
    EXPECT_TRUE(r.tensor("transformer.wte.weight").shape == (std::vector<int64_t>{50257, C}));
    EXPECT_TRUE(r.tensor("transformer.wpe.weight").shape == (std::vector<int64_t>{16, C}));
    EXPECT_TRUE(r.tensor("transformer.h.0.ln_1.weight").shape == (std::vector<int64_t>{C}));
    EXPECT_TRUE(r.tensor("transformer.h.0.attn.c_attn.weight").shape == (std::vector<int64_t>{C, 3 * C}));
    EXPECT_TRUE(r.tensor("transformer.h.0.attn.c_attn.bias").shape == (std::vector<int64_t>{3 * C}));
    EXPECT_TRUE(r.tensor("transformer.h.0.attn.c_proj.weight").shape == (std::vector<int64_t>{C, C}));
    EXPECT_TRUE(r.tensor("transformer.h.0.mlp.c_fc.weight").shape == (std::vector<int64_t>{C, 4 * C}));
    EXPECT_TRUE(r.tensor("transformer.h.0.mlp.c_fc.bias").shape == (std::vector<int64_t>{4 * C}));
    EXPECT_TRUE(r.tensor("transformer.h.0.mlp.c_proj.weight").shape == (std::vector<int64_t>{4 * C, C}));
    EXPECT_TRUE(r.tensor("transformer.ln_f.bias").shape == (std::vector<int64_t>{C}));

    // Conv1D layout: file[i][o] == canonical[o][i]
    size_t n;
    const float* qkvw = slice(m, p, "qkvw", 0, &n);
    std::vector<uint8_t> raw = r.read("transformer.h.0.attn.c_attn.weight");
    const float* f = reinterpret_cast<const float*>(raw.data());
    bool ok = true;
    for (int i = 0; i < C; i++)
        for (int o = 0; o < 3 * C; o++) ok &= f[i * 3 * C + o] == qkvw[o * C + i];
    EXPECT_TRUE(ok);
    const float* fcprojw = slice(m, p, "fcprojw", 0, &n);  // canonical [C, 4C], file [4C, C]
    raw = r.read("transformer.h.0.mlp.c_proj.weight");
    f = reinterpret_cast<const float*>(raw.data());
    ok = true;
    for (int i = 0; i < 4 * C; i++)
        for (int o = 0; o < C; o++) ok &= f[i * C + o] == fcprojw[o * 4 * C + i];
    EXPECT_TRUE(ok);
    raw = r.read("transformer.wte.weight");
    EXPECT_TRUE(std::memcmp(raw.data(), p.data(), raw.size()) == 0);

    // import: equal except the padded vocabulary rows, which are zero
    std::vector<float> expect = p;
    std::fill(expect.begin() + (size_t)50257 * C, expect.begin() + (size_t)50304 * C, 0.0f);
    EXPECT_TRUE(testing::same_bits(import_weights(out, m), expect));
    EXPECT_TRUE(testing::same_bits(import_weights(out + "/model.safetensors", m), expect));
}

TEST(hf_config_json_content) {
    TempDir dir("host_weights_io");
    ModelConfig m = padded_model();
    export_weights(dir.file("hf"), ExportFormat::HF, m, random_params(m, 4));
    const json::Value v = json::parse(read_text(dir.file("hf/config.json")));
    EXPECT_TRUE(v.find("architectures")->as_array().at(0).as_string() == "GPT2LMHeadModel");
    EXPECT_TRUE(v.find("model_type")->as_string() == "gpt2");
    EXPECT_EQ(v.find("vocab_size")->as_int(), 50257);
    EXPECT_EQ(v.find("n_positions")->as_int(), 16);
    EXPECT_EQ(v.find("n_ctx")->as_int(), 16);
    EXPECT_EQ(v.find("n_embd")->as_int(), 16);
    EXPECT_EQ(v.find("n_layer")->as_int(), 1);
    EXPECT_EQ(v.find("n_head")->as_int(), 4);
    EXPECT_TRUE(v.find("activation_function")->as_string() == "gelu_new");  // tanh GELU
    EXPECT_NEAR(v.find("layer_norm_epsilon")->as_double(), 1e-5, 1e-12);
    EXPECT_EQ(v.find("resid_pdrop")->as_double(), 0.0);
    EXPECT_EQ(v.find("embd_pdrop")->as_double(), 0.0);
    EXPECT_EQ(v.find("attn_pdrop")->as_double(), 0.0);
    EXPECT_TRUE(v.find("tie_word_embeddings")->as_bool());
    EXPECT_TRUE(v.find("scale_attn_weights")->as_bool());
    EXPECT_EQ(v.find("bos_token_id")->as_int(), 50256);
    EXPECT_EQ(v.find("eos_token_id")->as_int(), 50256);
    EXPECT_TRUE(v.find("n_inner") && v.find("n_inner")->is_null());
    EXPECT_TRUE(v.find("torch_dtype")->as_string() == "float32");
    // no temporary files left behind
    EXPECT_TRUE(system(("test $(ls '" + dir.file("hf") + "' | wc -l) -eq 2").c_str()) == 0);

    m = small_model();  // erf GELU, small vocabulary kept as is
    const json::Value s = json::parse(hf_config_json(m));
    EXPECT_TRUE(s.find("activation_function")->as_string() == "gelu");
    EXPECT_EQ(s.find("vocab_size")->as_int(), 96);
    EXPECT_EQ(s.find("eos_token_id")->as_int(), 95);  // inside a toy vocabulary
}

TEST(hf_small_vocab_roundtrip) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    const auto p = random_params(m, 5);
    export_weights(dir.file("hf"), ExportFormat::HF, m, p);
    EXPECT_TRUE(SafetensorsReader(dir.file("hf/model.safetensors")).tensor("transformer.wte.weight").shape ==
                (std::vector<int64_t>{96, 64}));
    EXPECT_TRUE(testing::same_bits(import_weights(dir.file("hf"), m), p));
}

TEST(hf_hand_built_no_prefix_buffers_tied_head) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    const auto p = random_params(m, 6);
    TensorMap t = hf_unprefixed(dir, m, p);
    for (int l = 0; l < m.num_layers; l++) {  // the causal-mask buffers older transformers saved
        std::vector<float> mask(32 * 32, 1.0f);
        t["h." + std::to_string(l) + ".attn.bias"] = f32_tensor({1, 1, 32, 32}, mask);
        t["h." + std::to_string(l) + ".attn.masked_bias"] = f32_tensor({}, {-1e4f});
    }
    save_all(t, dir.file("noprefix.safetensors"));
    EXPECT_TRUE(testing::same_bits(import_weights(dir.file("noprefix.safetensors"), m), p));

    t["lm_head.weight"] = t["wte.weight"];  // tied head saved explicitly
    save_all(t, dir.file("tied.safetensors"));
    EXPECT_TRUE(testing::same_bits(import_weights(dir.file("tied.safetensors"), m), p));

    // buffers with the prefix, from a GPT2LMHeadModel state_dict
    TensorMap u;
    for (auto& kv : t) u[kv.first == "lm_head.weight" ? kv.first : "transformer." + kv.first] = kv.second;
    save_all(u, dir.file("prefixed.safetensors"));
    EXPECT_TRUE(testing::same_bits(import_weights(dir.file("prefixed.safetensors"), m), p));
}

TEST(hf_untied_lm_head_is_an_error) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    TensorMap t = hf_unprefixed(dir, m, random_params(m, 7));
    Tensor head = t["wte.weight"];
    head.bytes[100] ^= 1;
    t["lm_head.weight"] = head;
    save_all(t, dir.file("untied.safetensors"));
    const std::string e = error_of([&] { import_weights(dir.file("untied.safetensors"), m); });
    EXPECT_CONTAINS(e, dir.file("untied.safetensors"));
    EXPECT_CONTAINS(e, "untied lm_head is not supported");
    t["lm_head.weight"] = f32_tensor({95, 64}, std::vector<float>(95 * 64));  // another shape
    save_all(t, dir.file("untied2.safetensors"));
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("untied2.safetensors"), m); }),
                    "untied lm_head is not supported");
}

TEST(wrong_shape_names_the_tensor) {
    TempDir dir("host_weights_io");
    ModelConfig m = small_model();
    const auto p = random_params(m, 8);
    export_weights(dir.file("seed.safetensors"), ExportFormat::Seed, m, p);
    ModelConfig wide = m;
    wide.channels = 128;
    std::string e = error_of([&] { import_weights(dir.file("seed.safetensors"), wide); });
    EXPECT_CONTAINS(
        e, dir.file("seed.safetensors") + ": tok_embd.weight has shape [96, 64], this model needs [96, 128]");
    EXPECT_CONTAINS(e, "different model size");

    // one per-layer tensor of the wrong shape in a prefixed HF file
    export_weights(dir.file("hf"), ExportFormat::HF, m, p);
    TensorMap t = load_all(dir.file("hf/model.safetensors"));
    t["transformer.h.1.mlp.c_fc.weight"] =
        f32_tensor({256, 64}, std::vector<float>(256 * 64));  // not transposed
    save_all(t, dir.file("bad.safetensors"));
    e = error_of([&] { import_weights(dir.file("bad.safetensors"), m); });
    EXPECT_CONTAINS(e, "transformer.h.1.mlp.c_fc.weight has shape [256, 64], this model needs [64, 256]");

    ModelConfig longer = m;  // position embedding rows
    longer.max_seq_len = 64;
    e = error_of([&] { import_weights(dir.file("seed.safetensors"), longer); });
    EXPECT_CONTAINS(e, "pos_embd.weight has shape [32, 64], this model needs [64, 64]");
    EXPECT_CONTAINS(e, "--max-seq");
}

TEST(missing_tensor_is_named) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    export_weights(dir.file("seed.safetensors"), ExportFormat::Seed, m, random_params(m, 9));
    TensorMap t = load_all(dir.file("seed.safetensors"));
    t.erase("tsfmr_blks.1.ffn_norm.weight");
    save_all(t, dir.file("missing.safetensors"));
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("missing.safetensors"), m); }),
                    "missing tensor 'tsfmr_blks.1.ffn_norm.weight'");
    export_weights(dir.file("hf"), ExportFormat::HF, m, random_params(m, 9));
    t = load_all(dir.file("hf/model.safetensors"));
    t.erase("transformer.ln_f.bias");
    save_all(t, dir.file("missing_hf.safetensors"));
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("missing_hf.safetensors"), m); }),
                    "missing tensor 'transformer.ln_f.bias'");
}

TEST(unexpected_tensor_is_named) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    TensorMap t = hf_unprefixed(dir, m, random_params(m, 10));
    t["h.0.attn.rotary.inv_freq"] = f32_tensor({8}, std::vector<float>(8));
    save_all(t, dir.file("extra.safetensors"));
    const std::string e = error_of([&] { import_weights(dir.file("extra.safetensors"), m); });
    EXPECT_CONTAINS(e, "unexpected tensor 'h.0.attn.rotary.inv_freq'");
}

TEST(wrong_number_of_layers) {
    TempDir dir("host_weights_io");
    ModelConfig m = small_model();
    ModelConfig deeper = m;
    deeper.num_layers = 3;
    export_weights(dir.file("deep.safetensors"), ExportFormat::Seed, deeper, random_params(deeper, 11));
    std::string e = error_of([&] { import_weights(dir.file("deep.safetensors"), m); });
    EXPECT_CONTAINS(e, "wrong number of layers: the file has 3 transformer layers");
    EXPECT_CONTAINS(e, "this model has 2");
    export_weights(dir.file("hf"), ExportFormat::HF, m, random_params(m, 11));
    e = error_of([&] { import_weights(dir.file("hf"), deeper); });
    EXPECT_CONTAINS(e,
                    "wrong number of layers: the file has 2 transformer layers (h.0..1), this model has 3");
}

TEST(vocab_larger_than_model_is_an_error_smaller_is_padded) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    ModelConfig bigger = m;
    bigger.vocab_size = 112;
    const auto p = random_params(m, 12);
    export_weights(dir.file("s.safetensors"), ExportFormat::Seed, m, p);
    // a 96-row file into a 112-row model: rows 96.. are zero, the rest equal
    const std::vector<float> q = import_weights(dir.file("s.safetensors"), bigger);
    const size_t C = m.channels, wte = 96 * C;
    std::vector<float> expect(q.size(), 0.0f);
    std::copy(p.begin(), p.begin() + wte, expect.begin());
    std::copy(p.begin() + wte, p.end(), expect.begin() + 112 * C);
    EXPECT_TRUE(testing::same_bits(q, expect));
    export_weights(dir.file("b.safetensors"), ExportFormat::Seed, bigger, random_params(bigger, 12));
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("b.safetensors"), m); }),
                    "tok_embd.weight has 112 vocabulary rows, this model has 96");
}

const std::vector<uint16_t> kF16Bits = {0x0001, 0x03ff, 0x8000, 0x3c00, 0x7bff, 0xc000, 0x0400};
const std::vector<float> kF16Vals = {
    5.9604644775390625e-08f, 6.097555160522461e-05f, -0.0f, 1.0f, 65504.0f, -2.0f, 6.103515625e-05f};

// F16 / BF16 files: random bit patterns (no inf/NaN) against an independent decoding written as F32.
TEST(f16_and_bf16_files_convert) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    const TensorMap base = hf_unprefixed(dir, m, random_params(m, 13));
    std::mt19937 gen(14);
    for (const char* dtype : {"BF16", "F16"}) {
        const bool bf16 = std::strcmp(dtype, "BF16") == 0;
        TensorMap half, ref;
        for (const auto& kv : base) {
            const int64_t n = numel(kv.second.shape);
            std::vector<uint16_t> bits(n);
            std::vector<float> vals(n);
            for (int64_t i = 0; i < n; i++) {
                uint16_t b = (uint16_t)gen();
                if (bf16) {
                    if (((b >> 7) & 0xff) == 0xff) b &= 0xbfff;  // no inf/NaN
                    uint32_t u = (uint32_t)b << 16;
                    std::memcpy(&vals[i], &u, 4);
                } else {
                    if (((b >> 10) & 0x1f) == 0x1f) b &= 0xbfff;
                    const int e = (b >> 10) & 0x1f, mant = b & 0x3ff;
                    const double mag =
                        e == 0 ? std::ldexp((double)mant, -24) : std::ldexp(1024.0 + mant, e - 25);
                    vals[i] = (float)((b & 0x8000) ? -mag : mag);
                }
                bits[i] = b;
            }
            if (!bf16 && kv.first == "ln_f.bias")  // edge cases: subnormals, -0, 1, max, -2, min normal
                for (size_t i = 0; i < kF16Bits.size(); i++) {
                    bits[i] = kF16Bits[i];
                    vals[i] = kF16Vals[i];
                }
            Tensor t{dtype, kv.second.shape, std::vector<uint8_t>(n * 2)};
            std::memcpy(t.bytes.data(), bits.data(), n * 2);
            half[kv.first] = t;
            ref[kv.first] = f32_tensor(kv.second.shape, vals);
        }
        save_all(half, dir.file("half.safetensors"));
        save_all(ref, dir.file("ref.safetensors"));
        const auto a = import_weights(dir.file("half.safetensors"), m);
        const auto b = import_weights(dir.file("ref.safetensors"), m);
        EXPECT_TRUE(testing::same_bits(a, b));
        if (!testing::same_bits(a, b)) printf("  %s conversion differs\n", dtype);
        if (!bf16) {
            size_t n;
            const float* lnfb = slice(m, a, "lnfb", -1, &n);
            for (size_t i = 0; i < kF16Bits.size(); i++) EXPECT_EQ(lnfb[i], kF16Vals[i]);
            EXPECT_TRUE(std::signbit(lnfb[2]));
        }
    }
}

TEST(unsupported_dtype_is_an_error) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    TensorMap t = hf_unprefixed(dir, m, random_params(m, 15));
    Tensor& b = t["h.0.ln_2.bias"];
    b.dtype = "F64";
    b.bytes.resize(b.bytes.size() * 2);
    save_all(t, dir.file("f64.safetensors"));
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("f64.safetensors"), m); }),
                    "h.0.ln_2.bias has dtype F64: only F32, F16 and BF16 are supported");
}

TEST(head_count_mismatch_from_config_or_metadata) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    ModelConfig other = m;
    other.num_heads = 8;
    const auto p = random_params(m, 16);
    export_weights(dir.file("hf"), ExportFormat::HF, m, p);
    std::string e = error_of([&] { import_weights(dir.file("hf"), other); });
    EXPECT_CONTAINS(e, "saved with 4 attention heads");
    EXPECT_CONTAINS(e, "config.json");
    export_weights(dir.file("s.safetensors"), ExportFormat::Seed, m, p);
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("s.safetensors"), other); }),
                    "saved with 4 attention heads (its gpt_config metadata), this model has 8");
    // a file without either (hand-built): the head count cannot be checked, the import succeeds
    save_all(hf_unprefixed(dir, m, p), dir.file("plain.safetensors"));
    EXPECT_TRUE(testing::same_bits(import_weights(dir.file("plain.safetensors"), other), p));
}

TEST(not_a_gpt_file_and_odd_inputs) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    TensorMap t;
    t["model.embed_tokens.weight"] = f32_tensor({2, 2}, {1, 2, 3, 4});
    save_all(t, dir.file("llama.safetensors"));
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("llama.safetensors"), m); }),
                    "no GPT-2 weights found");

    const auto p = random_params(m, 17);
    TensorMap mixed = hf_unprefixed(dir, m, p);
    mixed["tok_embd.weight"] = mixed["wte.weight"];
    save_all(mixed, dir.file("mixed.safetensors"));
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("mixed.safetensors"), m); }), "mixes seed names");

    TensorMap dup = hf_unprefixed(dir, m, p);
    dup["transformer.wpe.weight"] = dup["wpe.weight"];
    save_all(dup, dir.file("dup.safetensors"));
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("dup.safetensors"), m); }),
                    "has both 'transformer.wpe.weight' and 'wpe.weight'");

    mkdir(dir.file("empty").c_str(), 0755);
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("empty"), m); }),
                    "directory has no model.safetensors");
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("nope.safetensors"), m); }),
                    dir.file("nope.safetensors"));

    bool threw = false;
    try {
        export_weights(dir.file("x.safetensors"), ExportFormat::Seed, m, std::vector<float>(10));
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    EXPECT_TRUE(threw);
    // HF export onto an existing regular file: a one-line error, not a crash
    std::ofstream(dir.file("afile")) << "x";
    EXPECT_CONTAINS(error_of([&] { export_weights(dir.file("afile"), ExportFormat::HF, m, p); }),
                    "cannot create the export directory");
}

// check_import (the check before the GPU) fails exactly where import_weights fails, with the same message,
// on every header-level problem; only the tied lm_head comparison (tensor data) is left to the import.
TEST(check_import_agrees_with_import) {
    TempDir dir("host_weights_io");
    const ModelConfig m = small_model();
    const auto p = random_params(m, 18);
    export_weights(dir.file("seed.safetensors"), ExportFormat::Seed, m, p);
    export_weights(dir.file("hf"), ExportFormat::HF, m, p);
    TensorMap t = load_all(dir.file("seed.safetensors"));
    t.erase("tsfmr_blks.0.attn_norm.bias");
    save_all(t, dir.file("missing.safetensors"));
    std::ofstream(dir.file("empty.safetensors"));
    std::ofstream(dir.file("junk.safetensors")) << std::string(64, '\x7f') << "not a header";
    ModelConfig wide = m, deep = m, heads = m;
    wide.channels = 128;
    deep.num_layers = 3;
    heads.num_heads = 8;
    const std::vector<std::pair<std::string, ModelConfig>> bad = {
        {dir.file("seed.safetensors"), wide},
        {dir.file("seed.safetensors"), deep},
        {dir.file("hf"), heads},
        {dir.file("missing.safetensors"), m},
        {dir.file("empty.safetensors"), m},
        {dir.file("junk.safetensors"), m},
        {dir.file("absent.safetensors"), m},
        {dir.path, m},
    };
    for (const auto& [path, model] : bad) {
        const std::string check = error_of([&] { check_import(path, model); });
        const std::string load = error_of([&] { import_weights(path, model); });
        if (check.empty() || check != load)
            testing::fail(__FILE__, __LINE__, path + ": check '" + check + "' vs import '" + load + "'");
    }
    for (const std::string& good : {dir.file("seed.safetensors"), dir.file("hf")})
        EXPECT_TRUE(error_of([&] { check_import(good, m); }).empty());
    TensorMap untied = hf_unprefixed(dir, m, p);
    untied["lm_head.weight"] = untied["wte.weight"];
    untied["lm_head.weight"].bytes[0] ^= 1;
    save_all(untied, dir.file("untied.safetensors"));
    EXPECT_TRUE(error_of([&] { check_import(dir.file("untied.safetensors"), m); }).empty());
    EXPECT_CONTAINS(error_of([&] { import_weights(dir.file("untied.safetensors"), m); }), "untied lm_head");
}

TEST(export_destination_checks) {
    TempDir dir("host_weights_io");
    EXPECT_TRUE(check_export_destination(dir.file("w.safetensors"), ExportFormat::Seed).empty());
    EXPECT_TRUE(check_export_destination(dir.file("new/deeper/hf"), ExportFormat::HF).empty());
    mkdir(dir.file("d").c_str(), 0755);
    EXPECT_TRUE(check_export_destination(dir.file("d"), ExportFormat::HF).empty());
    EXPECT_CONTAINS(check_export_destination(dir.file("d"), ExportFormat::Seed), "is a folder");
    EXPECT_CONTAINS(
        check_export_destination(dir.file("nope/w.safetensors"), ExportFormat::Seed),
        "--export '" + dir.file("nope/w.safetensors") + "': '" + dir.file("nope") + "' is not a folder");
    std::ofstream(dir.file("afile")) << "x";
    EXPECT_CONTAINS(check_export_destination(dir.file("afile"), ExportFormat::HF), "is not a folder");
    EXPECT_CONTAINS(check_export_destination(dir.file("afile/x"), ExportFormat::HF), "is not a folder");
    if (geteuid() != 0) {  // root writes anywhere
        mkdir(dir.file("ro").c_str(), 0555);
        EXPECT_CONTAINS(check_export_destination(dir.file("ro/w.safetensors"), ExportFormat::Seed),
                        "cannot create a file in");
        EXPECT_CONTAINS(check_export_destination(dir.file("ro/hf"), ExportFormat::HF),
                        "cannot create a file in");
    }
    // a folder whose permissions say yes (to root, as /proc does) but that takes no file: a file is created
    struct stat st;
    if (stat("/proc/self", &st) == 0) {
        EXPECT_CONTAINS(check_export_destination("/proc/x.safetensors", ExportFormat::Seed),
                        "--export '/proc/x.safetensors': cannot create a file in '/proc': ");
        EXPECT_CONTAINS(check_export_destination("/proc/x/hf", ExportFormat::HF),
                        "cannot create a file in '/proc'");
    }
}

// ---- llm.c's model files (llmc/model/weights_llmc.h) ----

std::vector<int32_t> llmc_header(const std::string& path) {
    std::vector<int32_t> h(256);
    std::ifstream f(path, std::ios::binary);
    f.read(reinterpret_cast<char*>(h.data()), 1024);
    return h;
}

uint16_t bf16_rne(float f) {  // the test's own float -> bfloat16, round to nearest even
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t lsb = (u >> 16) & 1u;
    return (uint16_t)((u + 0x7FFFu + lsb) >> 16);
}

// The header llm.c documents (train_gpt2.py's write_model), then the parameters: float32 or bfloat16 round
// trips (bitwise; bfloat16 as rounded to nearest even), and the file's size.
TEST(llmc_export_header_and_roundtrip) {
    TempDir dir{"weights_io"};
    const ModelConfig m = small_model();
    const std::vector<float> p = random_params(m, 21);
    export_weights(dir.file("m.bin"), ExportFormat::Llmc, m, p);
    const std::vector<int32_t> h = llmc_header(dir.file("m.bin"));
    const std::vector<int32_t> want = {20240326,     3,           m.max_seq_len, m.vocab_size,
                                       m.num_layers, m.num_heads, m.channels,    m.vocab_size};
    EXPECT_TRUE(std::vector<int32_t>(h.begin(), h.begin() + 8) == want);
    EXPECT_TRUE(std::all_of(h.begin() + 8, h.end(), [](int32_t v) { return v == 0; }));
    struct stat st;
    EXPECT_TRUE(stat(dir.file("m.bin").c_str(), &st) == 0 && (size_t)st.st_size == 1024 + p.size() * 4);
    const std::vector<float> back = import_weights(dir.file("m.bin"), m);
    EXPECT_TRUE(back.size() == p.size() && std::memcmp(back.data(), p.data(), p.size() * 4) == 0);

    export_weights(dir.file("m16.bin"), ExportFormat::LlmcBf16, m, p);
    EXPECT_EQ(llmc_header(dir.file("m16.bin"))[1], 5);
    EXPECT_TRUE(stat(dir.file("m16.bin").c_str(), &st) == 0 && (size_t)st.st_size == 1024 + p.size() * 2);
    const std::vector<float> back16 = import_weights(dir.file("m16.bin"), m);
    size_t wrong = 0;
    for (size_t i = 0; i < p.size(); i++) {
        const uint32_t u = (uint32_t)bf16_rne(p[i]) << 16;
        float want_f;
        std::memcpy(&want_f, &u, 4);
        wrong += std::memcmp(&back16[i], &want_f, 4) != 0;
    }
    EXPECT_EQ(wrong, (size_t)0);
    // GPT-2's padded vocabulary: vocab_size 50257 in the header, 50304 rows written
    const ModelConfig g = padded_model();
    export_weights(dir.file("g.bin"), ExportFormat::Llmc, g, random_params(g, 22));
    const std::vector<int32_t> hg = llmc_header(dir.file("g.bin"));
    EXPECT_TRUE(hg[3] == 50257 && hg[7] == 50304);
}

// A file built here from llm.c's documented order (tensor by tensor, each filled with its own values), with
// a padded vocabulary smaller than the model's: every tensor lands under its name, the extra vocabulary rows
// are zero.
TEST(llmc_file_in_llmc_order_loads) {
    TempDir dir{"weights_io"};
    const ModelConfig m = small_model();  // V = 96
    const int L = m.num_layers, C = m.channels, T = m.max_seq_len, Vp = 80, V = 77;
    const std::vector<std::pair<std::string, size_t>> order = {{"wte", (size_t)Vp * C},
                                                               {"wpe", (size_t)T * C},
                                                               {"ln1w", (size_t)L * C},
                                                               {"ln1b", (size_t)L * C},
                                                               {"qkvw", (size_t)L * 3 * C * C},
                                                               {"qkvb", (size_t)L * 3 * C},
                                                               {"attprojw", (size_t)L * C * C},
                                                               {"attprojb", (size_t)L * C},
                                                               {"ln2w", (size_t)L * C},
                                                               {"ln2b", (size_t)L * C},
                                                               {"fcw", (size_t)L * 4 * C * C},
                                                               {"fcb", (size_t)L * 4 * C},
                                                               {"fcprojw", (size_t)L * C * 4 * C},
                                                               {"fcprojb", (size_t)L * C},
                                                               {"lnfw", (size_t)C},
                                                               {"lnfb", (size_t)C}};
    std::vector<int32_t> header(256, 0);
    const int32_t fields[8] = {20240326, 3, T, V, L, m.num_heads, C, Vp};
    std::copy(fields, fields + 8, header.begin());
    std::string bytes(reinterpret_cast<const char*>(header.data()), 1024);
    std::map<std::string, std::vector<float>> written;
    for (size_t k = 0; k < order.size(); k++) {
        std::vector<float>& v = written[order[k].first];
        v.resize(order[k].second);
        for (size_t i = 0; i < v.size(); i++) v[i] = (float)(k + 1) + (float)(i % 1000) * 1e-3f;
        bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
    }
    std::ofstream(dir.file("llmc.bin"), std::ios::binary) << bytes;
    const std::vector<float> p = import_weights(dir.file("llmc.bin"), m);
    for (const auto& kv : written) {
        size_t n = 0;
        const float* got = slice(m, p, kv.first, -1, &n);
        const size_t cmp = kv.first == "wte" ? kv.second.size() : n;
        if (!got || cmp > n || std::memcmp(got, kv.second.data(), cmp * 4) != 0)
            testing::fail(__FILE__, __LINE__, kv.first + " is not the file's " + kv.first);
        if (kv.first == "wte" && got && std::any_of(got + cmp, got + n, [](float x) { return x != 0.0f; }))
            testing::fail(__FILE__, __LINE__, "the vocabulary rows past the file's are not zero");
    }
}

// Every header problem is one line naming the file, from check_import (the checks before the GPU) as from
// import_weights.
TEST(llmc_header_errors) {
    TempDir dir{"weights_io"};
    const ModelConfig m = small_model();
    export_weights(dir.file("good.bin"), ExportFormat::Llmc, m, random_params(m, 23));
    std::string good;
    {
        std::ifstream f(dir.file("good.bin"), std::ios::binary);
        good.assign((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    }
    auto variant = [&](const std::string& name, int field, int32_t value, size_t size) {
        std::string b = good.substr(0, size);
        if (field >= 0) std::memcpy(&b[field * 4], &value, 4);
        std::ofstream(dir.file(name), std::ios::binary) << b;
        return dir.file(name);
    };
    const struct {
        std::string file, message;
    } cases[] = {
        {variant("v4.bin", 1, 4, good.size()), "llm.c model version 4"},
        {variant("layers.bin", 4, 3, good.size()), "a model of 3 layers, this one has 2"},
        {variant("heads.bin", 5, 8, good.size()), "a model of 8 heads, this one has 4"},
        {variant("vp.bin", 7, 128, good.size()), "a padded vocabulary of 128 rows, larger than this model's"},
        {variant("short.bin", -1, 0, good.size() - 10), "the header's shape needs"},
        {variant("tiny.bin", -1, 0, 512), "shorter than llm.c's 1024-byte header"},
    };
    for (const auto& c : cases) {
        const std::string from_check = error_of([&] { check_import(c.file, m); });
        const std::string from_import = error_of([&] { import_weights(c.file, m); });
        if (from_check.find(c.message) == std::string::npos || from_check.find(c.file) != 0 ||
            from_check != from_import || from_check.find('\n') != std::string::npos)
            testing::fail(__FILE__, __LINE__, c.file + ": '" + from_check + "' / '" + from_import + "'");
    }
    EXPECT_CONTAINS(check_export_destination(dir.path, ExportFormat::Llmc), "is a folder");
}

TEST_MAIN()
