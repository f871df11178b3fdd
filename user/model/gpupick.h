/* SPDX-License-Identifier: MIT */
/*
 * Which GPU is a rank's, from what is known of it: the GPUs NVML lists its process on (a
 * process has a context on each GPU it touched: a stray one on GPU 0 is common, from a CUDA
 * call before torch.cuda.set_device), the GPU NCCL's log names (its busId: the one NCCL uses),
 * and where its environment points (CUDA_VISIBLE_DEVICES and LOCAL_RANK, as torchrun's
 * set_device(LOCAL_RANK) convention reads them). Pure.
 */
#ifndef NT_GPUPICK_H
#define NT_GPUPICK_H

#include <stddef.h>

struct snap_gpu;

/*
 * The index (in gpus[]) of the GPU the environment points at, -1 if it does not say: entry
 * LOCAL_RANK of CUDA_VISIBLE_DEVICES (the only entry when it has one; cvd NULL: unset, then GPU
 * LOCAL_RANK), a number as NVML's index (CUDA orders by PCI bus on identical GPUs, and always
 * with CUDA_DEVICE_ORDER=PCI_BUS_ID), a "GPU-" UUID or a prefix of one as CUDA takes it. "" or
 * a MIG instance: -1.
 */
int gpu_env_pick(const char *cvd, int local_rank, const struct snap_gpu *gpus, int n);

/*
 * Of the GPUs listed[0..nlisted) (indices in gpus[]) NVML lists the process on: the one at
 * log_bus ("0000:3b:00.0", "" none), else the environment's (env, -1 none), else the only one,
 * else the lowest listed. -1 if none is listed. also: the other listed GPUs' NVML indices,
 * "0" or "0,2", "" none.
 */
int gpu_pick(const struct snap_gpu *gpus, const int *listed, int nlisted, const char *log_bus,
	     int env, char *also, size_t alsolen);

#endif /* NT_GPUPICK_H */
