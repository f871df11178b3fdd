// SPDX-License-Identifier: MIT
/*
 * What /proc gives about a traced process, which the process controls in part (its comm, the
 * files it maps): stat (a comm with spaces and parentheses), syscall, schedstat, and maps as
 * the NCCL library, libibverbs and the profiler plugin are found in it. The input is one text;
 * each parser gets it whole.
 */
#include <string.h>
#include "fuzz.h"
#include "nccl/nccllib.h"
#include "nccl/nccllog.h"
#include "nccl/ncclprof.h"
#include "trace/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[1 << 16];
	char path[4096];
	struct proc_stat st;
	unsigned long arg0;
	uint64_t a, b;
	long nr;
	size_t len = size < sizeof(buf) - 1 ? size : sizeof(buf) - 1;

	memcpy(buf, data, len);
	buf[len] = '\0';
	procfs_parse_stat(buf, &st);
	procfs_parse_syscall(buf, &nr, &arg0);
	procfs_parse_schedstat(buf, &a, &b);
	nccllib_find_in_maps(buf, path, sizeof(path));
	nccllib_find_verbs_in_maps(buf, path, sizeof(path));
	ncclprof_find_in_maps(buf, path, sizeof(path), &a);
	/* NCCL_DEBUG_FILE as the job sets it: %h and %p expanded */
	nccllog_expand_path(buf, "host", 4711, path, sizeof(path));
	nccllog_level_writes_file(buf);
	nccllog_subsys_init_only(buf);
	return 0;
}
