#!/usr/bin/env python3
"""The PyTorch side of `make bench`: the report's GPT (scripts/reference_gpt.py's module) on the same workload as
train_gpt (GPT-1.5B, batch 12 x 1024, random tokens, fused AdamW), timed the report's way (CUDA events around
forward + backward + optimizer step) but summarized like train_gpt (median of the steady steps).

Variants: bf16  BF16 autocast + torch.compile (the report's baseline);
          fp8   torchao.float8 (its default recipe) under the same BF16 autocast + torch.compile, when torchao is
                installed: the report thread's fixed usage. Without autocast everything outside the Linears runs
                in FP32 (the report's first setup, ~2x slower than BF16: 566 ms against 269 on an H200).
Peak memory as the driver sees it (cudaMemGetInfo: total - free, sampled after every step): the same figure
train_gpt reports, CUDA context and allocator pools included.
Writes one JSON object per line to --out; prints a line per variant (or why it was skipped).
Usage: python3 scripts/bench/bench_pytorch.py --steps 20 --out logs/bench/pytorch.jsonl [--variants bf16,fp8]
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # reference_gpt


def run(variant, steps, out):
    import torch
    import torch.nn.functional as F
    from reference_gpt import GPT

    torch.manual_seed(3985)
    cfg = dict(vocab_size=50304, max_seq_len=1024, n_layers=48, d_embd=1600, n_heads=25, gelu_approx="none")
    B, T = 12, 1024
    model = GPT(**cfg).to("cuda")
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
    if variant == "fp8":
        from torchao.float8 import convert_to_float8_training

        convert_to_float8_training(model)
    model = torch.compile(model)
    total = torch.cuda.mem_get_info()[1]
    times, peak = [], 0
    t_start = time.time()
    for step in range(steps):
        x = torch.randint(50304, [B, T], device="cuda")
        y = torch.randint(50304, [B, T], device="cuda")
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.amp.autocast("cuda", torch.bfloat16):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
        peak = max(peak, total - torch.cuda.mem_get_info()[0])
    steady = times[min(3, steps // 2):]
    ms = statistics.median(steady)
    honest = (6 * n_params + 12 * 48 * T * 1600) * B * T / (ms / 1e3) / 1e12
    rec = {
        "name": f"pytorch {variant}" + (" (torchao.float8 + autocast)" if variant == "fp8" else " (autocast)") + " + compile",
        "median_step_ms": ms,
        "tokens_per_s": B * T / (ms / 1e3),
        "tflops": honest,
        "seed_formula_tflops": 6 * n_params * 16 * 1024 / (ms / 1e3) / 1e12,
        "peak_mem_gb": peak / 1e9,
        "steps": len(steady),
        "wall_s": time.time() - t_start,
    }
    print(f"{rec['name']}: median {ms:.1f} ms over {len(steady)} steps, {honest:.1f} TFLOP/s, peak {peak / 1e9:.1f} GB")
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", default="bf16,fp8")
    args = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("pytorch: skipped (torch is not installed)")
        return
    for v in args.variants.split(","):
        if v == "fp8":
            try:
                import torchao.float8  # noqa: F401
            except ImportError:
                print("pytorch fp8: skipped (torchao is not installed)")
                continue
        run(v, args.steps, args.out)
        import torch

        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
