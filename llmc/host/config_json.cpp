// The resolved configuration as JSON (config.h: to_json): config.json and --print-config.
#include <charconv>
#include <cmath>
#include <cstdint>

#include "llmc/formats/json.h"
#include "llmc/host/config.h"
#include "llmc/host/settings.h"

namespace {

// A float as the shortest decimal that reads back as the same float (6e-4f is 0.0006, not the double
// 0.000600000028...); JSON has no inf or nan, so those are null.
json::Value json_float(double v, bool is_float = true) {
    if (!std::isfinite(v)) return json::Value();
    char buf[64];
    const char* end = is_float ? std::to_chars(buf, buf + sizeof buf, (float)v).ptr
                               : std::to_chars(buf, buf + sizeof buf, v).ptr;
    double shortest = 0;
    std::from_chars(buf, end, shortest);  // locale-independent, unlike strtod
    return json::Value::number(shortest);
}

// json.h's integers are int64: a seed above INT64_MAX is written as its decimal string.
json::Value json_seed(uint64_t seed) {
    if (seed <= (uint64_t)INT64_MAX) return json::Value::integer((int64_t)seed);
    return json::Value::string(std::to_string(seed));
}

// A row's value as config.json writes it.
json::Value json_of(const Setting& s, const TrainConfig& c) {
    switch (s.type) {
        case SettingType::Int:
            return json::Value::integer(s.get<int>(c));
        case SettingType::Int64:
            return json::Value::integer(s.get<int64_t>(c));
        case SettingType::Uint64:
            return json_seed(s.get<uint64_t>(c));
        case SettingType::Float:
            return json_float(s.get<float>(c));
        case SettingType::Double:
            return json_float(s.get<double>(c), /*is_float=*/false);
        case SettingType::Text:
            return json::Value::string(s.get<std::string>(c));
        case SettingType::Switch:
            return json::Value::boolean(s.get<bool>(c));
        case SettingType::Choice:
            return json::Value::string(s.choice_get(c));
    }
    return json::Value();
}

}  // namespace

std::string to_json(const TrainConfig& c, size_t parameters) {
    json::Value o = json::Value::object();
    for (const Setting& s : settings())
        if (s.json) o.set(s.json, json_of(s, c));
    o.set("parameters", json::Value::integer((int64_t)parameters));
    return json::dump_pretty(o);
}
