// The driver's two seams (train_gpt.cu): how it launches a training step, and whether --export may write
// the initial weights. The trainer gets the defaults (a plain launch_step; no). The test build of the same
// driver (build/test/train_gpt_faults) links an object defining driver_hooks() ahead of the library, so the
// library's member that defines it (driver_hooks.cpp, nothing else in it) is never taken.
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

const DriverHooks& driver_hooks();
