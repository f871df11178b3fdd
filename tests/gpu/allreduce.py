# SPDX-License-Identifier: MIT
"""A training-like loop for nccltrace's GPU runs: torchrun starts it, each rank all-reduces a
tensor ITERS times; --stall-rank R sleeps --stall-for S seconds (--stall-at loop: before
iteration ITERS/2; first: before the first collective) and prints the stall's wall-clock time,
like the C fixtures do. --stall-mode mismatch makes that rank broadcast where the others
all-reduce (a hang in the GPU kernels), count makes it all-reduce NUMEL/2+12345 elements where
the others all-reduce NUMEL (NCCL does not check: it completes, with corrupt data), slow makes
it sleep --stall-for before every all-reduce (a straggler), stop makes it SIGSTOP itself
(whoever runs it sends SIGCONT), skip makes it skip that all-reduce, finish its loop one
collective short and exit, its marker printed then (the others wait for it for ever).
--eager-init creates the NCCL communicator in init_process_group
(device_id=...); otherwise PyTorch creates it lazily at the first collective. --one-gpu puts
every rank on GPU 0 with its own NCCL_HOSTID: NCCL then takes each rank for a host of its own and
joins them with its network transport, as across nodes (the ranks time-slice the GPU). --settle S
waits S seconds after importing torch (0: nccltrace probes NCCL as the loader maps it)."""
import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=50)
p.add_argument("--numel", type=int, default=1 << 20)
p.add_argument("--stall-rank", type=int, default=-1)
p.add_argument("--stall-for", type=float, default=8.0)
p.add_argument("--stall-at", choices=["loop", "first"], default="loop")
p.add_argument("--stall-mode", choices=["sleep", "mismatch", "count", "slow", "stop", "skip"],
               default="sleep")
p.add_argument("--eager-init", action="store_true")
p.add_argument("--one-gpu", action="store_true")
p.add_argument("--settle", type=float, default=0.0)
a = p.parse_args()

rank = int(os.environ["RANK"])
gpu = 0 if a.one_gpu else int(os.environ["LOCAL_RANK"])
if a.one_gpu:
    os.environ["NCCL_HOSTID"] = f"nccltrace-host-{rank}"
torch.cuda.set_device(gpu)
time.sleep(a.settle)
dev = torch.device("cuda", gpu)
if a.eager_init:
    dist.init_process_group("nccl", device_id=dev)
else:
    dist.init_process_group("nccl")
x = torch.ones(a.numel, device="cuda")
loop_t0 = time.monotonic()
for i in range(a.iters):
    odd = rank == a.stall_rank and i == (0 if a.stall_at == "first" else a.iters // 2)
    if odd and a.stall_mode == "skip":
        continue
    if odd or (rank == a.stall_rank and a.stall_mode == "slow" and i == 0):
        print(f"allreduce: STALL rank {rank} pid {os.getpid()} at_realtime_ns {time.time_ns()}",
              file=sys.stderr, flush=True)
    if (odd and a.stall_mode == "sleep") or (rank == a.stall_rank and a.stall_mode == "slow"):
        time.sleep(a.stall_for)
    if odd and a.stall_mode == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    if odd and a.stall_mode == "mismatch":
        dist.broadcast(x, src=0)
    elif odd and a.stall_mode == "count":
        dist.all_reduce(x[: a.numel // 2 + 12345])
    else:
        dist.all_reduce(x)
    torch.cuda.synchronize()
    time.sleep(0.02)
if rank == a.stall_rank and a.stall_mode == "skip":
    print(f"allreduce: STALL rank {rank} pid {os.getpid()} at_realtime_ns {time.time_ns()}",
          file=sys.stderr, flush=True)
    os._exit(0)
if rank == 0:
    loop_s = time.monotonic() - loop_t0
    print(f"allreduce: {a.iters} all-reduces done, x[0]={x[0].item()}, the loop in {loop_s:.2f} s "
          f"({loop_s / max(a.iters, 1) * 1000:.1f} ms each)", flush=True)
dist.destroy_process_group()
