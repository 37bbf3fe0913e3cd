// GptModel: owns the parameter/optimizer allocation, the activation allocation and the per-component state
// (matmul plans, attention graphs), and sequences the kernels of a training step. See llmc/gpt.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "llmc/adamw.cuh"
#include "llmc/attention.h"
#include "llmc/classifier.cuh"
#include "llmc/comm.h"
#include "llmc/context.h"
#include "llmc/cuda_common.cuh"
#include "llmc/encoder.cuh"
#include "llmc/fp8.cuh"
#include "llmc/fp8_linear.cuh"
#include "llmc/fp8_producers.cuh"
#include "llmc/gelu.cuh"
#include "llmc/global_norm.cuh"
#include "llmc/gpt.h"
#include "llmc/init.cuh"
#include "llmc/layernorm.cuh"
#include "llmc/matmul.cuh"
#include "llmc/weights_io.h"

std::vector<ParamTensorInfo> parameter_table(const ModelConfig& m) { return host_parameter_table(m); }

namespace {
enum ParamIndex {
    WTE,
    WPE,
    LN1W,
    LN1B,
    QKVW,
    QKVB,
    ATTPROJW,
    ATTPROJB,
    LN2W,
    LN2B,
    FCW,
    FCB,
    FCPROJW,
    FCPROJB,
    LNFW,
    LNFB
};

// A list of named device buffers carved out of one allocation (256-byte aligned views).
class Arena {
  public:
    template <class T>
    void add(const char* name, T** ptr, size_t count) {
        entries_.push_back({name, reinterpret_cast<void**>(ptr), count * sizeof(T)});
    }
    // Bytes allocate() will ask for (the entries added so far, each aligned).
    size_t planned_bytes() const {
        size_t total = 0;
        for (auto& e : entries_) total += align(e.bytes);
        return total;
    }
    size_t allocate(const char* what) {
        const size_t total = planned_bytes();
        CHECK_CUDA(cudaMalloc(&base_, total));
        size_t off = 0;
        for (auto& e : entries_) {
            *e.ptr = static_cast<char*>(base_) + off;
            off += align(e.bytes);
        }
        printf("memory: %-12s %8.2f GiB\n", what, total / 1073741824.0);
        return total;
    }
    void print_plan() const {
        // group entries by name: per-layer buffers share a name
        std::vector<std::pair<std::string, size_t>> groups;
        for (auto& e : entries_) {
            bool found = false;
            for (auto& g : groups)
                if (g.first == e.name) g.second += align(e.bytes), found = true;
            if (!found) groups.push_back({e.name, align(e.bytes)});
        }
        for (auto& g : groups) printf("memory:   %-18s %9.1f MiB\n", g.first.c_str(), g.second / 1048576.0);
    }
    // Tests: fill the whole allocation with 0xFF bytes (NaN as bf16 and fp32).
    void poison(cudaStream_t stream) const {
        CHECK_CUDA(cudaMemsetAsync(base_, 0xFF, planned_bytes(), stream));
    }
    ~Arena() {
        if (base_) cudaFree(base_);
    }

  private:
    static size_t align(size_t b) { return (b + 255) & ~size_t(255); }
    struct Entry {
        std::string name;
        void** ptr;
        size_t bytes;
    };
    std::vector<Entry> entries_;
    void* base_ = nullptr;
};

// The four Linear layers of a block, in the order of their FP8 scale slots (linear index = 4 * layer + kind).
enum LinearKind { kQkv, kAttProj, kFc, kFcProj, kLinearsPerLayer };

// Where a parameter tensor's ZeRO-1 shard lives: in the full gradient/BF16 buffers at full_offset, in this
// rank's master/m/v buffers at shard_offset (shard_numel elements), addressed through `view`.
struct ParamShard {
    size_t full_offset, slices, slice_numel, shard_offset, shard_numel;
    ShardView view;
};

// Pointers to the per-layer slice of each parameter kind.
struct LayerParams {
    bf16 *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
};
}  // namespace

struct GptModel::Impl {
    ModelConfig cfg;
    int B, T;
    Precision precision;
    Fp8Config fp8_cfg;
    GpuContext* ctx;
    std::vector<ParamTensorInfo> table;
    size_t P = 0;

    // Data parallelism: rank/world of `comm` (1 GPU: comm null), ZeRO-1 shards, micro-steps.
    Communicator* comm = nullptr;
    int rank = 0, world = 1, accum_steps = 1;
    int micro = 0;                   // backward() calls since the last update()/discard_step()
    std::vector<ParamShard> shards;  // per parameter tensor, canonical order
    size_t P_shard = 0;              // master/m/v elements on this rank
    cudaEvent_t compute_done = nullptr, comm_done = nullptr;

    // parameters + optimizer state (+ FP8 weight copies): one allocation
    Arena param_arena;
    bf16* params = nullptr;  // working weights, canonical order
    bf16* grads = nullptr;
    float* master = nullptr;  // this rank's shard (P_shard), as adam_m and adam_v
    float* adam_m = nullptr;
    float* adam_v = nullptr;

    // activations: one allocation
    Arena act_arena;
    std::vector<bf16*> residual;  // L+1 x [N, C]: block inputs; residual[L] feeds the final LayerNorm
    std::vector<bf16*> residual_mid, ln1, ln2, qkv, atty, fch;  // per layer (ln1/ln2 shared in FP8 mode)
    std::vector<float*> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd, att_stats;
    bf16 *lnf = nullptr, *logits = nullptr, *fch_gelu = nullptr, *scratch_NC = nullptr;
    float *lnf_mean = nullptr, *lnf_rstd = nullptr, *losses = nullptr, *loss_scalar = nullptr;
    bf16 *grad_NC = nullptr, *grad_N4C = nullptr, *grad_residual = nullptr;
    float* reduce_scratch = nullptr;  // LayerNorm/bias backward partial sums
    float *norm_partials = nullptr, *grad_norm = nullptr, *grad_scale = nullptr;
    int *inputs = nullptr, *targets = nullptr, *bucket_offsets = nullptr, *bucket_positions = nullptr,
        *bucket_tokens = nullptr;
    int num_buckets = 0;
    bool have_targets = false;

    // FP8 (precision == FP8): scale state, per-Linear FP8 buffers, shared cast scratch
    Fp8ScaleState scales;
    // Evaluation forwards (validation, no targets) run on a copy of `scales` made just before, so their
    // amaxes and step-0 calibration never reach the training state.
    Fp8ScaleState eval_scales;
    float* step_start_scales = nullptr;  // the training state's storage at the start of the current step
    std::vector<Fp8LinearBuffers> fp8_linears;        // 4 per layer
    __nv_fp8_storage_t* shared_fc_proj_xT = nullptr;  // --recompute 1: the fc-proj X^T of every layer
    Fp8LinearContext fp8;
    bool fp8_weights_stale = true;

    StepOptions options;
    MatmulPlanCache matmul_plans;
    std::unique_ptr<AttentionGraphs> attention_graphs;
    PhaseTimer timer;
    size_t peak_bytes = 0;

    bool use_fp8() const { return precision == Precision::FP8; }
    bool sharded() const { return world > 1; }
    // Orders the communication stream after the work queued on the compute stream so far, and back.
    void comm_after_compute() {
        CHECK_CUDA(cudaEventRecord(compute_done, ctx->stream));
        CHECK_CUDA(cudaStreamWaitEvent(comm->stream(), compute_done, 0));
    }
    void compute_after_comm() {
        CHECK_CUDA(cudaEventRecord(comm_done, comm->stream()));
        const Phase resume = timer.current();
        mark(kPhaseComm);  // the profile charges the wait to exposed communication
        CHECK_CUDA(cudaStreamWaitEvent(ctx->stream, comm_done, 0));
        mark(resume);
    }
    // In-place reduce-scatter (sum) of parameter tensor `kind`'s slice `slice`: afterwards this rank's chunk
    // holds the sum over the ranks. Call inside an NCCL group.
    void reduce_scatter_slice(int kind, size_t slice) {
        const ParamShard& sh = shards[kind];
        bf16* base = grads + sh.full_offset + slice * sh.slice_numel;
        CHECK_NCCL(ncclReduceScatter(base, base + sh.view.rank_offset, sh.view.chunk, ncclBfloat16, ncclSum,
                                     comm->nccl(), comm->stream()));
    }
    // In-place all-gather of parameter tensor `kind`'s slice `slice` of the BF16 working weights.
    void all_gather_slice(int kind, size_t slice) {
        const ParamShard& sh = shards[kind];
        bf16* base = params + sh.full_offset + slice * sh.slice_numel;
        CHECK_NCCL(ncclAllGather(base + sh.view.rank_offset, base, sh.view.chunk, ncclBfloat16, comm->nccl(),
                                 comm->stream()));
    }
    // Gradients of layer l (the per-layer tensors), or of the other tensors (wte, wpe, lnf) for l < 0.
    void reduce_scatter_grads(int l) {
        comm_after_compute();
        CHECK_NCCL(ncclGroupStart());
        for (int k = 0; k < kNumParamTensors; k++)
            if ((shards[k].slices > 1) == (l >= 0)) reduce_scatter_slice(k, l >= 0 ? l : 0);
        CHECK_NCCL(ncclGroupEnd());
    }
    // BF16 working weights from this rank's master shard, then gathered from all ranks (or, with one GPU,
    // converted whole).
    void publish_weights() {
        for (int k = 0; k < kNumParamTensors; k++) {
            const ParamShard& sh = shards[k];
            convert_to_bf16(params + sh.full_offset, master + sh.shard_offset, sh.shard_numel, ctx->stream,
                            sh.view);
        }
        gather_weights();
        fp8_weights_stale = true;
    }
    void gather_weights() {
        if (!sharded()) return;
        comm_after_compute();
        for (int l = -1; l < cfg.num_layers; l++) {  // one group per layer (the other tensors first)
            CHECK_NCCL(ncclGroupStart());
            for (int k = 0; k < kNumParamTensors; k++)
                if ((shards[k].slices > 1) == (l >= 0)) all_gather_slice(k, l >= 0 ? l : 0);
            CHECK_NCCL(ncclGroupEnd());
        }
        compute_after_comm();
    }
    bf16* param(int kind) { return params + table[kind].offset; }
    bf16* grad(int kind) { return grads + table[kind].offset; }
    LayerParams layer(bf16* base, int l) {
        const size_t C = cfg.channels;
        auto at = [&](int kind, size_t per_layer) { return base + table[kind].offset + l * per_layer; };
        return {at(LN1W, C),
                at(LN1B, C),
                at(QKVW, 3 * C * C),
                at(QKVB, 3 * C),
                at(ATTPROJW, C * C),
                at(ATTPROJB, C),
                at(LN2W, C),
                at(LN2B, C),
                at(FCW, 4 * C * C),
                at(FCB, 4 * C),
                at(FCPROJW, 4 * C * C),
                at(FCPROJB, C)};
    }
    // in/out features of a block Linear
    void linear_dims(int kind, int* in, int* out) const {
        const int C = cfg.channels;
        const int dims[kLinearsPerLayer][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
        *in = dims[kind][0];
        *out = dims[kind][1];
    }
    const float* master_weight(int l, int kind) {
        const int W[kLinearsPerLayer] = {QKVW, ATTPROJW, FCW, FCPROJW};
        int in, out;
        linear_dims(kind, &in, &out);
        return master + table[W[kind]].offset + (size_t)l * in * out;
    }
    void mark(Phase p) { timer.mark(p, ctx->stream); }

    // One block Linear in the active precision: out = inp W^T + b.
    void linear_forward(int l, int kind, bf16* out, const bf16* inp, const bf16* weight, const bf16* bias) {
        int in, outf;
        linear_dims(kind, &in, &outf);
        if (use_fp8()) {
            Fp8LinearBuffers* lin = &fp8_linears[kLinearsPerLayer * l + kind];
            if (kind == kAttProj)  // the attention output cast
                fp8_linear_forward(&fp8, lin, out, inp, bias, B * T, in, outf, ctx->stream);
            else  // written in FP8 by norm_into_linear / gelu_into_linear
                fp8_linear_forward_quantized(&fp8, lin, out, bias, B * T, in, outf, ctx->stream);
        } else {
            mark(kPhaseGemm);
            matmul_forward(&matmul_plans, ctx, out, inp, weight, bias, B * T, in, outf, ctx->stream);
        }
    }
    // Backward of a block Linear. BF16 reads the saved input `inp`; FP8 its saved transposed FP8 copy.
    void linear_backward(int l, int kind, bf16* dinp, bf16* dweight, bf16* dbias, const bf16* dout,
                         const bf16* inp, const bf16* weight) {
        int in, outf;
        linear_dims(kind, &in, &outf);
        if (use_fp8()) {
            fp8_linear_backward(&fp8, &fp8_linears[kLinearsPerLayer * l + kind], dinp, dweight, dbias, dout,
                                nullptr, B * T, in, outf, ctx->stream);
        } else {
            mark(kPhaseGemm);
            matmul_backward(&matmul_plans, ctx, dinp, dweight, dbias, dout, inp, weight, B * T, in, outf,
                            micro > 0, reduce_scratch, ctx->stream);
        }
    }
    // (Residual add +) LayerNorm feeding block Linear (l, kind). BF16 writes `ln_out`; FP8 writes the
    // Linear's FP8 input (row-wise scratch + saved transposed copy + scale_inv + amax) in the same pass.
    void norm_into_linear(int l, int kind, bf16* residual_out, bf16* ln_out, float* mean, float* rstd,
                          const bf16* inp1, const bf16* inp2, const bf16* w, const bf16* b) {
        const int N = B * T, C = cfg.channels;
        mark(kPhaseOther);
        if (!use_fp8()) {
            if (inp2)
                residual_layernorm_forward(residual_out, ln_out, mean, rstd, inp1, inp2, w, b, N, C,
                                           ctx->stream);
            else
                layernorm_forward(ln_out, mean, rstd, inp1, w, b, N, C, ctx->stream);
            return;
        }
        Fp8LinearBuffers& lin = fp8_linears[kLinearsPerLayer * l + kind];
        const int slot = fp8_slot(lin.linear, kFp8X);
        if (fp8.calibrate) {
            fp8_layernorm_amax(fp8.scales, slot, inp1, inp2, w, b, N, C, ctx->stream);
            fp8_calibrate_scales(fp8.scales, slot, 1, fp8.margin, ctx->stream);
        }
        fp8_residual_layernorm_forward(inp2 ? residual_out : nullptr, fp8.scratch.x_rows, lin.xT,
                                       lin.x_scale_inv, mean, rstd, fp8.scales, slot, inp1, inp2, w, b, N, C,
                                       ctx->stream);
    }
    // GELU feeding the fc-proj Linear: BF16 writes fch_gelu; FP8 writes fc-proj's FP8 input directly.
    void gelu_into_linear(int l, const bf16* pre) {
        const int N = B * T, C4 = 4 * cfg.channels;
        mark(kPhaseOther);
        if (!use_fp8()) {
            gelu_forward(fch_gelu, pre, (size_t)N * C4, cfg.gelu_tanh, ctx->stream);
            return;
        }
        Fp8LinearBuffers& lin = fp8_linears[kLinearsPerLayer * l + kFcProj];
        const int slot = fp8_slot(lin.linear, kFp8X);
        if (fp8.calibrate) {
            fp8_gelu_amax(fp8.scales, slot, pre, N, C4, cfg.gelu_tanh, ctx->stream);
            fp8_calibrate_scales(fp8.scales, slot, 1, fp8.margin, ctx->stream);
        }
        fp8_gelu_cast_transpose(fp8.scratch.x_rows, lin.xT, lin.x_scale_inv, fp8.scales, slot, pre, N, C4,
                                cfg.gelu_tanh, ctx->stream);
    }
    // Casts every block weight to FP8 (W and W^T) with the active scale state's W slots: from the FP32
    // master on one GPU; with several the master is sharded and every rank casts the gathered BF16 weights.
    void cast_fp8_weights() {
        mark(kPhaseCast);
        for (int l = 0; l < cfg.num_layers; l++) {
            const LayerParams p = layer(params, l);
            const bf16* bf16_weights[kLinearsPerLayer] = {p.qkvw, p.attprojw, p.fcw, p.fcprojw};
            for (int k = 0; k < kLinearsPerLayer; k++) {
                int in, out;
                linear_dims(k, &in, &out);
                Fp8LinearBuffers* lin = &fp8_linears[kLinearsPerLayer * l + k];
                if (sharded())
                    fp8_linear_cast_weight(&fp8, lin, bf16_weights[k], out, in, ctx->stream);
                else
                    fp8_linear_cast_weight(&fp8, lin, master_weight(l, k), out, in, ctx->stream);
            }
        }
        fp8_weights_stale = false;
    }
};

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
    // shared scratch: GELU output (recomputed in BF16 backward instead of stored per layer), projection
    // outputs, and the backward gradient buffers reused by every layer
    a.add("scratch", &s.fch_gelu, N * 4 * C);
    a.add("scratch", &s.scratch_NC, N * C);
    a.add("grad scratch", &s.grad_NC, N * C);
    a.add("grad scratch", &s.grad_N4C, N * 4 * C);
    a.add("grad scratch", &s.grad_residual, N * C);
    size_t reduce_bytes = std::max<size_t>(
        {layernorm_backward_scratch_bytes((int)N, (int)C), matmul_dbias_scratch_bytes((int)N, (int)(4 * C))});
    a.add("reduce scratch", &s.reduce_scratch, reduce_bytes / sizeof(float) + 1);
    a.add("reduce scratch", &s.norm_partials, kNumParamTensors * global_norm_num_partials());
    a.add("reduce scratch", &s.grad_norm, 1);
    a.add("reduce scratch", &s.grad_scale, 1);
    a.add("tokens", &s.inputs, N);
    a.add("tokens", &s.targets, N);
    a.add("tokens", &s.bucket_offsets, N + 1);
    a.add("tokens", &s.bucket_positions, N);
    a.add("tokens", &s.bucket_tokens, N);
    if (use_fp8) {
        for (size_t i = 0; i < s.fp8_linears.size(); i++) {
            int in, out;
            s.linear_dims(i % kLinearsPerLayer, &in, &out);
            if (i % kLinearsPerLayer == kFcProj && s.options.recompute_fc_proj_input)
                continue;  // shared below
            a.add("fp8 saved X^T", &s.fp8_linears[i].xT, (size_t)in * N);
        }
        // --recompute 1: one fc-proj X^T for all layers, rebuilt from the pre-GELU tensor in backward
        if (s.options.recompute_fc_proj_input)
            a.add("fp8 fc-proj X^T (recomputed)", &s.shared_fc_proj_xT, N * 4 * C);
        Fp8Scratch& fs = s.fp8.scratch;
        a.add("fp8 scratch", &fs.x_rows, N * 4 * C);
        a.add("fp8 scratch", &fs.dy_rows, N * 4 * C);
        a.add("fp8 scratch", &fs.dyT, N * 4 * C);
        a.add("fp8 scratch", &fs.dy_scale_inv, 1);
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

// The ZeRO-1 shard of every parameter tensor (llmc/shard_view.h). Exits with a one-line error when the
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
            lin.linear = (int)i;
            if (s.sharded()) {  // one GPU: W and W^T live in the unused BF16 copy of the weight (below)
                s.param_arena.add("fp8 W, W^T", &lin.w, (size_t)in * out);
                s.param_arena.add("fp8 W, W^T", &lin.wT, (size_t)in * out);
            }
            s.param_arena.add("fp8 scale_inv", &lin.w_scale_inv, 1);
            s.param_arena.add("fp8 scale_inv", &lin.x_scale_inv, 1);
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
            lin.w = reinterpret_cast<__nv_fp8_storage_t*>(weights[i % kLinearsPerLayer]);
            lin.wT = lin.w + (size_t)in * out;
        }
    }
    s.param_arena.print_plan();
    size_t act_bytes = s.act_arena.allocate("activations");
    if (s.options.recompute_fc_proj_input)
        for (size_t l = 0; l < L; l++) s.fp8_linears[kLinearsPerLayer * l + kFcProj].xT = s.shared_fc_proj_xT;
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
        s.fp8.dy_type = fp8.format == Fp8Format::Hybrid ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
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

// This rank's shard of parameter tensor k of an FP32 sharded buffer (master, m, v) from the whole host
// tensor.
static void shard_from_host(GptModel::Impl& s, float* shard_buffer, int k, const float* host_tensor) {
    const ParamShard& sh = s.shards[k];
    for (size_t sl = 0; sl < sh.slices; sl++)
        CHECK_CUDA(cudaMemcpyAsync(shard_buffer + sh.shard_offset + sl * sh.view.chunk,
                                   host_tensor + sl * sh.slice_numel + sh.view.rank_offset,
                                   sh.view.chunk * sizeof(float), cudaMemcpyHostToDevice, s.ctx->stream));
}

// Whole parameter tensor k of an FP32 sharded buffer into host_tensor (nullptr: take part in the gather
// only). With several ranks a collective: each slice is all-gathered into `scratch` (one slice).
static void shard_to_host(GptModel::Impl& s, const float* shard_buffer, int k, float* host_tensor,
                          float* scratch) {
    const ParamShard& sh = s.shards[k];
    if (!s.sharded()) {
        if (host_tensor)
            CHECK_CUDA(cudaMemcpyAsync(host_tensor, shard_buffer + sh.shard_offset,
                                       sh.shard_numel * sizeof(float), cudaMemcpyDeviceToHost,
                                       s.ctx->stream));
        CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
        return;
    }
    s.comm_after_compute();
    cudaStream_t cs = s.comm->stream();
    for (size_t sl = 0; sl < sh.slices; sl++) {
        CHECK_NCCL(ncclAllGather(shard_buffer + sh.shard_offset + sl * sh.view.chunk, scratch, sh.view.chunk,
                                 ncclFloat32, s.comm->nccl(), cs));
        if (host_tensor)
            CHECK_CUDA(cudaMemcpyAsync(host_tensor + sl * sh.slice_numel, scratch,
                                       sh.slice_numel * sizeof(float), cudaMemcpyDeviceToHost, cs));
    }
    CHECK_CUDA(cudaStreamSynchronize(cs));
}

// Runs fn(scratch) with a device buffer of the largest parameter slice (gathers), none with one GPU.
template <class Fn>
static void with_gather_scratch(GptModel::Impl& s, Fn fn) {
    float* scratch = nullptr;
    if (s.sharded()) {
        size_t largest = 0;
        for (const ParamShard& sh : s.shards) largest = std::max(largest, sh.slice_numel);
        CHECK_CUDA(cudaMalloc(&scratch, largest * sizeof(float)));
    }
    fn(scratch);
    if (scratch) CHECK_CUDA(cudaFree(scratch));
}

// After new master weights: fresh AdamW moments, BF16 working weights published to every rank.
static void sync_working_weights(GptModel::Impl& s) {
    CHECK_CUDA(cudaMemsetAsync(s.adam_m, 0, s.P_shard * sizeof(float), s.ctx->stream));
    CHECK_CUDA(cudaMemsetAsync(s.adam_v, 0, s.P_shard * sizeof(float), s.ctx->stream));
    s.publish_weights();
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void GptModel::init_weights(uint64_t seed) {
    Impl& s = *impl_;
    const float residual_std = 0.02f / sqrtf(2.0f * s.cfg.num_layers);
    for (int i = 0; i < kNumParamTensors; i++) {
        const ParamTensorInfo& t = s.table[i];
        const ParamShard& sh = s.shards[i];
        float* p = s.master + sh.shard_offset;
        if (i == LN1W || i == LN2W || i == LNFW)
            fill_constant(p, sh.shard_numel, 1.0f, s.ctx->stream);
        else if (t.weight_decay)  // the matrices; each rank draws exactly its part of the full tensor
            fill_normal(p, sh.shard_numel, (i == ATTPROJW || i == FCPROJW) ? residual_std : 0.02f, seed, i,
                        s.ctx->stream, sh.view);
        else
            fill_constant(p, sh.shard_numel, 0.0f, s.ctx->stream);
    }
    sync_working_weights(s);
}

void GptModel::load_weights(const std::vector<float>& host) {
    Impl& s = *impl_;
    CHECK(host.size() == s.P, "weights have %zu values, the model has %zu parameters", host.size(), s.P);
    for (int k = 0; k < kNumParamTensors; k++)
        shard_from_host(s, s.master, k, host.data() + s.shards[k].full_offset);
    sync_working_weights(s);
}

float GptModel::evaluate(const int* inputs_BT, const int* targets_BT) {
    return run_forward(inputs_BT, targets_BT, /*training=*/false);
}

float GptModel::forward(const int* inputs_BT, const int* targets_BT) {
    return run_forward(inputs_BT, targets_BT, /*training=*/targets_BT != nullptr);
}

float GptModel::run_forward(const int* inputs_BT, const int* targets_BT, bool training) {
    Impl& s = *impl_;
    const int B = s.B, T = s.T, C = s.cfg.channels, H = s.cfg.num_heads, V = s.cfg.vocab_size,
              L = s.cfg.num_layers;
    const int N = B * T, D = C / H;
    cudaStream_t st = s.ctx->stream;
    for (int i = 0; i < N; i++)
        CHECK(inputs_BT[i] >= 0 && inputs_BT[i] < V &&
                  (!targets_BT || (targets_BT[i] >= 0 && targets_BT[i] < V)),
              "token id out of range [0, %d) at position %d", V, i);
    CHECK_CUDA(cudaMemcpyAsync(s.inputs, inputs_BT, N * sizeof(int), cudaMemcpyHostToDevice, st));
    if (targets_BT)
        CHECK_CUDA(cudaMemcpyAsync(s.targets, targets_BT, N * sizeof(int), cudaMemcpyHostToDevice, st));
    if (s.use_fp8()) {
        if (training) {
            s.fp8.scales = &s.scales;
            if (s.micro == 0)  // the state at the start of the step (all its micro-steps)
                CHECK_CUDA(cudaMemcpyAsync(s.step_start_scales, s.scales.storage,
                                           s.scales.storage_floats * sizeof(float), cudaMemcpyDeviceToDevice,
                                           st));
            if (s.fp8_weights_stale) s.cast_fp8_weights();
        } else {  // a throwaway copy of the scale state records this pass's amaxes (and calibration)
            CHECK_CUDA(cudaMemcpyAsync(s.eval_scales.storage, s.scales.storage,
                                       s.scales.storage_floats * sizeof(float), cudaMemcpyDeviceToDevice,
                                       st));
            s.fp8.scales = &s.eval_scales;
            if (s.fp8_weights_stale) {  // cast for this pass only: training recasts with its own state
                s.cast_fp8_weights();
                s.fp8_weights_stale = true;
            }
        }
    }

    s.mark(kPhaseOther);
    encoder_forward(s.residual[0], s.inputs, s.param(WTE), s.param(WPE), B, T, C, st);
    LayerParams p0 = s.layer(s.params, 0);
    s.norm_into_linear(0, kQkv, nullptr, s.ln1[0], s.ln1_mean[0], s.ln1_rstd[0], s.residual[0], nullptr,
                       p0.ln1w, p0.ln1b);
    for (int l = 0; l < L; l++) {
        LayerParams p = s.layer(s.params, l);
        s.linear_forward(l, kQkv, s.qkv[l], s.ln1[l], p.qkvw, p.qkvb);
        s.mark(kPhaseAttention);
        attention_forward(s.attention_graphs.get(), s.ctx, s.atty[l], s.att_stats[l], s.qkv[l], B, T, H, D,
                          st);
        s.linear_forward(l, kAttProj, s.scratch_NC, s.atty[l], p.attprojw, p.attprojb);
        s.norm_into_linear(l, kFc, s.residual_mid[l], s.ln2[l], s.ln2_mean[l], s.ln2_rstd[l], s.residual[l],
                           s.scratch_NC, p.ln2w, p.ln2b);
        s.linear_forward(l, kFc, s.fch[l], s.ln2[l], p.fcw, p.fcb);
        s.gelu_into_linear(l, s.fch[l]);
        s.linear_forward(l, kFcProj, s.scratch_NC, s.fch_gelu, p.fcprojw, p.fcprojb);
        // The next block's ln1 (or the final LayerNorm, BF16 for the LM head) is fused with this residual
        // add.
        if (l < L - 1) {
            LayerParams next = s.layer(s.params, l + 1);
            s.norm_into_linear(l + 1, kQkv, s.residual[l + 1], s.ln1[l + 1], s.ln1_mean[l + 1],
                               s.ln1_rstd[l + 1], s.residual_mid[l], s.scratch_NC, next.ln1w, next.ln1b);
        } else {
            s.mark(kPhaseOther);
            residual_layernorm_forward(s.residual[L], s.lnf, s.lnf_mean, s.lnf_rstd, s.residual_mid[l],
                                       s.scratch_NC, s.param(LNFW), s.param(LNFB), N, C, st);
        }
    }
    s.mark(kPhaseGemm);
    matmul_forward(&s.matmul_plans, s.ctx, s.logits, s.lnf, s.param(WTE), nullptr, N, C, V, st);
    s.mark(kPhaseOther);
    s.fp8.scales = &s.scales;
    s.have_targets = training;
    if (!targets_BT) {
        CHECK_CUDA(cudaStreamSynchronize(st));
        return 0.0f;
    }
    // d(loss)/d(logit) for the mean over every token of the update: all micro-steps of all ranks, whose
    // gradients are summed (accumulation, then the reduce-scatter).
    const float dloss = 1.0f / ((float)N * s.accum_steps * s.world);
    fused_classifier(s.logits, s.losses, s.targets, dloss, N, V, true, st);
    mean_loss(s.loss_scalar, s.losses, N, st);
    if (s.sharded()) {  // the mean over the ranks (summed here, divided on the host)
        s.comm_after_compute();
        s.comm->all_reduce_sum(s.loss_scalar, 1, s.comm->stream());
        s.compute_after_comm();
    }

    // Token buckets for the deterministic embedding backward, prepared on the host while the GPU works.
    TokenBuckets buckets;
    build_token_buckets(&buckets, inputs_BT, N);
    s.num_buckets = (int)buckets.tokens.size();
    CHECK_CUDA(cudaMemcpyAsync(s.bucket_offsets, buckets.offsets.data(), buckets.offsets.size() * sizeof(int),
                               cudaMemcpyHostToDevice, st));
    CHECK_CUDA(cudaMemcpyAsync(s.bucket_positions, buckets.positions.data(), N * sizeof(int),
                               cudaMemcpyHostToDevice, st));
    CHECK_CUDA(cudaMemcpyAsync(s.bucket_tokens, buckets.tokens.data(), s.num_buckets * sizeof(int),
                               cudaMemcpyHostToDevice, st));
    float loss = 0;
    CHECK_CUDA(cudaMemcpyAsync(&loss, s.loss_scalar, sizeof(float), cudaMemcpyDeviceToHost, st));
    CHECK_CUDA(cudaStreamSynchronize(st));  // also keeps `buckets` alive until the copies are done
    return loss / s.world;
}

void GptModel::backward() {
    Impl& s = *impl_;
    CHECK(s.have_targets, "backward() needs a training forward() with targets first");
    CHECK(s.micro < s.accum_steps, "backward(): %d micro-steps already, update() expected", s.micro);
    const bool accumulate = s.micro > 0;  // later micro-steps add to the gradients
    const bool reduce = s.sharded() && s.micro == s.accum_steps - 1;
    s.fp8.accumulate_grads = accumulate;
    const int B = s.B, T = s.T, C = s.cfg.channels, H = s.cfg.num_heads, V = s.cfg.vocab_size,
              L = s.cfg.num_layers;
    const int N = B * T, D = C / H;
    cudaStream_t st = s.ctx->stream;
    bf16* dres = s.grad_residual;  // gradient of the residual stream at the current point
    s.mark(kPhaseOther);
    CHECK_CUDA(cudaMemsetAsync(dres, 0, (size_t)N * C * sizeof(bf16), st));

    // LM head (tied, BF16): dwte is overwritten here, the encoder backward adds the embedding part at the
    // end.
    s.mark(kPhaseGemm);
    matmul_backward(&s.matmul_plans, s.ctx, s.grad_NC, s.grad(WTE), nullptr, s.logits, s.lnf, s.param(WTE), N,
                    C, V, accumulate, s.reduce_scratch, st);
    s.mark(kPhaseOther);
    layernorm_backward(dres, s.grad(LNFW), s.grad(LNFB), s.reduce_scratch, s.grad_NC, s.residual[L],
                       s.param(LNFW), s.lnf_mean, s.lnf_rstd, N, C, st, accumulate);
    for (int l = L - 1; l >= 0; l--) {
        LayerParams p = s.layer(s.params, l);
        LayerParams g = s.layer(s.grads, l);
        // MLP: residual[l+1] = residual_mid[l] + fcproj(gelu(fc(ln2(residual_mid[l]))))
        if (s.use_fp8()) {
            if (s.options.recompute_fc_proj_input) {
                // The forward's X^T again: same pre-GELU input, same scale (scales change only in update()),
                // so bitwise the same bytes; the amax it records is the one already staged (a max: no
                // change).
                Fp8LinearBuffers& lin = s.fp8_linears[kLinearsPerLayer * l + kFcProj];
                s.mark(kPhaseCast);
                fp8_gelu_cast_transpose(nullptr, lin.xT, lin.x_scale_inv, s.fp8.scales,
                                        fp8_slot(lin.linear, kFp8X), s.fch[l], N, 4 * C, s.cfg.gelu_tanh, st);
            }
            s.linear_backward(l, kFcProj, s.grad_N4C, g.fcprojw, g.fcprojb, dres, nullptr, p.fcprojw);
            // dGELU is fused into the fc layer's dY cast
            fp8_linear_backward(&s.fp8, &s.fp8_linears[kLinearsPerLayer * l + kFc], s.grad_NC, g.fcw, g.fcb,
                                s.grad_N4C, s.fch[l], N, C, 4 * C, st);
        } else {
            s.mark(kPhaseOther);
            gelu_forward(s.fch_gelu, s.fch[l], (size_t)N * 4 * C, s.cfg.gelu_tanh, st);  // recompute
            s.linear_backward(l, kFcProj, s.grad_N4C, g.fcprojw, g.fcprojb, dres, s.fch_gelu, p.fcprojw);
            s.mark(kPhaseOther);
            gelu_backward_inplace(s.grad_N4C, s.fch[l], (size_t)N * 4 * C, s.cfg.gelu_tanh, st);
            s.linear_backward(l, kFc, s.grad_NC, g.fcw, g.fcb, s.grad_N4C, s.ln2[l], p.fcw);
        }
        s.mark(kPhaseOther);
        layernorm_backward(dres, g.ln2w, g.ln2b, s.reduce_scratch, s.grad_NC, s.residual_mid[l], p.ln2w,
                           s.ln2_mean[l], s.ln2_rstd[l], N, C, st, accumulate);
        // Attention: residual_mid[l] = residual[l] + attproj(sdpa(qkv(ln1(residual[l]))))
        s.linear_backward(l, kAttProj, s.grad_NC, g.attprojw, g.attprojb, dres, s.atty[l], p.attprojw);
        bf16* dqkv = s.grad_N4C;  // [N, 3C] fits in the [N, 4C] scratch
        s.mark(kPhaseAttention);
        attention_backward(s.attention_graphs.get(), s.ctx, dqkv, s.grad_NC, s.qkv[l], s.atty[l],
                           s.att_stats[l], B, T, H, D, st);
        s.linear_backward(l, kQkv, s.grad_NC, g.qkvw, g.qkvb, dqkv, s.ln1[l], p.qkvw);
        s.mark(kPhaseOther);
        layernorm_backward(dres, g.ln1w, g.ln1b, s.reduce_scratch, s.grad_NC, s.residual[l], p.ln1w,
                           s.ln1_mean[l], s.ln1_rstd[l], N, C, st, accumulate);
        if (reduce) s.reduce_scatter_grads(l);  // layer l's gradients are final: reduce while l-1 runs
    }
    encoder_backward(s.grad(WTE), s.grad(WPE), dres, s.bucket_offsets, s.bucket_positions, s.bucket_tokens,
                     s.num_buckets, B, T, C, st, accumulate);
    // Rows of dwpe beyond T are not touched by this batch: their gradient is zero.
    if (T < s.cfg.max_seq_len && !accumulate)
        CHECK_CUDA(cudaMemsetAsync(s.grad(WPE) + (size_t)T * C, 0,
                                   (size_t)(s.cfg.max_seq_len - T) * C * sizeof(bf16), st));
    if (reduce) s.reduce_scatter_grads(-1);  // wte, wpe, lnf
    s.micro++;
    s.have_targets = false;
}

// |x * scale| above this is clipped by more than the format's own rounding (half a step above the max: E4M3
// has 3 mantissa bits, E5M2 2), so a calibrated scale whose float rounding lands a hair above max is not
// counted as saturated.
static double fp8_clip_threshold(Fp8Dtype d) {
    return fp8_dtype_max(d) * (1.0 + (d == Fp8Dtype::E4M3 ? 1.0 / 16 : 1.0 / 8));
}

// Host view of the staging amaxes and scales before the update: saturated slots (amax * scale > fp8 max) and
// slots that keep their old scale (amax 0, inf or NaN).
static void fp8_health_before_update(GptModel::Impl& s, Fp8Health* h) {
    const int n = s.scales.num_slots;
    std::vector<float> amax(n), scale(n);
    CHECK_CUDA(cudaMemcpyAsync(amax.data(), fp8_staging_amax(&s.scales), n * sizeof(float),
                               cudaMemcpyDeviceToHost, s.ctx->stream));
    CHECK_CUDA(cudaMemcpyAsync(scale.data(), s.scales.scale, n * sizeof(float), cudaMemcpyDeviceToHost,
                               s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    h->slots = n;
    h->saturated = h->fell_back = 0;
    for (int i = 0; i < n; i++) {
        if (!(std::isfinite(amax[i]) && amax[i] > 0))
            h->fell_back++;
        else if ((double)amax[i] * scale[i] > fp8_clip_threshold(s.scales.dtypes[i]))
            h->saturated++;
    }
}

static void fp8_health_after_update(GptModel::Impl& s, Fp8Health* h) {
    const int n = s.scales.num_slots;
    std::vector<float> scale(n);
    CHECK_CUDA(cudaMemcpyAsync(scale.data(), s.scales.scale, n * sizeof(float), cudaMemcpyDeviceToHost,
                               s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));  // after the update kernel, in stream order
    h->min_scale = *std::min_element(scale.begin(), scale.end());
    h->max_scale = *std::max_element(scale.begin(), scale.end());
}

// Puts the FP8 state back to its snapshot from the start of the step (amaxes of a bad step never reach the
// history; a step-0 calibration is undone) and recasts the weights with it on the next forward.
static void restore_step_start(GptModel::Impl& s) {
    if (!s.use_fp8()) return;
    CHECK_CUDA(cudaMemcpyAsync(s.scales.storage, s.step_start_scales, s.scales.storage_floats * sizeof(float),
                               cudaMemcpyDeviceToDevice, s.ctx->stream));
    s.fp8_weights_stale = true;
}

void GptModel::discard_step() {
    restore_step_start(*impl_);
    impl_->have_targets = false;
    impl_->micro = 0;
    if (impl_->sharded()) impl_->compute_after_comm();  // no reduce-scatter still reading the gradients
    CHECK_CUDA(cudaStreamSynchronize(impl_->ctx->stream));
}

float GptModel::update(const AdamWSettings& a, int step, Fp8Health* health) {
    Impl& s = *impl_;
    cudaStream_t st = s.ctx->stream;
    CHECK(s.micro == s.accum_steps, "update() after %d of %d micro-steps", s.micro, s.accum_steps);
    // The gradient norm first: a non-finite one means this step is skipped, before anything changed.
    s.mark(kPhaseOptimizer);
    const int np = (int)global_norm_num_partials();
    if (!s.sharded()) {
        global_norm_squared(s.norm_partials, s.grads, s.P, st);
        grad_clip_scale(s.grad_norm, s.grad_scale, s.norm_partials, np, a.grad_clip, st);
    } else {  // each rank's shards (after the reduce-scatter), then the sum of the partials over the ranks
        s.compute_after_comm();
        for (int k = 0; k < kNumParamTensors; k++) {
            const ParamShard& sh = s.shards[k];
            global_norm_squared(s.norm_partials + (size_t)k * np, s.grads + sh.full_offset, sh.shard_numel,
                                st, sh.view);
        }
        s.comm_after_compute();
        s.comm->all_reduce_sum(s.norm_partials, (size_t)kNumParamTensors * np, s.comm->stream());
        s.compute_after_comm();
        grad_clip_scale(s.grad_norm, s.grad_scale, s.norm_partials, kNumParamTensors * np, a.grad_clip, st);
    }
    float norm = 0;
    CHECK_CUDA(cudaMemcpyAsync(&norm, s.grad_norm, sizeof(float), cudaMemcpyDeviceToHost, st));
    CHECK_CUDA(cudaStreamSynchronize(st));
    if (!std::isfinite(norm)) {
        discard_step();
        return norm;
    }
    if (s.use_fp8()) {
        // one launch updates every scale (a multi-GPU all-reduce MAX of the staging row would go just before)
        s.mark(kPhaseCast);
        if (s.sharded()) {  // every rank updates from the amaxes of all ranks: identical scales everywhere
            s.comm_after_compute();
            s.comm->all_reduce_max(fp8_staging_amax(&s.scales), s.scales.num_slots, s.comm->stream());
            s.compute_after_comm();
        }
        if (health) fp8_health_before_update(s, health);
        fp8_update_scales(&s.scales, s.fp8_cfg.amax_algo, s.fp8_cfg.margin, st);
        s.fp8.calibrate = false;
        if (health) fp8_health_after_update(s, health);
    }
    s.mark(kPhaseOptimizer);
    for (int k = 0; k < kNumParamTensors; k++) {
        const ParamShard& sh = s.shards[k];
        // FP8 on one GPU: the block weights' BF16 copies hold the FP8 weights (see the constructor)
        const bool fp8_weight =
            s.use_fp8() && !s.sharded() && (k == QKVW || k == ATTPROJW || k == FCW || k == FCPROJW);
        adamw_update(s.master + sh.shard_offset, fp8_weight ? nullptr : s.params + sh.full_offset,
                     s.adam_m + sh.shard_offset, s.adam_v + sh.shard_offset, s.grads + sh.full_offset,
                     sh.shard_numel, a.lr, a.beta1, a.beta2, a.eps,
                     s.table[k].weight_decay ? a.weight_decay : 0.0f, step, s.grad_scale, st, sh.view);
    }
    s.gather_weights();  // every rank's updated shard to every rank
    s.micro = 0;
    if (s.use_fp8())
        s.cast_fp8_weights();  // W and W^T for the next step, with the just-updated weight scales
    s.mark(kPhaseOther);
    s.have_targets = false;
    CHECK_CUDA(cudaStreamSynchronize(st));
    return norm;
}

static std::vector<float> bf16_to_host(const bf16* d, size_t n, cudaStream_t stream) {
    std::vector<bf16> tmp(n);
    CHECK_CUDA(cudaMemcpyAsync(tmp.data(), d, n * sizeof(bf16), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<float> out(n);
    for (size_t i = 0; i < n; i++) out[i] = __bfloat162float(tmp[i]);
    return out;
}

std::vector<float> GptModel::weights_to_host() const {
    Impl& s = *impl_;
    std::vector<float> out(s.P);
    with_gather_scratch(s, [&](float* scratch) {
        for (int k = 0; k < kNumParamTensors; k++)
            shard_to_host(s, s.master, k, out.data() + s.shards[k].full_offset, scratch);
    });
    return out;
}
std::vector<float> GptModel::grads_to_host() const {
    return bf16_to_host(impl_->grads, impl_->P, impl_->ctx->stream);
}
std::vector<float> GptModel::logits_to_host(int rows) const {
    return bf16_to_host(impl_->logits, (size_t)rows * impl_->cfg.vocab_size, impl_->ctx->stream);
}
std::vector<float> GptModel::logits_row(int row) const {
    const size_t V = impl_->cfg.vocab_size;
    return bf16_to_host(impl_->logits + (size_t)row * V, V, impl_->ctx->stream);
}
std::vector<float> GptModel::fp8_state_to_host() const {
    const Impl& s = *impl_;
    if (!s.use_fp8()) return {};
    std::vector<float> out(s.scales.storage_floats);
    CHECK_CUDA(cudaMemcpyAsync(out.data(), s.scales.storage, out.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, s.ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
    return out;
}
void GptModel::poison_gradients() {
    if (impl_->sharded()) impl_->compute_after_comm();  // after the reduce-scatter that reads them
    CHECK_CUDA(cudaMemsetAsync(impl_->grads, 0xFF, impl_->P * sizeof(bf16), impl_->ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(impl_->ctx->stream));
}
void GptModel::poison_activations() {
    impl_->act_arena.poison(impl_->ctx->stream);
    CHECK_CUDA(cudaStreamSynchronize(impl_->ctx->stream));
}

std::vector<StateTensorInfo> GptModel::state_layout() const {
    const Impl& s = *impl_;
    std::vector<StateTensorInfo> out;
    auto add = [&](const std::string& name, const std::vector<size_t>& shape, size_t numel) {
        out.push_back({name, "F32", std::vector<int64_t>(shape.begin(), shape.end()), numel * sizeof(float)});
    };
    for (const char* prefix : {"master.", "adam_m.", "adam_v."})
        for (const ParamTensorInfo& t : s.table) add(prefix + t.name, t.shape, t.numel);
    if (s.use_fp8()) {
        const size_t S = s.scales.num_slots, H = s.scales.history_len;
        add("fp8.amax_history", {H, S}, H * S);
        add("fp8.scale", {S}, S);
        add("fp8.scale_inv", {S}, S);
    }
    return out;
}

namespace {
// The FP8 state tensors of state_layout(), in order (replicated: identical on every rank).
std::vector<float*> fp8_state_buffers(GptModel::Impl& s) {
    if (!s.use_fp8()) return {};
    return {s.scales.amax_history, s.scales.scale, s.scales.scale_inv};
}
}  // namespace

void GptModel::state_to_host(const std::vector<void*>& host) {
    Impl& s = *impl_;
    const std::vector<StateTensorInfo> layout = state_layout();
    CHECK(host.size() == layout.size(), "state_to_host: %zu buffers for %zu tensors", host.size(),
          layout.size());
    float* const sharded[3] = {s.master, s.adam_m, s.adam_v};
    with_gather_scratch(s, [&](float* scratch) {
        for (int b = 0; b < 3; b++)
            for (int k = 0; k < kNumParamTensors; k++)
                shard_to_host(s, sharded[b], k, static_cast<float*>(host[b * kNumParamTensors + k]), scratch);
    });
    const std::vector<float*> fp8 = fp8_state_buffers(s);
    for (size_t i = 0; i < fp8.size(); i++) {
        const size_t idx = 3 * kNumParamTensors + i;
        if (host[idx])
            CHECK_CUDA(
                cudaMemcpyAsync(host[idx], fp8[i], layout[idx].bytes, cudaMemcpyDeviceToHost, s.ctx->stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

void GptModel::state_from_host(const std::vector<const void*>& host) {
    Impl& s = *impl_;
    const std::vector<StateTensorInfo> layout = state_layout();
    CHECK(host.size() == layout.size(), "state_from_host: %zu buffers for %zu tensors", host.size(),
          layout.size());
    float* const sharded[3] = {s.master, s.adam_m, s.adam_v};
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < kNumParamTensors; k++) {
            shard_from_host(s, sharded[b], k, static_cast<const float*>(host[b * kNumParamTensors + k]));
        }
    const std::vector<float*> fp8 = fp8_state_buffers(s);
    for (size_t i = 0; i < fp8.size(); i++) {
        const size_t idx = 3 * kNumParamTensors + i;
        CHECK_CUDA(
            cudaMemcpyAsync(fp8[i], host[idx], layout[idx].bytes, cudaMemcpyHostToDevice, s.ctx->stream));
    }
    // Derived copies: BF16 weights now, FP8 weights on the next forward (the cast re-records the same W
    // amaxes into the restored staging row, a max, so idempotent, and writes the same FP8 weights as the
    // uninterrupted run had after its update).
    s.publish_weights();
    CHECK_CUDA(cudaStreamSynchronize(s.ctx->stream));
}

bool GptModel::fp8_calibration_pending() const { return impl_->use_fp8() && impl_->fp8.calibrate; }
void GptModel::set_fp8_calibration_pending(bool pending) {
    if (impl_->use_fp8()) impl_->fp8.calibrate = pending;
}
