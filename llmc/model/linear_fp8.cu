// The FP8 Linear (llmc/model/linear_fp8.h): producers, GEMMs and the casts around them.
#include "llmc/gpu/context.h"
#include "llmc/kernels/adamw/adamw_fp8.cuh"
#include "llmc/kernels/cast/cast.cuh"
#include "llmc/kernels/gelu/gelu_fp8.cuh"
#include "llmc/kernels/gemm/gemm_fp8.cuh"
#include "llmc/kernels/gemm/matmul.cuh"
#include "llmc/kernels/layernorm/layernorm_fp8.cuh"
#include "llmc/model/linear_fp8.h"

Fp8Linear::Fp8Linear(Fp8Shared* shared, const LinearRuntime* rt, int index, int in, int out, InputKeep keep)
    : shared_(shared), rt_(rt), keep_(keep) {
    index_ = index;
    p_.in = in;
    p_.out = out;
}

void Fp8Linear::plan(Arena* params, Arena* activations, int N, bool own_weight_bytes) {
    if (own_weight_bytes) params->add("fp8 W, W^T", &w_.data, 2 * (size_t)p_.in * p_.out);
    params->add("fp8 scale_inv", &w_.scale_inv, 1);
    params->add("fp8 scale_inv", &x_.scale_inv, 1);
    if (keep_ == InputKeep::Saved) activations->add("fp8 saved X^T", &x_.data_T, (size_t)N * p_.in);
}

void Fp8Linear::bind(const LinearParams& p, __nv_fp8_storage_t* weight_bytes, __nv_fp8_storage_t* rebuilt_xT,
                     const Fp8KeptDy& kept) {
    CHECK(p.in == p_.in && p.out == p_.out, "FP8 Linear: built [%d, %d], bound to [%d, %d]", p_.out, p_.in,
          p.out, p.in);
    CHECK((weight_bytes != nullptr) != (w_.data != nullptr), "FP8 Linear: W and W^T bytes planned and given");
    CHECK((rebuilt_xT != nullptr) == (keep_ != InputKeep::Saved), "FP8 Linear: X^T saved and shared");
    p_ = p;
    const Fp8ScaleState& st = *scales();
    if (weight_bytes) w_.data = weight_bytes;
    w_.data_T = w_.data + (size_t)p.in * p.out;
    if (rebuilt_xT) x_.data_T = rebuilt_xT;
    x_.data = shared_->x_rows;
    dy_.data = shared_->dy_rows;
    dy_.data_T = shared_->dyT;
    dy_.scale_inv = shared_->dy_scale_inv;
    fp8_bind(&w_, st, fp8_slot(index_, kFp8W), p.out, p.in);
    fp8_bind(&x_, st, fp8_slot(index_, kFp8X), p.N, p.in);
    fp8_bind(&dy_, st, fp8_slot(index_, kFp8DY), p.N, p.out);
    kept_ = kept;
    if (p.master_shard_OI)
        CHECK(p.shard_rows > 0 && p.shard_row0 >= 0 && p.shard_row0 + p.shard_rows <= p.out,
              "FP8 Linear: rows [%d, %d) of %d", p.shard_row0, p.shard_row0 + p.shard_rows, p.out);
    updates_own_weight_ = p.master_OI != nullptr || p.master_shard_OI != nullptr;
}

// Several GPUs: this rank's rows of W (row-wise bytes only; W^T is made from the gathered W).
Fp8Tensor Fp8Linear::weight_rows() const {
    Fp8Tensor rows = w_;
    rows.data = w_.data + (size_t)p_.shard_row0 * p_.in;
    rows.data_T = nullptr;
    rows.rows = p_.shard_rows;
    return rows;
}

cudaStream_t Fp8Linear::stream() const { return rt_->stream(); }

void Fp8Linear::input_from_layernorm(bf16* residual_out, float* mean, float* rstd, const bf16* inp1,
                                     const bf16* inp2, const bf16* w, const bf16* b) {
    rt_->mark(kPhaseOther);
    calibrate_if_needed(x_, [&] { fp8_layernorm_amax(inp1, inp2, w, b, x_, stream()); });
    fp8_residual_layernorm_forward(inp2 ? residual_out : nullptr, x_, mean, rstd, inp1, inp2, w, b, stream());
}

void Fp8Linear::input_from_gelu(const bf16* pre) {
    rt_->mark(kPhaseOther);
    calibrate_if_needed(x_, [&] { fp8_gelu_amax(pre, x_, rt_->gelu_tanh, stream()); });
    if (keep_ == InputKeep::FromGelu)
        fp8_gelu_cast(pre, x_, rt_->gelu_tanh, stream());
    else
        fp8_gelu_cast_transpose(pre, x_, rt_->gelu_tanh, stream());
}

void Fp8Linear::input_from(const bf16* x) {
    rt_->mark(kPhaseCast);
    calibrate_if_needed(x_, [&] { fp8_amax(x, x_, stream()); });
    if (keep_ == InputKeep::FromInput) {  // row-wise only; backward() rebuilds X^T from x
        fp8_cast(x, x_, stream());
        input_x_ = x;
    } else {
        fp8_cast_transpose(x, x_, stream());
    }
}

void Fp8Linear::forward(bf16* out, const bf16* residual) {
    CHECK(x_.rows == p_.N && x_.cols == p_.in && w_.rows == p_.out, "fp8_linear_forward: shape mismatch");
    rt_->mark(kPhaseGemm);
    matmul_fp8_forward(rt_->plans, rt_->ctx, out, x_, w_, p_.bias_O, stream(), residual);
}

// dinp = dY W (null: skipped) from dY's row-wise copy; dW (+)= dY^T X from the transposed copies.
void Fp8Linear::dgrad_gemm(const Fp8Tensor& dy, bf16* dinp) {
    rt_->mark(kPhaseGemm);
    if (dinp) matmul_fp8_dgrad(rt_->plans, rt_->ctx, dinp, dy, w_, stream());
}
void Fp8Linear::wgrad_gemm(const Fp8Tensor& dy, bool accumulate) {
    rt_->mark(kPhaseGemm);
    matmul_fp8_wgrad(rt_->plans, rt_->ctx, p_.dweight_OI, dy, x_, accumulate, stream());
}

// The cast of dout into dy (with dbias, and dGELU with pre_gelu).
void Fp8Linear::cast_dy(const Fp8Tensor& dy, const bf16* dout, const bf16* pre_gelu, bool accumulate,
                        const Fp8Tensor* rebuilt_input) {
    void* dbias_scratch = shared_->dbias_scratch;
    rt_->mark(kPhaseCast);
    if (pre_gelu) {
        calibrate_if_needed(dy, [&] { fp8_amax_dgelu(dout, pre_gelu, dy, rt_->gelu_tanh, stream()); });
        fp8_cast_transpose_dbias_dgelu(dout, pre_gelu, dy, p_.dbias_O, dbias_scratch, rt_->gelu_tanh,
                                       accumulate, stream(), rebuilt_input);
        return;
    }
    calibrate_if_needed(dy, [&] { fp8_amax(dout, dy, stream()); });
    if (p_.dbias_O)
        fp8_cast_transpose_dbias(dout, dy, p_.dbias_O, dbias_scratch, accumulate, stream());
    else  // no bias (the FP8 LM head's dY comes quantized from the loss instead)
        fp8_cast_transpose(dout, dy, stream());
}

static void check_backward_shape(const Fp8Tensor& dy, const Fp8Tensor& w, const LinearParams& p) {
    CHECK(dy.rows == p.N && dy.cols == p.out && w.cols == p.in, "fp8_linear_backward: shape mismatch");
}

void Fp8Linear::backward(bf16* dinp, const bf16* dout, bool accumulate) {
    CHECK(keep_ != InputKeep::FromGelu, "FP8 Linear slot %d: its X^T is rebuilt by the MLP's dGELU cast",
          x_.slot.index);
    if (keep_ == InputKeep::FromInput) {
        // The forward's X^T again: the same input with the same scale (scales change only in the update), so
        // the same bytes; the amax it stages is the one already staged (a max).
        CHECK(input_x_ != nullptr, "FP8 Linear: backward() without input_from()");
        rt_->mark(kPhaseCast);
        fp8_cast_transpose(input_x_, x_.transposed_only(), stream());
    }
    backward_through_gelu(dinp, dout, nullptr, accumulate, nullptr);
}

void Fp8Linear::backward_through_gelu(bf16* dinp, const bf16* dout, const bf16* pre_gelu, bool accumulate,
                                      const Fp8Tensor* rebuilt_input) {
    check_backward_shape(dy_, w_, p_);
    cast_dy(dy_, dout, pre_gelu, accumulate, rebuilt_input);
    dgrad_gemm(dy_, dinp);
    wgrad_gemm(dy_, accumulate);
}

// The deferred wgrad's dY: dy_'s rows and slot with the kept transposed copy and scale_inv.
Fp8Tensor Fp8Linear::kept_dy() const {
    CHECK(kept_.data_T_ON != nullptr && kept_.scale_inv != nullptr,
          "fp8 deferred wgrad: the kept dY^T and its scale_inv are required");
    Fp8Tensor dy = dy_;
    dy.data_T = kept_.data_T_ON;
    dy.scale_inv = kept_.scale_inv;
    return dy;
}

void Fp8Linear::backward_dgrad(bf16* dinp, const bf16* dout, bool accumulate) {
    check_backward_shape(dy_, w_, p_);
    const Fp8Tensor dy = kept_dy();
    cast_dy(dy, dout, nullptr, accumulate, nullptr);
    dgrad_gemm(dy, dinp);
}
void Fp8Linear::backward_wgrad(bool accumulate) { wgrad_gemm(kept_dy(), accumulate); }

// W and W^T from the FP32 master on one GPU. On several, each rank quantizes its rows of W from its shard of
// the master (the same values one GPU quantizes, with the scale the ranks agree on: calibration takes the
// maximum over the ranks) and the model gathers them (gathered_weight_bytes) before weights_gathered() makes
// W^T. The LM head (no master of its own) casts the gathered BF16 embedding.
void Fp8Linear::cast_weight() {
    auto cast = [&](const auto* weight_OI) {
        calibrate_if_needed(w_, [&] { fp8_amax(weight_OI, w_, stream()); });
        fp8_cast_transpose(weight_OI, w_, stream());
    };
    if (p_.master_OI) {
        cast(p_.master_OI);
    } else if (p_.master_shard_OI) {
        const Fp8Tensor rows = weight_rows();
        calibrate_if_needed(rows, [&] { fp8_amax(p_.master_shard_OI, rows, stream()); });
        fp8_cast(p_.master_shard_OI, rows, stream());
    } else {
        cast(static_cast<const bf16*>(p_.weight_OI));
    }
}
Linear::GatheredBytes Fp8Linear::gathered_weight_bytes() const {
    if (!p_.master_shard_OI) return {};
    return {reinterpret_cast<unsigned char*>(w_.data), (size_t)p_.shard_rows * p_.in};
}
void Fp8Linear::weights_gathered() {
    if (p_.master_OI) return;
    rt_->mark(kPhaseCast);
    if (p_.master_shard_OI)
        fp8_transpose(w_, stream());  // every rank's rows are here: W^T from W, byte for byte
    else
        cast_weight();
}

namespace {
// One launch of the AdamW + FP8 W/W^T kernel over a group of layers, with a's moments in BF16 or FP32.
void adamw_fp8_layers(const LinearAdamW& a, const AdamWFp8Layers& group, const Fp8Tensor& w, cudaStream_t s) {
    if (a.m16_OI)
        adamw_update_fp8_weights(a.master_OI, a.m16_OI, a.v16_OI, a.grads_OI, a.beta1, a.beta2, a.eps, a.step,
                                 a.grad_scale, a.apply, group, w.rows, w.cols, w.format, s);
    else
        adamw_update_fp8_weights(a.master_OI, a.m_OI, a.v_OI, a.grads_OI, a.beta1, a.beta2, a.eps, a.step,
                                 a.grad_scale, a.apply, group, w.rows, w.cols, w.format, s);
}
}  // namespace

// One GPU: AdamW writes the FP32 master and the FP8 W and W^T in one pass, with the just-updated scales.
// Several: AdamW on this rank's rows (a: their shard of the master and moments, their rows of the gradient;
// no BF16 copy, as on one GPU), then those rows of W quantized from the new master (the bytes the fused pass
// writes there); the model gathers them.
void Fp8Linear::optimizer_step(const LinearAdamW& a) {
    if (p_.master_OI) {
        AdamWFp8Layers one;  // a group of one layer (what adamw_update_fp8_weight launches)
        one.add(w_);
        adamw_fp8_layers(a, one, w_, stream());
        return;
    }
    if (!p_.master_shard_OI) return;
    CHECK(a.master_OI == p_.master_shard_OI, "FP8 Linear: AdamW given another shard than its own");
    const size_t n = (size_t)p_.shard_rows * p_.in;
    if (a.m16_OI)
        adamw_update(a.master_OI, nullptr, a.m16_OI, a.v16_OI, a.grads_OI, n, a.beta1, a.beta2, a.eps, a.step,
                     a.grad_scale, a.apply, stream());
    else
        adamw_update(a.master_OI, nullptr, a.m_OI, a.v_OI, a.grads_OI, n, a.beta1, a.beta2, a.eps, a.step,
                     a.grad_scale, a.apply, stream());
    fp8_cast(p_.master_shard_OI, weight_rows(), stream());
}

// One GPU, layers of one kind whose masters, moments and gradients lie at one stride ([L, O, I] tensors): one
// launch per AdamWFp8Layers::kMax layers (adamw_update_fp8_weights, the same bits as a launch per layer).
// Otherwise (several GPUs, or another layout) one optimizer_step per layer. At GPT-2 124M on an H100 the
// optimizer phase went from 1.8 to 1.5 ms (the step 24.7 -> 24.4 ms); at 1.5B from 18.6 to 17.4 ms.
void Fp8Linear::optimizer_step_layers(Linear* const* layers, const LinearAdamW* a, int count) {
    const auto fp8 = [&](int l) { return dynamic_cast<Fp8Linear*>(layers[l]); };
    const size_t stride = count > 1 ? (size_t)(a[1].master_OI - a[0].master_OI) : 0;
    // 16-byte aligned layers that do not overlap
    bool grouped =
        p_.master_OI != nullptr && count > 1 && stride % 8 == 0 && stride >= (size_t)w_.rows * w_.cols;
    for (int l = 0; grouped && l < count; l++) {
        const Fp8Linear* lin = fp8(l);
        const size_t off = (size_t)l * stride;
        grouped = lin != nullptr && lin->p_.master_OI != nullptr && lin->w_.rows == w_.rows &&
                  lin->w_.cols == w_.cols && lin->w_.format == w_.format &&
                  a[l].master_OI == a[0].master_OI + off && a[l].grads_OI == a[0].grads_OI + off &&
                  (a[0].m16_OI ? a[l].m16_OI == a[0].m16_OI + off && a[l].v16_OI == a[0].v16_OI + off
                               : a[l].m_OI == a[0].m_OI + off && a[l].v_OI == a[0].v_OI + off) &&
                  a[l].step == a[0].step && a[l].grad_scale == a[0].grad_scale && a[l].apply == a[0].apply &&
                  a[l].beta1 == a[0].beta1 && a[l].beta2 == a[0].beta2 && a[l].eps == a[0].eps;
    }
    if (!grouped) {
        Linear::optimizer_step_layers(layers, a, count);
        return;
    }
    for (int l0 = 0; l0 < count; l0 += AdamWFp8Layers::kMax) {
        AdamWFp8Layers group;
        group.layer_stride = stride;
        for (int l = l0; l < count && l < l0 + AdamWFp8Layers::kMax; l++) group.add(fp8(l)->w_);
        adamw_fp8_layers(a[l0], group, w_, stream());
    }
}
