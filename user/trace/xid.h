/* SPDX-License-Identifier: MIT */
/*
 * NVIDIA's driver reports a GPU's errors as Xids, in the kernel's log ("NVRM: Xid
 * (PCI:0000:3b:00): 79, pid=4711, name=python3, GPU has fallen off the bus.") and as NVML
 * events. This reads the log's records, as /dev/kmsg gives them, and says what each Xid means
 * and what fixes it (NVIDIA's Xid catalogue).
 */
#ifndef NT_XID_H
#define NT_XID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xid_event {
	char bus[16]; /* the GPU as the line names it: "0000:3b:00" (no function) */
	int xid;
	int pid;	/* the process the driver named, 0 if none */
	char text[160]; /* the line from "NVRM:" */
};

/*
 * One /dev/kmsg record, "PRI,SEQ,USEC,FLAGS[,...];MESSAGE" (len bytes, no NUL needed): true if
 * it is the kernel's own (facility 0: a line a user wrote to /dev/kmsg is not) NVRM Xid line,
 * parsed into out.
 */
bool xid_parse_kmsg(const char *rec, size_t len, struct xid_event *out);

/* What an Xid means, "" if not in the catalogue; and what to do about it */
const char *xid_meaning(int xid);
const char *xid_fix(int xid);

/* bus "0000:3b:00" names the GPU at bdf "0000:3b:00.0" (case aside) */
bool xid_bus_is(const char *bus, const char *bdf);

#endif /* NT_XID_H */
