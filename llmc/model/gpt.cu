// Building the GPT (llmc/model/gpt.h): the parameter and activation allocations from their tables, the memory
// check, and the one place where the precision is chosen: the factory of the layers (Linears and MLPs) and
// of the scaling recipe. The passes never ask for the precision again.
#include <algorithm>

#include "llmc/kernels/init.cuh"
#include "llmc/model/gpt_impl.cuh"
#include "llmc/model/linear_fp8.h"

static int rank_of(const DataParallel& dp) { return dp.comm && dp.comm->active() ? dp.comm->rank() : 0; }
static int world_of(const DataParallel& dp) { return dp.comm && dp.comm->active() ? dp.comm->world() : 1; }

GptModel::Impl::Impl(const ModelConfig& m, int B_, int T_, GpuContext* ctx_, const DataParallel& dpar,
                     const StepOptions& opts)
    : cfg(m),
      B(B_),
      T(T_),
      ctx(ctx_),
      options(opts),
      accum_steps(dpar.grad_accum_steps),
      attention_graphs(std::make_unique<AttentionGraphs>(opts.deterministic_attention)),
      params(m, rank_of(dpar), world_of(dpar), opts.bf16_moments),
      dp(dpar.comm, ctx_, &params, &timer),
      runtime(std::max(dpar.grad_accum_steps, 1), (size_t)B_ * T_) {
    CHECK(accum_steps >= 1, "grad_accum_steps = %d", accum_steps);
}

static ActivationShape activation_shape(const GptModel::Impl& s, int batch) {
    const ModelConfig& m = s.cfg;
    return {(size_t)batch,
            (size_t)s.T,
            (size_t)m.channels,
            (size_t)m.num_layers,
            (size_t)m.num_heads,
            (size_t)m.vocab_size,
            s.accum_steps,
            s.linear_factory->reads_bf16_block_inputs(),
            s.linear_factory->reads_bf16_lm_head_input()};
}

// Before allocating: if parameters + activations (+ a reserve for library workspaces) exceed the free GPU
// memory, print the plan and exit with the largest --batch that would fit. Activation bytes (the model's
// tensors and what the Linears reserve per batch) are affine in B.
static void check_memory_plan(GptModel::Impl& s) {
    constexpr size_t kReserve = size_t(1) << 30;  // cuBLASLt/cuDNN workspaces, FP8 scale state, fragmentation
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const size_t params = s.param_arena.planned_bytes(), acts = s.act_arena.planned_bytes();
    const size_t need = params + acts + kReserve;
    if (need <= free_b) return;
    auto activation_bytes_at = [&](int batch) {
        Arena unused_params, probe;  // never allocated: only size the plan
        Activations a;
        a.plan(activation_shape(s, batch), &probe);
        s.linear_factory->plan(&unused_params, &probe, batch * s.T);
        return probe.planned_bytes();
    };
    const size_t one = activation_bytes_at(1), per_sample = activation_bytes_at(2) - one;
    long fit = 0;
    if (free_b > params + kReserve + one) fit = 1 + (long)((free_b - params - kReserve - one) / per_sample);
    const double GiB = 1073741824.0;
    s.param_arena.print_plan();
    s.act_arena.print_plan();
    const std::string advice = fit > 0 ? "--batch " + std::to_string(fit) + " would fit"
                                       : "even --batch 1 does not fit, use a smaller model";
    fatal(
        "out of GPU memory: --batch %d needs %.2f GiB (parameters and optimizer %.2f + activations %.2f "
        "+ %.2f reserved for workspaces) but %.2f GiB of %.2f are free; %s",
        s.B, need / GiB, params / GiB, acts / GiB, kReserve / GiB, free_b / GiB, total_b / GiB,
        advice.c_str());
}

// Linear `kind` of layer l (l = 0 for the LM head) over the model's parameters.
static LinearParams linear_params(const GptModel::Impl& s, int l, int kind) {
    const LinearSpec& spec = linear_spec(kind);
    const ModelParams& p = s.params;
    const bool bias = spec.bias >= 0;
    LinearParams lp = {p.slice(p.params, spec.weight, l),
                       p.slice(p.grads, spec.weight, l),
                       bias ? p.slice(p.params, spec.bias, l) : nullptr,
                       bias ? p.slice(p.grads, spec.bias, l) : nullptr,
                       s.dp.sharded() ? nullptr : p.slice(p.master, spec.weight, l),
                       s.B * s.T,
                       (int)dim_size(spec.in, s.cfg),
                       (int)dim_size(spec.out, s.cfg)};
    // Several GPUs: this rank's chunk of layer l's weight, where it is whole rows (the ranks divide `out`):
    // what an FP8 Linear quantizes itself (the FP8 factory requires it).
    const ParamShard& sh = p.shards[spec.weight];
    if (s.dp.sharded() && sh.view.chunk % lp.in == 0) {
        lp.master_shard_OI = shard_slice(p, p.master, spec.weight, l);
        lp.shard_row0 = (int)(sh.view.rank_offset / lp.in);
        lp.shard_rows = (int)(sh.view.chunk / lp.in);
    }
    return lp;
}

// Once allocated: every layer from the factory, over its slices of the parameters.
static void build_layers(GptModel::Impl& s) {
    LinearFactory& f = *s.linear_factory;
    for (int l = 0; l < s.cfg.num_layers; l++)
        s.blocks.push_back({f.make_linear(l, kQkv, linear_params(s, l, kQkv)),
                            f.make_linear(l, kAttProj, linear_params(s, l, kAttProj)),
                            f.make_mlp(l, linear_params(s, l, kFc), linear_params(s, l, kFcProj))});
    s.lm_head = f.make_lm_head(linear_params(s, 0, kLmHead));
}

GptModel::GptModel(const ModelConfig& m, int B, int T, Precision precision, GpuContext* ctx,
                   const Fp8Config& fp8, const DataParallel& dp, const StepOptions& options)
    : impl_(new Impl(m, B, T, ctx, dp, options)) {
    Impl& s = *impl_;
    const bool use_fp8 = precision == Precision::FP8;  // the one precision test: what the model is built of
    if (!use_fp8) s.options.fc_proj_input = s.options.att_proj_input = InputKeep::Saved;
    s.matmul_plans.tuning = {options.gemm_autotune, options.gemm_cache_path, fp8.fast_accum,
                             options.gemm_variants};
    const LinearLayout layout = {m, s.options.fc_proj_input, s.options.att_proj_input, s.dp.sharded()};
    if (use_fp8)
        s.linear_factory =
            make_fp8_linear_factory(layout, fp8, &s.linear_runtime, &s.act, &s.timer, &s.recipe);
    else
        s.linear_factory = make_bf16_linear_factory(&s.linear_runtime, &s.act, &s.recipe);
    if (s.dp.sharded())  // the recipe's amaxes as the maximum over the ranks (DataParallelComm outlives it)
        s.recipe->set_all_reduce_max([&dp = s.dp](float* x, size_t n) { dp.all_reduce(x, n, ncclMax); });

    s.params.plan(&s.param_arena);
    s.act.plan(activation_shape(s, B), &s.act_arena);
    s.linear_factory->plan(&s.param_arena, &s.act_arena, B * T);
    check_memory_plan(s);
    const size_t param_bytes = s.param_arena.allocate("parameters");
    s.param_arena.print_plan();
    const size_t act_bytes = s.act_arena.allocate("activations");
    s.act_arena.print_plan();
    s.peak_bytes = param_bytes + act_bytes;
    s.runtime.bind_device_slots(s.act.at<int>(Act::TokenSlots));

    s.linear_runtime = {ctx, &s.matmul_plans, &s.timer, s.act.f32(Act::ReduceScratch), m.gelu_tanh};
    build_layers(s);
    const std::string summary = s.linear_factory->summary();
    if (!summary.empty()) printf("%s\n", summary.c_str());
}

GptModel::~GptModel() { delete impl_; }

void GptModel::Impl::cast_stale_weights() {
    if (!recipe->weights_stale()) return;
    mark(kPhaseCast);
    for_each_linear([](Linear& lin) { lin.cast_weight(); });
    lm_head->cast_weight();
    // the FP8 Linears cast their rank's rows: every rank's to every rank (no BF16 weights), then W^T
    if (dp.sharded()) gather_weights([](int) { return true; });
    recipe->set_weights_stale(false);
}

void GptModel::Impl::gather_weights(const std::function<bool(int k)>& skip) {
    recipe->all_reduce_staged_amax(ctx->stream);  // the weight amaxes each rank measured on its rows
    dp.gather_weights(skip, [&](int l, const DataParallelComm::GatherBytes& gather) {
        for (int kind = 0; kind < kLinearsPerLayer; kind++) {
            const Linear::GatheredBytes b = linear(l, kind).gathered_weight_bytes();
            if (b.whole) gather(b.whole, b.chunk);
        }
    });
    for_each_linear([](Linear& lin) { lin.weights_gathered(); });
}

void GptModel::Impl::publish_weights() {
    for (int k = 0; k < kNumParamTensors; k++) {
        const ParamShard& sh = params.shards[k];
        convert_to_bf16(params.params + sh.full_offset, params.master + sh.shard_offset, sh.shard_numel,
                        ctx->stream, sh.view);
    }
    dp.gather_weights();
    recipe->set_weights_stale(true);
}

size_t GptModel::num_parameters() const { return impl_->params.P; }

void GptModel::update_peak_memory() {
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    impl_->peak_bytes = std::max(impl_->peak_bytes, total_b - free_b);
}
size_t GptModel::peak_memory_bytes() const { return impl_->peak_bytes; }

void GptModel::set_profiling(bool on) { impl_->timer.enable(on); }
std::vector<double> GptModel::collect_phase_ms() { return impl_->timer.collect(impl_->ctx->stream); }
bool GptModel::last_step_replayed() const { return impl_->runtime.last_step_replayed; }
std::vector<std::string> GptModel::gemm_report() const { return matmul_plan_report(impl_->matmul_plans); }
