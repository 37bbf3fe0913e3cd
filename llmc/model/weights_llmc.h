// llm.c's model files (gpt2_124M.bin, gpt2_124M_bf16.bin, ...), read by --init-from and written by
// --export-format llmc / llmc-bf16, so checkpoints move between llm.c and this trainer both ways. Host-only.
//
// The layout llm.c's train_gpt2.py writes (write_model) and train_gpt2.c / train_gpt2.cu read
// (gpt2_build_from_checkpoint): a header of 256 int32, little-endian,
//   [0] magic 20240326   [1] version: 3 float32 parameters, 5 bfloat16   [2] max_seq_len   [3] vocab_size
//   [4] num_layers       [5] num_heads   [6] channels   [7] padded_vocab_size   (the rest 0)
// then every parameter tensor in llm.c's order, which is this trainer's canonical order (llmc/model/layout.h:
// wte [Vp, C], wpe [maxT, C], then per kind all L layers: ln1w, ln1b, qkvw [3C, C], qkvb, attprojw, attprojb,
// ln2w, ln2b, fcw [4C, C], fcb, fcprojw [C, 4C], fcprojb; lnfw, lnfb), nn.Linear weights [out, in], the token
// embedding padded with zero rows to padded_vocab_size. llm.c models use the tanh GELU (train with --gelu
// tanh to compute the same function).
#pragma once
#include <string>
#include <vector>

#include "llmc/host/config.h"

constexpr int kLlmcMagic = 20240326;
constexpr int kLlmcVersionF32 = 3;
constexpr int kLlmcVersionBf16 = 5;

// Whether `path` is a regular file that starts with llm.c's model magic (the importers' dispatch).
bool is_llmc_model_file(const std::string& path);

// Writes `params` (canonical order, num_parameters(m) floats) as an llm.c model file, float32 (version 3) or
// bfloat16 (version 5, rounded to nearest even), atomically. vocab_size is GPT-2's 50257 when m's vocabulary
// is GPT-2's padded (hf_vocab_size), padded_vocab_size is m.vocab_size. Errors: std::runtime_error, one line.
void export_llmc(const std::string& path, const ModelConfig& m, const std::vector<float>& params, bool bf16);

// The header's checks alone (magic, version, the shape against m, the file's size): throws
// std::runtime_error "<file>: <problem>" as import_llmc would, reading 1 KB.
void check_import_llmc(const std::string& path, const ModelConfig& m);
// The parameters of an llm.c file for model m, canonical order; a padded vocabulary smaller than m's is
// padded with zero rows, a larger one is an error.
std::vector<float> import_llmc(const std::string& path, const ModelConfig& m);
