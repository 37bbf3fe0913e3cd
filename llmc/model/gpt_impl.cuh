// GptModel's internals, shared by its translation units (llmc/model/gpt.cu: allocation; llmc/model/gpt_step.cu: the
// training step; llmc/model/gpt_state.cu: weights and training state in and out of the device). Not part of the
// API.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "llmc/kernels/adamw.cuh"
#include "llmc/kernels/attention.h"
#include "llmc/kernels/classifier.cuh"
#include "llmc/parallel/comm.h"
#include "llmc/gpu/context.h"
#include "llmc/gpu/cuda_common.cuh"
#include "llmc/kernels/encoder.cuh"
#include "llmc/fp8/fp8.cuh"
#include "llmc/fp8/fp8_linear.cuh"
#include "llmc/fp8/fp8_producers.cuh"
#include "llmc/kernels/gelu.cuh"
#include "llmc/kernels/global_norm.cuh"
#include "llmc/model/gpt.h"
#include "llmc/kernels/init.cuh"
#include "llmc/kernels/layernorm.cuh"
#include "llmc/kernels/matmul.cuh"
#include "llmc/kernels/step_guard.cuh"
#include "llmc/formats/weights_io.h"

namespace gpt_internal {
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

// One micro-step's tokens on the device (and in pinned host memory on their way there): inputs, targets and
// the embedding backward's token buckets (llmc/kernels/encoder.cuh), one block of token_slot_ints(N) ints.
struct TokenSlot {
    int *inputs, *targets, *bucket_offsets, *bucket_positions, *bucket_tokens, *num_buckets;
};
inline size_t token_slot_ints(size_t N) { return 5 * N + 2; }
inline TokenSlot token_slot_at(int* base, size_t N) {
    return {base, base + N, base + 2 * N, base + 3 * N + 1, base + 4 * N + 1, base + 5 * N + 1};
}

// The scalars a step reads back once, at its end (one 16-byte copy to pinned memory).
struct StepScalars {
    float loss_sum;    // sum over the micro-steps of the loss summed over the ranks
    float grad_norm;   // global, before clipping
    int apply;         // 1: the update was applied; 0: skipped (non-finite loss or norm), nothing changed
    float grad_scale;  // the clip factor
};

// Pointers to the per-layer slice of each parameter kind.
struct LayerParams {
    bf16 *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
};
}  // namespace gpt_internal
using namespace gpt_internal;

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
    float* norm_partials = nullptr;
    StepScalars* step_scalars = nullptr;        // device
    AdamWStepScalars* adamw_scalars = nullptr;  // device: [0] decayed tensors, [1] the others
    float *health_amax = nullptr,
          *health_scale = nullptr;  // FP8: staging amaxes and scales before the update
    int* token_slots = nullptr;     // accum_steps TokenSlots (device)
    bool have_targets = false;

    // Host side of a step that never waits inside (see GptModel::launch_step): pinned staging, double
    // buffered (the tokens of the next step can be staged while this one runs), and the captured graph.
    int* pinned_tokens[2] = {nullptr, nullptr};       // accum_steps slots each
    cudaEvent_t pinned_free[2] = {nullptr, nullptr};  // the last upload from each buffer
    int stage_buffer = 0;
    StepScalars* pinned_readback = nullptr;
    AdamWStepScalars* pinned_adamw = nullptr;
    bool step_in_flight = false, calibrating_step = false, health_snapshot_valid = false;
    int eager_steps = 0;  // steps run uncaptured (the first builds the library plans)
    cudaGraphExec_t step_graph = nullptr;
    const void* graph_cudnn_workspace = nullptr;  // the workspace the graph's attention kernels use
    TokenSlot slot(int k) {
        return token_slot_at(token_slots + (size_t)k * token_slot_ints((size_t)B * T), (size_t)B * T);
    }

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
    // In-place all-reduce of n floats over the ranks on the communication stream, after the compute stream's
    // work so far and before its next.
    void all_reduce(float* data, size_t n, ncclRedOp_t op) {
        comm_after_compute();
        comm->all_reduce(data, n, op, comm->stream());
        compute_after_comm();
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
        if (fp8.calibrate) {
            fp8_layernorm_amax(fp8.scales, lin.x.slot, inp1, inp2, w, b, N, C, ctx->stream);
            fp8_calibrate_scales(fp8.scales, lin.x.slot, 1, fp8.margin, ctx->stream);
        }
        fp8_residual_layernorm_forward(inp2 ? residual_out : nullptr, lin.x, mean, rstd, fp8.scales, inp1,
                                       inp2, w, b, N, C, ctx->stream);
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
        if (fp8.calibrate) {
            fp8_gelu_amax(fp8.scales, lin.x.slot, pre, N, C4, cfg.gelu_tanh, ctx->stream);
            fp8_calibrate_scales(fp8.scales, lin.x.slot, 1, fp8.margin, ctx->stream);
        }
        fp8_gelu_cast_transpose(lin.x, fp8.scales, pre, N, C4, cfg.gelu_tanh, ctx->stream);
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
