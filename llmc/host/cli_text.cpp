// The command line's text handling (llmc/host/cli_text.h).
#include "llmc/host/cli_text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>

// ---- numeric flags ----
// CLI11 validators run on a flag's text before it is converted; CLI11 prefixes their message with the flag
// ("--steps: ..."). They only check that the text is a number of the flag's type (range checks are
// validate()'s, so that a TrainConfig filled in code gets the same ones) and rewrite integers to plain
// decimal: CLI11's own conversion auto-detects the base (010 would be octal 8, 0x10 hex).

namespace {

// Parses an optional sign and decimal digits into *neg and *mag (saturated above 2^64). Empty if it is one.
std::string parse_decimal(const std::string& v, bool* neg, unsigned __int128* mag) {
    size_t i = 0;
    *neg = false;
    *mag = 0;
    if (i < v.size() && (v[i] == '+' || v[i] == '-')) *neg = v[i++] == '-';
    if (i == v.size()) return "'" + v + "' is not an integer";
    for (; i < v.size(); i++) {
        if (!std::isdigit((unsigned char)v[i])) return "'" + v + "' is not an integer";
        if (*mag <= ((unsigned __int128)1 << 64)) *mag = *mag * 10 + (unsigned)(v[i] - '0');
    }
    return "";
}

}  // namespace

// An int flag: a whole decimal number in [INT_MIN, INT_MAX].
CLI::Validator int_value() {
    return CLI::Validator(
        [](std::string& v) -> std::string {
            bool neg;
            unsigned __int128 mag;
            std::string why = parse_decimal(v, &neg, &mag);
            if (!why.empty()) return why;
            if (!neg && mag > (unsigned __int128)INT_MAX)
                return v + " is out of range (at most " + std::to_string(INT_MAX) + ")";
            if (neg && mag > (unsigned __int128)INT_MAX + 1)
                return v + " is out of range (at least " + std::to_string(INT_MIN) + ")";
            v = std::to_string(neg ? -(long long)mag : (long long)mag);
            return "";
        },
        "");
}

// A uint64 flag (the seed): a whole decimal number in [0, 2^64 - 1].
CLI::Validator uint64_value() {
    return CLI::Validator(
        [](std::string& v) -> std::string {
            bool neg;
            unsigned __int128 mag;
            std::string why = parse_decimal(v, &neg, &mag);
            if (!why.empty() || (neg && mag != 0)) return "must be a non-negative integer, got '" + v + "'";
            if (mag > (unsigned __int128)UINT64_MAX)
                return v + " is out of range (at most " + std::to_string(UINT64_MAX) + ")";
            v = std::to_string((unsigned long long)mag);
            return "";
        },
        "");
}

// A float flag: a number (strtod syntax) within float range; inf/nan pass through to validate().
CLI::Validator float_value() {
    return CLI::Validator(
        [](std::string& v) -> std::string {
            const char* begin = v.c_str();
            char* end = nullptr;
            errno = 0;
            double d = v.empty() || std::isspace((unsigned char)v[0]) ? 0.0 : std::strtod(begin, &end);
            if (v.empty() || end != begin + v.size()) return "'" + v + "' is not a number";
            if ((std::isinf(d) && errno == ERANGE) || (std::isfinite(d) && std::fabs(d) > FLT_MAX))
                return v + " is out of range for a float";
            return "";
        },
        "");
}

// A negative number, as the value of the flag before it ("--steps -1", "--lr -.5").
bool looks_negative_number(const std::string& s) {
    if (s.size() < 2 || s[0] != '-') return false;
    if (std::isdigit((unsigned char)s[1])) return true;
    return s[1] == '.' && s.size() > 2 && std::isdigit((unsigned char)s[2]);
}

// An argument that the user meant as a flag, not as the value of the flag before it: "--steps", "-n", "--".
// Negative numbers and "-" alone are values.
bool looks_like_flag(const std::string& s) {
    if (s.size() < 2 || s[0] != '-' || looks_negative_number(s)) return false;
    return s[1] == '-' || std::isalpha((unsigned char)s[1]);
}

namespace {

// The help's width: no line wider (an 80-column terminal wraps it, a 120-column one shows it as it is).
constexpr size_t kHelpColumns = 120;

// `text` with each of its paragraphs ('\n'-separated) broken at spaces into lines of at most `width`
// columns (a longer word stays whole), joined by '\n'.
std::string wrap(const std::string& text, size_t width) {
    std::string out, line;
    size_t start = 0;
    for (;;) {
        const size_t end = std::min(text.find('\n', start), text.size());
        for (size_t b = start; b < end;) {
            const size_t e = std::min(text.find(' ', b), end);
            const std::string word = text.substr(b, e - b);
            if (!line.empty() && line.size() + 1 + word.size() > width) {
                out += line + "\n";
                line.clear();
            }
            line += (line.empty() ? "" : " ") + word;
            b = e + 1;
        }
        out += line;
        line.clear();
        if (end == text.size()) return out;
        out += "\n";
        start = end + 1;
    }
}

}  // namespace

// CLI11's help, with each flag's real default: a negatable flag shows "--cuda-graph,--no-cuda-graph=on"
// (CLI11 writes "--no-cuda-graph{false}", the value the negation sets, which reads like a default of false);
// every line within kHelpColumns (descriptions wrapped in their column).
std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
    return wrap(CLI::Formatter::make_option_desc(opt), kHelpColumns - get_column_width());
}
std::string HelpFormatter::make_description(const CLI::App* app) const {
    return wrap(CLI::Formatter::make_description(app), kHelpColumns);
}
std::string HelpFormatter::make_footer(const CLI::App* app) const {
    return wrap(CLI::Formatter::make_footer(app), kHelpColumns);
}
std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (size_t open; (open = name.find('{')) != std::string::npos;) {
        const size_t close = name.find('}', open);
        name.erase(open, close == std::string::npos ? std::string::npos : close - open + 1);
    }
    return name;
}
// "TYPE=default" for options, "=on"/"=off" for switches, written here rather than by CLI11, whose
// releases print the default differently ("INT=50" in 2.1, "INT [50]" in 2.4).
std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
    std::string out;
    if (opt->get_type_size() != 0 && !opt->get_type_name().empty()) out += " " + opt->get_type_name();
    if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
    if (opt->get_required()) out += " REQUIRED";
    return out;
}
