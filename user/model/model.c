// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/conns.h"
#include "util/fmt.h"
#include "model/model.h"
#include "model/sockseed.h"
#include "trace/procfs.h"
#include "util/grow.h"

#define CLOSED_KEEP_NS	(300 * NT_NSEC_PER_SEC)
#define CLOSED_KEEP_MAX 16384

/* A thread's schedstat at the last sample, for the rates */
struct msched {
	int tid;
	uint64_t wait_ns, at_ns;
};
#define MAX_SCHED_THREADS 64

struct mproc {
	struct snap_proc p;
	struct msched sched[MAX_SCHED_THREADS];
	int nsched;
	uint64_t sched_best, sched_at; /* the worst thread's wait per second in this pass */
	int sched_tid;
	struct model_proc_info info;
	struct model_env *env;
	bool need_env; /* exec'ed (or first seen) since the environment was read */
	bool identity_told;
	uint64_t cpu_prev_ns; /* CPU time at cpu_prev_at */
	uint64_t cpu_prev_at;
};

struct model {
	struct mproc *procs;
	int nprocs, cap_procs;
	struct snap_conn *conns;
	int nconns, cap_conns;
	int nsorted;   /* conns[0..nsorted) are sorted by id */
	uint32_t walk; /* the current or last walk of the conns map (snap_conn.walk) */
	bool walking;
	struct snap_proc *snap_procs;
	/*
	 * the snapshot's own copy of conns: events between two ticks insert into conns (moving
	 * what follows) and grow it, while the last snapshot is still read (/state, the dashboard)
	 */
	struct snap_conn *snap_conns;
	int cap_snap_conns;
};

struct model *model__new(void)
{
	return calloc(1, sizeof(struct model));
}

static void env_free(struct mproc *p)
{
	for (int i = 0; i < p->info.nenv; i++) {
		free(p->env[i].key);
		free(p->env[i].val);
	}
	free(p->env);
	p->env = NULL;
	p->info.env = NULL;
	p->info.nenv = 0;
}

void model__free(struct model *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nprocs; i++)
		env_free(&m->procs[i]);
	free(m->procs);
	free(m->conns);
	free(m->snap_procs);
	free(m->snap_conns);
	free(m);
}

static struct mproc *proc_find(const struct model *m, int pid)
{
	for (int i = 0; i < m->nprocs; i++)
		if (m->procs[i].p.pid == pid)
			return &m->procs[i];
	return NULL;
}

struct env_copy {
	struct mproc *p;
	int cap;
};

/* ranks_env_each hands over the allow-listed entries only */
static void env_keep(void *ctx, const char *key, size_t kl, const char *val, size_t vl)
{
	struct env_copy *ec = ctx;
	struct mproc *p = ec->p;

	if (grow(&p->env, &ec->cap, p->info.nenv, sizeof(*p->env), 16))
		return;
	p->env[p->info.nenv].key = strndup(key, kl);
	p->env[p->info.nenv].val = strndup(val, vl);
	p->info.nenv++;
}

static void read_env(struct mproc *p)
{
	struct env_copy ec = {.p = p};
	char *buf;
	size_t len;

	if (procfs_read_environ(p->p.pid, &buf, &len))
		return;
	env_free(p);
	ranks_parse_environ(buf, len, &p->info.ri);
	p->p.rank = p->info.ri.rank;
	p->p.local_rank = p->info.ri.local_rank;
	p->p.world_size = p->info.ri.world_size;
	ranks_env_each(buf, len, env_keep, &ec);
	p->info.env = p->env;
	free(buf);
	p->need_env = false;
}

void model__proc_add(struct model *m, int pid, int ppid, const char *comm, uint64_t ns)
{
	struct mproc *p = proc_find(m, pid);

	if (p && !p->p.exited)
		return;
	if (!p) {
		if (grow(&m->procs, &m->cap_procs, m->nprocs, sizeof(*m->procs), 16))
			return;
		p = &m->procs[m->nprocs++];
	} else {
		env_free(p); /* a recycled pid */
	}
	memset(p, 0, sizeof(*p));
	p->p.pid = pid;
	p->p.ppid = ppid;
	p->p.rank = p->p.local_rank = p->p.world_size = p->p.cpu_numa = p->p.gpu_env =
		p->p.nic_numa = -1;
	p->p.state = 'R';
	snprintf(p->p.comm, sizeof(p->p.comm), "%s", comm ? comm : "");
	p->info.ri.rank = p->info.ri.local_rank = p->info.ri.world_size = -1;
	p->info.ri.master_port = -1;
	p->info.start_ns = ns;
	p->need_env = true;
}

/*
 * The environment is read at once: a rank that exits in a few milliseconds (it never joins, its
 * init fails) must still be known by its RANK, and the tick may come after its end. The exec
 * event comes while the new image is set up; a process linked to NCCL is still held by the
 * loader audit when its event is read.
 */
void model__proc_exec(struct model *m, int pid, const char *comm)
{
	struct mproc *p = proc_find(m, pid);

	if (!p)
		return;
	snprintf(p->p.comm, sizeof(p->p.comm), "%s", comm);
	p->need_env = true;
	if (!p->p.exited)
		read_env(p);
}

void model__proc_exit(struct model *m, int pid, int status, uint64_t ns)
{
	struct mproc *p = proc_find(m, pid);

	if (!p || p->p.exited)
		return;
	p->p.exited = true;
	p->p.state = 'X';
	p->p.exit_status = status;
	p->p.exit_ns = ns;
	p->p.where[0] = '\0';
}

static int conn_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct snap_conn *)a)->id, y = ((const struct snap_conn *)b)->id;

	return x < y ? -1 : x > y;
}

static int conn_find(const struct model *m, uint64_t sk)
{
	int lo = 0, hi = m->nsorted - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (m->conns[mid].id == sk && !m->conns[mid].closed)
			return mid;
		if (m->conns[mid].id < sk)
			lo = mid + 1;
		else if (m->conns[mid].id > sk)
			hi = mid - 1;
		else
			break; /* a closed entry with this id: look for an open one linearly */
	}
	for (int i = 0; i < m->nconns; i++)
		if (m->conns[i].id == sk && !m->conns[i].closed)
			return i;
	return -1;
}

void model__conn_update(struct model *m, uint64_t sk, const struct nt_conn *c, bool closed)
{
	int i = conn_find(m, sk);

	if (i >= 0 && m->conns[i].c.first_ns != c->first_ns && c->first_ns) {
		/* the kernel reused this struct sock for a new connection */
		m->conns[i].closed = true;
		m->conns[i].closed_ns = c->first_ns;
		i = -1;
	}
	if (i < 0) {
		if (grow(&m->conns, &m->cap_conns, m->nconns, sizeof(*m->conns), 64))
			return;
		i = m->nconns++;
		memset(&m->conns[i], 0, sizeof(m->conns[i]));
		m->conns[i].id = sk;
		m->conns[i].peer_pid = -1;
	}
	m->conns[i].c = *c;
	m->conns[i].pid = c->tgid;
	if (m->walking)
		m->conns[i].walk = m->walk;
	if (closed) {
		m->conns[i].closed = true;
		m->conns[i].closed_ns = c->state_ns;
	}
}

void model__conn_forget(struct model *m, uint64_t id)
{
	int i = conn_find(m, id);

	if (i < 0)
		return;
	/* the order of the rest is kept: a sorted prefix stays sorted */
	memmove(&m->conns[i], &m->conns[i + 1], (m->nconns - i - 1) * sizeof(*m->conns));
	m->nconns--;
	if (i < m->nsorted)
		m->nsorted--;
}

void model__conns_walk_begin(struct model *m)
{
	m->walk++;
	m->walking = true;
}

int model__conns_walk_end(struct model *m, uint64_t now)
{
	int n = 0;

	m->walking = false;
	for (int i = 0; i < m->nconns; i++) {
		struct snap_conn *c = &m->conns[i];

		/* sock_diag's seeds (attach) are not the map's until it has them */
		if (c->closed || c->walk == m->walk || sockseed_is_id(c->id))
			continue;
		c->closed = true;
		c->closed_ns = now;
		c->c.state = 7; /* TCP_CLOSE */
		n++;
	}
	return n;
}

/* Drop old closed connections, then restore the sort order. */
static void conns_compact(struct model *m, uint64_t now)
{
	int nclosed = 0, j = 0;

	for (int i = 0; i < m->nconns; i++)
		nclosed += m->conns[i].closed;
	for (int i = 0; i < m->nconns; i++) {
		const struct snap_conn *c = &m->conns[i];

		if (c->closed &&
		    (now - c->closed_ns > CLOSED_KEEP_NS || nclosed > CLOSED_KEEP_MAX)) {
			nclosed--;
			continue;
		}
		m->conns[j++] = *c;
	}
	m->nconns = j;
	if (m->nconns > 1)
		qsort(m->conns, m->nconns, sizeof(*m->conns), conn_cmp);
	m->nsorted = m->nconns;
}

static enum snap_block syscall_block(long nr)
{
	const char *name = fmt_syscall(nr);

	if (!name)
		return SNAP_BLOCK_NONE;
	if (!strcmp(name, "read") || !strcmp(name, "readv") || !strncmp(name, "recv", 4))
		return SNAP_BLOCK_RECV;
	if (!strcmp(name, "write") || !strcmp(name, "writev") || !strncmp(name, "send", 4))
		return SNAP_BLOCK_SEND;
	if (!strcmp(name, "connect"))
		return SNAP_BLOCK_CONNECT;
	if (!strncmp(name, "accept", 6))
		return SNAP_BLOCK_ACCEPT;
	return SNAP_BLOCK_NONE;
}

struct task_scan {
	struct model *m;
	struct mproc *p;
	uint64_t now;
};

/*
 * CPU starvation: how long tid waited runnable since its last sample (>= 0.5 s ago), per
 * second. A waiter the scheduler does not run makes no attempt, and must not look idle.
 */
static void sched_sample(struct mproc *p, int tid, uint64_t now)
{
	struct msched *t = NULL;
	uint64_t run, wait;

	if (procfs_read_schedstat(p->p.pid, tid, &run, &wait))
		return;
	for (int i = 0; i < p->nsched && !t; i++)
		if (p->sched[i].tid == tid)
			t = &p->sched[i];
	if (!t) {
		if (p->nsched == MAX_SCHED_THREADS)
			return;
		t = &p->sched[p->nsched++];
		*t = (struct msched){tid, wait, now};
		return;
	}
	if (now - t->at_ns < NT_NSEC_PER_SEC / 2)
		return;
	if (wait >= t->wait_ns) {
		uint64_t rate = (wait - t->wait_ns) * NT_NSEC_PER_SEC / (now - t->at_ns);

		if (rate >= p->sched_best) {
			p->sched_best = rate;
			p->sched_tid = tid;
		}
	}
	p->sched_at = now;
	t->wait_ns = wait;
	t->at_ns = now;
}

static void scan_task(void *ctx, int tid)
{
	struct task_scan *ts = ctx;
	struct model *m = ts->m;
	unsigned long arg0;
	enum snap_block b;
	uint64_t ino;
	long nr;

	sched_sample(ts->p, tid, ts->now);
	if (procfs_read_syscall(ts->p->p.pid, tid, &nr, &arg0))
		return;
	b = syscall_block(nr);
	if (b == SNAP_BLOCK_NONE || arg0 > 1 << 20)
		return;
	if (procfs_fd_socket_inode(ts->p->p.pid, (int)arg0, &ino))
		return;
	for (int i = 0; i < m->nconns; i++) {
		struct snap_conn *c = &m->conns[i];

		if (c->closed || c->c.ino != ino)
			continue;
		if (c->blocked == b && c->blocked_tid == tid) {
			c->blocked_tid = -tid; /* seen again: keep blocked_since */
		} else {
			c->blocked = b;
			c->blocked_tid = -tid;
			c->blocked_since_ns = ts->now;
		}
		break;
	}
}

/* A data connection of pid without byte progress for a second: worth looking for blockers. */
static bool has_quiet_conn(const struct model *m, int pid, uint64_t now)
{
	for (int i = 0; i < m->nconns; i++) {
		const struct snap_conn *c = &m->conns[i];
		uint64_t t = c->c.first_ns;

		if (c->pid != pid || c->closed || (c->c.flags & NT_CONN_LISTENER))
			continue;
		if (c->c.last_send_ns > t)
			t = c->c.last_send_ns;
		if (c->c.last_recv_ns > t)
			t = c->c.last_recv_ns;
		if (now - t >= NT_NSEC_PER_SEC)
			return true;
	}
	return false;
}

/* Its rank identity, once known, told once */
static void tell_identity(struct mproc *p,
			  void (*new_identity)(void *, int, const struct model_proc_info *),
			  void *ctx)
{
	if (p->p.rank >= 0 && !p->identity_told && new_identity) {
		p->identity_told = true;
		new_identity(ctx, p->p.pid, &p->info);
	}
}

void model__refresh(struct model *m, uint64_t now,
		    void (*new_identity)(void *, int, const struct model_proc_info *), void *ctx)
{
	conns_compact(m, now);
	/* mark every blocked entry unseen; scan_task flips the ones still blocked */
	for (int i = 0; i < m->nconns; i++)
		if (m->conns[i].blocked_tid < 0)
			m->conns[i].blocked_tid = -m->conns[i].blocked_tid;

	for (int i = 0; i < m->nprocs; i++) {
		struct mproc *p = &m->procs[i];
		struct proc_stat st;
		struct task_scan ts = {.m = m, .p = p, .now = now};
		char prev_where[sizeof(p->p.where)];
		unsigned long arg0;
		long nr;

		/* an identity read at exec is told even when the process is gone by now */
		if (p->p.exited) {
			tell_identity(p, new_identity, ctx);
			continue;
		}
		if (procfs_read_stat(p->p.pid, &st) == 0) {
			/*
			 * A ptrace stop of nccltrace's own (a stack being taken) is no stop of the
			 * process: it keeps the state seen before it
			 */
			if (st.state != 't' || procfs_tracer_pid(p->p.pid, p->p.pid) != getpid())
				p->p.state = st.state;
			p->p.cpu_ns = st.cpu_ns;
			if (!p->cpu_prev_at) {
				p->cpu_prev_at = now;
				p->cpu_prev_ns = st.cpu_ns;
			} else if (now - p->cpu_prev_at >= NT_NSEC_PER_SEC) {
				p->p.cpu_busy_ns = (st.cpu_ns - p->cpu_prev_ns) * NT_NSEC_PER_SEC /
						   (now - p->cpu_prev_at);
				p->cpu_prev_at = now;
				p->cpu_prev_ns = st.cpu_ns;
			}
		}
		memcpy(prev_where, p->p.where, sizeof(prev_where));
		p->p.where[0] = '\0';
		if (p->p.state != 'R' && procfs_read_syscall(p->p.pid, p->p.pid, &nr, &arg0) == 0 &&
		    nr >= 0) {
			const char *name = fmt_syscall(nr);

			/*
			 * a sleep or poll interrupted by a stop (a stack taken, SIGSTOP and SIGCONT)
			 * goes on as restart_syscall: it is still the call seen before
			 */
			if (name && !strcmp(name, "restart_syscall") && prev_where[0])
				memcpy(p->p.where, prev_where, sizeof(prev_where));
			else if (name)
				snprintf(p->p.where, sizeof(p->p.where), "%s", name);
			else
				snprintf(p->p.where, sizeof(p->p.where), "syscall %ld", nr);
		}
		if (p->need_env)
			read_env(p);
		tell_identity(p, new_identity, ctx);
		/* every thread's syscall file, but only where a connection has gone quiet */
		if (has_quiet_conn(m, p->p.pid, now)) {
			p->sched_best = 0;
			p->sched_at = 0;
			procfs_each_task(p->p.pid, scan_task, &ts);
			/* a pass that sampled nobody (too soon) keeps the last figure */
			if (p->sched_at) {
				p->p.runnable_ns = p->sched_best;
				p->p.runnable_tid = p->sched_tid;
			}
		} else {
			p->p.runnable_ns = 0;
		}
	}
	/* entries not seen blocked again are no longer blocked */
	for (int i = 0; i < m->nconns; i++) {
		struct snap_conn *c = &m->conns[i];

		if (c->blocked_tid > 0) {
			c->blocked_tid = 0;
			c->blocked = SNAP_BLOCK_NONE;
			c->blocked_since_ns = 0;
		} else if (c->blocked_tid < 0) {
			c->blocked_tid = -c->blocked_tid;
		}
	}
	conns_map_peers(m->conns, m->nconns);
}

void model__snapshot(struct model *m, uint64_t now, struct snapshot *out)
{
	struct snap_proc *sp = realloc(m->snap_procs, (m->nprocs ? m->nprocs : 1) * sizeof(*sp));

	out->now_ns = now;
	out->nprocs = 0;
	if (sp) {
		m->snap_procs = sp;
		for (int i = 0; i < m->nprocs; i++)
			sp[i] = m->procs[i].p;
		out->nprocs = m->nprocs;
	}
	out->procs = m->snap_procs;
	out->nconns = 0;
	if (m->nconns > m->cap_snap_conns) {
		struct snap_conn *sc = realloc(m->snap_conns, m->nconns * sizeof(*sc));

		if (sc) {
			m->snap_conns = sc;
			m->cap_snap_conns = m->nconns;
		}
	}
	if (m->nconns && m->nconns <= m->cap_snap_conns) {
		memcpy(m->snap_conns, m->conns, m->nconns * sizeof(*m->conns));
		out->nconns = m->nconns;
	}
	out->conns = m->snap_conns;
}

const struct model_proc_info *model__proc_info(const struct model *m, int pid)
{
	struct mproc *p = proc_find(m, pid);

	return p ? &p->info : NULL;
}

int model__live_procs(const struct model *m)
{
	int n = 0;

	for (int i = 0; i < m->nprocs; i++)
		n += !m->procs[i].p.exited;
	return n;
}
