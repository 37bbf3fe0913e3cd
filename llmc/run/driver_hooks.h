// The driver's two seams: how it launches a training step, and whether --export may write the initial
// weights. train_gpt's main passes the defaults (a plain launch_step; no) to train_main; the test build of
// the same driver (build/test/train_gpt_faults, test/train_gpt_faults.cpp) passes its fault hooks.
#pragma once
#include "llmc/model/gpt.h"

struct DriverHooks {
    virtual ~DriverHooks() = default;
    // Queues optimizer step opt_step (1-based); step is the loop's step number.
    virtual void launch_step(GptModel& model, const AdamWSettings& adamw, int opt_step, int step) const {
        model.launch_step(adamw, opt_step);
    }
    // --export of freshly initialized weights (no --resume or --init-from) is refused unless this is true.
    virtual bool allow_export_of_init() const { return false; }
};

// The driver (train_gpt.cu): the whole program, with `hooks` at its seams. Returns the exit code.
int train_main(int argc, char** argv, const DriverHooks& hooks);
