// Model weights in and out of safetensors files, in the layouts other tools load. Host-only (no CUDA).
//
// The trainer keeps all parameters as one flat float32 vector in the canonical order of llmc/model/gpt.h
// (llmc/model/layout.h). Two file layouts:
//
//   Seed  one safetensors file with the state_dict of scripts/reference_gpt.py's GPT module (the seed
//         script's model), F32, nn.Linear layout [out, in], full (padded) vocabulary, no lm_head (tied):
//           tok_embd.weight [V, C]                          pos_embd.weight [maxT, C]
//           tsfmr_blks.{i}.attn_norm.{weight,bias} [C]      tsfmr_blks.{i}.attn.attn_proj.weight [3C, C],
//           .bias tsfmr_blks.{i}.attn.out_proj.weight [C, C], .bias tsfmr_blks.{i}.ffn_norm.{weight,bias} [C]
//           tsfmr_blks.{i}.ffn.0.weight [4C, C], .bias      tsfmr_blks.{i}.ffn.2.weight [C, 4C], .bias
//           out_norm.{weight,bias} [C]
//         so `model.load_state_dict(safetensors.torch.load_file(path), strict=True)` accepts it. Metadata:
//         "format": "pt" and "gpt_config" (a JSON object: n_layer, n_embd, n_head, vocab_size, n_positions,
//         gelu "erf"/"tanh") for scripts/check/check_export.py, since the head count is not in the shapes.
//
//   HF    a directory with model.safetensors + config.json for transformers' GPT2LMHeadModel. HF GPT-2 uses
//         Conv1D, whose weight is [in, out] (the transpose of nn.Linear's):
//           transformer.wte.weight [Vhf, C]  transformer.wpe.weight [maxT, C]
//           transformer.h.{i}.ln_1.{weight,bias}  transformer.h.{i}.attn.c_attn.weight [C, 3C], .bias [3C]
//           transformer.h.{i}.attn.c_proj.weight [C, C], .bias  transformer.h.{i}.ln_2.{weight,bias}
//           transformer.h.{i}.mlp.c_fc.weight [C, 4C], .bias [4C]  transformer.h.{i}.mlp.c_proj.weight [4C,
//           C], .bias [C]  transformer.ln_f.{weight,bias}
//         no lm_head.weight (tied to wte), metadata "format": "pt" (transformers requires it). Vhf is the
//         unpadded vocabulary (hf_vocab_size).
#pragma once
#include <string>
#include <vector>

#include "llmc/host/config.h"
#include "llmc/model/layout.h"

constexpr int kGpt2Vocab = 50257;  // GPT-2's real vocabulary (token ids 0..50256, 50256 = <|endoftext|>)
constexpr int kGpt2PaddedVocab = 50304;  // padded to a multiple of 128 (llm.c, the seed script)

// The vocabulary written to a Hugging Face export: 50257 when V is GPT-2's vocabulary padded (50257 <= V <=
// 50304: the rows past 50256 are padding that no token id reaches), else V itself.
int hf_vocab_size(int V);

// Writes `params` (canonical order, num_parameters(m) floats, else std::invalid_argument).
//   Seed: `path_or_dir` is the .safetensors file. Llmc, LlmcBf16: the llm.c model file (weights_llmc.h).
//   HF:   `path_or_dir` is a directory (created with its parents if needed) that receives model.safetensors
//         and config.json.
// Every file is written atomically (temporary file, fsync, rename). Errors: std::runtime_error, one line.
void export_weights(const std::string& path_or_dir, ExportFormat fmt, const ModelConfig& m,
                    const std::vector<float>& params);
// "" if export_weights can write `path_or_dir`, else a one-line message: Seed needs an existing, writable
// folder to hold the file and a path that is not a folder; HF needs a writable folder there or a writable
// folder above it to create it in. Creates nothing (for the checks before the GPU).
std::string check_export_destination(const std::string& path_or_dir, ExportFormat fmt);

// The config.json of an HF export (pretty-printed JSON text, ending with a newline).
std::string hf_config_json(const ModelConfig& m);

// Reads the weights of model `m` from `path`: a seed-layout file, an HF file (model.safetensors, names with
// or without the "transformer." prefix), a directory holding model.safetensors, or an llm.c model file
// (recognized by its magic; llmc/model/weights_llmc.h). The layout is detected
// from the names. Accepted and ignored: HF's causal-mask buffers h.N.attn.bias / h.N.attn.masked_bias, and
// an lm_head.weight equal to wte (one that differs: "untied lm_head is not supported"). Tensors may be F32,
// F16 or BF16 (converted to float). A file vocabulary smaller than m.vocab_size (50257 vs 50304) is padded
// with zero rows. Returns the parameters in canonical order.
// Errors (std::runtime_error "<file>: <problem>"): missing tensor, unexpected tensor, wrong shape (expected
// vs found), wrong number of layers, vocabulary larger than the model's, another dtype, a head count in the
// file's config that differs from m.num_heads.
std::vector<float> import_weights(const std::string& path, const ModelConfig& m);
// The checks import_weights makes before it reads any tensor data, alone (the same code, so they cannot
// disagree): the file opens, its header parses, the names, shapes, dtypes and recorded head count fit `m`.
// Throws what import_weights would throw. Reads only the header, so it is fast on a multi-GB file; only the
// tied lm_head comparison (data) is left to import_weights.
void check_import(const std::string& path, const ModelConfig& m);
