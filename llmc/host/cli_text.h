// The command line's text handling (llmc/host/cli.cpp uses it): the checks of numeric flag values, what looks
// like a flag rather than a value, and the help's formatter. Host-only.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

// CLI11 transforms that accept only a whole decimal int, a whole decimal uint64, or a float-range number
// (strtod syntax; inf/nan pass to validate()), rewriting integers to plain decimal (CLI11 would read 010 as
// octal).
CLI::Validator int_value();
CLI::Validator uint64_value();
CLI::Validator float_value();
// A negative number, as the value of the flag before it ("--steps -1", "--lr -.5").
bool looks_negative_number(const std::string& s);
// An argument that the user meant as a flag, not as the value of the flag before it: "--steps", "-n", "--".
// Negative numbers and "-" alone are values.
bool looks_like_flag(const std::string& s);

// CLI11's help with each flag's real default ("--cuda-graph,--no-cuda-graph=on"), every line within 120
// columns.
class HelpFormatter : public CLI::Formatter {
  public:
    std::string make_option_desc(const CLI::Option* opt) const override;
    std::string make_description(const CLI::App* app) const override;
    std::string make_footer(const CLI::App* app) const override;
    std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;
    std::string make_option_opts(const CLI::Option* opt) const override;
};
