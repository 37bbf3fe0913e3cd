// Whole-model test: our BF16 GptModel against the float64 PyTorch reference (scripts/reference_gpt.py).
//
// For each config it loads (or, if absent, generates with python3 + torch) a reference file from
// $MODEL_REF_DIR (default build/ref): small.bin, small_tanh.bin, gpt1p5b_2layer.bin. The file holds the
// bf16-representable GPT-2 initial weights, one fixed random batch, the step-0 loss, logits and gradients,
// and the losses and pre-clip grad norms of 10 AdamW steps on that batch (format in reference_gpt.py).
// The test loads the same weights, runs forward/backward/update and compares everything, printing a table of
// errors either way so the tolerances can be tightened after seeing real numbers. It also checks that
// training is bitwise deterministic and that init_weights() follows the GPT-2 recipe.
//
// Environment: MODEL_REF_DIR (reference files), MODEL_REF_PYTHON (interpreter, default python3). Run from
// the repository root (the generator is scripts/reference_gpt.py, relative to the working directory).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "llmc/gpu/context.h"
#include "llmc/host/check.h"
#include "llmc/host/config.h"
#include "llmc/model/gpt.h"
#include "test/gpt_testing.h"
#include "test/numeric.h"
#include "test/require_gpu.h"
#include "test/testing.h"

namespace {

constexpr int kMagic = 20241130;
constexpr int kVersion = 1;

// Must match CONFIGS in scripts/reference_gpt.py.
struct RefConfig {
    const char* name;           // reference file stem
    const char* python_config;  // reference_gpt.py --config
    bool gelu_tanh;
    int L, C, H, V, maxT, B, T;
    // Step-0 loss tolerance relative to the loss (see "Step-0 loss" below).
    double loss0_rtol;
};
const RefConfig kSmall = {"small", "small", false, 2, 128, 4, 512, 64, 4, 64, 2e-3};
// The tanh run exercises the --gelu tanh code path end to end. It cannot tell the two GELU forms apart:
// they differ by < 5e-4 absolute, which moves the loss by ~1e-6 relative, far below bf16 resolution (the
// dev/ GELU kernel test is where the form is pinned down).
const RefConfig kSmallTanh = {"small_tanh", "small", true, 2, 128, 4, 512, 64, 4, 64, 2e-3};
const RefConfig kBig = {"gpt1p5b_2layer", "gpt1p5b_2layer", false, 2, 1600, 25, 50304, 1024, 2, 1024, 3e-3};

// ---- Tolerances -------------------------------------------------------------------------------------------
// Our model keeps bf16 activations (each stored tensor carries a rounding of up to 2^-8 relative, rms about
// 2^-9 / sqrt(3)) with fp32 accumulation inside GEMMs, LayerNorm, softmax and reductions, bf16 working
// weights (the reference weights are bf16-representable at step 0, so only later steps see weight
// rounding) and bf16 gradients; the reference is float64. Errors from independent roundings add in
// quadrature along the ~15 stored tensors of a 2-layer forward and ~30 of the backward. A float32 torch
// emulation of exactly that scheme (bf16 at every stored activation and gradient, fp32 master weights with
// round-to-nearest bf16 working copies) against the reference gave:
//   small (3 seeds, erf and tanh): step-0 loss <= 2e-5 relative, logits 0.6% normwise, gradients 0.3-0.7%
//     per tensor, step-1 grad norm <= 0.05%; steps 2-10: losses <= 0.1%, grad norms <= 2.7%.
//   gpt1p5b_2layer (lr 3e-4): step-0 loss 1.1e-5, logits 0.7%, gradients 0.2-0.8%, step-1 grad norm 4e-5;
//     steps 2-10: losses <= 0.4% while the loss is > 0.5, then the fixed batch is memorized (loss 0.29,
//     0.09, 0.02, 0.014) and the differences are <= 5e-3 nats absolute; grad norms <= 2.2%, 3.8% once the
//     norm has collapsed to 0.33 (from 12).
// The lr is chosen so that one Adam step (~lr per weight) spans several bf16 ulps of the weights (the ulp
// of 0.02 is 1.2e-4): with lr 1e-4 the bf16 working copies quantize each update by ~35% and the emulated
// trajectory drifts by 2.4% in loss and 10% in grad norm, which would force loose tolerances. The
// tolerances below leave room for kernels that round at other points (e.g. cuDNN's bf16 attention
// probabilities) while still catching real bugs (a wrong layout, a missing bias, a wrong scale, a wrong
// Adam bias correction all give errors of order 1, or of order 10% after a few steps).
//
// Step-0 loss: the loss is a mean over N = B*T rows of -log softmax; each row's error is dominated by the
// bf16 rounding of its target logit and the logsumexp (~2^-9 x |logit|), random across rows, so the mean's
// error is far below 2^-9 x loss; we allow 2e-3 x loss (small). For the 1.5B-width config the reductions
// are longer (K = 1600 / 6400 instead of 128 / 512, error ~sqrt(K)) and the logits larger (|logit| grows
// like 0.02 x sqrt(C)), so 3e-3 x loss.
// Logits: normwise ||l - l_ref|| / ||l_ref|| over the first rows; ~15 roundings in quadrature ~ 0.6%: 2e-2.
constexpr double kLogitsRtol = 2e-2;
// Gradients per tensor, normwise: twice the chain of the forward plus bf16 gradient storage; LN and bias
// gradients sum a bf16 dY over N rows (random errors, relative error stays that of the rows): 5e-2.
// Note the k-part of qkvb's gradient is exactly 0 in theory (softmax is invariant to a shift of all keys);
// ours is bf16 noise there, which the normwise measure over the whole tensor absorbs.
constexpr double kGradRtol = 5e-2;
// Losses of steps 2..10: |loss - ref| <= 1e-2 x ref + 1e-2 nats. The trajectories drift apart through the
// bf16 weight copies and Adam's normalization (which turns small gradient differences into lr-sized steps).
// The absolute floor matters only once the fixed batch is memorized (loss -> 0), where -log p_target is
// resolved by bf16 logits only to a few percent relative; 0.01 nats is far below any bug's effect.
constexpr double kLossRtol = 1e-2;
constexpr double kLossAtol = 1e-2;
// Pre-clip grad norm: at step 1 it is the norm of the gradients compared above: 1e-2 relative. Later steps
// measure the norm at slightly different weights, and it is the most trajectory-sensitive number:
// |norm - ref| <= 5e-2 x ref + 1e-2 x ref(step 1) (the floor again for a norm that collapses with the loss).
constexpr double kNorm1Rtol = 1e-2;
constexpr double kNormRtol = 5e-2;
constexpr double kNormAtolOfFirst = 1e-2;

std::string env_or(const char* name, const char* fallback) {
    const char* v = getenv(name);
    return v && *v ? std::string(v) : std::string(fallback);
}
std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

struct Reference {
    ModelConfig model;
    int B = 0, T = 0, steps = 0, logit_rows = 0;
    AdamWSettings adamw{};
    std::vector<float> params, logits, grads, losses, grad_norms;
    std::vector<int> inputs, targets;
    float loss = 0;
};

// Reads and validates a reference file. Empty string on success, else why it is unusable.
std::string read_reference(const std::string& path, const RefConfig& cfg, Reference* ref) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return "cannot open " + path;
    std::vector<int32_t> h(256);
    std::vector<float> h2(16);
    f.read(reinterpret_cast<char*>(h.data()), 256 * 4);
    f.read(reinterpret_cast<char*>(h2.data()), 16 * 4);
    if (!f) return path + ": truncated header";
    if (h[0] != kMagic || h[1] != kVersion)
        return path + ": bad magic/version " + std::to_string(h[0]) + "/" + std::to_string(h[1]) +
               " (expected " + std::to_string(kMagic) + "/" + std::to_string(kVersion) + ")";
    const int want[] = {cfg.L, cfg.C, cfg.H, cfg.V, cfg.maxT, cfg.B, cfg.T};
    for (int i = 0; i < 7; i++)
        if (h[2 + i] != want[i])
            return path + ": header field " + std::to_string(2 + i) + " is " + std::to_string(h[2 + i]) +
                   ", expected " + std::to_string(want[i]) + " for config " + cfg.name +
                   " (stale file? delete it to regenerate)";
    if ((h[10] != 0) != cfg.gelu_tanh) return path + ": GELU form does not match config " + cfg.name;
    ref->model.num_layers = h[2];
    ref->model.channels = h[3];
    ref->model.num_heads = h[4];
    ref->model.vocab_size = h[5];
    ref->model.max_seq_len = h[6];
    ref->model.gelu_tanh = h[10] != 0;
    ref->B = h[7];
    ref->T = h[8];
    ref->steps = h[9];
    ref->logit_rows = h[11];
    if (ref->steps < 1 || ref->logit_rows < 1 || ref->logit_rows > ref->B * ref->T)
        return path + ": bad steps/logit rows in header";
    ref->adamw = AdamWSettings{h2[0], h2[1], h2[2], h2[3], h2[4], h2[5]};

    const size_t N = num_parameters(ref->model), BT = (size_t)ref->B * ref->T;
    auto rd = [&](auto& v, size_t n) {
        v.resize(n);
        f.read(reinterpret_cast<char*>(v.data()), n * 4);
    };
    rd(ref->params, N);
    rd(ref->inputs, BT);
    rd(ref->targets, BT);
    std::vector<float> loss;
    rd(loss, 1);
    rd(ref->logits, (size_t)ref->logit_rows * ref->model.vocab_size);
    rd(ref->grads, N);
    rd(ref->losses, ref->steps);
    rd(ref->grad_norms, ref->steps);
    if (!f) return path + ": truncated (expected " + std::to_string(N) + " parameters)";
    f.peek();
    if (!f.eof()) return path + ": trailing bytes after the expected content";
    ref->loss = loss[0];
    for (int t : ref->inputs)
        if (t < 0 || t >= ref->model.vocab_size) return path + ": input token out of range";
    for (int t : ref->targets)
        if (t < 0 || t >= ref->model.vocab_size) return path + ": target token out of range";
    return "";
}

// Where the reference file for `cfg` is; generates it with python if absent. Sets *skip (a reason) when
// python3 + torch are not available, *error when generation failed.
std::string ensure_reference(const RefConfig& cfg, std::string* skip, std::string* error) {
    const std::string dir = env_or("MODEL_REF_DIR", "build/ref");
    const std::string path = dir + "/" + cfg.name + ".bin";
    if (std::filesystem::exists(path)) return path;
    const std::string script = "scripts/reference_gpt.py";
    if (!std::filesystem::exists(script)) {
        *skip = path + " is absent and " + script + " is not found (run from the repository root)";
        return path;
    }
    const std::string py = env_or("MODEL_REF_PYTHON", "python3");
    const std::string probe = shell_quote(py) + " -c 'import torch, numpy' >/dev/null 2>&1";
    if (std::system(probe.c_str()) != 0) {
        *skip = path + " is absent and '" + py +
                "' cannot import torch and numpy (pip install torch numpy, or set MODEL_REF_PYTHON, or put a "
                "reference file in MODEL_REF_DIR)";
        return path;
    }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string cmd = shell_quote(py) + " " + script + " --config " + cfg.python_config + " --gelu " +
                      (cfg.gelu_tanh ? "tanh" : "erf") + " --out " + shell_quote(path);
    printf("generating the reference: %s\n", cmd.c_str());
    fflush(stdout);
    if (std::system(cmd.c_str()) != 0 || !std::filesystem::exists(path))
        *error = "reference generation failed: " + cmd;
    return path;
}

using testing::rel_error;
using testing::rel_l2_error;

struct ContextGuard {
    GpuContext ctx;
    ContextGuard() : ctx(create_gpu_context(0, 80)) {}
    ~ContextGuard() { destroy_gpu_context(&ctx); }
};

// Generates (if needed) and reads the reference file of `cfg`. Returns false after recording a skip or a
// failure in the test state, so the caller only has to return.
bool load_reference(const RefConfig& cfg, Reference* ref) {
    std::string why;
    if (!cuda_device_available(&why)) {
        testing::state().skipped = true;
        testing::state().why = "no CUDA device: " + why;
        return false;
    }
    std::string skip, error;
    const std::string path = ensure_reference(cfg, &skip, &error);
    if (!skip.empty()) {
        testing::state().skipped = true;
        testing::state().why = skip;
        return false;
    }
    if (error.empty()) error = read_reference(path, cfg, ref);
    if (!error.empty()) {
        testing::fail(__FILE__, __LINE__, error);
        return false;
    }
    return true;
}

// Step-0 gradients, per tensor, against the reference's.
void check_gradients(const std::vector<ParamTensorInfo>& table, const std::vector<float>& grads,
                     const Reference& ref) {
    EXPECT_EQ(grads.size(), ref.grads.size());
    if (grads.size() == ref.grads.size()) {
        printf("  %-10s %12s %12s %12s %12s\n", "gradient", "numel", "|g_ref|", "rel err", "max |diff|");
        for (const ParamTensorInfo& p : table) {
            const float *g = grads.data() + p.offset, *g_ref = ref.grads.data() + p.offset;
            double rel = rel_l2_error(g, g_ref, p.numel), mx = testing::max_abs_error(g, g_ref, p.numel);
            double gn = 0;
            for (size_t i = 0; i < p.numel; i++)
                gn += (double)ref.grads[p.offset + i] * ref.grads[p.offset + i];
            bool ok = rel <= kGradRtol;
            printf("  %-10s %12zu %12.4e %12.3e %12.3e%s\n", p.name.c_str(), p.numel, std::sqrt(gn), rel, mx,
                   ok ? "" : "  <-- exceeds tol");
            if (!ok)
                testing::fail(__FILE__, __LINE__,
                              "gradient of " + p.name + ": normwise rel error " + std::to_string(rel) +
                                  " > " + std::to_string(kGradRtol));
        }
        printf("  (gradient tol %.1e normwise per tensor)\n", kGradRtol);
    }
}

// The training trajectory: every step's loss and grad norm against the reference's.
void check_trajectory(const RefConfig& cfg, const std::vector<float>& losses, const std::vector<float>& norms,
                      const Reference& ref) {
    printf("  %4s %12s %12s %10s %12s %12s %10s\n", "step", "loss", "ref loss", "rel", "grad norm",
           "ref norm", "rel");
    for (int s = 0; s < ref.steps; s++) {
        double lr = rel_error(losses[s], ref.losses[s]), nr = rel_error(norms[s], ref.grad_norms[s]);
        double ltol = s == 0 ? cfg.loss0_rtol * ref.losses[s] : kLossRtol * ref.losses[s] + kLossAtol;
        double ntol = s == 0 ? kNorm1Rtol * ref.grad_norms[s]
                             : kNormRtol * ref.grad_norms[s] + kNormAtolOfFirst * ref.grad_norms[0];
        bool lok = std::fabs((double)losses[s] - ref.losses[s]) <= ltol;  // false for NaN too
        bool nok = std::fabs((double)norms[s] - ref.grad_norms[s]) <= ntol;
        printf("  %4d %12.6f %12.6f %10.2e %12.6f %12.6f %10.2e%s\n", s + 1, losses[s], ref.losses[s], lr,
               norms[s], ref.grad_norms[s], nr, lok && nok ? "" : "  <-- exceeds tol");
        if (!lok)
            testing::fail(__FILE__, __LINE__,
                          "loss at step " + std::to_string(s + 1) + ": " + std::to_string(losses[s]) +
                              " vs " + std::to_string(ref.losses[s]) + " (tol " + std::to_string(ltol) + ")");
        if (!nok)
            testing::fail(__FILE__, __LINE__,
                          "grad norm at step " + std::to_string(s + 1) + ": " + std::to_string(norms[s]) +
                              " vs " + std::to_string(ref.grad_norms[s]) + " (tol " + std::to_string(ntol) +
                              ")");
    }
}

// fuse_residual: the residual adds in the projection GEMMs' epilogue (--fuse-residual), one rounding of the
// FP32 sum instead of two, so the same tolerances hold.
void run_reference_test(const RefConfig& cfg, bool fuse_residual = false) {
    Reference ref;
    if (!load_reference(cfg, &ref)) return;
    const ModelConfig& m = ref.model;
    const int V = m.vocab_size, k = ref.logit_rows;
    const std::vector<ParamTensorInfo> table = parameter_table(m);
    EXPECT_EQ((int)table.size(), kNumParamTensors);
    EXPECT_EQ(table.back().offset + table.back().numel, ref.params.size());
    if (testing::state().failed) return;
    printf(
        "%s%s: L=%d C=%d H=%d V=%d maxT=%d B=%d T=%d gelu %s, %zu parameters; AdamW lr %g betas (%g, %g) "
        "eps %g wd %g clip %g\n",
        cfg.name, fuse_residual ? " (residual adds in the GEMMs)" : "", m.num_layers, m.channels, m.num_heads,
        V, m.max_seq_len, ref.B, ref.T, m.gelu_tanh ? "tanh" : "erf", ref.params.size(), ref.adamw.lr,
        ref.adamw.beta1, ref.adamw.beta2, ref.adamw.eps, ref.adamw.weight_decay, ref.adamw.grad_clip);

    ContextGuard guard;
    std::vector<float> weights, logits, grads;
    std::vector<float> losses(ref.steps), norms(ref.steps);
    double ms = 0;
    {
        StepOptions options;
        options.fuse_residual = fuse_residual;
        GptModel model(m, ref.B, ref.T, Precision::BF16, &guard.ctx, Fp8Config(), DataParallel(), options);
        EXPECT_EQ(model.num_parameters(), ref.params.size());
        model.load_weights(ref.params);
        weights = model.weights_to_host();
        // Logits from a forward pass without targets: with targets the fused classifier may overwrite the
        // logits with dlogits in place.
        gpt_testing::forward(model, ref.inputs.data(), nullptr);
        logits = model.logits_to_host(k);
        auto t0 = std::chrono::steady_clock::now();
        for (int s = 1; s <= ref.steps; s++) {
            losses[s - 1] = gpt_testing::forward(model, ref.inputs.data(), ref.targets.data());
            gpt_testing::backward(model);
            if (s == 1) grads = model.grads_to_host();
            norms[s - 1] = gpt_testing::update(model, ref.adamw, s);
        }
        CHECK_CUDA(cudaDeviceSynchronize());
        ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }

    // load_weights -> weights_to_host must round-trip exactly (the reference weights are bf16 values).
    EXPECT_EQ(weights.size(), ref.params.size());
    if (weights.size() == ref.params.size())
        EXPECT_TRUE(memcmp(weights.data(), ref.params.data(), weights.size() * sizeof(float)) == 0);

    // Step-0 loss and logits.
    printf("  loss      ours %.6f  ref %.6f  rel %.2e  (tol %.1e)\n", losses[0], ref.loss,
           rel_error(losses[0], ref.loss), cfg.loss0_rtol);
    EXPECT_TRUE(std::isfinite(losses[0]));
    EXPECT_NEAR(losses[0], ref.loss, cfg.loss0_rtol * ref.loss);
    double lmax = 0, lrel = INFINITY;
    if (logits.size() == (size_t)k * V) {
        lrel = rel_l2_error(logits, ref.logits);
        lmax = testing::max_abs_error(logits.data(), ref.logits.data(), logits.size());
    }
    printf("  logits    %d rows: normwise rel %.2e  max |diff| %.3e  (tol %.1e)\n", k, lrel, lmax,
           kLogitsRtol);
    EXPECT_EQ(logits.size(), (size_t)k * V);
    EXPECT_TRUE(lrel <= kLogitsRtol);

    check_gradients(table, grads, ref);
    check_trajectory(cfg, losses, norms, ref);
    printf(
        "  (step 1: loss tol %.0e x loss, grad norm %.0e x norm; later: loss %.0e x loss + %.0e, grad norm "
        "%.0e x norm + %.0e x step-1 norm)\n",
        cfg.loss0_rtol, kNorm1Rtol, kLossRtol, kLossAtol, kNormRtol, kNormAtolOfFirst);
    printf("  %d steps in %.1f ms (%.2f ms/step, first step includes plan/graph setup)\n", ref.steps, ms,
           ms / ref.steps);
    // The reference itself must have trained (guards against a degenerate reference file).
    EXPECT_TRUE(ref.losses.back() < ref.losses.front());
}

TEST(model_reference_small) { run_reference_test(kSmall); }
TEST(model_reference_small_tanh) { run_reference_test(kSmallTanh); }
TEST(model_reference_gpt1p5b_2layer) { run_reference_test(kBig); }
TEST(model_reference_small_fused_residual) { run_reference_test(kSmall, true); }
TEST(model_reference_gpt1p5b_2layer_fused_residual) { run_reference_test(kBig, true); }

// ---- Determinism: the same 3 steps from the same weights, twice, in two fresh models --------------------
// FP8 (per-tensor delayed scaling, hybrid format) against the float64 reference and against our BF16 path.
// Tolerances from the formats: E4M3 keeps 3 mantissa bits (relative rounding error <= 2^-4, RMS 2^-4/sqrt(3)
// ~ 0.036 for uniformly spread values), E5M2 2 bits (<= 2^-3, RMS ~ 0.072). A GEMM output mixes two rounded
// operands, so its normwise relative error is ~ sqrt(0.036^2 + 0.036^2) ~ 0.05 forward and ~ 0.08 for
// gradients (E5M2 dY); two layers of dgrad/wgrad chains compound a few of those: 0.25 normwise per gradient
// tensor leaves ~2x margin on that estimate, while a wrong scale_inv, transpose or slot (errors of order 1)
// fails. The loss is a mean over B*T tokens, so per-logit errors average out: 2e-2 relative at step 0, and
// 5e-2 relative + 5e-2 nats over the 10 steps (the BF16 path itself needs 1e-2 + 1e-2, see above).
constexpr double kFp8GradRtol = 0.25;
constexpr double kFp8Loss0Rtol = 2e-2;
constexpr double kFp8StepRtol = 5e-2, kFp8StepAtol = 5e-2;

// lm_head: the LM head is an FP8 Linear too (--fp8-lm-head): its logits see E4M3 x E4M3 and the tied
// embedding's LM-head gradient E5M2 x E4M3, the same per-GEMM errors as a block Linear, so the same
// tolerances hold (and are checked against our BF16 path as well as the reference).
// fuse_residual: both runs with the residual adds in the projection GEMMs (run_reference_test's note).
void run_fp8_reference_test(const RefConfig& cfg, bool lm_head = false, bool fuse_residual = false) {
    Reference ref;
    if (!load_reference(cfg, &ref)) return;
    const ModelConfig& m = ref.model;
    ContextGuard guard;
    std::vector<float> grads[2], losses[2];
    for (int run = 0; run < 2; run++) {  // 0: bf16, 1: fp8 (with the LM head in FP8 too when lm_head)
        Fp8Config fp8;
        fp8.lm_head = lm_head;
        StepOptions options;
        options.fuse_residual = fuse_residual;
        GptModel model(m, ref.B, ref.T, run ? Precision::FP8 : Precision::BF16, &guard.ctx, fp8,
                       DataParallel(), options);
        model.load_weights(ref.params);
        for (int s = 1; s <= ref.steps; s++) {
            losses[run].push_back(gpt_testing::forward(model, ref.inputs.data(), ref.targets.data()));
            gpt_testing::backward(model);
            if (s == 1) grads[run] = model.grads_to_host();
            gpt_testing::update(model, ref.adamw, s);
        }
    }
    printf("%s fp8%s%s vs reference (and vs our bf16 path)\n", cfg.name,
           lm_head ? " with the FP8 LM head" : "", fuse_residual ? ", residual adds in the GEMMs" : "");
    printf("  loss      fp8 %.6f  bf16 %.6f  ref %.6f  fp8 rel %.2e  (tol %.1e)\n", losses[1][0],
           losses[0][0], ref.loss, rel_error(losses[1][0], ref.loss), kFp8Loss0Rtol);
    EXPECT_NEAR(losses[1][0], ref.loss, kFp8Loss0Rtol * ref.loss);
    EXPECT_NEAR(losses[1][0], losses[0][0], kFp8Loss0Rtol * ref.loss);
    printf("  gradient   fp8 vs ref   bf16 vs ref   fp8 vs bf16  (tol %.2f normwise)\n", kFp8GradRtol);
    for (const ParamTensorInfo& t : parameter_table(m)) {
        double e_fp8 = rel_l2_error(grads[1].data() + t.offset, ref.grads.data() + t.offset, t.numel);
        double e_bf16 = rel_l2_error(grads[0].data() + t.offset, ref.grads.data() + t.offset, t.numel);
        double e_pair = rel_l2_error(grads[1].data() + t.offset, grads[0].data() + t.offset, t.numel);
        printf("  %-10s %10.3e   %10.3e   %10.3e\n", t.name.c_str(), e_fp8, e_bf16, e_pair);
        if (!(e_fp8 <= kFp8GradRtol) || !(e_pair <= kFp8GradRtol))
            testing::fail(__FILE__, __LINE__,
                          "fp8 gradient of " + t.name + " off by " + std::to_string(e_fp8));
    }
    printf("  step    fp8 loss   bf16 loss    ref loss\n");
    for (int s = 0; s < ref.steps; s++) {
        printf("  %4d  %10.6f  %10.6f  %10.6f\n", s + 1, losses[1][s], losses[0][s], ref.losses[s]);
        if (!(std::fabs(losses[1][s] - ref.losses[s]) <= kFp8StepRtol * ref.losses[s] + kFp8StepAtol))
            testing::fail(__FILE__, __LINE__, "fp8 loss at step " + std::to_string(s + 1) + " off");
    }
}

TEST(model_fp8_small) { run_fp8_reference_test(kSmall); }
TEST(model_fp8_gpt1p5b_2layer) { run_fp8_reference_test(kBig); }
TEST(model_fp8_lm_head_small) { run_fp8_reference_test(kSmall, true); }
TEST(model_fp8_lm_head_gpt1p5b_2layer) { run_fp8_reference_test(kBig, true); }
TEST(model_fp8_small_fused_residual) { run_fp8_reference_test(kSmall, true, true); }
TEST(model_fp8_gpt1p5b_2layer_fused_residual) { run_fp8_reference_test(kBig, true, true); }

struct Run {
    std::vector<float> losses, norms, weights, fp8_state;
    int64_t fp8_history = 0, fp8_slots = 0;  // fp8_state: [history][slots] amaxes, then scale, scale_inv, max
};
// What happens around each training step besides forward/backward/update.
struct StepExtras {
    // Before every step: an evaluation pass on other tokens, with targets and without (validation).
    const std::vector<int>* eval_tokens = nullptr;
    bool poison = false;  // before every step: fill all activations with NaN bytes
    // An extra, bad step before step `bad_before` (1-based; 0: none): its gradients are poisoned (NaN grad
    // norm), or, with bad_loss, it is abandoned after the forward as a non-finite loss would be.
    int bad_before = 0;
    bool bad_loss = false;
};
Run train_steps(const ModelConfig& m, int B, int T, const std::vector<float>& w, const std::vector<int>& in,
                const std::vector<int>& tg, GpuContext* ctx, int steps, Precision precision = Precision::BF16,
                StepExtras extras = StepExtras()) {
    Run r;
    GptModel model(m, B, T, precision, ctx);
    model.load_weights(w);
    const AdamWSettings s{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    for (int i = 1; i <= steps; i++) {
        if (i == extras.bad_before) {
            gpt_testing::forward(model, in.data(), tg.data());
            if (extras.bad_loss) {
                gpt_testing::discard_step(model);
            } else {
                gpt_testing::backward(model);
                gpt_testing::poison_gradients(model);
                EXPECT_TRUE(
                    !std::isfinite(gpt_testing::update(model, s, i)));  // skipped: the AdamW step count stays
            }
        }
        if (extras.eval_tokens) {
            const int* ev = extras.eval_tokens->data();
            EXPECT_TRUE(std::isfinite(model.evaluate(ev, ev + B * T)));
            gpt_testing::forward(model, ev, nullptr);
        }
        if (extras.poison) gpt_testing::poison_activations(model);
        r.losses.push_back(gpt_testing::forward(model, in.data(), tg.data()));
        gpt_testing::backward(model);
        r.norms.push_back(gpt_testing::update(model, s, i));
    }
    r.weights = model.weights_to_host();
    r.fp8_state = model.fp8_state_to_host();
    for (const StateTensorInfo& t : model.state_layout())
        if (t.name == "fp8.amax_history") r.fp8_history = t.shape[0], r.fp8_slots = t.shape[1];
    return r;
}

// Where two runs' FP8 states first differ, in the recipe's terms ("amax history row 0 (staging) of slot 7:
// layer 0 attproj, role W: 0.0123 / 0.0125; 2 of 39 slots differ"), or "" when they are bitwise equal: a
// failure then names the tensor whose scale moved (slot = 3 * Linear + role, Linear = 4 * layer + kind).
std::string fp8_state_difference(const Run& a, const Run& b) {
    const int64_t H = a.fp8_history, S = a.fp8_slots;
    if (S == 0 || a.fp8_state.size() != b.fp8_state.size() || (int64_t)a.fp8_state.size() != (H + 3) * S)
        return testing::count_bit_diffs(a.fp8_state, b.fp8_state) ? "FP8 states of different layouts" : "";
    std::vector<bool> slot_differs(S, false);
    int64_t first = -1;
    for (int64_t i = 0; i < (int64_t)a.fp8_state.size(); i++)
        if (memcmp(&a.fp8_state[i], &b.fp8_state[i], sizeof(float)) != 0) {
            slot_differs[i % S] = true;
            if (first < 0) first = i;
        }
    if (first < 0) return "";
    const int64_t row = first / S, slot = first % S, linear = slot / kFp8RolesPerLinear;
    const char* roles[] = {"X", "W", "dY"};
    const std::string part = row < H
                                 ? "amax history row " + std::to_string(row) + (row == 0 ? " (staging)" : "")
                             : row == H     ? std::string("scale")
                             : row == H + 1 ? std::string("scale_inv")
                                            : std::string("format max");
    // 4 L block Linears, then the LM head's when it is FP8 (4 L + 1 in all)
    const int64_t linears = S / kFp8RolesPerLinear, block_linears = linears - linears % kLinearsPerLayer;
    const std::string linear_name = linear < block_linears
                                        ? "layer " + std::to_string(linear / kLinearsPerLayer) + " " +
                                              linear_spec(linear % kLinearsPerLayer).name
                                        : std::string("the LM head");
    char values[64];
    snprintf(values, sizeof values, "%.9g / %.9g", a.fp8_state[first], b.fp8_state[first]);
    return part + " of slot " + std::to_string(slot) + ": " + linear_name + ", role " +
           roles[slot % kFp8RolesPerLinear] + ": " + values + "; " +
           std::to_string(std::count(slot_differs.begin(), slot_differs.end(), true)) + " of " +
           std::to_string(S) + " slots differ";
}

using testing::count_bit_diffs;

ModelConfig model_of(const RefConfig& c) {
    ModelConfig m;
    m.num_layers = c.L;
    m.channels = c.C;
    m.num_heads = c.H;
    m.vocab_size = c.V;
    m.max_seq_len = c.maxT;
    m.gelu_tanh = c.gelu_tanh;
    return m;
}

void run_determinism_test(const RefConfig& cfg) {
    REQUIRE_GPU();
    ContextGuard guard;
    const ModelConfig m = model_of(cfg);
    std::vector<float> w;
    {
        GptModel init(m, cfg.B, cfg.T, Precision::BF16, &guard.ctx);
        init.init_weights(1234);
        w = init.weights_to_host();
    }
    std::mt19937 gen(42);
    std::uniform_int_distribution<int> tok(0, cfg.V - 1);
    std::vector<int> in(cfg.B * cfg.T), tg(cfg.B * cfg.T);
    for (int& t : in) t = tok(gen);
    for (int& t : tg) t = tok(gen);
    const int steps = 3;
    Run a = train_steps(m, cfg.B, cfg.T, w, in, tg, &guard.ctx, steps);
    Run b = train_steps(m, cfg.B, cfg.T, w, in, tg, &guard.ctx, steps);
    for (int i = 0; i < steps; i++)
        printf("  step %d: loss %.9g / %.9g  grad norm %.9g / %.9g\n", i + 1, a.losses[i], b.losses[i],
               a.norms[i], b.norms[i]);
    EXPECT_TRUE(std::isfinite(a.losses[0]) && a.losses[steps - 1] < a.losses[0]);
    EXPECT_TRUE(memcmp(a.losses.data(), b.losses.data(), steps * sizeof(float)) == 0);
    EXPECT_TRUE(memcmp(a.norms.data(), b.norms.data(), steps * sizeof(float)) == 0);
    EXPECT_EQ(a.weights.size(), b.weights.size());
    if (a.weights.size() == b.weights.size()) {
        size_t diff = 0;
        for (size_t i = 0; i < a.weights.size(); i++) diff += memcmp(&a.weights[i], &b.weights[i], 4) != 0;
        printf("  weights after %d steps: %zu of %zu differ bitwise\n", steps, diff, a.weights.size());
        EXPECT_EQ(diff, (size_t)0);
    }
}

TEST(model_determinism_small) { run_determinism_test(kSmall); }
TEST(model_determinism_gpt1p5b_2layer) { run_determinism_test(kBig); }

// Runs the same training twice, once with `extras` around every step, and requires bitwise-identical
// losses, grad norms, weights and (FP8) the whole scale state: amax histories, scales, scale_inv.
void run_same_training_test(const RefConfig& cfg, Precision precision, StepExtras extras, const char* what) {
    REQUIRE_GPU();
    ContextGuard guard;
    const ModelConfig m = model_of(cfg);
    std::vector<float> w;
    {
        GptModel init(m, cfg.B, cfg.T, Precision::BF16, &guard.ctx);
        init.init_weights(99);
        w = init.weights_to_host();
    }
    // Fresh tokens every run; SAME_TRAINING_SEED=N repeats the run a failure names.
    const char* seed_env = getenv("SAME_TRAINING_SEED");
    const unsigned seed = seed_env ? (unsigned)strtoul(seed_env, nullptr, 10) : std::random_device{}();
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> tok(0, cfg.V - 1);
    const int N = cfg.B * cfg.T;
    std::vector<int> in(N), tg(N), ev(2 * N);
    for (int& t : in) t = tok(gen);
    for (int& t : tg) t = tok(gen);
    // the evaluation batch: other random tokens, so its activations (and amaxes) differ from training's
    for (int& t : ev) t = tok(gen);
    if (extras.eval_tokens) extras.eval_tokens = &ev;
    const int steps = 4;
    Run a = train_steps(m, cfg.B, cfg.T, w, in, tg, &guard.ctx, steps, precision);
    Run b = train_steps(m, cfg.B, cfg.T, w, in, tg, &guard.ctx, steps, precision, extras);
    for (int i = 0; i < steps; i++)
        printf("  %s step %d: loss %.9g / %.9g  grad norm %.9g / %.9g (plain / %s)\n", to_string(precision),
               i + 1, a.losses[i], b.losses[i], a.norms[i], b.norms[i], what);
    EXPECT_TRUE(std::isfinite(a.losses[0]) && a.losses[steps - 1] < a.losses[0]);
    // A difference names the case, the first step that differs, the seed, whether the plain training repeats
    // itself (if not, a race, not a trace the extra left) and where the FP8 states part (the test runner
    // keeps only this line of the output).
    const std::string fp8_diff = fp8_state_difference(a, b);
    for (int i = 0; i < steps; i++)
        if (memcmp(&a.losses[i], &b.losses[i], sizeof(float)) != 0) {
            const Run again = train_steps(m, cfg.B, cfg.T, w, in, tg, &guard.ctx, steps, precision);
            const size_t unrepeated = count_bit_diffs(a.losses, again.losses) +
                                      count_bit_diffs(a.weights, again.weights) +
                                      count_bit_diffs(a.fp8_state, again.fp8_state);
            char msg[256];
            snprintf(msg, sizeof msg,
                     "%s (%s, SAME_TRAINING_SEED=%u): %zu of %d losses differ, the first at step %d: %.9g / "
                     "%.9g; ",
                     what, to_string(precision), seed, count_bit_diffs(a.losses, b.losses), steps, i + 1,
                     a.losses[i], b.losses[i]);
            testing::fail(
                __FILE__, __LINE__,
                msg +
                    (unrepeated ? "the plain run did not repeat itself (" + std::to_string(unrepeated) +
                                      " losses, weights, fp8 floats differ): a race, not the extra"
                                : std::string("the plain run repeats itself bitwise")) +
                    (fp8_diff.empty() ? "" : "; fp8 state: " + fp8_diff));
            break;
        }
    EXPECT_EQ(count_bit_diffs(a.norms, b.norms), (size_t)0);
    EXPECT_EQ(count_bit_diffs(a.weights, b.weights), (size_t)0);
    EXPECT_EQ(a.fp8_state.empty(), precision == Precision::BF16);
    EXPECT_EQ(count_bit_diffs(a.fp8_state, b.fp8_state), (size_t)0);
    if (!fp8_diff.empty()) printf("  fp8 state (plain / %s): %s\n", what, fp8_diff.c_str());
    printf("  weights differing: %zu of %zu; fp8 state floats differing: %zu of %zu\n",
           count_bit_diffs(a.weights, b.weights), a.weights.size(), count_bit_diffs(a.fp8_state, b.fp8_state),
           a.fp8_state.size());
}

// Validation passes (evaluate() and forward() without targets) between steps leave training unchanged.
StepExtras with_validation() {
    StepExtras e;
    static const std::vector<int> placeholder;  // replaced by the test's evaluation tokens
    e.eval_tokens = &placeholder;
    return e;
}
TEST(model_validation_does_not_change_training_bf16) {
    run_same_training_test(kSmall, Precision::BF16, with_validation(), "with validation");
}
TEST(model_validation_does_not_change_training_fp8) {
    run_same_training_test(kSmall, Precision::FP8, with_validation(), "with validation");
}
// Every activation is written before it is read within a step: NaN-filled buffers change nothing.
// evaluate_token_losses: position b*T + t holds -log softmax(logits of that position)[target], computed
// here in double from the bf16 logits of a forward without targets, and the positions average to
// evaluate()'s loss. A wrong index (row or shift) moves a loss by about its spread (~1 nat), far above the
// classifier's float rounding (~1e-6).
void run_token_losses_test(Precision precision) {
    REQUIRE_GPU();
    ContextGuard guard;
    const ModelConfig m = model_of(kSmall);
    const int B = kSmall.B, T = kSmall.T, N = B * T, V = m.vocab_size;
    GptModel model(m, B, T, precision, &guard.ctx);
    model.init_weights(7);
    std::mt19937 gen(11);
    std::uniform_int_distribution<int> tok(0, V - 1);
    std::vector<int> in(N), tg(N);
    for (int& t : in) t = tok(gen);
    for (int& t : tg) t = tok(gen);
    model.evaluate(in.data(), nullptr);
    std::vector<double> want(N);
    for (int i = 0; i < N; i++) {
        const std::vector<float> z = model.logits_row(i);
        double mx = -INFINITY, sum = 0;
        for (float v : z) mx = std::max(mx, (double)v);
        for (float v : z) sum += std::exp(v - mx);
        want[i] = mx + std::log(sum) - z[tg[i]];
    }
    const float mean_loss = model.evaluate(in.data(), tg.data());
    const std::vector<float> got = model.evaluate_token_losses(in.data(), tg.data());
    EXPECT_EQ(got.size(), (size_t)N);
    if (got.size() != (size_t)N) return;
    double max_err = 0, sum = 0;
    for (int i = 0; i < N; i++) {
        max_err = std::max(max_err, std::fabs(got[i] - want[i]));
        sum += got[i];
    }
    printf("  %s: per-position losses vs double from the logits: max |diff| %.2e; mean %.7f, evaluate %.7f\n",
           to_string(precision), max_err, sum / N, mean_loss);
    EXPECT_TRUE(max_err <= 1e-4);
    EXPECT_NEAR(sum / N, mean_loss, 1e-5 * mean_loss);
}
TEST(model_token_losses_bf16) { run_token_losses_test(Precision::BF16); }
TEST(model_token_losses_fp8) { run_token_losses_test(Precision::FP8); }

TEST(model_no_read_before_write_bf16) {
    StepExtras e;
    e.poison = true;
    run_same_training_test(kSmall, Precision::BF16, e, "poisoned");
}
TEST(model_no_read_before_write_fp8) {
    StepExtras e;
    e.poison = true;
    run_same_training_test(kSmall, Precision::FP8, e, "poisoned");
}
// A step with a non-finite gradient norm or loss is skipped without a trace: weights, AdamW state and the
// FP8 history equal those of a run that never saw it. Before step 1 it also undoes the step-0 calibration.
StepExtras bad_step(int before, bool loss) {
    StepExtras e;
    e.bad_before = before;
    e.bad_loss = loss;
    return e;
}
TEST(model_bad_gradient_step_skipped_bf16) {
    run_same_training_test(kSmall, Precision::BF16, bad_step(3, false), "bad step");
}
TEST(model_bad_gradient_step_skipped_fp8) {
    run_same_training_test(kSmall, Precision::FP8, bad_step(3, false), "bad step");
    run_same_training_test(kSmall, Precision::FP8, bad_step(1, false), "bad first step");
}
TEST(model_bad_loss_step_discarded_fp8) {
    run_same_training_test(kSmall, Precision::FP8, bad_step(1, true), "bad first loss");
    run_same_training_test(kSmall, Precision::FP8, bad_step(2, true), "bad loss");
}

// ---- init_weights follows GPT-2: N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), biases 0, LN 1 ----
TEST(model_init_gpt2) {
    REQUIRE_GPU();
    ContextGuard guard;
    const RefConfig& cfg = kSmall;
    const ModelConfig m = model_of(cfg);
    std::vector<float> w;
    {
        GptModel model(m, cfg.B, cfg.T, Precision::BF16, &guard.ctx);
        model.init_weights(7);
        w = model.weights_to_host();
    }
    const double resid = 0.02 / std::sqrt(2.0 * m.num_layers);
    for (const ParamTensorInfo& p : parameter_table(m)) {
        const float* x = w.data() + p.offset;
        double sum = 0, sq = 0;
        for (size_t i = 0; i < p.numel; i++) sum += x[i], sq += (double)x[i] * x[i];
        double mean = sum / p.numel, std = std::sqrt(sq / p.numel - mean * mean);
        printf("  %-10s mean %+.3e std %.4e\n", p.name.c_str(), mean, std);
        const std::string& n = p.name;
        if (n == "attprojw" || n == "fcprojw" || n == "wte" || n == "wpe" || n == "qkvw" || n == "fcw") {
            double want = (n == "attprojw" || n == "fcprojw") ? resid : 0.02;
            // Sample std of n >= 8192 normals has relative error ~1/sqrt(2n) <= 0.8%; 5% is >6 sigma.
            if (!(std::fabs(std - want) <= 0.05 * want))
                testing::fail(__FILE__, __LINE__,
                              n + " std " + std::to_string(std) + ", expected " + std::to_string(want));
            // Mean of n normals: ~std/sqrt(n) <= 1.1e-2 std; 6 sigma.
            if (!(std::fabs(mean) <= 6 * want / std::sqrt((double)p.numel)))
                testing::fail(__FILE__, __LINE__, n + " mean " + std::to_string(mean) + " not ~0");
        } else {
            float want = (n == "ln1w" || n == "ln2w" || n == "lnfw") ? 1.f : 0.f;
            for (size_t i = 0; i < p.numel; i++)
                if (x[i] != want) {
                    testing::fail(__FILE__, __LINE__, n + " must be all " + std::to_string(want));
                    break;
                }
        }
    }
}

}  // namespace

TEST_MAIN()
