// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "trace/xid.h"

static const struct {
	int xid;
	const char *what, *fix;
} catalogue[] = {
#define APP                                                                                        \
	"the rank's own kernel faulted: find it with compute-sanitizer or CUDA_LAUNCH_BLOCKING=1"
#define RESET                                                                                      \
	"drain the node: reset the GPU (nvidia-smi -r -i GPU) or reboot; if it recurs, replace it"
#define ECC "restart the job; nvidia-smi -q -d ECC,ROW_REMAPPER; a GPU reset applies pending remaps"
	{13, "graphics engine exception (an illegal instruction or address in a kernel)", APP},
	{31, "GPU memory page fault (a kernel touched an address it does not own)", APP},
	{32, "invalid or corrupted push buffer stream", RESET},
	{38, "driver firmware error", RESET},
	{43, "GPU stopped processing (a kernel of the process faulted)", APP},
	{45, "preemptive cleanup after earlier errors (the process's work was killed)",
	 "see the Xid before it; the process ended or was killed"},
	{48, "double-bit ECC error (uncorrectable memory error)", ECC},
	{61, "internal micro-controller breakpoint or warning", RESET},
	{62, "internal micro-controller halt", RESET},
	{63, "ECC page retirement or row remapping recorded", ECC},
	{64, "ECC page retirement or row remapping failed", RESET},
	{69, "graphics engine class error", APP},
	{74, "NVLink error",
	 "nvidia-smi nvlink -s and -e; reset the GPU; check the NVLink bridge or switch"},
	{79, "GPU has fallen off the bus", RESET},
	{92, "high single-bit ECC error rate", ECC},
	{94, "contained ECC error (the processes using the memory must restart)", ECC},
	{95, "uncontained ECC error (every process on the GPU is affected)", RESET},
	{109, "context switch timeout", RESET},
	{119, "GSP RPC timeout (the GPU's firmware stopped answering)", RESET},
	{120, "GSP error", RESET},
	{121, "C2C link error", RESET},
	{140, "unrecovered ECC error", ECC},
#undef APP
#undef RESET
#undef ECC
};

static int find(int xid)
{
	for (size_t i = 0; i < sizeof(catalogue) / sizeof(catalogue[0]); i++)
		if (catalogue[i].xid == xid)
			return (int)i;
	return -1;
}

const char *xid_meaning(int xid)
{
	int i = find(xid);

	return i < 0 ? "" : catalogue[i].what;
}

const char *xid_fix(int xid)
{
	int i = find(xid);

	return i < 0 ? "nvidia-smi -q; NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors)"
		     : catalogue[i].fix;
}

bool xid_bus_is(const char *bus, const char *bdf)
{
	size_t n = strlen(bus);

	return n >= 7 && !strncasecmp(bus, bdf, n) && (bdf[n] == '.' || !bdf[n]);
}

bool xid_parse_kmsg(const char *rec, size_t len, struct xid_event *out)
{
	char buf[512], *msg, *p, *end;
	long pri, v;
	size_t n;

	if (!rec || !len)
		return false;
	n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
	memcpy(buf, rec, n);
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	/* the prefix: a priority whose facility is the kernel's (0) */
	pri = strtol(buf, &end, 10);
	if (end == buf || *end != ',' || pri < 0 || pri >> 3 != 0 || !(msg = strchr(buf, ';')))
		return false;
	msg++;
	if (strncmp(msg, "NVRM: Xid (", 11))
		return false;
	memset(out, 0, sizeof(*out));
	snprintf(out->text, sizeof(out->text), "%s", msg);
	p = msg + 11;
	if (!strncmp(p, "PCI:", 4))
		p += 4;
	n = strcspn(p, ")");
	if (!p[n] || n < 7 || n >= sizeof(out->bus))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)p[i]) && p[i] != ':' && p[i] != '.')
			return false;
	memcpy(out->bus, p, n);
	out->bus[n] = 0;
	p += n + 1;
	if (*p != ':')
		return false;
	v = strtol(p + 1, &end, 10);
	if (end == p + 1 || v <= 0 || v > 100000)
		return false;
	out->xid = (int)v;
	if ((p = strstr(end, "pid=")) && (v = strtol(p + 4, &end, 10)) > 0 && v < (1L << 22))
		out->pid = (int)v;
	return true;
}
