// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "trace/procfs.h"

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	return 0;
}

int procfs_parse_stat(const char *buf, struct proc_stat *st)
{
	const char *open_p = strchr(buf, '('), *close_p = strrchr(buf, ')');
	unsigned long long utime, stime;
	size_t cl;
	long ticks = sysconf(_SC_CLK_TCK);

	if (!open_p || !close_p || close_p < open_p)
		return -EINVAL;
	cl = close_p - open_p - 1;
	if (cl >= sizeof(st->comm))
		cl = sizeof(st->comm) - 1;
	memcpy(st->comm, open_p + 1, cl);
	st->comm[cl] = '\0';
	/* after ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (sscanf(close_p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &st->state,
		   &st->ppid, &utime, &stime) != 4)
		return -EINVAL;
	if (ticks <= 0)
		ticks = 100;
	st->cpu_ns = (utime + stime) * (1000000000ULL / ticks);
	return 0;
}

int procfs_read_stat(int pid, struct proc_stat *st)
{
	char path[64], buf[1024];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	err = read_small(path, buf, sizeof(buf));
	return err ? err : procfs_parse_stat(buf, st);
}

int procfs_read_maps(int pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got + 1 < len &&
	       ((n = read(fd, buf + got, len - 1 - got)) > 0 || (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	close(fd);
	buf[got] = '\0';
	return 0;
}

int procfs_read_task_stat(int pid, int tid, struct proc_stat *st)
{
	char path[80], buf[1024];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	err = read_small(path, buf, sizeof(buf));
	return err ? err : procfs_parse_stat(buf, st);
}

int procfs_tracer_pid(int pid, int tid)
{
	char path[80], buf[2048];
	const char *t;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	err = read_small(path, buf, sizeof(buf));
	if (err)
		return err;
	t = strstr(buf, "\nTracerPid:");
	return t ? atoi(t + 11) : -EINVAL;
}

int procfs_read_environ(int pid, char **out, size_t *outlen)
{
	char path[64];
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap);
	int fd;

	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb = cap < (8u << 20) ? realloc(buf, cap * 2) : NULL;

			if (!nb)
				break; /* keep what fits: an 8 MiB environment is already absurd */
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	*out = buf;
	*outlen = len;
	return 0;
}

int procfs_parse_syscall(const char *buf, long *nr, unsigned long *arg0)
{
	if (strncmp(buf, "running", 7) == 0) {
		*nr = -1;
		*arg0 = 0;
		return 0;
	}
	if (sscanf(buf, "%ld %lx", nr, arg0) < 1)
		return -EINVAL;
	return 0;
}

int procfs_read_syscall(int pid, int tid, long *nr, unsigned long *arg0)
{
	char path[80], buf[256];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	err = read_small(path, buf, sizeof(buf));
	if (err)
		return err;
	*arg0 = 0;
	return procfs_parse_syscall(buf, nr, arg0);
}

int procfs_parse_schedstat(const char *buf, uint64_t *run_ns, uint64_t *wait_ns)
{
	unsigned long long r, w;

	if (sscanf(buf, "%llu %llu", &r, &w) != 2)
		return -EINVAL;
	*run_ns = r;
	*wait_ns = w;
	return 0;
}

int procfs_read_schedstat(int pid, int tid, uint64_t *run_ns, uint64_t *wait_ns)
{
	char path[80], buf[128];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	err = read_small(path, buf, sizeof(buf));
	return err ? err : procfs_parse_schedstat(buf, run_ns, wait_ns);
}

int procfs_fd_socket_inode(int pid, int fd, uint64_t *ino)
{
	char path[64], link[64];
	ssize_t n;
	unsigned long long v;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	if (sscanf(link, "socket:[%llu]", &v) != 1)
		return -ENOTSOCK;
	*ino = v;
	return 0;
}

int procfs_each_task(int pid, void (*cb)(void *ctx, int tid), void *ctx)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid > 0) {
			cb(ctx, tid);
			n++;
		}
	}
	closedir(d);
	return n;
}

struct tid_list {
	int *v;
	int n, max;
};

static void add_tid(void *ctx, int tid)
{
	struct tid_list *t = ctx;

	if (t->n < t->max)
		t->v[t->n++] = tid;
}

int procfs_tids(int pid, int *out, int max)
{
	struct tid_list t = {.v = out, .max = max};
	int rc = procfs_each_task(pid, add_tid, &t);

	return rc < 0 ? rc : t.n;
}
