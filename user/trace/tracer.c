// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "util/clock.h"
#include "util/log.h"
#include "nccltrace.h"
#include "nccltrace.skel.h"
#include "trace/tracer.h"

struct tracer {
	struct nccltrace_bpf *skel;
	struct ring_buffer *rb;
	enum nt_attach_mode mode;
	char notes[512];
	char missing[256];
	int ncpus;
	tracer_event_fn on_event;
	void *ctx;
	struct nt_verbs_offsets verbs;
	struct bpf_link *links[24];
	int nlinks;
	bool multi; /* uprobe_multi links work here */
	/* the per-call hooks (send/receive, tcp_probe): detached while the job is quiet */
	struct bpf_link *data_links[5];
	int ndata;
	bool data_off;
	bool have_probe; /* tcp_probe attached at start */
	uint32_t budget_per_s, ringbuf_bytes;
	int polled;	     /* records handed on by the current tracer__poll() */
	uint64_t poll_until; /* and when it stops */
};

/* handle_event's way to stop a consume at TRACER_POLL_MAX (libbpf returns it as is) */
#define POLL_FULL (-EMSGSIZE)

/* BPF_TRACE_UPROBE_MULTI (Linux 6.6): Debian 12's uapi headers predate it */
#define NT_TRACE_UPROBE_MULTI	 48
#define NT_F_UPROBE_MULTI_RETURN 1

/* The last libbpf warning, so a failed load can say why in one line. */
static char libbpf_last[256];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512], *big = NULL;
	const char *shown = line;
	va_list aq;
	size_t n;
	int len;

	va_copy(aq, ap);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	/*
	 * A verifier log is one message, and its verdict is at its end: -vv shows that end (the
	 * first line still goes into libbpf_last)
	 */
	if (len >= (int)sizeof(line) && log_level() >= LOG_DEBUG && (big = malloc(len + 1))) {
		vsnprintf(big, len + 1, fmt, aq);
		shown = len > 8192 ? big + len - 8192 : big;
	}
	va_end(aq);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	/* the first warning names the cause; later ones only say the load failed */
	if (level == LIBBPF_WARN && n && !libbpf_last[0])
		snprintf(libbpf_last, sizeof(libbpf_last), "%.*s", (int)sizeof(libbpf_last) - 1,
			 line);
	if (log_level() >= LOG_DEBUG || (level == LIBBPF_WARN && log_level() >= LOG_INFO + 1))
		fprintf(stderr, "libbpf: %s%s\n", big ? "..." : "", shown);
	free(big);
	return 0;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct tracer *t = ctx;

	int rc = 0;

	if (size >= sizeof(struct nt_ev_hdr) && t->on_event)
		rc = t->on_event(t->ctx, data, size);
	if (rc)
		return rc;
	/* this record is consumed either way: the next poll starts after it */
	if (++t->polled >= TRACER_POLL_MAX ||
	    (t->polled % 32 == 0 && clock_mono_ns() >= t->poll_until))
		return POLL_FULL;
	return 0;
}

static void set_mode_autoload(const struct tracer *t, struct nccltrace_bpf *s,
			      enum nt_attach_mode m)
{
	bpf_program__set_autoload(s->progs.nt_fexit_send, m == NT_MODE_FENTRY);
	bpf_program__set_autoload(s->progs.nt_fexit_recv, m == NT_MODE_FENTRY);
	bpf_program__set_autoload(s->progs.nt_kp_send, m == NT_MODE_KPROBE);
	bpf_program__set_autoload(s->progs.nt_krp_send, m == NT_MODE_KPROBE);
	bpf_program__set_autoload(s->progs.nt_kp_recv, m == NT_MODE_KPROBE);
	bpf_program__set_autoload(s->progs.nt_krp_recv, m == NT_MODE_KPROBE);
	bpf_program__set_autoload(s->progs.nt_tp_send, m == NT_MODE_TRACEPOINT);
	bpf_program__set_autoload(s->progs.nt_tp_recv, m == NT_MODE_TRACEPOINT);
	/* the uprobe_multi pair, when tried, needs its attach type at load */
	bpf_program__set_expected_attach_type(s->progs.nt_uprobe_m, NT_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.nt_uretprobe_m, NT_TRACE_UPROBE_MULTI);
	/* the verbs structs' offsets (read-only data of the programs) */
	memcpy((void *)&s->rodata->vo, &t->verbs, sizeof(t->verbs));
	/* the inflight map only serves the kprobe pair */
	bpf_map__set_max_entries(s->maps.inflight, m == NT_MODE_KPROBE ? 16384 : 1);
	s->rodata->budget_per_s = t->budget_per_s;
	bpf_map__set_max_entries(s->maps.events, t->ringbuf_bytes);
}

/* Links are file descriptors: if nccltrace dies, the kernel detaches everything. */
static int attach_to(struct bpf_link **links, int *n, int cap, struct bpf_program *p,
		     const char *raw_tp)
{
	struct bpf_link *l;

	if (*n == cap)
		return -E2BIG;
	if (raw_tp)
		l = bpf_program__attach_raw_tracepoint(p, raw_tp);
	else
		l = bpf_program__attach(p);
	if (!l)
		return -errno;
	links[(*n)++] = l;
	return 0;
}

static int attach_prog(struct tracer *t, struct bpf_program *p, const char *raw_tp)
{
	return attach_to(t->links, &t->nlinks, (int)(sizeof(t->links) / sizeof(t->links[0])), p,
			 raw_tp);
}

static int attach_data(struct tracer *t, struct bpf_program *p, const char *raw_tp)
{
	return attach_to(t->data_links, &t->ndata,
			 (int)(sizeof(t->data_links) / sizeof(t->data_links[0])), p, raw_tp);
}

static void detach_data(struct tracer *t)
{
	while (t->ndata > 0)
		bpf_link__destroy(t->data_links[--t->ndata]);
}

static void detach_all(struct tracer *t)
{
	detach_data(t);
	while (t->nlinks > 0)
		bpf_link__destroy(t->links[--t->nlinks]);
}

/* The per-call hooks of the mode: send and receive (entry and return with kprobes). */
static int attach_xfer(struct tracer *t, enum nt_attach_mode m, char *why, size_t len)
{
	struct nccltrace_bpf *s = t->skel;
	struct {
		struct bpf_program *p;
		const char *tp;
	} req[] = {
		{m == NT_MODE_FENTRY   ? s->progs.nt_fexit_send
		 : m == NT_MODE_KPROBE ? s->progs.nt_kp_send
				       : s->progs.nt_tp_send,
		 m == NT_MODE_TRACEPOINT ? "sock_send_length" : NULL},
		{m == NT_MODE_FENTRY   ? s->progs.nt_fexit_recv
		 : m == NT_MODE_KPROBE ? s->progs.nt_kp_recv
				       : s->progs.nt_tp_recv,
		 m == NT_MODE_TRACEPOINT ? "sock_recv_length" : NULL},
		{m == NT_MODE_KPROBE ? s->progs.nt_krp_send : NULL, NULL},
		{m == NT_MODE_KPROBE ? s->progs.nt_krp_recv : NULL, NULL},
	};

	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		int err;

		if (!req[i].p)
			continue;
		err = attach_data(t, req[i].p, req[i].tp);
		if (err) {
			snprintf(why, len, "cannot attach %s: %s", bpf_program__name(req[i].p),
				 strerror(-err));
			detach_data(t);
			return err;
		}
	}
	return 0;
}

/* Required hooks: the process-tree and state tracepoints, plus send/receive for the mode. */
static int attach_required(struct tracer *t, enum nt_attach_mode m, char *why, size_t len)
{
	struct nccltrace_bpf *s = t->skel;
	struct {
		struct bpf_program *p;
		const char *tp;
	} req[] = {
		{s->progs.nt_fork, "sched_process_fork"},
		{s->progs.nt_exec, "sched_process_exec"},
		{s->progs.nt_exit, "sched_process_exit"},
		{s->progs.nt_set_state, "inet_sock_set_state"},
	};

	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		int err = attach_prog(t, req[i].p, req[i].tp);

		if (err) {
			snprintf(why, len, "cannot attach %s: %s", bpf_program__name(req[i].p),
				 strerror(-err));
			return err;
		}
	}
	return attach_xfer(t, m, why, len);
}

/* Optional hooks: their absence degrades a figure, never the trace. */
static void attach_optional(struct tracer *t)
{
	struct nccltrace_bpf *s = t->skel;
	struct {
		struct bpf_program *p;
		const char *tp;
	} opt[] = {
		{s->progs.nt_retrans, "tcp_retransmit_skb"},
		{s->progs.nt_reset, "tcp_receive_reset"},
		{s->progs.nt_tcp_probe, "tcp_probe"},
	};
	size_t off = 0;

	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
		/* tcp_probe runs for every segment received: a per-call hook like send/receive */
		bool data = opt[i].p == s->progs.nt_tcp_probe;

		if ((data ? attach_data(t, opt[i].p, opt[i].tp)
			  : attach_prog(t, opt[i].p, opt[i].tp)) == 0) {
			t->have_probe |= data;
			continue;
		}
		off += snprintf(t->missing + off, sizeof(t->missing) - off, "%s%s", off ? ", " : "",
				opt[i].tp);
		if (off >= sizeof(t->missing))
			break;
	}
}

static int try_mode(struct tracer *t, enum nt_attach_mode m, char *why, size_t len)
{
	struct nccltrace_bpf *s;
	int err;

	libbpf_last[0] = '\0';
	s = nccltrace_bpf__open();
	if (!s) {
		err = -errno;
		snprintf(why, len, "cannot open BPF object: %s", strerror(-err));
		return err;
	}
	set_mode_autoload(t, s, m);
	err = nccltrace_bpf__load(s);
	t->multi = err == 0;
	if (err) {
		/* perhaps only the uprobe_multi pair is unknown to this kernel: without it */
		nccltrace_bpf__destroy(s);
		s = nccltrace_bpf__open();
		if (!s)
			return -errno;
		set_mode_autoload(t, s, m);
		bpf_program__set_autoload(s->progs.nt_uprobe_m, false);
		bpf_program__set_autoload(s->progs.nt_uretprobe_m, false);
		libbpf_last[0] = '\0';
		err = nccltrace_bpf__load(s);
	}
	if (err) {
		snprintf(why, len, "cannot load BPF programs: %s%s%s", strerror(-err),
			 libbpf_last[0] ? ": " : "", libbpf_last);
		nccltrace_bpf__destroy(s);
		return err;
	}
	t->skel = s;
	err = attach_required(t, m, why, len);
	if (err) {
		detach_all(t);
		nccltrace_bpf__destroy(s);
		t->skel = NULL;
		return err;
	}
	t->mode = m;
	return 0;
}

const char *tracer_mode_name(enum nt_attach_mode m)
{
	switch (m) {
	case NT_MODE_FENTRY:
		return "fentry";
	case NT_MODE_KPROBE:
		return "kprobe";
	case NT_MODE_TRACEPOINT:
		return "tracepoint";
	default:
		return "auto";
	}
}

int tracer__open(const struct tracer_opts *opts, struct tracer **out, char *err, size_t errlen)
{
	static const enum nt_attach_mode order[] = {NT_MODE_FENTRY, NT_MODE_KPROBE,
						    NT_MODE_TRACEPOINT};
	struct tracer *t = calloc(1, sizeof(*t));
	char why[320] = "";
	size_t noff = 0;
	int rc = -ENOTSUP;

	if (!t)
		return -ENOMEM;
	libbpf_set_print(libbpf_print);
	t->on_event = opts->on_event;
	t->ctx = opts->ctx;
	if (opts->verbs)
		t->verbs = *opts->verbs;
	t->budget_per_s = opts->budget_per_s ? opts->budget_per_s : NT_BUDGET_DEFAULT;
	t->ringbuf_bytes = opts->ringbuf_bytes ? opts->ringbuf_bytes : 1u << 20;
	t->ncpus = libbpf_num_possible_cpus();
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (opts->mode != NT_MODE_AUTO && opts->mode != order[i])
			continue;
		rc = try_mode(t, order[i], why, sizeof(why));
		if (rc == 0)
			break;
		pr_debug("attach mode %s not usable: %s\n", tracer_mode_name(order[i]), why);
		noff += snprintf(t->notes + noff,
				 noff < sizeof(t->notes) ? sizeof(t->notes) - noff : 0, "%s%s: %s",
				 noff ? "; " : "", tracer_mode_name(order[i]), why);
	}
	if (rc) {
		snprintf(err, errlen, "%s", why);
		free(t);
		return rc;
	}
	attach_optional(t);
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), handle_event, t, NULL);
	if (!t->rb) {
		rc = -errno;
		snprintf(err, errlen, "cannot set up the ring buffer: %s", strerror(-rc));
		tracer__close(t);
		return rc;
	}
	*out = t;
	return 0;
}

int tracer__set_data_hooks(struct tracer *t, bool on)
{
	char why[160];
	int err;

	if (on != t->data_off)
		return 0;
	if (!on) {
		detach_data(t);
		t->data_off = true;
		return 0;
	}
	err = attach_xfer(t, t->mode, why, sizeof(why));
	if (err) {
		pr_warn("cannot re-attach the send/receive hooks: %s\n", why);
		return err;
	}
	if (t->have_probe) {
		err = attach_data(t, t->skel->progs.nt_tcp_probe, "tcp_probe");
		if (err)
			pr_debug("tcp_probe not re-attached: %s\n", strerror(-err));
	}
	t->data_off = false;
	return 0;
}

bool tracer__data_hooks_on(const struct tracer *t)
{
	return !t->data_off;
}

void tracer__close(struct tracer *t)
{
	if (!t)
		return;
	ring_buffer__free(t->rb);
	detach_all(t);
	nccltrace_bpf__destroy(t->skel);
	free(t);
}

enum nt_attach_mode tracer__mode(const struct tracer *t)
{
	return t->mode;
}

const char *tracer__mode_notes(const struct tracer *t)
{
	return t->notes;
}

const char *tracer__missing_hooks(const struct tracer *t)
{
	return t->missing;
}

int tracer__track_pid(struct tracer *t, int pid)
{
	__u32 key = pid, val = getpid();

	if (bpf_map__update_elem(t->skel->maps.traced, &key, sizeof(key), &val, sizeof(val),
				 BPF_ANY))
		return -errno;
	return 0;
}

int tracer__ringbuf_fd(const struct tracer *t)
{
	return ring_buffer__epoll_fd(t->rb);
}

int tracer__poll(struct tracer *t)
{
	int rc;

	t->polled = 0;
	t->poll_until = clock_mono_ns() + TRACER_POLL_NS;
	rc = ring_buffer__consume(t->rb);
	return rc == POLL_FULL ? t->polled : rc;
}

int tracer__drain(struct tracer *t)
{
	int total = 0;

	for (int i = 0; i < TRACER_DRAIN_POLLS; i++) {
		int rc;

		t->polled = 0;
		t->poll_until = clock_mono_ns() + TRACER_POLL_NS;
		rc = ring_buffer__consume(t->rb);
		if (rc < 0 && rc != POLL_FULL)
			return total ? total : rc;
		total += rc == POLL_FULL ? t->polled : rc;
		if (rc != POLL_FULL) /* not cut short: nothing is left */
			break;
	}
	return total;
}

int tracer__each_conn(struct tracer *t, int (*fn)(void *, uint64_t, const struct nt_conn *),
		      void *ctx)
{
	int fd = bpf_map__fd(t->skel->maps.conns);
	__u64 key, next;
	struct nt_conn c;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &c))
			continue; /* deleted meanwhile (closed) */
		if (fn(ctx, key, &c))
			break;
	}
	return 0;
}

/* The n counters of a per-CPU array, each summed over the CPUs */
static int percpu_sums(const struct tracer *t, const struct bpf_map *m, __u32 n, uint64_t *out)
{
	int fd = bpf_map__fd(m);
	__u64 vals[t->ncpus > 0 ? t->ncpus : 1];

	for (__u32 i = 0; i < n; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, vals))
			return -errno;
		for (int c = 0; c < t->ncpus; c++)
			out[i] += vals[c];
	}
	return 0;
}

int tracer__stats(struct tracer *t, uint64_t out[NT_STAT_MAX])
{
	return percpu_sums(t, t->skel->maps.stats, NT_STAT_MAX, out);
}

int tracer__suppressed(struct tracer *t, uint64_t out[NT_P_MAX])
{
	return percpu_sums(t, t->skel->maps.supp_probe, NT_P_MAX, out);
}

int tracer__set_nccl_offsets(struct tracer *t, int slot, const struct nt_nccl_offsets *o)
{
	__u32 key = slot;

	if (slot < 0 || slot >= NT_MAX_LIBS)
		return -EINVAL;
	if (bpf_map__update_elem(t->skel->maps.nccl_offs, &key, sizeof(key), o, sizeof(*o), 0))
		return -errno;
	return 0;
}

int tracer__phase_stack(struct tracer *t, int tid, struct nt_phase_stack *out)
{
	__u32 key = tid;

	if (bpf_map__lookup_elem(t->skel->maps.phases, &key, sizeof(key), out, sizeof(*out), 0))
		return -errno;
	return 0;
}

int tracer__each_stack(struct tracer *t,
		       int (*fn)(void *ctx, int tid, const struct nt_phase_stack *st), void *ctx)
{
	int fd = bpf_map__fd(t->skel->maps.phases);
	__u32 key, next;
	struct nt_phase_stack st;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &st))
			continue;
		if (fn(ctx, (int)key, &st))
			break;
	}
	return 0;
}

struct tracer_uprobes {
	int fd; /* the uprobe_multi link, -1 if per-probe links */
	struct bpf_link **links;
	int nlinks;
};

static int link_uprobe_multi(struct tracer *t, int pid, const char *path, const uint64_t *offs,
			     const uint64_t *cookies, int n, bool ret)
{
	union bpf_attr attr;
	struct {
		__u32 prog_fd, target_fd, attach_type, flags;
		__u64 path, offsets, ref_ctr_offsets, cookies;
		__u32 cnt, flags2, pid;
	} lc = {
		.prog_fd = bpf_program__fd(ret ? t->skel->progs.nt_uretprobe_m
					       : t->skel->progs.nt_uprobe_m),
		.attach_type = NT_TRACE_UPROBE_MULTI,
		.path = (uintptr_t)path,
		.offsets = (uintptr_t)offs,
		.cookies = (uintptr_t)cookies,
		.cnt = n,
		.flags2 = ret ? NT_F_UPROBE_MULTI_RETURN : 0,
		.pid = pid,
	};
	int fd;

	_Static_assert(sizeof(attr) >= sizeof(lc), "bpf_attr holds link_create.uprobe_multi");
	memset(&attr, 0, sizeof(attr));
	memcpy(&attr, &lc, sizeof(lc));
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

int tracer__attach_uprobes(struct tracer *t, int pid, const char *path, const uint64_t *offs,
			   const uint64_t *cookies, int n, bool ret, struct tracer_uprobes **out)
{
	struct tracer_uprobes *u = calloc(1, sizeof(*u));
	int err = 0;

	if (!u)
		return -ENOMEM;
	u->fd = -1;
	if (t->multi && n > 0) {
		u->fd = link_uprobe_multi(t, pid, path, offs, cookies, n, ret);
		if (u->fd >= 0) {
			*out = u;
			return n;
		}
		pr_debug("uprobe_multi link for pid %d in %s: %s; one link per probe\n", pid, path,
			 strerror(-u->fd));
		u->fd = -1;
	}
	u->links = calloc(n > 0 ? n : 1, sizeof(*u->links));
	if (!u->links) {
		free(u);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookies[i], .retprobe = ret);
		struct bpf_link *l = bpf_program__attach_uprobe_opts(
			ret ? t->skel->progs.nt_uretprobe : t->skel->progs.nt_uprobe, pid, path,
			offs[i], &opts);

		if (!l) {
			err = -errno;
			continue;
		}
		u->links[u->nlinks++] = l;
	}
	/* none attached (the process is gone, say): nothing for the caller to detach */
	if (!u->nlinks && err) {
		free(u->links);
		free(u);
		return err;
	}
	*out = u;
	return u->nlinks;
}

void tracer__detach_uprobes(struct tracer_uprobes *u)
{
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	for (int i = 0; i < u->nlinks; i++)
		bpf_link__destroy(u->links[i]);
	free(u->links);
	free(u);
}
