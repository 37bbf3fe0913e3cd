"""NCCL bandwidth of the two collectives ZeRO-1 uses, on this machine's GPUs, for the scaling projection in
docs/multi_gpu.md: reduce-scatter and all-gather of GPT-1.5B's BF16 gradients/weights (3.1 GB), median of 10.
Bus bandwidth as nccl-tests defines it: bytes * (n - 1) / n / time.
Usage: torchrun --nproc-per-node N scripts/bench/nccl_bandwidth.py   (NCCL_NVLS_ENABLE=0 stays set)
"""
import os
import statistics

import torch
import torch.distributed as dist

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
numel = 1_557_686_400  # GPT-2 1.5B parameters (V=50304)
numel -= numel % world
full = torch.empty(numel, dtype=torch.bfloat16, device="cuda")
shard = torch.empty(numel // world, dtype=torch.bfloat16, device="cuda")


def timed(fn):
    times = []
    for i in range(12):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if i >= 2:
            times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


for name, fn in (("reduce_scatter", lambda: dist.reduce_scatter_tensor(shard, full)),
                 ("all_gather", lambda: dist.all_gather_into_tensor(full, shard))):
    t = timed(fn)
    bus = full.numel() * 2 * (world - 1) / world / t / 1e9
    if rank == 0:
        print(f"nccl {name:15} {world} GPUs: {full.numel() * 2 / 1e9:.2f} GB in {t * 1e3:.2f} ms, "
              f"bus bandwidth {bus:.0f} GB/s")
dist.destroy_process_group()
