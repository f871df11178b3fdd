/* SPDX-License-Identifier: MIT */
/*
 * What a thread's stack says about NCCL, for the builds where the phase probes cannot resolve
 * (NVIDIA's libnccl stripped to .dynsym, the public API): its frames in NCCL, the public call
 * it is inside, one short line. Pure.
 */
#ifndef NT_NCCLSTACK_H
#define NT_NCCLSTACK_H

#include <stdbool.h>
#include "model/snapshot.h"

/* A frame of NCCL's: in libnccl.so*, or an NCCL name linked into another library. */
bool nccl_stack_frame(const struct stack_frame *f);
/*
 * A frame of a CUDA call that waits for the GPU's work (cuStreamSynchronize and the like, in
 * the driver or the runtime)
 */
bool nccl_stack_cuda_wait(const struct stack_frame *f);
/* Fills nccl_frames, nccl_api, nccl_call and gpu_wait of s from s->st. */
void nccl_stack_describe(struct snap_stack *s);

#endif /* NT_NCCLSTACK_H */
