// llmc/run/hellaswag_eval: the packing of examples into batches, the split over ranks, the counts and the
// dump, driven by a made-up model whose loss at a position depends on its input, its target and where it
// is in the row (so a row or position put in the wrong place changes the scores).
//
// Also a tool for test/host_hellaswag_reference.sh: `host_hellaswag_eval --fake-dump FILE.bin B T OUT`
// scores a HellaSwag file with that made-up model through evaluate_hellaswag and writes the dump, which the
// shell test compares with scripts/check/hellaswag_reference.py's own rows scored by the same made-up model.
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>

#include "llmc/run/hellaswag_eval.h"
#include "test/temp_dir.h"
#include "test/testing.h"

namespace {

// The made-up model: a multiple of 1/8 below 13, so sums are exact in float and double alike (the Python
// side computes the same numbers: test/host_hellaswag_reference.sh).
float fake_loss(int input, int target, int t) {
    return ((input * 31 + target * 17 + t * 7) % 97) / 8.0f + 0.125f;
}

// A forward pass of B rows of T with the made-up model; counts its calls.
struct FakeModel {
    int B, T, calls = 0;
    std::vector<float> operator()(const int* in, const int* tg) {
        calls++;
        std::vector<float> out(static_cast<size_t>(B) * T);
        for (size_t i = 0; i < out.size(); i++) out[i] = fake_loss(in[i], tg[i], static_cast<int>(i % T));
        return out;
    }
};

std::vector<int> identity_sum(const std::vector<int>& v) { return v; }

// n examples of varied lengths and labels (token ids below 50).
HellaSwagSet make_set(int n) {
    HellaSwagSet set;
    set.vocab_size = 50;
    for (int i = 0; i < n; i++) {
        HellaSwagExample ex;
        ex.label = (i * 7) % 4;
        for (int k = 0; k < 1 + i % 5; k++) ex.context.push_back((i * 3 + k) % 50);
        for (int e = 0; e < 4; e++)
            for (int k = 0; k < 1 + (i + e) % 4; k++) ex.endings[e].push_back((i + 11 * e + 5 * k) % 50);
        set.examples.push_back(ex);
    }
    return set;
}

// The score of one example laid out alone (4 rows), with the same made-up model.
HellaSwagScore alone(const HellaSwagExample& ex, int T) {
    const HellaSwagRows rows = layout_hellaswag(ex, T, 0);
    FakeModel m{4, T};
    const std::vector<float> losses = m(rows.inputs.data(), rows.targets.data());
    return score_hellaswag(rows, losses.data(), ex.label);
}

bool same_score(const HellaSwagScore& a, const HellaSwagScore& b) {
    return a.sum == b.sum && a.mean == b.mean && a.pred_sum == b.pred_sum && a.pred_mean == b.pred_mean &&
           a.correct_sum == b.correct_sum && a.correct_mean == b.correct_mean;
}

std::string invalid_argument_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(eval_batches_score_each_example_as_alone) {
    const HellaSwagSet set = make_set(11);
    const int T = 10;
    for (int B : {4, 8, 9, 12, 48}) {  // 1, 2, 2, 3, 12 examples per forward
        FakeModel m{B, T};
        const HellaSwagResult r = evaluate_hellaswag(set, {B, T, 0, 1}, std::ref(m), identity_sum);
        EXPECT_EQ(m.calls, (11 + B / 4 - 1) / (B / 4));
        EXPECT_EQ(m.calls, hellaswag_batches(11, B, 1));
        EXPECT_EQ(r.examples, 11);
        EXPECT_EQ(r.local.size(), 11u);
        int sum = 0, mean = 0;
        for (int i = 0; i < static_cast<int>(r.local.size()); i++) {
            const HellaSwagExampleResult& e = r.local[i];
            EXPECT_EQ(e.index, i);
            EXPECT_EQ(e.label, set.examples[i].label);
            EXPECT_TRUE(same_score(e.score, alone(set.examples[i], T)));
            sum += e.score.correct_sum;
            mean += e.score.correct_mean;
        }
        EXPECT_EQ(r.correct_sum, sum);
        EXPECT_EQ(r.correct_mean, mean);
        EXPECT_NEAR(r.acc(), sum / 11.0, 1e-15);
        EXPECT_NEAR(r.acc_norm(), mean / 11.0, 1e-15);
    }
}

// Examples dealt out r, r + world, ...; every rank makes the same number of forward calls; the counts are
// what `sum` returns.
TEST(eval_splits_examples_over_ranks) {
    const HellaSwagSet set = make_set(11);
    const int T = 10, B = 8, world = 3;
    const HellaSwagResult one = evaluate_hellaswag(set, {B, T, 0, 1}, FakeModel{B, T}, identity_sum);
    std::set<int> seen;
    int local_sum = 0, local_mean = 0;
    for (int rank = 0; rank < world; rank++) {
        FakeModel m{B, T};
        int sums = 0;
        const HellaSwagResult r =
            evaluate_hellaswag(set, {B, T, rank, world}, std::ref(m), [&](const std::vector<int>& v) {
                sums++;
                EXPECT_EQ(v.size(), 3u);
                return std::vector<int>{100, 20, 30};
            });
        EXPECT_EQ(m.calls, 2);  // ceil(ceil(11 / 3) / 2): rank 2 (3 examples) pads its second batch too
        EXPECT_EQ(sums, 1);
        EXPECT_EQ(r.examples, 100);
        EXPECT_EQ(r.correct_sum, 20);
        EXPECT_EQ(r.correct_mean, 30);
        for (const HellaSwagExampleResult& e : r.local) {
            EXPECT_EQ(e.index % world, rank);
            EXPECT_TRUE(seen.insert(e.index).second);
            EXPECT_TRUE(same_score(e.score, one.local[e.index].score));
            local_sum += e.score.correct_sum;
            local_mean += e.score.correct_mean;
        }
    }
    EXPECT_EQ(seen.size(), 11u);
    EXPECT_EQ(local_sum, one.correct_sum);
    EXPECT_EQ(local_mean, one.correct_mean);
    EXPECT_EQ(hellaswag_batches(10042, 12, 8), 419);  // 1256 examples on the busiest rank, 3 per batch
    EXPECT_EQ(hellaswag_batches(1, 4, 2), 1);         // rank 1 has nothing and still calls once
}

TEST(eval_rejects_what_it_cannot_score) {
    const HellaSwagSet set = make_set(3);
    EXPECT_CONTAINS(invalid_argument_of([&] {
                        evaluate_hellaswag(set, {3, 10, 0, 1}, FakeModel{3, 10}, identity_sum);
                    }),
                    "needs B >= 4");
    EXPECT_CONTAINS(invalid_argument_of([&] {
                        evaluate_hellaswag(set, {4, 10, 2, 2}, FakeModel{4, 10}, identity_sum);
                    }),
                    "rank 2 of 2");
    // example 2: context 3 + ending 4 = 7 tokens, needs T >= 6
    EXPECT_CONTAINS(invalid_argument_of([&] {
                        evaluate_hellaswag(set, {4, 5, 0, 1}, FakeModel{4, 5}, identity_sum);
                    }),
                    "needs T >= 6");
    auto short_forward = [](const int*, const int*) { return std::vector<float>(7); };
    EXPECT_CONTAINS(testing::error_of([&] {
                        evaluate_hellaswag(set, {4, 10, 0, 1}, short_forward, identity_sum);
                    }),
                    "returned 7 losses for 40 positions");
}

TEST(dump_lines_and_paths) {
    const HellaSwagSet set = make_set(3);
    const HellaSwagResult r = evaluate_hellaswag(set, {8, 10, 0, 1}, FakeModel{8, 10}, identity_sum);
    const std::string text = format_hellaswag_dump(r.local);
    std::istringstream in(text);
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header.rfind("# index label sum0", 0), 0u);
    for (const HellaSwagExampleResult& e : r.local) {
        int index, label, cs, cm;
        double sum[4], mean[4];
        in >> index >> label >> sum[0] >> sum[1] >> sum[2] >> sum[3] >> mean[0] >> mean[1] >> mean[2] >>
            mean[3] >> cs >> cm;
        EXPECT_TRUE(static_cast<bool>(in));
        EXPECT_EQ(index, e.index);
        EXPECT_EQ(label, e.label);
        for (int k = 0; k < 4; k++) {
            EXPECT_NEAR(sum[k], e.score.sum[k], 1e-8 * e.score.sum[k]);
            EXPECT_NEAR(mean[k], e.score.mean[k], 1e-8 * e.score.mean[k]);
        }
        EXPECT_EQ(cs, e.score.pred_sum);
        EXPECT_EQ(cm, e.score.pred_mean);
    }
    EXPECT_TRUE(hellaswag_dump_path("d/hs.txt", 0, 1) == "d/hs.txt");
    EXPECT_TRUE(hellaswag_dump_path("d/hs.txt", 3, 4) == "d/hs.txt.rank3");
    testing::TempDir dir("host_hellaswag_eval");
    const std::string path = dir.file("dump.txt");
    write_hellaswag_dump(path, r.local);
    std::ifstream f(path);
    const std::string back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(back == text);
    EXPECT_CONTAINS(testing::error_of([&] { write_hellaswag_dump(dir.file("no/such/dir/x"), r.local); }),
                    "/no/such/dir/x': cannot create");
}

// --fake-dump FILE B T OUT (see the top of this file).
int fake_dump(int argc, char** argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s --fake-dump FILE.bin B T OUT\n", argv[0]);
        return 2;
    }
    try {
        const HellaSwagSet set = read_hellaswag(argv[2], 65536);
        const int B = atoi(argv[3]), T = atoi(argv[4]);
        const HellaSwagResult r = evaluate_hellaswag(set, {B, T, 0, 1}, FakeModel{B, T}, identity_sum);
        write_hellaswag_dump(argv[5], r.local);
        printf("%d examples, acc %.17g acc_norm %.17g\n", r.examples, r.acc(), r.acc_norm());
    } catch (const std::exception& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--fake-dump") return fake_dump(argc, argv);
    return testing::run_all(argc, argv);
}
