# SPDX-License-Identifier: MIT
"""A training-like loop for nccltrace's GPU runs: torchrun starts it, each rank all-reduces a
tensor ITERS times; --stall-rank R sleeps --stall-for S seconds before iteration ITERS/2 and
prints the stall's wall-clock time, like the C fixtures do."""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=50)
p.add_argument("--numel", type=int, default=1 << 20)
p.add_argument("--stall-rank", type=int, default=-1)
p.add_argument("--stall-for", type=float, default=8.0)
a = p.parse_args()

rank = int(os.environ["RANK"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
time.sleep(1.0)  # nccltrace finds libnccl in the maps once torch has loaded it
dist.init_process_group("nccl")
x = torch.ones(a.numel, device="cuda")
for i in range(a.iters):
    if rank == a.stall_rank and i == a.iters // 2:
        print(f"allreduce: STALL rank {rank} pid {os.getpid()} at_realtime_ns {time.time_ns()}",
              file=sys.stderr, flush=True)
        time.sleep(a.stall_for)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    time.sleep(0.02)
if rank == 0:
    print(f"allreduce: {a.iters} all-reduces done, x[0]={x[0].item()}", flush=True)
dist.destroy_process_group()
