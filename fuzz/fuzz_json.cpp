// libFuzzer target for llmc/formats/json: parse arbitrary bytes; whatever parses must write back and re-parse
// to the same value, and writing that again must give the same text. Built and run by scripts/check/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "llmc/formats/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    json::Value v;
    try {
        v = json::parse(reinterpret_cast<const char*>(data), size);
    } catch (const json::ParseError&) {
        return 0;
    }
    const std::string text = json::dump(v);
    json::Value again = json::parse(text);  // must not throw: dump() output is valid JSON
    if (!(again == v)) abort();
    if (json::dump(again) != text) abort();
    return 0;
}
