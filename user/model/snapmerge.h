/* SPDX-License-Identifier: MIT */
/*
 * The snapshots of one job's hosts as one: every host's processes, connections and
 * communicators, the two ends of a connection between hosts joined by address, so that
 * diagnose() follows a wait from a rank on one host to its peer on another.
 */
#ifndef NT_SNAPMERGE_H
#define NT_SNAPMERGE_H

#include "model/snapjson.h"

struct snapmerge_in {
	const struct snapshot *s; /* on one clock already (snapjson_parse's shift) */
	const char *host;
	/*
	 * its loopback's identity: the kernel's boot id and the network namespace
	 * ("BOOTID/net:[INODE]"), NULL if unknown. Two tracers on one kernel and one network
	 * namespace share 127.0.0.1, and their loopback connections are joined too.
	 */
	const char *loopback;
};

/*
 * One snapshot of them all, indexed. Processes are named with their host. A pid that several
 * hosts have (pid namespaces differ) keeps it on the first of them; on host i it becomes
 * pid + i * SNAPMERGE_PID_STRIDE (past any kernel's pid_max), its own pid kept in host_pid. It
 * points into the inputs' settings, stacks and logs: they must outlive it. NULL on ENOMEM.
 */
#define SNAPMERGE_PID_STRIDE (1 << 22)
struct snapstore *snapmerge(const struct snapmerge_in *in, int n);

/* The merged pid of host i's pid (as snapmerge numbers them), for a caller's own records */
int snapmerge_pid(const struct snapstore *m, int host, int pid);

#endif /* NT_SNAPMERGE_H */
