#!/usr/bin/env python3
"""Checks an exported model: loads it the way a user would and compares its loss on one batch with ours.

  python3 scripts/check/check_export.py --seed model.safetensors --tokens batch.bin --expect-loss 3.28 [--gelu tanh]
  python3 scripts/check/check_export.py --hf export_dir --tokens batch.bin --expect-loss 3.2871

--seed FILE  builds scripts/reference_gpt.py's GPT module (the seed script's model) with the sizes read from
             the file's tensor shapes (heads: the file's "gpt_config" metadata that train_gpt writes, else
             --heads, else C/64; GELU: --gelu, else the metadata, else erf) and loads the file with
             load_state_dict(strict=True). The loss is over the file's full (padded) vocabulary, as in
             training.
--hf DIR     transformers.GPT2LMHeadModel.from_pretrained(DIR) (config.json + model.safetensors, no network).
             Its logits cover the 50257 real tokens only, so the loss can differ a little from the trainer's
             over the padded vocabulary (the padded rows' logits add to the softmax denominator).

TOKENS.bin, little-endian int32: B, T, then B*T inputs (row-major [B, T]), then B*T targets.

Computes the mean cross-entropy in float32 (TF32 off) on the GPU if there is one, prints the loss and its
relative difference to --expect-loss. Exit status: 0 within --rtol (default 1e-2), 1 beyond it, 2 on a usage
or loading error. Needs torch, safetensors, and transformers for --hf.
"""
import argparse
import json
import os
import re
import sys

import torch
import torch.nn.functional as F


def die(msg):
    print(f"check_export: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_tokens(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8 or len(data) % 4:
        die(f"{path}: {len(data)} bytes, not an int32 token file (B, T, inputs, targets)")
    if sys.byteorder != "little":
        die("this script reads little-endian int32 and needs a little-endian host")
    t = torch.frombuffer(bytearray(data), dtype=torch.int32)
    B, T = int(t[0]), int(t[1])
    if B <= 0 or T <= 0 or t.numel() != 2 + 2 * B * T:
        need = 4 * (2 + 2 * max(B * T, 0))
        die(f"{path}: header says B={B}, T={T}, so {need} bytes, but the file has {len(data)}")
    inputs = t[2 : 2 + B * T].reshape(B, T).long()
    targets = t[2 + B * T :].reshape(B, T).long()
    return inputs, targets


def seed_model(path, heads, gelu):
    from safetensors import safe_open
    from safetensors.torch import load_file

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # reference_gpt
    from reference_gpt import GPT

    sd = load_file(path)
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
    cfg = json.loads(meta["gpt_config"]) if "gpt_config" in meta else {}
    for name in ("tok_embd.weight", "pos_embd.weight"):
        if name not in sd:
            die(f"{path}: no tensor {name}: not a seed-layout file")
    V, C = sd["tok_embd.weight"].shape
    maxT = sd["pos_embd.weight"].shape[0]
    layers = {int(m.group(1)) for k in sd for m in [re.match(r"tsfmr_blks\.(\d+)\.", k)] if m}
    L = max(layers) + 1 if layers else 0
    H = heads or cfg.get("n_head") or C // 64
    gelu = gelu or cfg.get("gelu", "erf")
    if C % H:
        die(f"{path}: channels {C} not divisible by {H} heads (use --heads)")
    print(f"seed model: L={L} C={C} H={H} V={V} maxT={maxT} gelu={gelu}")
    model = GPT(V, maxT, L, C, H, "tanh" if gelu == "tanh" else "none")
    model.load_state_dict(sd, strict=True)  # raises on any missing/unexpected key or shape mismatch
    return model, V, maxT


def hf_model(path):
    from transformers import GPT2LMHeadModel

    if not os.path.isfile(os.path.join(path, "config.json")):
        die(f"{path}: not an export directory (no config.json)")
    model = GPT2LMHeadModel.from_pretrained(path, local_files_only=True)
    c = model.config
    print(
        f"hf model: L={c.n_layer} C={c.n_embd} H={c.n_head} V={c.vocab_size} maxT={c.n_positions} "
        f"activation={c.activation_function}"
    )
    if model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr():
        die(f"{path}: lm_head is not tied to wte after loading")
    return model, c.vocab_size, c.n_positions


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--seed", metavar="FILE", help="seed-layout .safetensors file")
    src.add_argument("--hf", metavar="DIR", help="Hugging Face export directory")
    ap.add_argument("--tokens", required=True, help="int32 file: B, T, inputs[B*T], targets[B*T]")
    ap.add_argument("--expect-loss", type=float, default=None, help="the trainer's loss on this batch")
    ap.add_argument("--rtol", type=float, default=1e-2)
    ap.add_argument("--gelu", choices=["erf", "tanh"], help="--seed only (default: file metadata, else erf)")
    ap.add_argument("--heads", type=int, help="--seed only (default: file metadata, else C/64)")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    args = ap.parse_args()

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    inputs, targets = load_tokens(args.tokens)
    try:
        model, V, maxT = seed_model(args.seed, args.heads, args.gelu) if args.seed else hf_model(args.hf)
    except (OSError, RuntimeError, ValueError, KeyError) as e:
        why = " ".join(str(e).split())[:1000] or type(e).__name__  # one line
        die(f"{args.seed or args.hf}: cannot load: {why}")
    B, T = inputs.shape
    if T > maxT:
        die(f"T={T} is longer than the model's {maxT} positions")
    for what, t in (("inputs", inputs), ("targets", targets)):
        if int(t.min()) < 0 or int(t.max()) >= V:
            die(f"{what} hold token ids outside [0, {V}) (min {int(t.min())}, max {int(t.max())})")

    model = model.to(device=device, dtype=torch.float32).eval()
    with torch.no_grad():
        out = model(inputs.to(device))
        logits = out if torch.is_tensor(out) else out.logits
        logits = logits.float().reshape(-1, logits.size(-1))
        loss = F.cross_entropy(logits, targets.to(device).reshape(-1)).item()
    print(f"loss {loss:.6f} on B={B} T={T} ({device}, float32)")
    if args.expect_loss is None:
        return 0
    rel = abs(loss - args.expect_loss) / max(abs(args.expect_loss), 1e-12)
    ok = rel <= args.rtol
    verdict = "OK" if ok else "FAIL"
    print(f"expected {args.expect_loss:.6f}: relative difference {rel:.3e} ({verdict}, rtol {args.rtol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
