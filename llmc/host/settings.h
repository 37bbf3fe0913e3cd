// The settings of a run as one table (llmc/host/settings.cpp): one row per setting of TrainConfig, with its
// flag, help group and text, the member it sets, its smallest value and its key in config.json. The CLI
// registers its flags from the table (cli.cpp), validate() checks the smallest values (config_checks.cpp),
// to_json writes the keys (config_json.cpp). Rules between settings stay readable functions
// (config_checks.cpp, cli.cpp's flags without effect); the start-up summary's prose is config_summary.cpp's.
// Each row also says in which run modes (RunMode: training, export only) its setting does something: the
// CLI refuses a flag given in a mode it does nothing in.
// A new setting is a member in config.h, a row in settings.cpp, and the code that uses it. Host-only.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "llmc/host/config.h"

enum class SettingType { Int, Int64, Uint64, Float, Double, Text, Switch, Choice };

struct Setting {
    const char* flags = nullptr;  // CLI11 names ("-b,--batch"; a negatable switch "--x,!--no-x"); null: none
    const char* group = "";       // the help's group
    const char* help = "";
    SettingType type = SettingType::Int;
    std::function<void*(TrainConfig&)> member;  // the value: int, int64_t, uint64_t, float, double,
                                                // std::string or bool as `type` says (not for Choice)
    // Choice: the names the flag takes (in this order), and the member read and written by name.
    std::vector<std::string> choices;
    std::function<std::string(const TrainConfig&)> choice_get;
    std::function<bool(TrainConfig&, const std::string&)> choice_set;
    std::string value_name;    // the help's TYPE ("DIR"); empty: CLI11's for the type
    std::string help_default;  // the help's default where the value would mislead; empty: the value
    bool over_preset = false;  // a model override: applied over --model's preset, and only when given
    bool has_min = false;      // validate(): "--flag: must be >= min, got v" (integers)
    long long min = 0;
    const char* json = nullptr;  // config.json key; null: not written
    unsigned modes = ~0u;        // the RunModes it does something in, bit (1 << mode) each; default: all

    Setting& at_least(long long v) {
        has_min = true;
        min = v;
        return *this;
    }
    Setting& key(const char* k) {
        json = k;
        return *this;
    }
    Setting& value(std::string name) {
        value_name = std::move(name);
        return *this;
    }
    Setting& shown_default(std::string d) {
        help_default = std::move(d);
        return *this;
    }
    Setting& applied_over_preset() {
        over_preset = true;
        return *this;
    }
    Setting& only_in(std::initializer_list<RunMode> in) {
        modes = 0;
        for (RunMode m : in) modes |= 1u << (int)m;
        return *this;
    }
    bool applies_in(RunMode m) const { return (modes >> (int)m) & 1u; }
    // The flag's long name ("--batch" of "-b,--batch"; "--cuda-graph" of "--cuda-graph,!--no-cuda-graph").
    std::string long_name() const;
    // A negatable switch's negation ("--no-cuda-graph" of "--cuda-graph,!--no-cuda-graph"); "" for the
    // others.
    std::string negated_name() const;
    template <typename T>
    T& ref(TrainConfig& c) const {
        return *static_cast<T*>(member(c));
    }
    template <typename T>
    const T& get(const TrainConfig& c) const {  // `member` only takes the address
        return *static_cast<const T*>(member(const_cast<TrainConfig&>(c)));
    }
};

// The row of a member of type T (int, int64_t, uint64_t, float, double, std::string; bool: a switch).
template <typename T>
Setting setting(const char* flags, const char* help, T& (*ref)(TrainConfig&)) {
    Setting s;
    s.flags = flags;
    s.help = help;
    s.member = [ref](TrainConfig& c) -> void* { return &ref(c); };
    if constexpr (std::is_same<T, int>::value) s.type = SettingType::Int;
    if constexpr (std::is_same<T, int64_t>::value) s.type = SettingType::Int64;
    if constexpr (std::is_same<T, uint64_t>::value) s.type = SettingType::Uint64;
    if constexpr (std::is_same<T, float>::value) s.type = SettingType::Float;
    if constexpr (std::is_same<T, double>::value) s.type = SettingType::Double;
    if constexpr (std::is_same<T, std::string>::value) s.type = SettingType::Text;
    if constexpr (std::is_same<T, bool>::value) s.type = SettingType::Switch;
    return s;
}

// The row of a choice setting over a member of type E, by the names of config.h's tables.
template <typename E>
Setting choice(const char* flags, const char* help, const ChoiceNames<E>& names, E& (*ref)(TrainConfig&)) {
    Setting s;
    s.flags = flags;
    s.help = help;
    s.type = SettingType::Choice;
    for (const ChoiceName<E>& n : names) s.choices.push_back(n.name);
    s.choice_get = [&names, ref](const TrainConfig& c) {
        return std::string(choice_name(names, ref(const_cast<TrainConfig&>(c))));
    };
    s.choice_set = [&names, ref](TrainConfig& c, const std::string& v) {
        for (const ChoiceName<E>& n : names)
            if (v == n.name) {
                ref(c) = n.value;
                return true;
            }
        return false;
    };
    return s;
}

// Every setting, in the help's order.
const std::vector<Setting>& settings();
