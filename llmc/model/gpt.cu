// GptModel: owns the parameter/optimizer allocation, the activation allocation and the per-component state
// (matmul plans, attention graphs). See llmc/model/gpt.h. The training step: llmc/model/gpt_step.cu; weights and the
// training state in and out of the device: llmc/model/gpt_state.cu.
#include "llmc/model/gpt_impl.cuh"

std::vector<ParamTensorInfo> parameter_table(const ModelConfig& m) { return host_parameter_table(m); }

// The activation buffers for s.B x s.T (added to `a`, not allocated).
static void add_activation_buffers(GptModel::Impl& s, Arena& a) {
    const size_t L = s.cfg.num_layers, C = s.cfg.channels, V = s.cfg.vocab_size, H = s.cfg.num_heads;
    const size_t B = s.B, T = s.T, N = B * T;
    const bool use_fp8 = s.use_fp8();
    s.residual.resize(L + 1);
    for (auto* v : {&s.residual_mid, &s.ln1, &s.ln2, &s.qkv, &s.atty, &s.fch}) v->resize(L);
    for (auto* v : {&s.ln1_mean, &s.ln1_rstd, &s.ln2_mean, &s.ln2_rstd, &s.att_stats}) v->resize(L);
    for (size_t l = 0; l <= L; l++) a.add("residual", &s.residual[l], N * C);
    for (size_t l = 0; l < L; l++) {
        a.add("residual_mid", &s.residual_mid[l], N * C);
        // BF16 backward reads the LayerNorm outputs (GEMM inputs); FP8 keeps their transposed FP8 copies
        // instead.
        if (!use_fp8) {  // FP8: the LayerNorms write their FP8 copies directly, no BF16 output
            a.add("ln1", &s.ln1[l], N * C);
            a.add("ln2", &s.ln2[l], N * C);
        }
        a.add("qkv", &s.qkv[l], N * 3 * C);
        a.add("atty", &s.atty[l], N * C);
        a.add("fch (pre-gelu)", &s.fch[l], N * 4 * C);
        a.add("ln stats", &s.ln1_mean[l], N);
        a.add("ln stats", &s.ln1_rstd[l], N);
        a.add("ln stats", &s.ln2_mean[l], N);
        a.add("ln stats", &s.ln2_rstd[l], N);
        a.add("att stats", &s.att_stats[l], (size_t)B * H * T);
    }
    a.add("lnf", &s.lnf, N * C);
    a.add("ln stats", &s.lnf_mean, N);
    a.add("ln stats", &s.lnf_rstd, N);
    a.add("logits", &s.logits, N * V);
    a.add("losses", &s.losses, N);
    a.add("losses", &s.loss_scalar, 1);
    // shared scratch: GELU output (BF16 only: recomputed in backward instead of stored per layer; FP8 GELU
    // writes the fc-proj input in FP8), projection outputs, and the backward gradient buffers of every layer
    if (!use_fp8) a.add("scratch", &s.fch_gelu, N * 4 * C);
    a.add("scratch", &s.scratch_NC, N * C);
    a.add("grad scratch", &s.grad_NC, N * C);
    a.add("grad scratch", &s.grad_N4C, N * 4 * C);
    a.add("grad scratch", &s.grad_residual, N * C);
    size_t reduce_bytes = std::max<size_t>(
        {layernorm_backward_scratch_bytes((int)N, (int)C), matmul_dbias_scratch_bytes((int)N, (int)(4 * C))});
    a.add("reduce scratch", &s.reduce_scratch, reduce_bytes / sizeof(float) + 1);
    a.add("reduce scratch", &s.norm_partials, kNumParamTensors * global_norm_num_partials());
    a.add("step scalars", &s.step_scalars, 1);
    a.add("step scalars", &s.adamw_scalars, 2);
    a.add("tokens", &s.token_slots, s.accum_steps * token_slot_ints(N));
    if (use_fp8) {
        for (size_t i = 0; i < s.fp8_linears.size(); i++) {
            int in, out;
            s.linear_dims(i % kLinearsPerLayer, &in, &out);
            if (i % kLinearsPerLayer == kFcProj && s.options.recompute_fc_proj_input)
                continue;  // shared below
            a.add("fp8 saved X^T", &s.fp8_linears[i].x.data_T, (size_t)in * N);
        }
        // --recompute 1: one fc-proj X^T for all layers, rebuilt from the pre-GELU tensor in backward
        if (s.options.recompute_fc_proj_input)
            a.add("fp8 fc-proj X^T (recomputed)", &s.shared_fc_proj_xT, N * 4 * C);
        Fp8Scratch& fs = s.fp8.scratch;
        a.add("fp8 scratch", &fs.x_rows, N * 4 * C);
        a.add("fp8 scratch", &fs.dy_rows, N * 4 * C);
        a.add("fp8 scratch", &fs.dyT, N * 4 * C);
        a.add("fp8 scratch", &fs.dy_scale_inv, 1);
        a.add("step scalars", &s.health_amax, s.fp8_linears.size() * kFp8RolesPerLinear);
        a.add("step scalars", &s.health_scale, s.fp8_linears.size() * kFp8RolesPerLinear);
        a.add("fp8 scratch", reinterpret_cast<char**>(&fs.dbias_scratch),
              fp8_dbias_scratch_bytes((int)N, (int)(4 * C)));
    }
}

// Before allocating: if parameters + activations (+ a reserve for library workspaces) exceed the free GPU
// memory, print the plan and exit with the largest --batch that would fit. Activation bytes are affine in B.
static void check_memory_plan(GptModel::Impl& s) {
    constexpr size_t kReserve = size_t(1) << 30;  // cuBLASLt/cuDNN workspaces, FP8 scale state, fragmentation
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const size_t params = s.param_arena.planned_bytes(), acts = s.act_arena.planned_bytes();
    const size_t need = params + acts + kReserve;
    if (need <= free_b) return;
    auto activation_bytes_at = [&](int batch) {
        const int saved = s.B;
        s.B = batch;
        Arena probe;  // never allocated: only sizes the plan
        add_activation_buffers(s, probe);
        s.B = saved;
        return probe.planned_bytes();
    };
    const size_t one = activation_bytes_at(1), per_sample = activation_bytes_at(2) - one;
    long fit = 0;
    if (free_b > params + kReserve + one) fit = 1 + (long)((free_b - params - kReserve - one) / per_sample);
    const double GiB = 1073741824.0;
    s.param_arena.print_plan();
    s.act_arena.print_plan();
    if (fit > 0)
        fatal(
            "out of GPU memory: --batch %d needs %.2f GiB (parameters and optimizer %.2f + activations %.2f "
            "+ "
            "%.2f reserved for workspaces) but %.2f GiB of %.2f are free; --batch %ld would fit",
            s.B, need / GiB, params / GiB, acts / GiB, kReserve / GiB, free_b / GiB, total_b / GiB, fit);
    fatal(
        "out of GPU memory: --batch %d needs %.2f GiB (parameters and optimizer %.2f + activations %.2f + "
        "%.2f reserved for workspaces) but %.2f GiB of %.2f are free; even --batch 1 does not fit, use a "
        "smaller model",
        s.B, need / GiB, params / GiB, acts / GiB, kReserve / GiB, free_b / GiB, total_b / GiB);
}

// The ZeRO-1 shard of every parameter tensor (llmc/parallel/shard_view.h). Exits with a one-line error when the
// number of ranks does not divide a slice.
static void plan_shards(GptModel::Impl& s) {
    const size_t L = s.cfg.num_layers;
    s.P_shard = 0;
    for (int k = 0; k < kNumParamTensors; k++) {
        const ParamTensorInfo& t = s.table[k];
        const bool per_layer = k >= LN1W && k <= FCPROJB;
        ParamShard sh;
        sh.full_offset = t.offset;
        sh.slices = per_layer ? L : 1;
        sh.slice_numel = t.numel / sh.slices;
        if (sh.slice_numel % s.world != 0)
            fatal(
                "%d GPUs do not divide parameter %s (%zu elements per slice); use a number of GPUs that "
                "divides "
                "it",
                s.world, t.name.c_str(), sh.slice_numel);
        sh.view = ShardView::of(sh.slice_numel, s.rank, s.world);
        sh.shard_numel = sh.slices * sh.view.chunk;
        sh.shard_offset = s.P_shard;
        s.P_shard += sh.shard_numel;
        s.shards.push_back(sh);
    }
}

GptModel::GptModel(const ModelConfig& m, int B, int T, Precision precision, GpuContext* ctx,
                   const Fp8Config& fp8, const DataParallel& dp, const StepOptions& options)
    : impl_(new Impl) {
    Impl& s = *impl_;
    s.cfg = m;
    s.B = B;
    s.T = T;
    s.precision = precision;
    s.fp8_cfg = fp8;
    s.ctx = ctx;
    s.table = parameter_table(m);
    for (auto& t : s.table) s.P += t.numel;
    const size_t L = m.num_layers;
    const bool use_fp8 = s.use_fp8();
    s.options = options;
    s.options.recompute_fc_proj_input = options.recompute_fc_proj_input && precision == Precision::FP8;
    s.attention_graphs = std::make_unique<AttentionGraphs>(options.deterministic_attention);
    s.comm = dp.comm && dp.comm->active() ? dp.comm : nullptr;
    s.rank = s.comm ? s.comm->rank() : 0;
    s.world = s.comm ? s.comm->world() : 1;
    s.accum_steps = dp.grad_accum_steps;
    CHECK(s.accum_steps >= 1, "grad_accum_steps = %d", s.accum_steps);
    plan_shards(s);
    CHECK_CUDA(cudaEventCreateWithFlags(&s.compute_done, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&s.comm_done, cudaEventDisableTiming));
    const size_t staging_bytes = s.accum_steps * token_slot_ints((size_t)B * T) * sizeof(int);
    for (int i = 0; i < 2; i++) {
        CHECK_CUDA(cudaMallocHost(&s.pinned_tokens[i], staging_bytes));
        CHECK_CUDA(cudaEventCreateWithFlags(&s.pinned_free[i], cudaEventDisableTiming));
    }
    CHECK_CUDA(cudaMallocHost(&s.pinned_readback, sizeof(StepScalars)));
    CHECK_CUDA(cudaMallocHost(&s.pinned_adamw, 2 * sizeof(AdamWStepScalars)));

    s.param_arena.add("params bf16", &s.params, s.P);
    s.param_arena.add("grads bf16", &s.grads, s.P);
    // ZeRO-1: optimizer state and master weights are this rank's shard
    s.param_arena.add("master fp32", &s.master, s.P_shard);
    s.param_arena.add("adam m fp32", &s.adam_m, s.P_shard);
    s.param_arena.add("adam v fp32", &s.adam_v, s.P_shard);
    if (use_fp8) {
        s.fp8_linears.resize(L * kLinearsPerLayer);
        for (size_t i = 0; i < s.fp8_linears.size(); i++) {
            Fp8LinearBuffers& lin = s.fp8_linears[i];
            int in, out;
            s.linear_dims(i % kLinearsPerLayer, &in, &out);
            if (s.sharded()) {  // one GPU: W and W^T live in the unused BF16 copy of the weight (below)
                s.param_arena.add("fp8 W, W^T", &lin.w.data, (size_t)in * out);
                s.param_arena.add("fp8 W, W^T", &lin.w.data_T, (size_t)in * out);
            }
            s.param_arena.add("fp8 scale_inv", &lin.w.scale_inv, 1);
            s.param_arena.add("fp8 scale_inv", &lin.x.scale_inv, 1);
        }
    }
    add_activation_buffers(s, s.act_arena);
    check_memory_plan(s);
    size_t param_bytes = s.param_arena.allocate("parameters");
    if (use_fp8 && !s.sharded()) {
        // On one GPU nothing reads the BF16 copies of the block weights in FP8 (the GEMMs read FP8 W and W^T,
        // cast from the FP32 master; AdamW skips them), and each is exactly as large as W plus W^T (2 x 1
        // byte per weight): they hold the FP8 weights instead of a separate 1.4 GB x 2.
        for (size_t i = 0; i < s.fp8_linears.size(); i++) {
            Fp8LinearBuffers& lin = s.fp8_linears[i];
            int in, out;
            s.linear_dims(i % kLinearsPerLayer, &in, &out);
            const LayerParams p = s.layer(s.params, (int)(i / kLinearsPerLayer));
            bf16* const weights[kLinearsPerLayer] = {p.qkvw, p.attprojw, p.fcw, p.fcprojw};
            lin.w.data = reinterpret_cast<__nv_fp8_storage_t*>(weights[i % kLinearsPerLayer]);
            lin.w.data_T = lin.w.data + (size_t)in * out;
        }
    }
    s.param_arena.print_plan();
    size_t act_bytes = s.act_arena.allocate("activations");
    if (s.options.recompute_fc_proj_input)
        for (size_t l = 0; l < L; l++)
            s.fp8_linears[kLinearsPerLayer * l + kFcProj].x.data_T = s.shared_fc_proj_xT;
    for (size_t i = 0; i < s.fp8_linears.size(); i++)
        fp8_linear_bind(&s.fp8_linears[i], (int)i, s.fp8.scratch);
    s.act_arena.print_plan();
    s.peak_bytes = param_bytes + act_bytes;

    if (use_fp8) {
        s.scales = fp8_scale_state_create(fp8_linear_slot_dtypes(fp8.format, (int)s.fp8_linears.size()),
                                          fp8.history_len);
        s.eval_scales = fp8_scale_state_create(s.scales.dtypes, fp8.history_len);
        CHECK_CUDA(cudaMalloc(&s.step_start_scales, s.scales.storage_floats * sizeof(float)));
        s.fp8.ctx = ctx;
        s.fp8.plans = &s.matmul_plans;
        s.fp8.scales = &s.scales;
        s.fp8.calibrate = true;  // until the first scale update
        s.fp8.margin = fp8.margin;
        s.fp8.gelu_tanh = m.gelu_tanh;
        s.fp8.timer = &s.timer;
        printf("fp8: %zu scaled tensors (X, W, dY of %zu Linears), %s, history %d, amax %s, margin %d\n",
               s.fp8_linears.size() * kFp8RolesPerLinear, s.fp8_linears.size(), to_string(fp8.format),
               fp8.history_len, to_string(fp8.amax_algo), fp8.margin);
    }
}

GptModel::~GptModel() {
    if (impl_->use_fp8()) {
        fp8_scale_state_destroy(&impl_->scales);
        fp8_scale_state_destroy(&impl_->eval_scales);
        cudaFree(impl_->step_start_scales);
    }
    cudaEventDestroy(impl_->compute_done);
    cudaEventDestroy(impl_->comm_done);
    for (int i = 0; i < 2; i++) {
        cudaFreeHost(impl_->pinned_tokens[i]);
        cudaEventDestroy(impl_->pinned_free[i]);
    }
    cudaFreeHost(impl_->pinned_readback);
    cudaFreeHost(impl_->pinned_adamw);
    if (impl_->step_graph) cudaGraphExecDestroy(impl_->step_graph);
    delete impl_;
}

size_t GptModel::num_parameters() const { return impl_->P; }

size_t GptModel::peak_memory_bytes() const {
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    impl_->peak_bytes = std::max(impl_->peak_bytes, total_b - free_b);
    return impl_->peak_bytes;
}

void GptModel::set_profiling(bool on) { impl_->timer.enable(on); }
std::vector<double> GptModel::collect_phase_ms() { return impl_->timer.collect(impl_->ctx->stream); }
