// The learning-rate schedule (config.h: learning_rate).
#include <cmath>

#include "llmc/host/config.h"

float learning_rate(const TrainConfig& cfg, int step) {
    if (step < cfg.warmup) return cfg.lr * (float)(step + 1) / (float)cfg.warmup;
    if (cfg.schedule == LrSchedule::Constant) return cfg.lr;
    int decay_steps = cfg.steps - cfg.warmup;
    if (decay_steps <= 1) return cfg.lr;
    double progress = (double)(step - cfg.warmup) / (double)(decay_steps - 1);  // 0 .. 1 at the last step
    if (progress > 1) progress = 1;
    double min_lr = (double)cfg.lr * cfg.final_lr_frac;
    return (float)(min_lr + 0.5 * (cfg.lr - min_lr) * (1.0 + std::cos(M_PI * progress)));
}
