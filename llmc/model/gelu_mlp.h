// A block's MLP as one unit, out_NC = fc_proj(gelu(fc(x_NC))): the two Linears and the GELU between them,
// with their handshake in backward (the dGELU fused into the cast of the fc's dY in FP8, which also rebuilds
// the fc-proj's input where InputKeep::FromGelu says so) and what is kept for it. Built per precision by the
// Linear factory (llmc/model/linear.h): BF16 in gelu_mlp_bf16.cu, FP8 in llmc/model/gelu_mlp_fp8.cu. Fusions
// of the GELU into the fc GEMM's epilogue belong here.
#pragma once
#include <memory>

#include "llmc/model/linear.h"

class GeluMlp {
  public:
    virtual ~GeluMlp() = default;
    // The Linears, for their input producer (fc: input_from_layernorm) and their weight verbs.
    virtual Linear& fc() = 0;
    virtual Linear& fc_proj() = 0;
    // After fc().input_from_layernorm: pre_gelu_NF = fc(x) (kept for the backward), out_NC = fc_proj(gelu)
    // (+ residual_NC when given: Linear::forward's residual add).
    virtual void forward(bf16* out_NC, bf16* pre_gelu_NF, const bf16* residual_NC) = 0;
    // dinp_NC from dout_NC (dout_NC untouched), the weight and bias gradients (accumulate: +=); dpre_gelu_NF:
    // an [N, F] scratch for the gradient between the Linears.
    virtual void backward(bf16* dinp_NC, const bf16* dout_NC, bf16* dpre_gelu_NF, const bf16* pre_gelu_NF,
                          bool accumulate) = 0;
};

// The BF16 MLP over two Linears: the GELU output goes to gelu_out_NF (one buffer the layers share) and is
// recomputed there in backward instead of stored per layer.
std::unique_ptr<GeluMlp> make_bf16_gelu_mlp(std::unique_ptr<Linear> fc, std::unique_ptr<Linear> fc_proj,
                                            bf16* gelu_out_NF, size_t NF, const LinearRuntime* rt);
