// Tests for llmc/gpu/step_guard.cuh (a training step's device-side verdict): the loss summed over
// micro-steps (exact: the CPU sum of the same floats in the same order), the verdict for finite and
// non-finite losses and norms against std::isfinite, and the conditional restore (bitwise: a copy or
// nothing).
#include <limits>

#include "dev/dev_utils.h"
#include "llmc/gpu/step_guard.cuh"

namespace {

TEST(step_loss_accumulates_in_order) {
    const std::vector<float> micro = dev::random_uniform(5, 0.5f, 12.0f);
    float* d_micro = dev::to_device(micro);
    float* d_sum = dev::to_device(std::vector<float>{NAN});  // the first micro-step must overwrite it
    float ref = 0;
    for (size_t k = 0; k < micro.size(); k++) {
        step_loss_accumulate(d_sum, d_micro + k, k == 0, 0);
        ref = k == 0 ? micro[k] : ref + micro[k];  // fp32, in order, like the kernel
    }
    EXPECT_TRUE(testing::same_bits(dev::from_device(d_sum, 1), {ref}));
    for (void* p : {(void*)d_micro, (void*)d_sum}) CHECK_CUDA(cudaFree(p));
}

TEST(step_verdict_matches_isfinite) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> values = {0.0f, 3.5f, -2.0f, 1e30f, NAN, inf, -inf};
    int* d_apply = dev::to_device(std::vector<int>{-1});
    float* d_loss = dev::to_device(std::vector<float>{0});
    float* d_norm = dev::to_device(std::vector<float>{0});
    for (float loss : values)
        for (float norm : values) {
            CHECK_CUDA(cudaMemcpy(d_loss, &loss, sizeof(float), cudaMemcpyHostToDevice));
            CHECK_CUDA(cudaMemcpy(d_norm, &norm, sizeof(float), cudaMemcpyHostToDevice));
            step_verdict(d_apply, d_loss, d_norm, 0);
            const int expected = std::isfinite(loss) && std::isfinite(norm) ? 1 : 0;
            EXPECT_EQ(dev::from_device(d_apply, 1)[0], expected);
        }
    for (void* p : {(void*)d_apply, (void*)d_loss, (void*)d_norm}) CHECK_CUDA(cudaFree(p));
}

// n larger than the grid (1024 blocks x 256) so the grid-stride loop is exercised.
TEST(restore_if_skipped_copies_only_when_skipped) {
    const size_t n = 1024 * 256 * 2 + 77;
    const std::vector<float> snapshot = dev::random_normal(n), current = dev::random_normal(n);
    float* d_snapshot = dev::to_device(snapshot);
    for (int apply : {1, 0}) {
        float* d_state = dev::to_device(current);
        int* d_apply = dev::to_device(std::vector<int>{apply});
        restore_if_skipped(d_state, d_snapshot, n, d_apply, 0);
        EXPECT_TRUE(testing::same_bits(dev::from_device(d_state, n), apply ? current : snapshot));
        for (void* p : {(void*)d_state, (void*)d_apply}) CHECK_CUDA(cudaFree(p));
    }
    CHECK_CUDA(cudaFree(d_snapshot));
}

}  // namespace

TEST_MAIN()
