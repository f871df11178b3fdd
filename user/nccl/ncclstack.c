// SPDX-License-Identifier: MIT
/*
 * NCCL's frames in a stack. Its public API is extern "C" with default visibility (NCCL_API,
 * src/include/core.h): the unmangled nccl* and pnccl* names, the only ones of .dynsym
 * (reference/nccl-versions.md); ncclX is a weak alias of pncclX at the same address, and a lookup
 * that prefers global symbols names pncclX, shown here as ncclX. Internal functions are C++
 * (mangled) and named only where the library has its .symtab.
 */
#include <stdio.h>
#include <string.h>
#include "nccl/ncclstack.h"

#define CALL_ITEMS 4 /* names in nccl_call: the innermost ones and the outermost */

static bool nccl_name(const char *name)
{
	return !strncmp(name, "nccl", 4) || !strncmp(name, "pnccl", 5);
}

bool nccl_stack_frame(const struct stack_frame *f)
{
	char buf[128];

	if (!strncmp(stack_module_base(f->module), "libnccl.so", 10))
		return true;
	/* a static NCCL inside another library (older PyTorch builds linked it in) */
	return f->symbol[0] && nccl_name(stack_short_name(f->symbol, buf, sizeof(buf)));
}

/* The public API names: unmangled nccl* (pnccl* shown as nccl*) */
static bool public_name(const struct stack_frame *f)
{
	return f->symbol[0] && nccl_name(f->symbol);
}

/* f's name into buf, pncclX as ncclX */
static void frame_name(const struct stack_frame *f, char *buf, size_t len)
{
	char tmp[128];
	const char *n = stack_frame_name(f, tmp, sizeof(tmp));

	snprintf(buf, len, "%s", !strncmp(n, "pnccl", 5) ? n + 1 : n);
}

/*
 * The CUDA calls that wait for a stream's, an event's or the device's work, in the driver
 * (libcuda.so.1 exports them, _v2 and per-thread-stream _ptsz/_ptds variants included) or the
 * runtime (cudart, dynamic or linked into a framework with its names kept); cudaMemcpy and
 * the driver's synchronous device-to-host copies wait for the stream before theirs (what
 * PyTorch's .item() and .cpu() come to)
 */
bool nccl_stack_cuda_wait(const struct stack_frame *f)
{
	static const char *const waits[] = {
		"cuStreamSynchronize",	 "cuEventSynchronize",
		"cuCtxSynchronize",	 "cuMemcpyDtoH",
		"cudaStreamSynchronize", "cudaEventSynchronize",
		"cudaDeviceSynchronize", "cudaMemcpy",
	};

	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		size_t n = strlen(waits[i]);

		/* the name or a variant of it (cuStreamSynchronize_ptsz), not cudaMemcpyAsync */
		if (!strncmp(f->symbol, waits[i], n) && (!f->symbol[n] || f->symbol[n] == '_'))
			return true;
	}
	return false;
}

void nccl_stack_describe(struct snap_stack *s)
{
	const struct thread_stack *st = &s->st;
	char items[STACK_MAX_FRAMES][64];
	int n = 0;
	size_t off;
	bool prev_unnamed = false;

	s->nnccl = 0;
	s->nccl_api[0] = s->nccl_call[0] = '\0';
	s->gpu_wait = false;
	for (int i = 0; i < st->nframes; i++) {
		const struct stack_frame *f = &st->frames[i];

		s->gpu_wait |= nccl_stack_cuda_wait(f);
		if (!nccl_stack_frame(f)) {
			prev_unnamed = false;
			continue;
		}
		if (s->nnccl < SNAP_MAX_NCCL_FRAMES)
			s->nccl_frames[s->nnccl++] = i;
		if (public_name(f))
			frame_name(f, s->nccl_api, sizeof(s->nccl_api));
		/* a run of internal frames without names says one thing: where the first one is */
		if (!f->symbol[0] && prev_unnamed)
			continue;
		prev_unnamed = !f->symbol[0];
		frame_name(f, items[n++], sizeof(items[0]));
	}
	if (!n)
		return;
	/* a wait inside NCCL is NCCL's: gpu_wait is the program's own, outside it */
	s->gpu_wait = false;
	off = snprintf(s->nccl_call, sizeof(s->nccl_call), "inside");
	for (int k = 0; k < n && off < sizeof(s->nccl_call); k++) {
		/* the innermost names, and always the outermost: the call the program made */
		if (n > CALL_ITEMS && k >= CALL_ITEMS - 1 && k < n - 1)
			continue;
		off += snprintf(s->nccl_call + off, sizeof(s->nccl_call) - off, "%s%s",
				k == 0			       ? " "
				: n > CALL_ITEMS && k == n - 1 ? " <- ... <- "
							       : " <- ",
				items[k]);
	}
	if (off < sizeof(s->nccl_call))
		snprintf(s->nccl_call + off, sizeof(s->nccl_call) - off, ", %s%s",
			 st->syscall[0] ? "blocked in " : "running", st->syscall);
}
