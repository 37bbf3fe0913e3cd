// The resolved configuration as JSON (config.h: to_json): config.json and --print-config.
#include <charconv>
#include <cmath>
#include <cstdint>

#include "llmc/formats/json.h"
#include "llmc/host/config.h"

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

void add_model_json(const TrainConfig& c, size_t parameters, json::Value* o) {
    const ModelConfig& m = c.model;
    o->set("model", json::Value::string(c.model_name));
    o->set("layers", json::Value::integer(m.num_layers));
    o->set("channels", json::Value::integer(m.channels));
    o->set("heads", json::Value::integer(m.num_heads));
    o->set("vocab", json::Value::integer(m.vocab_size));
    o->set("max_seq", json::Value::integer(m.max_seq_len));
    o->set("gelu", json::Value::string(choice_name(gelu_names(), m.gelu_tanh)));
    o->set("parameters", json::Value::integer((int64_t)parameters));
    o->set("precision", json::Value::string(to_string(c.precision)));
    o->set("fp8_format", json::Value::string(to_string(c.fp8.format)));
    o->set("fp8_history", json::Value::integer(c.fp8.history_len));
    o->set("fp8_amax_algo", json::Value::string(to_string(c.fp8.amax_algo)));
    o->set("fp8_margin", json::Value::integer(c.fp8.margin));
    o->set("fp8_lm_head", json::Value::boolean(c.fp8.lm_head));
    o->set("fp8_fast_accum", json::Value::boolean(c.fp8.fast_accum));
}

void add_training_json(const TrainConfig& c, json::Value* o) {
    auto integer = [&](const char* k, int64_t v) { o->set(k, json::Value::integer(v)); };
    auto str = [&](const char* k, const std::string& v) { o->set(k, json::Value::string(v)); };
    auto real = [&](const char* k, float v) { o->set(k, json_float(v)); };
    integer("batch", c.batch);
    integer("seq", c.seq);
    integer("total_batch", c.total_batch);
    integer("steps", c.steps);
    str("train_data", c.train_data);
    str("val_data", c.val_data);
    integer("val_every", c.val_every);
    integer("val_batches", c.val_batches);
    str("eval_hellaswag", c.eval_hellaswag);
    integer("eval_every", c.eval_every);
    str("eval_hellaswag_dump", c.eval_hellaswag_dump);
    real("lr", c.lr);
    integer("warmup", c.warmup);
    str("schedule", to_string(c.schedule));
    real("final_lr_frac", c.final_lr_frac);
    real("weight_decay", c.weight_decay);
    real("grad_clip", c.grad_clip);
    real("beta1", c.beta1);
    real("beta2", c.beta2);
    real("adam_eps", c.adam_eps);
    str("adam_moments", choice_name(adam_moments_names(), c.adam_bf16_moments));
    o->set("seed", json_seed(c.seed));
}

void add_run_json(const TrainConfig& c, json::Value* o) {
    auto integer = [&](const char* k, int64_t v) { o->set(k, json::Value::integer(v)); };
    auto str = [&](const char* k, const std::string& v) { o->set(k, json::Value::string(v)); };
    auto flag = [&](const char* k, bool v) { o->set(k, json::Value::boolean(v)); };
    str("log_dir", c.log_dir);
    integer("log_every", c.log_every);
    integer("fp8_health_every", c.fp8_health_every);
    flag("profile", c.profile);
    str("checkpoint_dir", c.checkpoint_dir);
    integer("checkpoint_every", c.checkpoint_every);
    integer("keep_checkpoints", c.keep_checkpoints);
    flag("checkpoint_required", c.checkpoint_required);
    str("resume", c.resume);
    str("resume_if_present", c.resume_if_present);
    integer("max_bad_steps", c.max_bad_steps);
    str("rendezvous", c.rendezvous);
    o->set("comm_timeout", json_float(c.comm_timeout, /*is_float=*/false));
    integer("ranks_per_gpu", c.ranks_per_gpu);
    integer("recompute", c.recompute);
    flag("deterministic", c.deterministic);
    flag("cuda_graph", c.cuda_graph);
    flag("gemm_autotune", c.gemm_autotune);
    str("gemm_cache", c.gemm_cache);
    integer("sample_every", c.sample_every);
    integer("sample_tokens", c.sample_tokens);
    str("prompt", c.prompt);
    o->set("temperature", json_float(c.temperature));
    integer("top_k", c.top_k);
    str("tokenizer", c.tokenizer);
    str("init_from", c.init_from);
    str("export", c.export_path);
    str("export_format", choice_name(export_format_names(), c.export_hf));
    flag("export_at_end", c.export_at_end);
}

}  // namespace

std::string to_json(const TrainConfig& c, size_t parameters) {
    json::Value o = json::Value::object();
    add_model_json(c, parameters, &o);
    add_training_json(c, &o);
    add_run_json(c, &o);
    return json::dump_pretty(o);
}
