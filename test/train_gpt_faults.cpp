// build/test/train_gpt_faults: the trainer's own driver (train_gpt.cu without its main) run with these fault
// hooks at its seams (llmc/run/driver_hooks.h).
//   TRAIN_GPT_TEST_POISON_STEP=k  launches step k with NaN gradients (test/gpu_lifecycle.sh)
//   TRAIN_GPT_TEST_EXPORT_INIT=1  lets --export write the initial weights (test/gpu_multi.sh checks that the
//                                 sharded initialization gathers to the one-GPU weights; for users that is
//                                 a mistake)
#include <cstdlib>
#include <string>

#include "llmc/run/driver_hooks.h"
#include "test/gpt_testing.h"

namespace {

struct FaultHooks final : DriverHooks {
    void launch_step(GptModel& model, const AdamWSettings& adamw, int opt_step, int step) const override {
        const char* v = getenv("TRAIN_GPT_TEST_POISON_STEP");
        if (v && step == atoi(v))
            gpt_testing::launch_step_with_nan_gradients(model, adamw, opt_step);
        else
            model.launch_step(adamw, opt_step);
    }
    bool allow_export_of_init() const override {
        const char* v = getenv("TRAIN_GPT_TEST_EXPORT_INIT");
        return v && std::string(v) == "1";
    }
};

}  // namespace

int main(int argc, char** argv) { return train_main(argc, argv, FaultHooks()); }
