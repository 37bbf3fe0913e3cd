#!/usr/bin/env python3
"""Checks the text `train_gpt --generate` printed against a float64 reference of the same model.

    python3 scripts/check/generate_reference.py --model EXPORT --prompt TEXT --text OUT.txt --tokens N \\
        --seq T [--precision bf16|fp8] [--require-decisive] [--mutate row|window]

EXPORT is the model the trainer generated from: a Hugging Face GPT-2 folder or model.safetensors (Conv1D
layout, config.json beside it) or a seed-layout .safetensors (train_gpt --export), read here with numpy (F32,
BF16, F16), every weight rounded to bfloat16 as the trainer's forward reads its FP32 master weights. The
forward is scripts/reference_gpt.py's model (pre-LN GPT-2, tied LM head) in float64; where torch is installed
it is first compared with reference_gpt.py's own module on the same weights. The tokenizer is bytes (the
trainer's --vocab 256 tokenizer): a token is a byte, so OUT.txt (the trainer's stdout: the prompt, N generated
bytes, a newline) is the tokens.

The check follows the trainer's own output (teacher forcing): at token i the context is the prompt and the
trainer's tokens before i, its last --seq tokens (the generation window), and the reference's logits of its
last position give
  margin = top-1 minus top-2 logit, and bound = the most the trainer's rounding can move that difference
  (BOUND_* below, from the number formats; checked against an emulation of that rounding on every token).
  - margin > bound (decided): the trainer's token must be the reference's argmax;
  - margin <= bound (a near tie): the token must be within the bound of the maximum, and the line says how
    many there were; --require-decisive makes any near tie a failure (the greedy test's exactness claim).
--mutate row|window checks with a deliberately wrong reference (the logits of the position before the last,
or a window one token short) for the test's control: a right trainer must then fail.
Exit status: 0 every check holds, 1 a check failed (one line each), 2 a usage or input error.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

# The bounds on how far the trainer's rounding moves one of the two largest logits, as a fraction of the rms of
# the row's logits; their difference may move by twice that, plus the logits' own rounding to bf16 when
# stored (2^-8 of each), which can tie them.
# BF16: the forward stores ~23 tensors in bf16 on the way to a token's logits in a 2-layer model (embedding
# sum; per block LN, qkv, attention, projection, residual, LN, fc, GELU, fc-proj, residual; final LN), each
# rounded to 8 significant bits (2^-8 relative at most, 2^-8/sqrt(3) rms); independent roundings add in
# quadrature: a logit is off by sqrt(23) x 2^-8 = 1.9% of the rms, typically (scripts/check/
# hellaswag_reference.py's estimate; the model test, test/gpu_model_reference.cu, measured 0.6% normwise).
# 2^-4 = 6.2% is 3.3 of those: the largest of two such errors stays below it but for one token in ~500.
# (The emulation on the CPU stand-in below: the top-2 difference moved by 0.6% of the rms (median), 3.8%
# (largest).)
BOUND_BF16 = 2.0**-4
# FP8 (E4M3 forward, --fp8-lm-head): every GEMM input is rounded to 4 significant bits (2^-4 relative at most,
# per-tensor scales from the amax), so each GEMM output is off by ~2^-4 x sqrt(2/3) = 5% of its rms (both
# operands, in quadrature); 9 GEMMs lie before the logits of a 2-layer model (4 per block, the LM head):
# sqrt(9) x 5% = 15%, typically. The tail is longer than that: a tensor scaled to its largest value leaves
# its small values few significant bits. Measured with this script's emulation on a CPU stand-in of
# test/gpu_generate.sh's model (trained the same way in float32, 96 tokens): the top-2 difference moved by
# 4% of the rms (median), 13% (90th percentile), 47% (largest). 2^0 = 100%: twice the largest seen.
BOUND_FP8 = 1.0
# Both are checked on every token against an emulation of the rounding (forward(..., rounding)): it must
# move the two largest logits' difference by at most half the bound, or the test fails and says the bound
# does not hold for this model.


class Usage(Exception):
    """A usage or input error: one line, exit status 2."""


# ---------------------------------------------------------------------------------------------------------
# Number formats.


def bf16(x):
    """x rounded to bfloat16 (round to nearest even, through float32 as the GPU's casts), as float64."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def e4m3(y):
    """y rounded to FP8 E4M3 (4 significant bits, subnormals below 2^-6, saturating at 448), as float64."""
    y = np.asarray(y, dtype=np.float64)
    a = np.minimum(np.abs(y), 448.0)
    exp = np.floor(np.log2(np.maximum(a, 2.0**-6)))  # the subnormals share the quantum of 2^-6's binade
    quantum = 2.0 ** (exp - 3)
    return np.sign(y) * np.minimum(np.round(a / quantum) * quantum, 448.0)  # np.round: to nearest even


def fp8_quantized(x):
    """A GEMM input as the FP8 path uses it: scaled so its amax maps to 448 (margin 0), rounded, unscaled."""
    amax = float(np.max(np.abs(x)))
    if amax == 0 or not math.isfinite(amax):
        return np.asarray(x, dtype=np.float64)
    scale = 448.0 / amax
    return e4m3(np.asarray(x, dtype=np.float64) * scale) / scale


# ---------------------------------------------------------------------------------------------------------
# The model: weights in the canonical order of llmc/model/layout.h, nn.Linear layout [out, in].

PER_LAYER = ("ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b", "fcw", "fcb", "fcprojw",
             "fcprojb")
# name in the file (after "transformer." / the block prefix) -> (canonical name, transposed?)
HF_NAMES = {"ln_1.weight": ("ln1w", False), "ln_1.bias": ("ln1b", False),
            "attn.c_attn.weight": ("qkvw", True), "attn.c_attn.bias": ("qkvb", False),
            "attn.c_proj.weight": ("attprojw", True), "attn.c_proj.bias": ("attprojb", False),
            "ln_2.weight": ("ln2w", False), "ln_2.bias": ("ln2b", False),
            "mlp.c_fc.weight": ("fcw", True), "mlp.c_fc.bias": ("fcb", False),
            "mlp.c_proj.weight": ("fcprojw", True), "mlp.c_proj.bias": ("fcprojb", False)}
SEED_NAMES = {"attn_norm.weight": "ln1w", "attn_norm.bias": "ln1b", "attn.attn_proj.weight": "qkvw",
              "attn.attn_proj.bias": "qkvb", "attn.out_proj.weight": "attprojw", "attn.out_proj.bias": "attprojb",
              "ffn_norm.weight": "ln2w", "ffn_norm.bias": "ln2b", "ffn.0.weight": "fcw", "ffn.0.bias": "fcb",
              "ffn.2.weight": "fcprojw", "ffn.2.bias": "fcprojb"}


class Model:
    def __init__(self, w, heads, gelu_tanh):
        self.w, self.heads, self.gelu_tanh = w, heads, gelu_tanh
        self.layers = w["qkvw"].shape[0]
        self.vocab, self.channels = w["wte"].shape
        self.max_seq = w["wpe"].shape[0]


def read_safetensors(path):
    """{name: float64 array}, metadata."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Usage(f"cannot read '{path}': {e.strerror}")
    if len(data) < 8:
        raise Usage(f"'{path}': not a safetensors file")
    n = struct.unpack("<Q", data[:8])[0]
    try:
        header = json.loads(data[8:8 + n])
    except ValueError as e:
        raise Usage(f"'{path}': not a safetensors file ({e})")
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        raw = data[8 + n + b:8 + n + e]
        if t["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif t["dtype"] == "F16":
            a = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif t["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            raise Usage(f"'{path}': {name} has dtype {t['dtype']}")
        out[name] = a.reshape(t["shape"])
    return out, meta


def load_model(path, heads=None, gelu=None):
    """The Model of an HF folder/file or a seed-layout file, weights rounded to bf16."""
    config = {}
    if os.path.isdir(path):
        path = os.path.join(path, "model.safetensors")
    cfg_path = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
    tensors, meta = read_safetensors(path)
    names = {k[len("transformer."):] if k.startswith("transformer.") else k: k for k in tensors}
    w = {}
    if "wte.weight" in names:  # Hugging Face
        if os.path.isfile(cfg_path):
            with open(cfg_path) as f:
                config = json.load(f)
        w["wte"], w["wpe"] = tensors[names["wte.weight"]], tensors[names["wpe.weight"]]
        w["lnfw"], w["lnfb"] = tensors[names["ln_f.weight"]], tensors[names["ln_f.bias"]]
        layers = 1 + max(int(k.split(".")[1]) for k in names if k.startswith("h."))
        for suffix, (canon, transposed) in HF_NAMES.items():
            stack = [tensors[names[f"h.{i}.{suffix}"]] for i in range(layers)]
            w[canon] = np.stack([t.T if transposed else t for t in stack])
        act = config.get("activation_function", "gelu_new")
        gelu = gelu or ("tanh" if act in ("gelu_new", "gelu_pytorch_tanh") else "erf")
    elif "tok_embd.weight" in names:  # seed layout
        if "gpt_config" in meta:
            config = json.loads(meta["gpt_config"])
        w["wte"], w["wpe"] = tensors["tok_embd.weight"], tensors["pos_embd.weight"]
        w["lnfw"], w["lnfb"] = tensors["out_norm.weight"], tensors["out_norm.bias"]
        layers = 1 + max(int(k.split(".")[1]) for k in names if k.startswith("tsfmr_blks."))
        for suffix, canon in SEED_NAMES.items():
            w[canon] = np.stack([tensors[f"tsfmr_blks.{i}.{suffix}"] for i in range(layers)])
        gelu = gelu or config.get("gelu", "erf")
    else:
        raise Usage(f"'{path}': neither a Hugging Face GPT-2 nor a seed-layout file")
    heads = heads or config.get("n_head")
    if not heads:
        raise Usage(f"'{path}': the head count is not recorded: pass --heads")
    return Model({k: bf16(v) for k, v in w.items()}, int(heads), gelu == "tanh")


def save_hf(m, folder):
    """Writes `m` as a Hugging Face GPT-2 folder (F32 model.safetensors, config.json): the host test's
    models (test/host_generate_reference.sh)."""
    os.makedirs(folder, exist_ok=True)
    tensors = {"transformer.wte.weight": m.w["wte"], "transformer.wpe.weight": m.w["wpe"],
               "transformer.ln_f.weight": m.w["lnfw"], "transformer.ln_f.bias": m.w["lnfb"]}
    for suffix, (canon, transposed) in HF_NAMES.items():
        for i in range(m.layers):
            tensors[f"transformer.h.{i}.{suffix}"] = m.w[canon][i].T if transposed else m.w[canon][i]
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        blob = np.ascontiguousarray(t, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header).encode()
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"n_layer": m.layers, "n_embd": m.channels, "n_head": m.heads, "vocab_size": m.vocab,
                   "n_positions": m.max_seq,
                   "activation_function": "gelu_new" if m.gelu_tanh else "gelu"}, f)


def layernorm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x, tanh):
    if tanh:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)).astype(np.float64))


def forward(m, ids, rounding="exact"):
    """Logits [len(ids), V] in float64. rounding "bf16": every tensor the trainer stores is rounded to bf16;
    "fp8": also every GEMM input (weights and activations) to E4M3 with its own per-tensor scale."""
    w, n, C, H = m.w, len(ids), m.channels, m.heads
    r = bf16 if rounding != "exact" else (lambda x: x)
    q = fp8_quantized if rounding == "fp8" else (lambda x: x)
    D = C // H
    x = r(w["wte"][ids] + w["wpe"][:n])
    causal = np.triu(np.full((n, n), -np.inf), 1)
    for l in range(m.layers):
        h = r(layernorm(x, w["ln1w"][l], w["ln1b"][l]))
        qkv = r(q(h) @ q(w["qkvw"][l]).T + w["qkvb"][l])
        att = np.zeros((n, C))
        for k in range(H):
            cols = slice(k * D, (k + 1) * D)
            s = qkv[:, cols] @ qkv[:, C:][:, cols].T / math.sqrt(D) + causal
            p = np.exp(s - s.max(-1, keepdims=True))
            att[:, cols] = (p / p.sum(-1, keepdims=True)) @ qkv[:, 2 * C:][:, cols]
        att = r(att)
        x = r(x + r(q(att) @ q(w["attprojw"][l]).T + w["attprojb"][l]))
        h = r(layernorm(x, w["ln2w"][l], w["ln2b"][l]))
        f = r(gelu(r(q(h) @ q(w["fcw"][l]).T + w["fcb"][l]), m.gelu_tanh))
        x = r(x + r(q(f) @ q(w["fcprojw"][l]).T + w["fcprojb"][l]))
    h = r(layernorm(x, w["lnfw"], w["lnfb"]))
    return r(q(h) @ q(w["wte"]).T)


def compare_with_torch_reference(m, ids):
    """Max |numpy - reference_gpt.py| / rms over the logits of `ids`, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import reference_gpt

    model = reference_gpt.GPT(m.vocab, m.max_seq, m.layers, m.channels, m.heads,
                              "tanh" if m.gelu_tanh else "none").to(torch.float64)
    with torch.no_grad():
        for name, per_layer, _, tensors in reference_gpt.canonical_layout(model):
            for i, p in enumerate(tensors):
                p.copy_(torch.from_numpy(m.w[name][i] if per_layer else m.w[name]))
        ref = model(torch.tensor([ids]))[0].numpy()
    ours = forward(m, ids)
    return float(np.max(np.abs(ours - ref)) / np.sqrt(np.mean(ref**2)))


# ---------------------------------------------------------------------------------------------------------
# The check.

VOCAB_BYTES = 256  # the bytes tokenizer's ids; logits past them (a padded vocabulary) are never chosen


def next_token_logits(m, context, seq, rounding="exact", mutate=None):
    """The logits the trainer samples the next token from: its window of the last `seq` tokens (for fp8, the
    whole batch row, zero-padded to `seq`, since the scales come from the whole tensor), last position."""
    window = context[-(seq - 1):] if mutate == "window" else context[-seq:]
    n = len(window)
    ids = window + [0] * (seq - n) if rounding == "fp8" else window
    row = n - 2 if mutate == "row" and n > 1 else n - 1
    return forward(m, ids, rounding)[row][:VOCAB_BYTES]


def margin_and_bound(logits, per_logit):
    """(top-1 minus top-2, the bound on how far rounding moves that difference, the two ids)."""
    second, first = (int(i) for i in np.argsort(logits, kind="stable")[-2:])
    rms = float(np.sqrt(np.mean(logits**2)))
    top = max(abs(logits[first]), abs(logits[second]))
    return float(logits[first] - logits[second]), 2 * (per_logit * rms + 2.0**-8 * top), (first, second)


def check(m, prompt, generated, seq, precision, require_decisive, mutate=None):
    """(failures, summary): the module docstring's checks along the trainer's tokens."""
    per_logit = BOUND_FP8 if precision == "fp8" else BOUND_BF16
    failures, decided, ties, worst_emulated, min_ratio = [], 0, [], 0.0, math.inf
    context = list(prompt)
    for i, got in enumerate(generated):
        ref = next_token_logits(m, context, seq, mutate=mutate)
        margin, bound, (best, second) = margin_and_bound(ref, per_logit)
        emulated = next_token_logits(m, context, seq, rounding=precision, mutate=mutate)
        shift = abs((emulated[best] - emulated[second]) - margin)
        worst_emulated = max(worst_emulated, shift / bound)
        if shift > bound / 2 or (margin > bound and int(np.argmax(emulated)) != best):
            failures.append(f"token {i}: the {precision} emulation moves the top-2 difference by {shift:.4g} (or "
                            f"its argmax), more than half the bound {bound:.4g}: the bound does not hold here")
        if margin > bound:
            decided += 1
            min_ratio = min(min_ratio, margin / bound)
            if got != best:
                failures.append(f"token {i}: the trainer chose {got} ({chr(got)!r}), the reference {best} "
                                f"({chr(best)!r}) by a margin of {margin:.4g} > bound {bound:.4g}")
        else:
            ties.append(i)
            if got >= VOCAB_BYTES or ref[best] - ref[got] > bound:
                failures.append(f"token {i}: the trainer chose {got}, not within the bound {bound:.4g} of the "
                                f"reference's maximum")
            elif require_decisive:
                failures.append(f"token {i}: a near tie (margin {margin:.4g} <= bound {bound:.4g}): the "
                                f"comparison cannot be exact there")
        context.append(got)
    summary = (f"{len(generated)} tokens ({precision}): {decided} decided (margin > bound, at least "
               f"{min_ratio:.3g}x it) and equal to the reference's argmax, {len(ties)} near ties"
               f"{' at ' + str(ties[:8]) if ties else ''}; the {precision} emulation moved a top-2 difference "
               f"by at most {worst_emulated:.2g} of the bound")
    return failures, summary


def parse_text(path, prompt, tokens):
    """The generated tokens of the trainer's stdout: the prompt, `tokens` bytes, one newline."""
    try:
        with open(path, "rb") as f:
            out = f.read()
    except OSError as e:
        raise Usage(f"cannot read '{path}': {e.strerror}")
    if not out.startswith(prompt):
        return None, f"the output does not start with the prompt: {out[:60]!r}"
    body = out[len(prompt):]
    if len(body) != tokens + 1 or not body.endswith(b"\n"):
        return None, f"expected {tokens} generated bytes and a newline after the prompt, got {len(body)} bytes"
    return list(body[:-1]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--text", required=True, help="the trainer's stdout")
    ap.add_argument("--tokens", type=int, required=True, help="--generate N")
    ap.add_argument("--seq", type=int, required=True, help="the trainer's --seq (the generation window)")
    ap.add_argument("--precision", choices=["bf16", "fp8"], default="bf16")
    ap.add_argument("--heads", type=int)
    ap.add_argument("--gelu", choices=["erf", "tanh"])
    ap.add_argument("--require-decisive", action="store_true")
    ap.add_argument("--mutate", choices=["row", "window"])
    args = ap.parse_args()
    try:
        m = load_model(args.model, args.heads, args.gelu)
        prompt = args.prompt.encode()
        generated, why = parse_text(args.text, prompt, args.tokens)
        if why:
            print(f"FAIL: {why}")
            return 1
        drift = compare_with_torch_reference(m, list(prompt))
        if drift is not None and drift > 1e-9:
            print(f"FAIL: this forward differs from scripts/reference_gpt.py's by {drift:.3g} of the logits' rms")
            return 1
        failures, summary = check(m, list(prompt), generated, args.seq, args.precision, args.require_decisive,
                                  args.mutate)
    except Usage as e:
        print(f"generate_reference: error: {e}", file=sys.stderr)
        return 2
    for f in failures[:10]:
        print(f"FAIL: {f}")
    torch_note = "" if drift is None else f"; forward = reference_gpt.py's within {drift:.1g}"
    print(("" if not failures else f"{len(failures)} failures; ") + summary + torch_note)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
