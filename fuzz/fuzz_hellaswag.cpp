// libFuzzer target for llmc/formats/hellaswag's reader: the input is parsed with parse_hellaswag() for a
// model vocabulary of 300 (and, every 16th input, written to a file and read with read_hellaswag()). A bad
// file must be refused with a one-line std::runtime_error; any other exception is a finding, and so is a
// decision that differs from the format's own answer (oracle below, from the format in hellaswag.h). Whatever
// reads must hold exactly the file's examples, serialize back to the input bytes (the format has one
// encoding), and lay out and score consistently: each example fits T = max_row_tokens() - 1, its rows hold
// context + ending shifted by one, the completion ranges cover exactly the ending tokens, and the sums add
// up. Built and run by scripts/check/fuzz.sh.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz/fuzz_harness.h"
#include "llmc/formats/hellaswag.h"

namespace {

constexpr int kVocab = 300;

// Never destroyed, so the atexit handler that removes the file may still use it.
const std::string& file_path() {
    static const std::string* path = [] {
        auto* p = new std::string(fuzz_temp_path("hellaswag", ".bin"));
        atexit([] { std::remove(file_path().c_str()); });
        return p;
    }();
    return *path;
}

[[noreturn]] void finding(const char* what) { fuzz_finding("hellaswag", what); }

uint32_t le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// The format's own answer: the examples if the file is valid for kVocab, else false.
bool oracle(const uint8_t* d, size_t size, std::vector<HellaSwagExample>* out) {
    if (size < 20 || memcmp(d, kHellaSwagMagic, 8) != 0 || le32(d + 8) != kHellaSwagVersion) return false;
    const uint32_t vocab = le32(d + 12), count = le32(d + 16);
    if (vocab == 0 || vocab > (uint32_t)kVocab || count == 0) return false;
    size_t pos = 20;
    out->clear();
    for (uint32_t i = 0; i < count; i++) {
        if (size - pos < 24) return false;
        HellaSwagExample ex;
        ex.label = (int)le32(d + pos);
        uint32_t len[5];
        for (int k = 0; k < 5; k++) len[k] = le32(d + pos + 4 + 4 * k);
        pos += 24;
        if (le32(d + pos - 24) >= 4) return false;
        for (int k = 0; k < 5; k++) {
            if (len[k] == 0 || (size - pos) / 2 < len[k]) return false;
            std::vector<int>& dst = k == 0 ? ex.context : ex.endings[k - 1];
            for (uint32_t j = 0; j < len[k]; j++, pos += 2) {
                dst.push_back(d[pos] | d[pos + 1] << 8);
                if ((uint32_t)dst.back() >= vocab) return false;
            }
        }
        out->push_back(ex);
    }
    return pos == size;
}

bool same_example(const HellaSwagExample& a, const HellaSwagExample& b) {
    return a.label == b.label && a.context == b.context && a.endings == b.endings;
}

// Layout and score of one example at T = longest row - 1 (the tightest fit), checked against the example.
void check_layout(const HellaSwagExample& ex, int T) {
    const HellaSwagRows rows = layout_hellaswag(ex, T, 0);
    std::vector<float> losses((size_t)kHellaSwagEndings * T);
    for (size_t i = 0; i < losses.size(); i++) losses[i] = (float)(i % 7) * 0.5f;
    const int C = (int)ex.context.size();
    for (int r = 0; r < kHellaSwagEndings; r++) {
        const std::vector<int>& e = ex.endings[r];
        if (rows.begin[r] != C - 1 || rows.end[r] != C - 1 + (int)e.size()) finding("completion range");
        const int* in = rows.inputs.data() + (size_t)r * T;
        const int* tg = rows.targets.data() + (size_t)r * T;
        if (in[0] != ex.context[0]) finding("a row does not start with the context");
        double sum = 0;
        for (int t = rows.begin[r]; t < rows.end[r]; t++) {
            if (tg[t] != e[t - rows.begin[r]]) finding("the completion targets are not the ending");
            if (t > rows.begin[r] && in[t] != e[t - rows.begin[r] - 1])
                finding("inputs are not targets shifted");
            sum += losses[(size_t)r * T + t];
        }
        for (int t = rows.end[r]; t < T; t++)
            if (in[t] != 0 || tg[t] != 0) finding("padding is not the pad token");
        const HellaSwagScore s = score_hellaswag(rows, losses.data(), ex.label);
        if (std::fabs(s.sum[r] - sum) > 1e-9 || std::fabs(s.mean[r] - sum / e.size()) > 1e-9)
            finding("score");
        if (s.pred_sum < 0 || s.pred_sum >= 4 || s.sum[s.pred_sum] > s.sum[r])
            finding("pred_sum not the lowest");
        if (s.pred_mean < 0 || s.pred_mean >= 4 || s.mean[s.pred_mean] > s.mean[r]) finding("pred_mean");
    }
}

HellaSwagSet read(const uint8_t* data, size_t size) {
    static unsigned calls = 0;
    if (++calls % 16 == 0) {  // the file path now and then: the same answer
        fuzz_write_file("hellaswag", file_path(), data, size);
        return read_hellaswag(file_path(), kVocab);
    }
    return parse_hellaswag(data, size, "fuzz.bin", kVocab);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<HellaSwagExample> want;
    const bool valid = oracle(data, size, &want);
    HellaSwagSet set;
    try {
        set = read(data, size);
    } catch (const std::runtime_error& e) {
        if (valid) {
            fprintf(stderr, "fuzz_hellaswag: refused a valid file: %s\n", e.what());
            abort();
        }
        if (strchr(e.what(), '\n')) finding("an error message of several lines");
        return 0;  // a refused file: expected for most inputs
    }
    // From here on nothing may throw (an escaping exception is a finding too).
    if (!valid) finding("read an invalid file");
    if (set.examples.size() != want.size() || set.vocab_size != (int)le32(data + 12))
        finding("count or vocab");
    for (size_t i = 0; i < want.size(); i++)
        if (!same_example(set.examples[i], want[i])) finding("an example differs from the file's");
    const std::string again = serialize_hellaswag(set);
    if (again.size() != size || memcmp(again.data(), data, size) != 0)
        finding("serialize does not give back the file's bytes");
    const int T = set.max_row_tokens() - 1;
    for (const HellaSwagExample& ex : set.examples) check_layout(ex, T);
    bool threw = false;  // one position fewer: the longest row no longer fits
    for (const HellaSwagExample& ex : set.examples) {
        try {
            layout_hellaswag(ex, T - 1, 0);
        } catch (const std::invalid_argument&) {
            threw = true;
        }
    }
    if (!threw) finding("the longest row fits T = max_row_tokens() - 2");
    return 0;
}
