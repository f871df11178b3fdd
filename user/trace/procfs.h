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
/* /proc/PID/task/TID/stat: one thread's state */
int procfs_read_task_stat(int pid, int tid, struct proc_stat *st);
/* TracerPid of /proc/PID/task/TID/status: the pid ptrace-attached to the thread, 0 if none */
int procfs_tracer_pid(int pid, int tid);
/* *buf is malloc'ed; NUL-separated entries */
int procfs_read_environ(int pid, char **buf, size_t *len);
/* /proc/PID/maps into buf (NUL-terminated, cut at len - 1 bytes); 0 or -errno */
int procfs_read_maps(int pid, char *buf, size_t len);
/* Parses /proc/PID/task/TID/syscall: "NR ARG1 ..." -> nr, first argument; nr -1 when running. */
int procfs_parse_syscall(const char *buf, long *nr, unsigned long *arg0);
int procfs_read_syscall(int pid, int tid, long *nr, unsigned long *arg0);
/* socket inode of /proc/PID/fd/FD, -ENOTSOCK for other files */
int procfs_fd_socket_inode(int pid, int fd, uint64_t *ino);
/*
 * /proc/PID/task/TID/schedstat (CONFIG_SCHED_INFO): time on a CPU, and time runnable but
 * waiting for one (run_delay), both ns; the pure parser and the reader.
 */
int procfs_parse_schedstat(const char *buf, uint64_t *run_ns, uint64_t *wait_ns);
int procfs_read_schedstat(int pid, int tid, uint64_t *run_ns, uint64_t *wait_ns);
/* Calls cb for each thread id of pid; returns the count or -errno. */
int procfs_each_task(int pid, void (*cb)(void *ctx, int tid), void *ctx);
/* The thread ids of pid into out[0..max); how many went there, or -errno. */
int procfs_tids(int pid, int *out, int max);

#endif /* NT_PROCFS_H */
