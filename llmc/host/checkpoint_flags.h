// --generate and --export from --resume DIR: a checkpoint is refused unless the run's model and recipe flags
// equal those it was trained with, which a user who only wants its text or its weights may not remember.
// When none of those flags is given, they are taken from the newest checkpoint's configuration (the config
// metadata every checkpoint carries, config.json's text). Host-only.
#pragma once
#include <string>
#include <vector>

#include "llmc/host/cli.h"

// The config.json keys of the model and the recipe: the shape (the preset and its overrides, the GELU), the
// precision, the AdamW moments and, in fp8, the FP8 recipe. A checkpoint must match all of them to resume.
const std::vector<std::string>& model_recipe_keys();

// The command-line flags that give the model and recipe keys of a configuration (to_json's text) their
// values there; fp8's keys only when its precision is fp8 (an FP8 flag with bf16 is a usage error). Throws
// std::runtime_error naming the key when the text is not such a configuration.
std::vector<std::string> model_recipe_flags(const std::string& config_json);

// parse_cli, then, for --generate or --export with --resume DIR and none of the model and recipe flags given,
// parse_cli again with those of DIR's newest checkpoint (and its --seq, unless given: the default may exceed
// its --max-seq) in front of argv's own. *adopted: the flags taken (empty: none, e.g. no readable checkpoint,
// whose error the resume's checks then report).
CliResult parse_cli_adopting_checkpoint(int argc, const char* const* argv, TrainConfig* cfg,
                                        std::vector<std::string>* adopted);
