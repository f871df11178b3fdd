/* SPDX-License-Identifier: MIT */
/* Readers of /proc for the traced processes. All return 0 or -errno. */
#ifndef NT_PROCFS_H
#define NT_PROCFS_H

#include <stddef.h>
#include <stdint.h>

struct proc_stat {
	char state;
	int ppid;
	uint64_t cpu_ns; /* utime + stime */
	char comm[16];
};

/* Parses the content of /proc/PID/stat (pure; comm may hold spaces and parentheses). */
int procfs_parse_stat(const char *buf, struct proc_stat *st);
int procfs_read_stat(int pid, struct proc_stat *st);
/* *buf is malloc'ed; NUL-separated entries */
int procfs_read_environ(int pid, char **buf, size_t *len);
/* Parses /proc/PID/task/TID/syscall: "NR ARG1 ..." -> nr, first argument; nr -1 when running. */
int procfs_parse_syscall(const char *buf, long *nr, unsigned long *arg0);
int procfs_read_syscall(int pid, int tid, long *nr, unsigned long *arg0);
/* socket inode of /proc/PID/fd/FD, -ENOTSOCK for other files */
int procfs_fd_socket_inode(int pid, int fd, uint64_t *ino);
/* Calls cb for each thread id of pid; returns the count or -errno. */
int procfs_each_task(int pid, void (*cb)(void *ctx, int tid), void *ctx);

#endif /* NT_PROCFS_H */
