// Command-line parsing for train_gpt (CLI11): flags -> TrainConfig, then validate(). Host-only.
//
// Usage in main():
//   TrainConfig cfg;
//   CliResult r = parse_cli(argc, argv, &cfg);
//   if (r.version) { print the versions; return 0; }
//   if (!r.run) { fputs(r.message.c_str(), r.exit_code == 0 ? stdout : stderr); return r.exit_code; }
#pragma once
#include <string>
#include <vector>

#include "llmc/host/config.h"

struct CliResult {
    bool run = false;           // true: cfg is filled and valid, go on
    bool print_config = false;  // with run: --print-config (print the resolved configuration, do not train)
    bool version = false;       // when !run: --version (the caller prints the versions, exit 0)
    int exit_code = 0;          // when !run: 0 for --help or --version, 2 for a usage error
    std::string
        message;  // when !run: the help text (exit 0) or ONE line "error: ..." (exit != 0), '\n'-ended
    std::vector<std::string> given;  // with run: the config.json keys of the flags given on the command line
};

// Parses argv into *cfg (defaults: TrainConfig's). The model preset (--model) is applied first, then the
// explicit overrides (--layers, --channels, --heads, --vocab, --max-seq). Numeric flags take decimal numbers
// of their field's type ("--steps -1" reads -1, which validate() then rejects by name); a flag given twice
// keeps the last value. Usage errors besides validate()'s: a value that looks like a flag ("--log-dir
// --steps": write --log-dir=--steps to mean it), an unknown flag or stray argument, and a flag that has no
// effect with the others (--prompt without --sample-every, an FP8 flag with bf16, ...). Never prints, never
// exits.
CliResult parse_cli(int argc, const char* const* argv, TrainConfig* cfg);
