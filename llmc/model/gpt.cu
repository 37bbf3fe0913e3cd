// Building the GPT (llmc/model/gpt.h): the parameter and activation allocations from their tables, the memory
// check, and the one place where the precision is chosen: the scaling recipe and the Linear layers. The
// passes never ask for the precision again.
#include <algorithm>

#include "llmc/kernels/init.cuh"
#include "llmc/model/gpt_impl.cuh"

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

static ActivationShape activation_shape(const GptModel::Impl& s, int batch, bool fp8) {
    const ModelConfig& m = s.cfg;
    return {(size_t)batch,
            (size_t)s.T,
            (size_t)m.channels,
            (size_t)m.num_layers,
            (size_t)m.num_heads,
            (size_t)m.vocab_size,
            s.accum_steps,
            fp8,
            s.options.recompute_fc_proj_input,
            s.options.recompute_att_proj_input,
            fp8 && s.fp8_lm_head};
}

// Before allocating: if parameters + activations (+ a reserve for library workspaces) exceed the free GPU
// memory, print the plan and exit with the largest --batch that would fit. Activation bytes are affine in B.
static void check_memory_plan(GptModel::Impl& s, bool fp8) {
    constexpr size_t kReserve = size_t(1) << 30;  // cuBLASLt/cuDNN workspaces, FP8 scale state, fragmentation
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const size_t params = s.param_arena.planned_bytes(), acts = s.act_arena.planned_bytes();
    const size_t need = params + acts + kReserve;
    if (need <= free_b) return;
    auto activation_bytes_at = [&](int batch) {
        Arena probe;  // never allocated: only sizes the plan
        Activations a;
        a.plan(activation_shape(s, batch, fp8), &probe);
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

static LinearParams linear_params(const GptModel::Impl& s, int l, int kind) {
    const LinearSpec& spec = linear_spec(kind);
    const ModelParams& p = s.params;
    const bool bias = spec.bias >= 0;
    return {p.slice(p.params, spec.weight, l),
            p.slice(p.grads, spec.weight, l),
            bias ? p.slice(p.params, spec.bias, l) : nullptr,
            bias ? p.slice(p.grads, spec.bias, l) : nullptr,
            s.B * s.T,
            (int)dim_size(spec.in, s.cfg),
            (int)dim_size(spec.out, s.cfg)};
}

// BF16: the input each block Linear keeps for its backward (the attention projection keeps the attention
// output it is given).
static void build_bf16_linears(GptModel::Impl& s) {
    const Activations& a = s.act;
    for (int l = 0; l < s.cfg.num_layers; l++) {
        bf16* inputs[kLinearsPerLayer] = {a.bf(Act::Ln1, l), nullptr, a.bf(Act::Ln2, l), a.bf(Act::GeluOut)};
        for (int kind = 0; kind < kLinearsPerLayer; kind++)
            s.block_linears.push_back(
                make_bf16_linear(linear_params(s, l, kind), &s.linear_runtime, inputs[kind]));
    }
}

// The FP8 weight bytes and scale_inv of each block Linear, in the parameter allocation.
struct Fp8LinearStorage {
    __nv_fp8_storage_t* weight = nullptr;  // W then W^T
    float *w_scale_inv = nullptr, *x_scale_inv = nullptr;
};

// The block Linears' entries, then (--fp8-lm-head) the LM head's: its W and W^T always have their own bytes,
// since the encoder reads the tied embedding's BF16 copy.
static void plan_fp8_linear_storage(GptModel::Impl& s, std::vector<Fp8LinearStorage>* storage) {
    const size_t num_block = (size_t)s.cfg.num_layers * kLinearsPerLayer;
    storage->resize(num_block + (s.fp8_lm_head ? 1 : 0));
    if (s.fp8_lm_head) {
        Fp8LinearStorage& f = storage->back();
        s.param_arena.add("fp8 lm-head W, W^T", &f.weight, 2 * (size_t)s.cfg.vocab_size * s.cfg.channels);
        s.param_arena.add("fp8 scale_inv", &f.w_scale_inv, 1);
        s.param_arena.add("fp8 scale_inv", &f.x_scale_inv, 1);
    }
    for (size_t i = 0; i < num_block; i++) {
        Fp8LinearStorage& f = (*storage)[i];
        const LinearParams p = linear_params(s, 0, (int)(i % kLinearsPerLayer));
        // one GPU: W and W^T live in the unused BF16 copy of the weight (build_fp8_linears)
        if (s.dp.sharded()) s.param_arena.add("fp8 W, W^T", &f.weight, 2 * (size_t)p.in * p.out);
        s.param_arena.add("fp8 scale_inv", &f.w_scale_inv, 1);
        s.param_arena.add("fp8 scale_inv", &f.x_scale_inv, 1);
    }
}

// FP8: on one GPU nothing reads the BF16 copies of the block weights (the GEMMs read FP8 W and W^T, cast from
// the FP32 master; AdamW writes them fused), and each is exactly as large as W plus W^T (2 x 1 byte per
// weight): they hold the FP8 weights instead of a separate 1.4 GB x 2 at GPT-1.5B.
static void build_fp8_linears(GptModel::Impl& s, const std::vector<Fp8LinearStorage>& storage) {
    const Activations& a = s.act;
    const Act saved_xT[kLinearsPerLayer] = {
        Act::Fp8XtQkv, s.options.recompute_att_proj_input ? Act::Fp8XtAttProjShared : Act::Fp8XtAttProj,
        Act::Fp8XtFc, s.options.recompute_fc_proj_input ? Act::Fp8XtFcProjShared : Act::Fp8XtFcProj};
    auto shared = [](Act id) { return id == Act::Fp8XtFcProjShared || id == Act::Fp8XtAttProjShared; };
    auto* recipe = static_cast<DelayedScaling*>(s.recipe.get());
    s.fp8_scratch = {a.fp8(Act::Fp8XRows), a.fp8(Act::Fp8DyRows), a.fp8(Act::Fp8DyT),
                     a.f32(Act::Fp8DyScaleInv), a.at<void>(Act::Fp8DbiasScratch)};
    for (int l = 0; l < s.cfg.num_layers; l++)
        for (int kind = 0; kind < kLinearsPerLayer; kind++) {
            const int index = kLinearsPerLayer * l + kind;
            const LinearParams p = linear_params(s, l, kind);
            const Fp8LinearStorage& st = storage[index];
            const int w = linear_spec(kind).weight;
            Fp8LinearSetup f;
            f.index = index;
            f.recipe = recipe;
            f.scratch = &s.fp8_scratch;
            f.saved_xT_IN = a.fp8(saved_xT[kind], shared(saved_xT[kind]) ? 0 : l);
            f.recompute_input = kind == kFcProj && s.options.recompute_fc_proj_input;
            f.rebuild_xT_in_backward = kind == kAttProj && s.options.recompute_att_proj_input;
            f.kept_dyT_ON = f.recompute_input ? a.fp8(Act::Fp8DyTFcProjKept) : nullptr;
            f.kept_dy_scale_inv = f.recompute_input ? a.f32(Act::Fp8DyScaleInvFcProjKept) : nullptr;
            f.master_weight_OI = s.dp.sharded() ? nullptr : s.params.slice(s.params.master, w, l);
            f.fp8_weight = s.dp.sharded()
                               ? st.weight
                               : reinterpret_cast<__nv_fp8_storage_t*>(const_cast<bf16*>(p.weight_OI));
            f.w_scale_inv = st.w_scale_inv;
            f.x_scale_inv = st.x_scale_inv;
            s.block_linears.push_back(make_fp8_linear(p, &s.linear_runtime, f));
        }
}

// --fp8-lm-head: the LM head as FP8 Linear number L x 4, its input from the final LayerNorm (FP8 rows +
// transposed copy), W and W^T cast from the tied embedding's BF16 weight after every update (the embedding's
// AdamW is the plain one: the encoder reads its BF16 copy), no bias; its dY comes quantized from the FP8
// classifier and its dY^T goes over the spent logits.
static std::unique_ptr<Linear> build_fp8_lm_head(GptModel::Impl& s, const Fp8LinearStorage& st) {
    Fp8LinearSetup f;
    f.index = s.cfg.num_layers * kLinearsPerLayer;
    f.recipe = static_cast<DelayedScaling*>(s.recipe.get());
    f.scratch = &s.fp8_scratch;
    f.saved_xT_IN = s.act.fp8(Act::Fp8XtLmHead);
    f.recompute_input = false;
    f.master_weight_OI = nullptr;
    f.fp8_weight = st.weight;
    f.w_scale_inv = st.w_scale_inv;
    f.x_scale_inv = st.x_scale_inv;
    f.loss_head = true;
    return make_fp8_linear(linear_params(s, 0, kLmHead), &s.linear_runtime, f);
}

GptModel::GptModel(const ModelConfig& m, int B, int T, Precision precision, GpuContext* ctx,
                   const Fp8Config& fp8, const DataParallel& dp, const StepOptions& options)
    : impl_(new Impl(m, B, T, ctx, dp, options)) {
    Impl& s = *impl_;
    const bool use_fp8 = precision == Precision::FP8;  // the one precision test: what the model is built of
    s.options.recompute_fc_proj_input = options.recompute_fc_proj_input && use_fp8;
    s.options.recompute_att_proj_input = options.recompute_att_proj_input && use_fp8;
    s.fp8_lm_head = fp8.lm_head && use_fp8;
    s.matmul_plans.tuning = {options.gemm_autotune, options.gemm_cache_path, fp8.fast_accum};
    const int num_block_linears = m.num_layers * kLinearsPerLayer;
    const int num_fp8_linears = num_block_linears + (s.fp8_lm_head ? 1 : 0);
    if (use_fp8)
        s.recipe = std::make_unique<DelayedScaling>(fp8, fp8_linear_slot_dtypes(fp8.format, num_fp8_linears),
                                                    &s.timer);
    else
        s.recipe = std::make_unique<NoScaling>();

    s.params.plan(&s.param_arena);
    std::vector<Fp8LinearStorage> fp8_storage;
    if (use_fp8) plan_fp8_linear_storage(s, &fp8_storage);
    s.act.plan(activation_shape(s, B, use_fp8), &s.act_arena);
    check_memory_plan(s, use_fp8);
    const size_t param_bytes = s.param_arena.allocate("parameters");
    s.param_arena.print_plan();
    const size_t act_bytes = s.act_arena.allocate("activations");
    s.act_arena.print_plan();
    s.peak_bytes = param_bytes + act_bytes;
    s.runtime.bind_device_slots(s.act.at<int>(Act::TokenSlots));

    s.linear_runtime = {ctx, &s.matmul_plans, &s.timer, s.act.f32(Act::ReduceScratch), m.gelu_tanh};
    if (use_fp8)
        build_fp8_linears(s, fp8_storage);
    else
        build_bf16_linears(s);
    s.lm_head = s.fp8_lm_head
                    ? build_fp8_lm_head(s, fp8_storage.back())
                    : make_bf16_linear(linear_params(s, 0, kLmHead), &s.linear_runtime, s.act.bf(Act::Lnf));
    s.plain_adamw.assign(kNumParamTensors, true);
    for (int k = 0; k < kNumParamTensors; k++)
        if (is_block_linear_weight(k)) s.plain_adamw[k] = !s.linear(0, param_spec(k).linear).fuses_adamw();
    if (use_fp8)
        printf(
            "fp8: %d scaled tensors (X, W, dY of %d Linears%s), %s, history %d, amax %s, margin %d, forward "
            "accumulation %s\n",
            num_fp8_linears * kFp8RolesPerLinear, num_fp8_linears, s.fp8_lm_head ? " with the LM head" : "",
            to_string(fp8.format), fp8.history_len, to_string(fp8.amax_algo), fp8.margin,
            fp8.fast_accum ? "fast" : "fp32");
}

GptModel::~GptModel() { delete impl_; }

void GptModel::Impl::cast_stale_weights() {
    if (!recipe->weights_stale()) return;
    mark(kPhaseCast);
    for (auto& lin : block_linears) lin->cast_weight();
    lm_head->cast_weight();
    recipe->set_weights_stale(false);
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
std::vector<std::string> GptModel::gemm_report() const { return matmul_plan_report(impl_->matmul_plans); }
