// SPDX-License-Identifier: MIT
/*
 * attach's communicator scan (nccl/ncclcommscan.h), timed: a child holds MIB of touched
 * private anonymous memory in 64 MiB blocks (as glibc's arenas and large mallocs map it) with
 * one communicator laid out at NCCL 2.28.9's offsets, and the scan of the child runs REPS
 * times: the time per process, what it searched, whether a cap stopped it, and whether the
 * communicator was found.
 *   scancost [MIB REPS]   (default 512 5)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench.h"
#include "nccl/ncclcommscan.h"

#define BLOCK	  (64UL << 20)
#define END_OFF	  1082960 /* 2.28.9: sizeof(struct ncclComm) - 8 */
#define HASH_OFF  0x1044c8
#define RANK_OFF  0x1044d0
#define NRANK_OFF 0x1044d4

/* where the child keeps its memory: escaped, so that no store to it is optimized away */
static char *volatile kept[1024];

/* The child: its memory, one comm in the middle of it, then a wait for the parent's kill */
static void hold(long mib, int fd)
{
	long n = mib * (1L << 20) / (long)BLOCK;
	uint64_t magic = NCCL_COMM_MAGIC, hash = 0x9f3c1234abcd0001ULL;
	int32_t rank = 1, nranks = 8;
	char *comm = NULL, ok = 1;

	for (long i = 0; i < n; i++) {
		char *b = malloc(BLOCK);

		if (!b)
			exit(1);
		memset(b, 0x5a, BLOCK); /* touched: real data, as a rank's heap */
		kept[i % 1023] = b;
		if (i == n / 2)
			comm = b + 4096;
	}
	if (!comm && !(comm = calloc(1, END_OFF + 8)))
		exit(1);
	memcpy(comm, &magic, 8);
	memcpy(comm + END_OFF, &magic, 8);
	memcpy(comm + HASH_OFF, &hash, 8);
	memcpy(comm + RANK_OFF, &rank, 4);
	memcpy(comm + NRANK_OFF, &nranks, 4);
	kept[1023] = comm;
	if (write(fd, &ok, 1) != 1)
		exit(1);
	pause();
	exit(0);
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 512;
	int reps = argc > 2 ? atoi(argv[2]) : 5, fds[2], found = 0;
	struct nt_nccl_offsets o;
	struct comm_scan_stats st = {0};
	double t[reps > 0 ? reps : 1];
	struct comm_found f[4];
	pid_t pid;
	char c;

	if (mib < 0 || reps < 1 || pipe(fds))
		return 64;
	pid = fork();
	if (pid == 0)
		hold(mib, fds[1]);
	if (pid < 0 || read(fds[0], &c, 1) != 1)
		return 70;
	memset(&o, 0xff, sizeof(o));
	o.comm_endmagic = END_OFF;
	o.comm_hash = HASH_OFF;
	o.comm_rank = RANK_OFF;
	o.comm_nranks = NRANK_OFF;
	for (int i = 0; i < reps; i++) {
		found = comm_scan(pid, &o, f, 4, &st);
		t[i] = st.ns / 1e6;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	qsort(t, reps, sizeof(t[0]), cmp_double);
	printf("held %ld MiB: scan %.1f ms median, %.1f ms max; searched %.0f MiB in %d mappings, "
	       "%.0f MiB more at page starts in %d, %d skipped (%.0f MiB), capped %s; %.1f GB/s; "
	       "%d candidates, found %d\n",
	       mib, t[reps / 2], t[reps - 1], st.bytes / 1048576.0, st.maps,
	       st.probed_bytes / 1048576.0, st.probed, st.skipped, st.skipped_bytes / 1048576.0,
	       st.capped ? "yes" : "no", st.bytes / (t[reps / 2] * 1e6), st.candidates, found);
	return 0;
}
