/* SPDX-License-Identifier: MIT */
/* What doctor asks of this host: its interfaces, ports, and the HCAs' GID tables. */
#ifndef NT_HOSTCHECK_H
#define NT_HOSTCHECK_H

#include <stdbool.h>
#include <stddef.h>

/* An interface named name (exact) or starting with it; true when it cannot tell. io: unused */
bool host_iface_exists(void *io, const char *name, bool exact);
/* This host's interface names, "lo,eth0,ib0" (each once), "" if they cannot be read */
void host_iface_list(char *buf, size_t len);
/*
 * What identifies this host's loopback: "BOOTID/net:[INODE]", the kernel's boot id and the
 * network namespace (two tracers with the same one share 127.0.0.1); "" if unreadable
 */
void host_loopback_id(char *buf, size_t len);
/* A one-line sysfs file, without its newline; false if unreadable */
bool host_read_line(const char *path, char *buf, size_t len);
/* A TCP port something listens on or holds here. io: unused */
bool host_port_in_use(void *io, int port);
/*
 * GID idx of HCA hca (NULL: the first by name, as NCCL) on port 1, from
 * /sys/class/infiniband ($NCCLTRACE_SYSFS replaces /sys, for tests): its type ("RoCE v2"), the
 * device chosen, whether the link is InfiniBand. 0, -ENODEV (no HCA) or -ENOENT (empty GID).
 */
int host_hca_gid(void *io, const char *hca, int idx, char *type, size_t tlen, char *dev,
		 size_t dlen, bool *ib);

#endif /* NT_HOSTCHECK_H */
