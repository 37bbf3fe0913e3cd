// Weights export/import (seed and Hugging Face GPT-2 layouts). See llmc/model/weights_io.h.
#include "llmc/model/weights_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "llmc/formats/file_bytes.h"
#include "llmc/formats/file_checks.h"
#include "llmc/formats/json.h"
#include "llmc/formats/safetensors.h"
#include "llmc/model/weights_llmc.h"

int hf_vocab_size(int V) { return (V >= kGpt2Vocab && V <= kGpt2PaddedVocab) ? kGpt2Vocab : V; }

namespace {

// ============================================================================================ Name tables

enum class Layout { Seed, HF };
const char* layout_name(Layout l) { return l == Layout::Seed ? "seed" : "Hugging Face"; }

const char* block_prefix(Layout l) { return l == Layout::Seed ? "tsfmr_blks." : "h."; }

// One tensor of a file layout: a canonical tensor (one layer's slice of it for per-layer tensors).
struct Entry {
    std::string name;             // without the "transformer." prefix
    int tensor;                   // canonical index 0..15
    int layer;                    // -1 for global tensors
    std::vector<int64_t> shape;   // canonical (nn.Linear) shape of the slice
    std::vector<int64_t> fshape;  // shape in the file
    size_t offset;                // element offset of the slice in the flat vector
    size_t numel;
    bool transposed;  // file holds the [in, out] transpose of the canonical [out, in]
};

std::vector<Entry> layout_entries(Layout layout, const ModelConfig& m) {
    const std::vector<ParamTensorInfo> table = parameter_table(m);
    std::vector<Entry> out;
    for (int t = 0; t < kNumParamTensors; t++) {
        const ParamTensorInfo& info = table[t];
        const ParamSpec& spec = param_spec(t);
        std::vector<int64_t> shape(info.shape.begin() + (spec.per_layer ? 1 : 0), info.shape.end());
        const size_t numel = info.slice_numel();
        const bool transposed = layout == Layout::HF && spec.hf_transposed;
        std::vector<int64_t> fshape = shape;
        if (transposed) std::swap(fshape[0], fshape[1]);
        const char* suffix = layout == Layout::Seed ? spec.seed_name : spec.hf_name;
        const int layers = spec.per_layer ? m.num_layers : 1;
        for (int l = 0; l < layers; l++) {
            std::string name =
                spec.per_layer ? block_prefix(layout) + std::to_string(l) + "." + suffix : suffix;
            out.push_back({name, t, spec.per_layer ? l : -1, shape, fshape, info.offset + (size_t)l * numel,
                           numel, transposed});
        }
    }
    return out;
}

std::string shape_str(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

// dst[o * in + i] = src[i * out + o]: src is [in, out] row-major, dst is [out, in]. Blocked for the cache.
void transpose(const float* src, float* dst, size_t in, size_t out) {
    constexpr size_t kB = 32;
    for (size_t i0 = 0; i0 < in; i0 += kB)
        for (size_t o0 = 0; o0 < out; o0 += kB) {
            const size_t i1 = std::min(in, i0 + kB), o1 = std::min(out, o0 + kB);
            for (size_t i = i0; i < i1; i++)
                for (size_t o = o0; o < o1; o++) dst[o * in + i] = src[i * out + o];
        }
}

float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float f16_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);  // normal: rebias 15 -> 127
    } else if (mant == 0) {
        bits = sign;  // +-0
    } else {          // subnormal: normalize
        int e = -1;
        do {
            e++;
            mant <<= 1;
        } while (!(mant & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ff) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Reads tensor `t` of `r` as float32 into dst (t.numel() floats), converting F16/BF16.
void read_as_float(const SafetensorsReader& r, const SafeTensor& t, float* dst) {
    const size_t n = (size_t)t.numel();
    if (t.dtype == "F32") {
        r.read(t.name, dst, t.nbytes);
        return;
    }
    std::vector<uint16_t> tmp(n);
    r.read(t.name, tmp.data(), t.nbytes);
    if (t.dtype == "BF16") {
        for (size_t i = 0; i < n; i++) dst[i] = bf16_to_float(tmp[i]);
    } else {  // F16 (checked by the caller)
        for (size_t i = 0; i < n; i++) dst[i] = f16_to_float(tmp[i]);
    }
}

bool is_dir(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}
std::string parent_dir(const std::string& path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string seed_metadata_config(const ModelConfig& m) {
    json::Value o = json::Value::object();
    o.set("n_layer", json::Value::integer(m.num_layers));
    o.set("n_embd", json::Value::integer(m.channels));
    o.set("n_head", json::Value::integer(m.num_heads));
    o.set("vocab_size", json::Value::integer(m.vocab_size));
    o.set("n_positions", json::Value::integer(m.max_seq_len));
    o.set("gelu", json::Value::string(m.gelu_tanh ? "tanh" : "erf"));
    return json::dump(o);
}

// n_head recorded next to / inside the file (HF config.json, our seed metadata), or 0 when unknown.
int64_t recorded_num_heads(const SafetensorsReader& r, const std::string& file, Layout layout,
                           std::string* where) {
    try {
        if (layout == Layout::Seed) {
            if (!r.has_metadata("gpt_config")) return 0;
            *where = "its gpt_config metadata";
            const json::Value v = json::parse(r.metadata("gpt_config"));
            const json::Value* h = v.find("n_head");
            return h && h->is_int() ? h->as_int() : 0;
        }
        const std::string cfg = parent_dir(file) + "/config.json";
        if (!exists(cfg)) return 0;
        *where = cfg;
        std::ifstream f(cfg, std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        const json::Value v = json::parse(text);
        const json::Value* h = v.find("n_head");
        return h && h->is_int() ? h->as_int() : 0;
    } catch (const json::ParseError&) {
        return 0;  // not ours to validate: the shapes are checked regardless
    }
}

}  // namespace

// ================================================================================================= Export

std::string hf_config_json(const ModelConfig& m) {
    // <|endoftext|> is GPT-2's token 50256; a toy vocabulary smaller than that gets its last id instead
    // (transformers warns about an end-of-text id outside the vocabulary).
    const int eot = std::min(kGpt2Vocab, hf_vocab_size(m.vocab_size)) - 1;
    std::ostringstream s;
    s << "{\n"
      << "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
      << "  \"model_type\": \"gpt2\",\n"
      << "  \"vocab_size\": " << hf_vocab_size(m.vocab_size) << ",\n"
      << "  \"n_positions\": " << m.max_seq_len << ",\n"
      << "  \"n_ctx\": " << m.max_seq_len << ",\n"
      << "  \"n_embd\": " << m.channels << ",\n"
      << "  \"n_layer\": " << m.num_layers << ",\n"
      << "  \"n_head\": " << m.num_heads << ",\n"
      << "  \"n_inner\": null,\n"
      // HF: "gelu" is the exact erf GELU, "gelu_new" the tanh approximation (GPT-2's own)
      << "  \"activation_function\": \"" << (m.gelu_tanh ? "gelu_new" : "gelu") << "\",\n"
      << "  \"layer_norm_epsilon\": 1e-05,\n"
      << "  \"resid_pdrop\": 0.0,\n"
      << "  \"embd_pdrop\": 0.0,\n"
      << "  \"attn_pdrop\": 0.0,\n"
      << "  \"scale_attn_weights\": true,\n"
      << "  \"tie_word_embeddings\": true,\n"
      << "  \"bos_token_id\": " << eot << ",\n"
      << "  \"eos_token_id\": " << eot << ",\n"
      << "  \"torch_dtype\": \"float32\"\n"
      << "}\n";
    return s.str();
}

void export_weights(const std::string& path_or_dir, ExportFormat fmt, const ModelConfig& m,
                    const std::vector<float>& params) {
    const size_t total = num_parameters(m);
    if (params.size() != total)
        throw std::invalid_argument("export_weights: " + std::to_string(params.size()) +
                                    " parameters given, the model has " + std::to_string(total));
    if (fmt == ExportFormat::Llmc || fmt == ExportFormat::LlmcBf16) {
        export_llmc(path_or_dir, m, params, fmt == ExportFormat::LlmcBf16);
        return;
    }
    const Layout layout = fmt == ExportFormat::Seed ? Layout::Seed : Layout::HF;
    const std::vector<Entry> entries = layout_entries(layout, m);
    SafetensorsWriter w;
    w.set_metadata("format", "pt");
    if (layout == Layout::Seed) {
        w.set_metadata("gpt_config", seed_metadata_config(m));
        for (const Entry& e : entries) w.add(e.name, "F32", e.shape, params.data() + e.offset, e.numel * 4);
        w.write_atomic(path_or_dir);
        return;
    }

    // HF: transposed copies of the four Linear weights (they must outlive write_atomic), wte unpadded.
    size_t tbytes = 0;
    for (const Entry& e : entries)
        if (e.transposed) tbytes += e.numel;
    std::vector<float> transposed(tbytes);
    size_t tpos = 0;
    const int64_t Vhf = hf_vocab_size(m.vocab_size);
    for (const Entry& e : entries) {
        const std::string name = "transformer." + e.name;
        if (e.transposed) {
            float* dst = transposed.data() + tpos;
            // canonical [out, in] -> file [in, out]: transpose of an [out, in] matrix read as src [in', out']
            transpose(params.data() + e.offset, dst, (size_t)e.shape[0], (size_t)e.shape[1]);
            w.add(name, "F32", e.fshape, dst, e.numel * 4);
            tpos += e.numel;
        } else if (e.tensor == 0) {
            w.add(name, "F32", {Vhf, e.shape[1]}, params.data(), (size_t)(Vhf * e.shape[1]) * 4);
        } else {
            w.add(name, "F32", e.fshape, params.data() + e.offset, e.numel * 4);
        }
    }
    std::error_code ec;
    std::filesystem::create_directories(path_or_dir, ec);
    if (ec || !is_dir(path_or_dir))
        throw std::runtime_error(path_or_dir + ": cannot create the export directory" +
                                 (ec ? ": " + ec.message() : std::string(" (a file of that name exists)")));
    w.write_atomic(path_or_dir + "/model.safetensors");
    const std::string config = hf_config_json(m);
    write_file_atomic(path_or_dir + "/config.json", {{config.data(), config.size()}});
}

// A folder that export_weights can create files in: "" or why not. A file is really created there (and
// removed): access(W_OK) says yes for root and on /proc, where the export would fail after the whole run.
std::string writable_folder(const std::string& dir) { return file_creatable_in(dir); }

std::string check_export_destination(const std::string& path_or_dir, ExportFormat fmt) {
    const std::string what = "--export '" + path_or_dir + "': ";
    if (path_or_dir.empty()) return what + "empty path";
    if (fmt != ExportFormat::HF) {
        if (is_dir(path_or_dir))
            return what +
                   "is a folder (the seed and llm.c layouts are one file; --export-format hf writes a "
                   "folder)";
        const std::string why = writable_folder(parent_dir(path_or_dir));
        return why.empty() ? "" : what + why;
    }
    if (exists(path_or_dir)) {
        const std::string why = writable_folder(path_or_dir);
        return why.empty() ? "" : what + why;
    }
    std::string above = parent_dir(path_or_dir);  // the nearest existing folder above creates the rest
    while (!exists(above) && above != "." && above != "/") above = parent_dir(above);
    const std::string why = writable_folder(above);
    return why.empty() ? "" : what + why;
}

// ================================================================================================= Import

namespace {

// What import_weights learns from the file's header, before it reads any tensor data.
struct ImportPlan {
    std::string file;  // the .safetensors file (path itself, or path/model.safetensors)
    SafetensorsReader reader;
    Layout layout;
    std::vector<Entry> entries;
    std::map<std::string, std::string> names;  // name without "transformer." -> name in the file
    bool has_lm_head = false;

    std::string file_name(const std::string& key) const {
        auto it = names.find(key);
        return it == names.end() ? key : it->second;
    }
    std::runtime_error fail(const std::string& what) const { return std::runtime_error(file + ": " + what); }
};

// `path`, or the model.safetensors of the folder `path`.
std::string import_file(const std::string& path) {
    if (!is_dir(path)) return path;
    const std::string file = path + "/model.safetensors";
    if (exists(file)) return file;
    if (exists(path + "/model.safetensors.index.json"))
        throw std::runtime_error(path +
                                 ": sharded checkpoints (model.safetensors.index.json) are not "
                                 "supported: merge the shards into one model.safetensors");
    throw std::runtime_error(path + ": directory has no model.safetensors");
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// Fills plan->names (without the optional "transformer." prefix) and plan->layout from the names.
void detect_layout(ImportPlan* plan) {
    const std::string kPrefix = "transformer.";
    for (const std::string& n : plan->reader.names()) {
        const std::string key = starts_with(n, kPrefix) ? n.substr(kPrefix.size()) : n;
        auto ins = plan->names.emplace(key, n);
        if (!ins.second) throw plan->fail("has both '" + ins.first->second + "' and '" + n + "'");
    }
    bool seed = false, hf = false;
    for (const auto& kv : plan->names) {
        seed |= kv.first == "tok_embd.weight" || starts_with(kv.first, "tsfmr_blks.");
        hf |= kv.first == "wte.weight" || starts_with(kv.first, "h.");
    }
    if (seed && hf)
        throw plan->fail(
            "mixes seed names (tok_embd.weight, tsfmr_blks.*) and Hugging Face names (wte.weight, h.*)");
    if (!seed && !hf)
        throw plan->fail(
            "no GPT-2 weights found (expected seed names like tok_embd.weight or Hugging Face names like "
            "transformer.wte.weight)");
    plan->layout = seed ? Layout::Seed : Layout::HF;
}

// The block indices present must be exactly 0 .. L-1.
void check_layer_count(const ImportPlan& plan, const ModelConfig& m) {
    const std::string bp = block_prefix(plan.layout);
    int max_layer = -1;
    for (const auto& kv : plan.names) {
        if (!starts_with(kv.first, bp)) continue;
        size_t i = bp.size(), j = i;
        while (j < kv.first.size() && j - i < 9 && isdigit((unsigned char)kv.first[j])) j++;
        if (j == i || j >= kv.first.size() || kv.first[j] != '.') continue;  // reported as unexpected later
        max_layer = std::max(max_layer, std::stoi(kv.first.substr(i, j - i)));
    }
    if (max_layer + 1 != m.num_layers)
        throw plan.fail("wrong number of layers: the file has " +
                        (max_layer < 0 ? std::string("no transformer layers (") + bp + "*)"
                                       : std::to_string(max_layer + 1) + " transformer layers (" + bp +
                                             "0.." + std::to_string(max_layer) + ")") +
                        ", this model has " + std::to_string(m.num_layers) +
                        ": the file is for a different model size (use --model/--layers)");
}

// Every expected tensor present, nothing unexpected (HF's causal-mask buffers and lm_head.weight aside).
void check_tensor_names(ImportPlan* plan, const ModelConfig& m) {
    std::set<std::string> known;
    for (const Entry& e : plan->entries) {
        if (!plan->names.count(e.name))
            throw plan->fail("missing tensor '" +
                             (plan->layout == Layout::HF ? "transformer." : std::string()) + e.name + "' (" +
                             layout_name(plan->layout) + " layout)");
        known.insert(e.name);
    }
    if (plan->layout == Layout::HF)
        for (int l = 0; l < m.num_layers; l++) {  // causal-mask buffers of older transformers versions
            known.insert("h." + std::to_string(l) + ".attn.bias");
            known.insert("h." + std::to_string(l) + ".attn.masked_bias");
        }
    plan->has_lm_head = plan->names.count("lm_head.weight") != 0;
    for (const auto& kv : plan->names)
        if (!known.count(kv.first) && kv.first != "lm_head.weight")
            throw plan->fail("unexpected tensor '" + kv.second + "' (not part of a " +
                             layout_name(plan->layout) + " GPT-2 model)");
}

// Dtypes and shapes (a smaller vocabulary is padded), then the head count the file records, if any.
void check_shapes(const ImportPlan& plan, const ModelConfig& m) {
    for (const Entry& e : plan.entries) {
        const SafeTensor& t = plan.reader.tensor(plan.file_name(e.name));
        if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
            throw plan.fail(t.name + " has dtype " + t.dtype + ": only F32, F16 and BF16 are supported");
        bool ok = t.shape == e.fshape;
        if (e.tensor == 0 && t.shape.size() == 2 && t.shape[1] == e.fshape[1] && t.shape[0] >= 1) {
            if (t.shape[0] > e.fshape[0])
                throw plan.fail(t.name + " has " + std::to_string(t.shape[0]) +
                                " vocabulary rows, this model has " + std::to_string(e.fshape[0]) +
                                ": the file's vocabulary is larger (use --vocab)");
            ok = true;
        }
        if (!ok)
            throw plan.fail(
                t.name + " has shape " + shape_str(t.shape) + ", this model needs " + shape_str(e.fshape) +
                (e.tensor == 1
                     ? ": the file has another maximum sequence length (use --max-seq)"
                     : ": the file is for a different model size (use --model/--layers/--channels...)"));
    }
    std::string where;
    const int64_t heads = recorded_num_heads(plan.reader, plan.file, plan.layout, &where);
    if (heads != 0 && heads != m.num_heads)
        throw plan.fail("the model was saved with " + std::to_string(heads) + " attention heads (" + where +
                        "), this model has " + std::to_string(m.num_heads) + " (use --heads)");
}

ImportPlan plan_import(const std::string& path, const ModelConfig& m) {
    const std::string file = import_file(path);
    ImportPlan plan{file, SafetensorsReader(file), Layout::Seed, {}, {}, false};
    detect_layout(&plan);
    check_layer_count(plan, m);
    plan.entries = layout_entries(plan.layout, m);
    check_tensor_names(&plan, m);
    check_shapes(plan, m);
    return plan;
}

// An lm_head.weight must equal wte (tied): the model's output projection is the token embedding.
void check_lm_head_tied(const ImportPlan& plan, const std::vector<float>& params) {
    const SafeTensor& head = plan.reader.tensor(plan.file_name("lm_head.weight"));
    const SafeTensor& wte = plan.reader.tensor(plan.file_name(plan.entries[0].name));
    bool tied =
        head.shape == wte.shape && (head.dtype == "F32" || head.dtype == "F16" || head.dtype == "BF16");
    if (tied) {
        std::vector<float> tmp((size_t)head.numel());
        read_as_float(plan.reader, head, tmp.data());
        tied = std::memcmp(tmp.data(), params.data(), tmp.size() * sizeof(float)) == 0;
    }
    if (!tied)
        throw plan.fail(head.name + " differs from " + wte.name +
                        ": untied lm_head is not supported (the output projection is the token embedding)");
}

}  // namespace

void check_import(const std::string& path, const ModelConfig& m) {
    if (!is_dir(path) && is_llmc_model_file(path)) return check_import_llmc(path, m);
    plan_import(path, m);
}

std::vector<float> import_weights(const std::string& path, const ModelConfig& m) {
    if (!is_dir(path) && is_llmc_model_file(path)) return import_llmc(path, m);
    const ImportPlan plan = plan_import(path, m);
    // The vocabulary rows past the file's (50257..50303 for GPT-2) stay zero: those padded token ids never
    // occur in the data, so the rows only ever see weight decay; llm.c pads the same way.
    std::vector<float> params(num_parameters(m), 0.0f);
    std::vector<float> tmp;
    for (const Entry& e : plan.entries) {
        const SafeTensor& t = plan.reader.tensor(plan.file_name(e.name));
        if (e.transposed) {
            tmp.resize(e.numel);
            read_as_float(plan.reader, t, tmp.data());
            transpose(tmp.data(), params.data() + e.offset, (size_t)e.fshape[0], (size_t)e.fshape[1]);
        } else {
            read_as_float(plan.reader, t, params.data() + e.offset);
        }
    }
    if (plan.has_lm_head) check_lm_head_tied(plan, params);
    return params;
}
