// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "diagnose/pcilint.h"
#include "model/gpupick.h"
#include "model/snaplog.h"
#include "cmd/gpuwatch.h"
#include "cmd/rankplace.h"
#include "trace/pcitopo.h"
#include "trace/procfs.h"
#include "trace/xid.h"
#include "util/clock.h"

#define MAX_GPUS    64
#define MAX_PIDS    1024
#define MAX_XIDS    64
#define MAX_HOST    32
#define SAMPLE_NS   ((uint64_t)GPUWATCH_SAMPLE_S * 1000000000ull)
#define STUCK_NS    10000000000ull /* a sample unanswered this long: NVML is stuck */
#define SOON_NS	    1000000000ull  /* want: at most a sample a second */
#define UNLISTED_NS 30000000000ull /* a rank NVML does not list: looked for this long */
#define IN_BYTES    16384
#define KMSG_BYTES  8192

extern char **environ;

struct pidgpu {
	int pid, gpu;
};

struct pidinfo {
	int pid, node; /* node: its CPUs' NUMA node, -1 several or unknown */
	int env;       /* index in cur[] of the GPU its environment points at, -1 none */
	char nic[24];  /* its NCCL network's NIC, "" not known yet */
	int nic_numa;
};

struct xidrec {
	char bus[16]; /* the kernel's "0000:3b:00" or NVML's "0000:3b:00.0" */
	int xid;
	uint64_t ns;
	char src[8], text[160];
};

struct gpuwatch {
	pid_t helper;
	int fd; /* the helper's end of a socketpair: lines both ways */
	char in[IN_BYTES];
	size_t nin;
	char status[200], nvml[200]; /* now; what NVML said at start */
	struct snap_gpu cur[MAX_GPUS], next[MAX_GPUS];
	int ncur, nnext, nnvml;
	struct pidgpu pids[MAX_PIDS], npids_next[MAX_PIDS];
	int npids, nnext_pids;
	uint64_t ecc_base[MAX_GPUS], nvl_base[MAX_GPUS];
	bool ecc_known[MAX_GPUS];
	bool once;		   /* gpuwatch_once: the helper exits after its sample */
	uint64_t start_ns, now_ns; /* the trace's start; this tick's time */
	bool pending, want;	   /* want: an Xid came, or a rank NVML did not list: sample soon */
	uint64_t asked_ns;
	struct xidrec xids[MAX_XIDS];
	int nxids;
	int kfd;
	char kbuf[KMSG_BYTES];
	size_t nk;
	struct pci_dev *pci;
	int npci;
	/* the ranks' CPU affinity as a NUMA node and their environment's GPU, read per sample */
	struct pidinfo aff[MAX_PIDS];
	int naff;
	uint64_t aff_ns; /* when aff[] was last emptied */
	struct numa_nodes nodes;
	struct lint_problem host[MAX_HOST];
	int nhost;
};

static void set_status(struct gpuwatch *g, const char *fmt, const char *a, int n)
{
	snprintf(g->status, sizeof(g->status), fmt, a, n, n == 1 ? "" : "s");
}

/*
 * The tracer's environment without what loads libraries into a program before its own (the
 * job's LD_PRELOAD, which nccltrace keeps to hand to the job: a preloaded libnccl, say, has no
 * business in nccltrace's helper); LD_LIBRARY_PATH stays (where a container puts NVML). NULL on
 * ENOMEM; the strings are environ's.
 */
static char **helper_env(void)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 1, sizeof(*env));
	for (size_t i = 0; env && i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "LD_AUDIT=", 9))
			env[k++] = environ[i];
	return env;
}

static void spawn_helper(struct gpuwatch *g, const char *helper, const char *arg)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	int sv[2];
	char *argv[] = {(char *)helper, (char *)arg, NULL}, **env;

	if (!helper) {
		snprintf(g->status, sizeof(g->status), "no NVML: nccltrace-nvml not found");
		return;
	}
	if (!(env = helper_env()))
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		free(env);
		return;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
	/* not the tracer's blocked signals (its signalfd's) */
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
	if (posix_spawn(&g->helper, helper, &fa, &at, argv, env)) {
		g->helper = 0;
		close(sv[0]);
		snprintf(g->status, sizeof(g->status), "no NVML: %s could not start", helper);
	} else {
		g->fd = sv[0];
		fcntl(g->fd, F_SETFL, fcntl(g->fd, F_GETFL) | O_NONBLOCK);
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	free(env);
}

/* The kernel's log, from now on (a regular file for tests: read on from its end) */
static void open_kmsg(struct gpuwatch *g)
{
	const char *path = getenv("NCCLTRACE_KMSG");

	g->kfd = open(path && *path ? path : "/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (g->kfd >= 0)
		lseek(g->kfd, 0, SEEK_END);
}

struct gpuwatch *gpuwatch_open(const char *helper, uint64_t now)
{
	struct gpuwatch *g = calloc(1, sizeof(*g));
	struct pci_iommu io;
	int n;

	if (!g)
		return NULL;
	g->fd = g->kfd = -1;
	g->start_ns = now;
	spawn_helper(g, helper, NULL);
	open_kmsg(g);
	numa_nodes_read(&g->nodes);
	if ((n = pci_scan(&g->pci)) > 0) {
		g->npci = n;
		pci_iommu(&io);
		g->nhost = pci_lint(g->pci, n, &io, g->host, MAX_HOST);
	}
	return g;
}

const char *gpuwatch_status(const struct gpuwatch *g)
{
	return g ? g->status : "";
}

double gpuwatch_helper_cpu_s(const struct gpuwatch *g)
{
	struct proc_stat st;

	if (!g || g->helper <= 0 || procfs_read_stat(g->helper, &st))
		return -1;
	return (double)st.cpu_ns / 1e9;
}

void gpuwatch_close(struct gpuwatch *g)
{
	if (!g)
		return;
	if (g->fd >= 0)
		close(g->fd);
	if (g->helper > 0) {
		kill(g->helper, SIGKILL);
		while (waitpid(g->helper, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (g->kfd >= 0)
		close(g->kfd);
	free(g->pci);
	free(g);
}

/* NVML's "00000000:3B:00.0" as sysfs names it, "0000:3b:00.0" */
static void norm_bus(const char *in, char *out, size_t len)
{
	const char *colon = strchr(in, ':');

	if (colon && colon - in == 8)
		in += 4;
	snprintf(out, len, "%s", in);
	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
}

static void blank_gpu(struct snap_gpu *d, int index)
{
	memset(d, 0, sizeof(*d));
	d->index = index;
	d->numa = d->util = d->sm_mhz = d->sm_max_mhz = d->persistence = -1;
}

static int num(const char *v)
{
	return (int)strtol(v, NULL, 10);
}

/* "gpu IDX key=value ..." into next[] */
static void gpu_line(struct gpuwatch *g, char *line)
{
	char *save = NULL, *tok = strtok_r(line, " ", &save);
	struct snap_gpu *d;

	if (!(tok = strtok_r(NULL, " ", &save)) || g->nnext >= MAX_GPUS)
		return;
	d = &g->next[g->nnext++];
	blank_gpu(d, num(tok));
	snprintf(d->how, sizeof(d->how), "nvml");
	while ((tok = strtok_r(NULL, " ", &save))) {
		char *v = strchr(tok, '=');

		if (!v)
			continue;
		*v++ = 0;
		if (!strcmp(tok, "uuid"))
			snprintf(d->uuid, sizeof(d->uuid), "%s", v);
		else if (!strcmp(tok, "name")) {
			snprintf(d->name, sizeof(d->name), "%s", v);
			for (char *p = d->name; *p; p++)
				*p = *p == '_' ? ' ' : *p;
		} else if (!strcmp(tok, "bus"))
			norm_bus(v, d->bus, sizeof(d->bus));
		else if (!strcmp(tok, "util"))
			d->util = num(v);
		else if (!strcmp(tok, "sm"))
			d->sm_mhz = num(v);
		else if (!strcmp(tok, "smmax"))
			d->sm_max_mhz = num(v);
		else if (!strcmp(tok, "throttle"))
			d->throttle = strtoull(v, NULL, 16);
		else if (!strcmp(tok, "ecc"))
			d->ecc_new = strtoull(v, NULL, 10); /* the count: made new at the commit */
		else if (!strcmp(tok, "remap_pending"))
			d->remap_pending = num(v) > 0;
		else if (!strcmp(tok, "remap_failed"))
			d->remap_failed = num(v) > 0;
		else if (!strcmp(tok, "pcie"))
			sscanf(v, "%dx%d", &d->pcie_gen, &d->pcie_width);
		else if (!strcmp(tok, "pciemax"))
			sscanf(v, "%dx%d", &d->pcie_gen_max, &d->pcie_width_max);
		else if (!strcmp(tok, "nvlink"))
			sscanf(v, "%d/%d", &d->nvlink_up, &d->nvlink_known);
		else if (!strcmp(tok, "nvlerr"))
			d->nvlink_err_new = strtoull(v, NULL, 10); /* made new at the commit */
		else if (!strcmp(tok, "persistence"))
			d->persistence = num(v) > 0;
	}
}

static void add_xid(struct gpuwatch *g, const char *bus, int xid, const char *src, const char *text,
		    uint64_t now)
{
	struct xidrec *x;

	if (g->nxids == MAX_XIDS) /* the oldest makes room */
		memmove(g->xids, g->xids + 1, sizeof(g->xids[0]) * --g->nxids);
	x = &g->xids[g->nxids++];
	snprintf(x->bus, sizeof(x->bus), "%s", bus);
	x->xid = xid;
	x->ns = now;
	snprintf(x->src, sizeof(x->src), "%s", src);
	snprintf(x->text, sizeof(x->text), "%s", text);
}

/* the sample is whole: next[] becomes cur[], ECC counts made new since the first sample */
static void commit(struct gpuwatch *g, uint64_t now)
{
	for (int i = 0; i < g->nnext; i++) {
		struct snap_gpu *d = &g->next[i];
		int k = d->index;
		uint64_t ecc = d->ecc_new, nvl = d->nvlink_err_new;

		d->sampled_ns = now;
		if (k >= 0 && k < MAX_GPUS) {
			if (!g->ecc_known[k]) {
				g->ecc_base[k] = ecc;
				g->nvl_base[k] = nvl;
				g->ecc_known[k] = true;
			}
			d->ecc_new = ecc > g->ecc_base[k] ? ecc - g->ecc_base[k] : 0;
			d->nvlink_err_new = nvl > g->nvl_base[k] ? nvl - g->nvl_base[k] : 0;
		}
		for (int j = 0; j < g->npci; j++)
			if (!strcmp(g->pci[j].bdf, d->bus))
				d->numa = g->pci[j].numa;
	}
	memcpy(g->cur, g->next, sizeof(g->cur[0]) * (size_t)g->nnext);
	g->ncur = g->nnvml = g->nnext;
	memcpy(g->pids, g->npids_next, sizeof(g->pids[0]) * (size_t)g->nnext_pids);
	g->npids = g->nnext_pids;
	g->nnext = g->nnext_pids = 0;
	g->pending = false;
	g->naff = 0; /* affinities read again */
	if (g->nvml[0])
		snprintf(g->status, sizeof(g->status), "%s", g->nvml); /* no longer stuck */
}

static void helper_line(struct gpuwatch *g, char *line, uint64_t now)
{
	char drv[64];
	int a, b;

	if (!strncmp(line, "nvml ", 5) && sscanf(line + 5, "%63s %d", drv, &a) == 2) {
		set_status(g, "NVML %s, %d GPU%s", drv, a);
		snprintf(g->nvml, sizeof(g->nvml), "%s", g->status);
	} else if (!strncmp(line, "nonvml ", 7))
		snprintf(g->status, sizeof(g->status), "no NVML: %s", line + 7);
	else if (!strncmp(line, "gpu ", 4))
		gpu_line(g, line);
	else if (sscanf(line, "pid %d %d", &a, &b) == 2 && g->nnext_pids < MAX_PIDS)
		g->npids_next[g->nnext_pids++] = (struct pidgpu){.pid = b, .gpu = a};
	else if (!strcmp(line, "end"))
		commit(g, now);
	else if (sscanf(line, "xid %d %d", &a, &b) == 2)
		for (int i = 0; i < g->nnvml; i++)
			if (g->cur[i].index == a) {
				add_xid(g, g->cur[i].bus, b, "nvml", "", now);
				g->want = true;
			}
}

static void read_helper(struct gpuwatch *g, uint64_t now)
{
	ssize_t r;
	char *nl;

	while (g->fd >= 0 && (r = read(g->fd, g->in + g->nin, sizeof(g->in) - 1 - g->nin)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			break;
		}
		g->nin += (size_t)r;
		g->in[g->nin] = 0;
		while ((nl = strchr(g->in, '\n'))) {
			*nl = 0;
			helper_line(g, g->in, now);
			g->nin -= (size_t)(nl + 1 - g->in);
			memmove(g->in, nl + 1, g->nin + 1);
		}
		if (g->nin == sizeof(g->in) - 1)
			g->nin = 0; /* a line longer than the buffer: not the helper's */
	}
	/* it closed: NVML went away with it */
	close(g->fd);
	g->fd = -1;
	if (!strncmp(g->status, "NVML", 4) && !g->once)
		snprintf(g->status, sizeof(g->status), "no NVML: nccltrace-nvml exited");
}

static void read_kmsg(struct gpuwatch *g, uint64_t now)
{
	struct xid_event e;
	ssize_t r;
	char *nl;

	while (g->kfd >= 0) {
		r = read(g->kfd, g->kbuf + g->nk, sizeof(g->kbuf) - 1 - g->nk);
		if (r < 0 && errno == EPIPE)
			continue; /* records were overwritten before we read them */
		if (r <= 0)
			return;
		g->nk += (size_t)r;
		g->kbuf[g->nk] = 0;
		while ((nl = memchr(g->kbuf, '\n', g->nk))) {
			if (xid_parse_kmsg(g->kbuf, (size_t)(nl - g->kbuf), &e)) {
				add_xid(g, e.bus, e.xid, "kmsg", e.text, now);
				g->want = true;
			}
			g->nk -= (size_t)(nl + 1 - g->kbuf);
			memmove(g->kbuf, nl + 1, g->nk);
		}
		if (g->nk == sizeof(g->kbuf) - 1)
			g->nk = 0;
	}
}

/* NCCL's busId (its int64 form) as "0000:3b:00.0" */
static void log_bdf(const struct snap_log_comm *c, char *bdf, size_t len)
{
	snprintf(bdf, len, "%04lx:%02lx:%02lx.%lx", (unsigned long)(c->bus_id >> 20 & 0xffff),
		 (unsigned long)(c->bus_id >> 12 & 0xff), (unsigned long)(c->bus_id >> 4 & 0xff),
		 (unsigned long)(c->bus_id & 0xf));
}

/* a GPU put into cur[] for one rank, told how; NULL when full */
static struct snap_gpu *add_gpu(struct gpuwatch *g, const struct snap_gpu *from, int index,
				const char *bdf, const char *how)
{
	struct snap_gpu *d;

	if (g->ncur >= MAX_GPUS)
		return NULL;
	d = &g->cur[g->ncur++];
	if (from)
		*d = *from;
	else
		blank_gpu(d, index);
	if (bdf)
		snprintf(d->bus, sizeof(d->bus), "%.12s", bdf);
	snprintf(d->how, sizeof(d->how), "%s", how);
	for (int j = 0; !from && j < g->npci; j++)
		if (!strcmp(g->pci[j].bdf, d->bus))
			d->numa = g->pci[j].numa;
	return d;
}

/* the GPU of NCCL's busId in the NCCL log: found or added to cur[] */
static struct snap_gpu *log_gpu(struct gpuwatch *g, const struct snap_log_comm *c)
{
	char bdf[40];

	if (!c->bus_id)
		return NULL;
	log_bdf(c, bdf, sizeof(bdf));
	for (int i = g->nnvml; i < g->ncur; i++)
		if (!strcmp(g->cur[i].bus, bdf) && !strcmp(g->cur[i].how, "nccl log"))
			return &g->cur[i];
	for (int i = 0; i < g->nnvml; i++)
		if (!strcmp(g->cur[i].bus, bdf))
			return add_gpu(g, &g->cur[i], 0, NULL, "nccl log");
	return add_gpu(g, NULL, c->nvml_dev, bdf, "nccl log");
}

/* pid's CPUs' node, its environment's GPU and its NIC's node, read once a sample */
static const struct pidinfo *proc_info(struct gpuwatch *g, const struct snap_proc *p)
{
	char cvd[256];
	const char *v;

	for (int i = 0; i < g->naff; i++)
		if (g->aff[i].pid == p->pid)
			return &g->aff[i];
	if (g->naff == MAX_PIDS)
		return NULL;
	v = pid_cuda_visible(p->pid, cvd, sizeof(cvd));
	g->aff[g->naff] = (struct pidinfo){.pid = p->pid,
					   .node = numa_node_of_pid(&g->nodes, p->pid),
					   .env = gpu_env_pick(v, p->local_rank, g->cur, g->nnvml)};
	g->aff[g->naff].nic_numa = rank_nic(p, g->aff[g->naff].nic, sizeof(g->aff[0].nic));
	return &g->aff[g->naff++];
}

static struct snap_gpu *proc_gpu(struct gpuwatch *g, struct snap_proc *p)
{
	const struct snap_log_comm *c =
		p->nccl_log && p->nccl_log->ncomm ? &p->nccl_log->comm[0] : NULL;
	const struct pidinfo *pi = p->rank >= 0 && !p->exited ? proc_info(g, p) : NULL;
	int listed[MAX_GPUS], nl = 0, k;
	char bdf[40] = "";

	p->gpu_env = pi && pi->env >= 0 ? g->cur[pi->env].index : -1;
	p->gpu_also[0] = 0;
	if (c && c->bus_id)
		log_bdf(c, bdf, sizeof(bdf));
	for (int i = 0; i < g->npids; i++)
		if (g->pids[i].pid == p->pid)
			for (int j = 0; j < g->nnvml && nl < MAX_GPUS; j++)
				if (g->cur[j].index == g->pids[i].gpu)
					listed[nl++] = j;
	k = gpu_pick(g->cur, listed, nl, bdf, pi ? pi->env : -1, p->gpu_also, sizeof(p->gpu_also));
	if (k >= 0)
		return &g->cur[k];
	/*
	 * a rank NVML did not list yet: sampled again soon, in the trace's first UNLISTED_NS
	 * only (NVML in another pid namespace never lists it: no sample a second for ever)
	 */
	if (p->rank >= 0 && !p->exited && g->nnvml && g->now_ns - g->start_ns < UNLISTED_NS)
		g->want = true;
	if (c && c->bus_id)
		return log_gpu(g, c);
	if (pi && pi->env >= 0)
		return add_gpu(g, &g->cur[pi->env], 0, NULL, "env");
	return NULL;
}

/* the latest Xid and the host's PCI problems, onto each GPU */
static void decorate(struct gpuwatch *g)
{
	for (int i = 0; i < g->ncur; i++) {
		struct snap_gpu *d = &g->cur[i];
		char lbl[32];

		for (int k = 0; k < g->nxids; k++)
			if (xid_bus_is(g->xids[k].bus, d->bus)) {
				d->xid = g->xids[k].xid;
				d->xid_ns = g->xids[k].ns;
				snprintf(d->xid_src, sizeof(d->xid_src), "%s", g->xids[k].src);
				snprintf(d->xid_text, sizeof(d->xid_text), "%s", g->xids[k].text);
			}
		snprintf(lbl, sizeof(lbl), "GPU %s", d->bus);
		d->host_note[0] = 0;
		for (int k = 0; k < g->nhost && !d->host_note[0]; k++)
			if (g->host[k].sev != LINT_INFO && strstr(g->host[k].what, lbl))
				snprintf(d->host_note, sizeof(d->host_note), "%s", g->host[k].what);
	}
}

void gpuwatch_tick(struct gpuwatch *g, struct snapshot *s, uint64_t now, bool urgent)
{
	if (!g)
		return;
	g->now_ns = now;
	read_helper(g, now);
	read_kmsg(g, now);
	g->ncur = g->nnvml;		    /* the NCCL log's GPUs are found again each tick */
	if (now - g->aff_ns >= SAMPLE_NS) { /* without NVML's samples too */
		g->naff = 0;
		g->aff_ns = now;
	}
	for (int i = 0; i < s->nprocs; i++) {
		struct snap_proc *p = &s->procs[i];
		const struct pidinfo *pi;

		p->gpu = proc_gpu(g, p);
		if ((p->gpu || p->rank >= 0) && !p->exited && (pi = proc_info(g, p))) {
			p->cpu_numa = pi->node;
			p->nic_numa = pi->nic_numa;
			snprintf(p->nic, sizeof(p->nic), "%s", pi->nic);
		}
	}
	decorate(g);
	if (g->want && now - g->asked_ns >= SOON_NS)
		urgent = true;
	if (g->fd >= 0 && !g->pending &&
	    (urgent || !g->asked_ns || now - g->asked_ns >= SAMPLE_NS)) {
		g->want = false;
		if (send(g->fd, "sample\n", 7, MSG_NOSIGNAL | MSG_DONTWAIT) == 7) {
			g->pending = true;
			g->asked_ns = now;
		}
	} else if (g->pending && now - g->asked_ns > STUCK_NS &&
		   strncmp(g->status, "NVML stuck", 10)) {
		snprintf(g->status, sizeof(g->status),
			 "NVML stuck: no sample for %llu s (a GPU may have fallen off the bus)",
			 (unsigned long long)(STUCK_NS / 1000000000ull));
	}
}

int gpuwatch_once(const char *helper, struct snap_gpu *out, int max, char *status, size_t len,
		  int timeout_s)
{
	struct gpuwatch *g = calloc(1, sizeof(*g));
	uint64_t deadline = clock_mono_ns() + (uint64_t)timeout_s * 1000000000ull, now;
	int n = 0;

	if (!g) {
		snprintf(status, len, "no NVML: out of memory");
		return 0;
	}
	g->fd = g->kfd = -1;
	g->once = true;
	spawn_helper(g, helper, "--once");
	while (g->fd >= 0 && (now = clock_mono_ns()) < deadline) {
		struct pollfd p = {.fd = g->fd, .events = POLLIN};

		poll(&p, 1, (int)((deadline - now) / 1000000) + 1);
		read_helper(g, clock_mono_ns());
	}
	if (g->fd >= 0)
		snprintf(g->status, sizeof(g->status), "NVML stuck: no answer in %d s", timeout_s);
	for (int i = 0; i < g->ncur && n < max; i++) {
		out[n] = g->cur[i];
		for (int j = 0; j < g->npci; j++)
			if (!strcmp(g->pci[j].bdf, out[n].bus))
				out[n].numa = g->pci[j].numa;
		n++;
	}
	snprintf(status, len, "%s", g->status[0] ? g->status : "no NVML: no answer");
	gpuwatch_close(g);
	return n;
}
