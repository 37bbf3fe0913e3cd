#!/usr/bin/env python3
"""Float64 PyTorch reference for the whole-model test (test/gpu_model_reference.cu).

The model is the seed script's GPT (see shared/seed/float8_gpt1p5b_issue.txt): pre-LN blocks, nn.LayerNorm
(eps 1e-5, with bias), qkv Linear C->3C split [q|k|v], heads of D = C/H, causal
F.scaled_dot_product_attention, out-projection Linear, MLP Linear C->4C + GELU (exact erf by default,
--gelu tanh for the tanh approximation) + Linear 4C->C, final LayerNorm, tied LM head (x @ wte^T), mean
cross-entropy over the full (padded) vocabulary. GPT-2 initialization, rounded to bf16-representable values
so that our BF16 trainer starts from exactly the same weights. It runs in float64 (TF32 off) and trains
`--steps` AdamW steps on one fixed random batch, recording what the C++ test compares against.

Output file (little-endian):
  int32   header[256]  [0] magic 20241130, [1] version 1, [2] L, [3] C, [4] H, [5] V, [6] maxT, [7] B, [8] T,
                       [9] num_steps, [10] gelu_tanh (0/1), [11] num_logit_rows, rest 0
  float32 header2[16]  lr, beta1, beta2, eps, weight_decay, grad_clip, rest 0
  float32 params       all 16 tensors in the canonical order of llmc/model/gpt.h (per-layer tensors stacked [L, ...],
                       weights in nn.Linear layout [out, in])
  int32   inputs[B*T], targets[B*T]
  float32 loss         step-0 loss (before any update)
  float32 logits[num_logit_rows * V]   rows 0..k-1 of the flattened [B*T, V] step-0 logits
  float32 grads        step-0 gradients, same order and layout as params (before clipping)
  float32 losses[num_steps]      loss at step i, computed before update i (losses[0] == loss)
  float32 grad_norms[num_steps]  pre-clip global gradient norm at step i

Optimizer: torch.optim.AdamW (decoupled decay p *= 1 - lr*wd, applied only to the 2-D weights: wte, wpe and
the Linear weights; biases and LayerNorm parameters are not decayed), gradient clipping with
torch.nn.utils.clip_grad_norm_ (scale = clip / (norm + 1e-6) when norm > clip), constant learning rate.

Usage: python3 scripts/reference_gpt.py --config small --out build/ref/small.bin
Needs only python3 + torch (+ numpy).
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MAGIC = 20241130
VERSION = 1

# name: (L, C, H, V, maxT, T, B, default lr)
CONFIGS = {
    "small": dict(L=2, C=128, H=4, V=512, maxT=64, T=64, B=4, lr=1e-3),
    "gpt1p5b_2layer": dict(L=2, C=1600, H=25, V=50304, maxT=1024, T=1024, B=2, lr=3e-4),
}


# ----------------------------------------------------------------------------------------------------------
# The seed script's model (same module structure and names), with the GELU form selectable.


class CausalSelfAttention(nn.Module):
    def __init__(self, d_embd, n_heads):
        super().__init__()
        self.d_head = d_embd // n_heads  # D
        self.attn_proj = nn.Linear(d_embd, 3 * d_embd)
        self.out_proj = nn.Linear(d_embd, d_embd)

    def forward(self, x_BTE):
        qkv = self.attn_proj(x_BTE).split(x_BTE.size(-1), -1)
        split_attn_head = lambda z: z.unflatten(-1, [-1, self.d_head]).transpose(1, 2)
        q_BHTD, k_BHTD, v_BHTD = map(split_attn_head, qkv)
        o_BHTD = F.scaled_dot_product_attention(q_BHTD, k_BHTD, v_BHTD, dropout_p=0.0, is_causal=True)
        o_BTE = o_BHTD.transpose(1, 2).flatten(-2)
        return self.out_proj(o_BTE)


class GPTBlock(nn.Module):
    def __init__(self, d_embd, n_heads, gelu_approx):
        super().__init__()
        self.attn_norm = nn.LayerNorm(d_embd)  # eps 1e-5, elementwise affine with bias
        self.attn = CausalSelfAttention(d_embd, n_heads)
        self.ffn_norm = nn.LayerNorm(d_embd)
        self.ffn = nn.Sequential(
            nn.Linear(d_embd, 4 * d_embd), nn.GELU(approximate=gelu_approx), nn.Linear(4 * d_embd, d_embd)
        )

    def forward(self, x_BTE):
        x_BTE = x_BTE + self.attn(self.attn_norm(x_BTE))
        return x_BTE + self.ffn(self.ffn_norm(x_BTE))


class GPT(nn.Module):
    def __init__(self, vocab_size, max_seq_len, n_layers, d_embd, n_heads, gelu_approx):
        super().__init__()
        self.tok_embd = nn.Embedding(vocab_size, d_embd)
        self.pos_embd = nn.Embedding(max_seq_len, d_embd)
        self.tsfmr_blks = nn.ModuleList(GPTBlock(d_embd, n_heads, gelu_approx) for _ in range(n_layers))
        self.out_norm = nn.LayerNorm(d_embd)

    def forward(self, idx_BT):
        pos_T = torch.arange(idx_BT.size(1), dtype=torch.int64, device=idx_BT.device)
        x_BTE = self.tok_embd(idx_BT) + self.pos_embd(pos_T).unsqueeze(0)
        for blk in self.tsfmr_blks:
            x_BTE = blk(x_BTE)
        x_BTE = self.out_norm(x_BTE)
        return x_BTE @ self.tok_embd.weight.T  # tied LM head


# ----------------------------------------------------------------------------------------------------------
# The canonical parameter order of llmc/model/gpt.h: (name, per-layer?, weight_decay, getter).


def canonical_layout(model):
    blks = model.tsfmr_blks
    per_layer = [
        ("ln1w", True, False, lambda b: b.attn_norm.weight),
        ("ln1b", True, False, lambda b: b.attn_norm.bias),
        ("qkvw", True, True, lambda b: b.attn.attn_proj.weight),
        ("qkvb", True, False, lambda b: b.attn.attn_proj.bias),
        ("attprojw", True, True, lambda b: b.attn.out_proj.weight),
        ("attprojb", True, False, lambda b: b.attn.out_proj.bias),
        ("ln2w", True, False, lambda b: b.ffn_norm.weight),
        ("ln2b", True, False, lambda b: b.ffn_norm.bias),
        ("fcw", True, True, lambda b: b.ffn[0].weight),
        ("fcb", True, False, lambda b: b.ffn[0].bias),
        ("fcprojw", True, True, lambda b: b.ffn[2].weight),
        ("fcprojb", True, False, lambda b: b.ffn[2].bias),
    ]
    out = [("wte", False, True, [model.tok_embd.weight]), ("wpe", False, True, [model.pos_embd.weight])]
    for name, _, wd, get in per_layer:
        out.append((name, True, wd, [get(b) for b in blks]))
    out.append(("lnfw", False, False, [model.out_norm.weight]))
    out.append(("lnfb", False, False, [model.out_norm.bias]))
    assert len(out) == 16
    return out


def gpt2_init(model, n_layers, gen):
    """GPT-2 init, drawn in float32 from a CPU generator (device independent), rounded to bf16 values."""
    resid_std = 0.02 / math.sqrt(2 * n_layers)
    with torch.no_grad():
        for name, _, _, tensors in canonical_layout(model):
            for p in tensors:
                if name in ("attprojw", "fcprojw"):
                    std = resid_std
                elif name in ("wte", "wpe", "qkvw", "fcw"):
                    std = 0.02
                else:
                    std = None
                if std is not None:
                    w = torch.randn(p.shape, generator=gen, dtype=torch.float32) * std
                elif name in ("ln1w", "ln2w", "lnfw"):
                    w = torch.ones(p.shape, dtype=torch.float32)
                else:  # biases
                    w = torch.zeros(p.shape, dtype=torch.float32)
                p.copy_(w.to(torch.bfloat16).to(p.dtype))


def flatten_canonical(model, use_grad):
    """All 16 tensors in canonical order as one float32 numpy array (per-layer tensors stacked)."""
    parts = []
    for _, _, _, tensors in canonical_layout(model):
        for p in tensors:
            t = p.grad if use_grad else p
            parts.append(t.detach().to(torch.float32).reshape(-1).cpu())
    return torch.cat(parts).numpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="small")
    ap.add_argument("--out", required=True, help="output file")
    ap.add_argument("--seed", type=int, default=3985)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--gelu", choices=["erf", "tanh"], default="erf")
    ap.add_argument("--lr", type=float, default=None, help="constant LR (default: 1e-3 small, 3e-4 big)")
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0, help="0 disables clipping")
    ap.add_argument("--logit-rows", type=int, default=4)
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    args = ap.parse_args()

    cfg = CONFIGS[args.config]
    L, C, H, V, maxT, T, B = (cfg[k] for k in ("L", "C", "H", "V", "maxT", "T", "B"))
    lr = cfg["lr"] if args.lr is None else args.lr
    if args.steps < 1:
        sys.exit("error: --steps must be >= 1")
    if not 1 <= args.logit_rows <= B * T:
        sys.exit(f"error: --logit-rows must be in [1, {B * T}]")
    if args.device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    else:
        device = args.device
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    t0 = time.time()
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    model = GPT(V, maxT, L, C, H, "tanh" if args.gelu == "tanh" else "none").to(torch.float64)
    gpt2_init(model, L, gen)
    model = model.to(device)
    inputs = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
    targets = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
    inp_d, tgt_d = inputs.to(device), targets.to(device)

    layout = canonical_layout(model)
    decay = [p for _, _, wd, ts in layout if wd for p in ts]
    no_decay = [p for _, _, wd, ts in layout if not wd for p in ts]
    assert len(decay) + len(no_decay) == len(list(model.parameters()))
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(args.beta1, args.beta2),
        eps=args.eps,
    )
    params0 = flatten_canonical(model, use_grad=False)
    nparams = params0.size
    all_params = decay + no_decay

    losses, norms = [], []
    for step in range(args.steps):
        opt.zero_grad(set_to_none=True)
        logits = model(inp_d)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt_d.flatten())
        loss.backward()
        if step == 0:
            loss0 = loss.item()
            logits0 = logits.detach().flatten(0, 1)[: args.logit_rows].to(torch.float32).cpu().numpy()
            grads0 = flatten_canonical(model, use_grad=True)  # before clipping
        del logits
        if args.grad_clip > 0:
            norm = torch.nn.utils.clip_grad_norm_(all_params, args.grad_clip)
        else:
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in all_params]))
        losses.append(loss.item())
        norms.append(norm.item())
        opt.step()
        print(f"step {step:2d}: loss {losses[-1]:.6f}  grad norm {norms[-1]:.6f}", flush=True)

    header = np.zeros(256, dtype="<i4")
    header[:12] = [MAGIC, VERSION, L, C, H, V, maxT, B, T, args.steps, int(args.gelu == "tanh"), args.logit_rows]
    header2 = np.zeros(16, dtype="<f4")
    header2[:6] = [lr, args.beta1, args.beta2, args.eps, args.weight_decay, args.grad_clip]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:  # written to a temp name, renamed when complete (no half files on a crash)
        for arr, dt in (
            (header, "<i4"),
            (header2, "<f4"),
            (params0, "<f4"),
            (inputs.reshape(-1).numpy(), "<i4"),
            (targets.reshape(-1).numpy(), "<i4"),
            (np.array([loss0]), "<f4"),
            (logits0.reshape(-1), "<f4"),
            (grads0, "<f4"),
            (np.array(losses), "<f4"),
            (np.array(norms), "<f4"),
        ):
            f.write(np.ascontiguousarray(arr, dtype=dt).tobytes())
    os.replace(tmp, args.out)

    size = os.path.getsize(args.out)
    print(
        f"reference_gpt: config {args.config} (L={L} C={C} H={H} V={V} maxT={maxT} B={B} T={T}, "
        f"gelu {args.gelu}), {nparams:,} parameters, device {device}, float64"
    )
    print(
        f"  AdamW lr {lr:g} betas ({args.beta1}, {args.beta2}) eps {args.eps:g} wd {args.weight_decay:g} "
        f"clip {args.grad_clip:g}, seed {args.seed}"
    )
    print(f"  loss {losses[0]:.6f} -> {losses[-1]:.6f} in {args.steps} steps (ln V = {math.log(V):.6f})")
    print(f"  wrote {args.out} ({size / 2**20:.1f} MiB) in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
