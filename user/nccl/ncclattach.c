// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/log.h"
#include "nccl/ncclattach.h"
#include "trace/procfs.h"
#include "util/grow.h"

struct pid_links {
	int pid;
	unsigned int slots; /* bitmask of libraries attached */
	bool scanned_done;  /* has a library: no more maps scans */
	bool verbs_done;    /* libibverbs found in it */
	struct tracer_uprobes **links;
	int nlinks, cap;
	/* the first-collectives probes (NP_FIRST), apart: they come off on their own */
	struct tracer_uprobes *first[NT_MAX_LIBS][2];
	bool first_off;
};

struct nccl_attach {
	struct tracer *tracer;
	bool collectives;
	struct nccl_attach_cb cb;
	struct nccl_lib libs[NT_MAX_LIBS];
	dev_t dev[NT_MAX_LIBS];
	ino_t ino[NT_MAX_LIBS];
	int nlibs;
	struct pid_links *pids;
	int npids, cap;
};

struct nccl_attach *nccl_attach__new(struct tracer *t, bool collectives,
				     const struct nccl_attach_cb *cb)
{
	struct nccl_attach *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->tracer = t;
	a->collectives = collectives;
	a->cb = *cb;
	return a;
}

static void first_drop(struct pid_links *p)
{
	for (int s = 0; s < NT_MAX_LIBS; s++)
		for (int k = 0; k < 2; k++) {
			tracer__detach_uprobes(p->first[s][k]);
			p->first[s][k] = NULL;
		}
}

static void pid_drop(struct pid_links *p)
{
	first_drop(p);
	for (int i = 0; i < p->nlinks; i++)
		tracer__detach_uprobes(p->links[i]);
	free(p->links);
	p->links = NULL;
	p->nlinks = p->cap = 0;
}

void nccl_attach__free(struct nccl_attach *a)
{
	if (!a)
		return;
	for (int i = 0; i < a->npids; i++)
		pid_drop(&a->pids[i]);
	free(a->pids);
	free(a);
}

static struct pid_links *pid_get(struct nccl_attach *a, int pid, bool create)
{
	for (int i = 0; i < a->npids; i++)
		if (a->pids[i].pid == pid)
			return &a->pids[i];
	if (!create)
		return NULL;
	if (grow(&a->pids, &a->cap, a->npids, sizeof(*a->pids), 16))
		return NULL;
	memset(&a->pids[a->npids], 0, sizeof(a->pids[0]));
	a->pids[a->npids].pid = pid;
	return &a->pids[a->npids++];
}

static int link_add(struct pid_links *p, struct tracer_uprobes *l)
{
	if (grow(&p->links, &p->cap, p->nlinks, sizeof(*p->links), 8))
		return -ENOMEM;
	p->links[p->nlinks++] = l;
	return 0;
}

/*
 * Without internal transport-setup symbols (a stripped build), the lazy ring connect of the
 * first collective is seen only from the public collective calls around it.
 */
static bool wants_first(const struct nccl_lib *lib)
{
	return lib->offs.lib_kind == NT_LIB_NCCL && !lib->probe_off[NT_P_RING_CONNECT] &&
	       !lib->probe_off[NT_P_P2P_SETUP];
}

/*
 * One batch of a library's probes for pid: the uretprobes (ret) or the uprobes, of the
 * first-collectives probes (first) or of the others. Adds to *ok and *failed; the link or NULL.
 */
static struct tracer_uprobes *attach_batch(struct nccl_attach *a, int pid, int slot, bool ret,
					   bool first, int *ok, int *failed)
{
	const struct nccl_lib *lib = &a->libs[slot];
	uint64_t offs[NT_P_MAX], cookies[NT_P_MAX];
	struct tracer_uprobes *u;
	int n = 0, got;

	for (int id = 1; id < NT_P_MAX; id++) {
		const struct nccl_probe_def *d = nccl_lib_probe(lib, id);

		if (!d || !lib->probe_off[id] || ((d->flags & NP_OPTIN) && !a->collectives) ||
		    (ret && !(d->flags & NP_RET)) || !!(d->flags & NP_FIRST) != first)
			continue;
		offs[n] = lib->probe_off[id];
		cookies[n] = ((uint64_t)slot << 16) | id;
		n++;
	}
	if (!n)
		return NULL;
	got = tracer__attach_uprobes(a->tracer, pid, lib->path, offs, cookies, n, ret, &u);
	if (got < 0) {
		pr_debug("cannot attach %s in %s for pid %d: %s\n", ret ? "uretprobes" : "uprobes",
			 lib->path, pid, strerror(-got));
		*failed += n;
		return NULL;
	}
	*ok += got;
	*failed += n - got;
	return u;
}

/* The first-collectives probes of slot in p (again, after a new communicator). */
static void attach_first(struct nccl_attach *a, struct pid_links *p, int slot, int *ok, int *failed)
{
	if (!wants_first(&a->libs[slot]) || p->first[slot][0] || p->first[slot][1])
		return;
	/* returns first, as for the others (attach_slot) */
	p->first[slot][1] = attach_batch(a, p->pid, slot, true, true, ok, failed);
	p->first[slot][0] = attach_batch(a, p->pid, slot, false, true, ok, failed);
	p->first_off = false;
}

static void attach_slot(struct nccl_attach *a, struct pid_links *p, int slot)
{
	int ok = 0, failed = 0;

	if (p->slots & (1u << slot))
		return;
	p->slots |= 1u << slot;
	/*
	 * Returns of the phases, then entries of every probe: one batch each. In this order a
	 * call entered while attaching is either seen whole or not at all; the other way round
	 * an entry could be seen without its return (measured: 1 healthy run in ~40 showed a
	 * rank "in init" for ever), since a uretprobe only hooks calls entered after it exists.
	 */
	for (int ret = 1; ret >= 0; ret--) {
		struct tracer_uprobes *u = attach_batch(a, p->pid, slot, ret, false, &ok, &failed);

		if (u && link_add(p, u))
			tracer__detach_uprobes(u);
	}
	attach_first(a, p, slot, &ok, &failed);
	if (a->cb.attached)
		a->cb.attached(a->cb.ctx, p->pid, slot, ok, failed);
}

void nccl_attach__first(struct nccl_attach *a, int pid, bool on)
{
	struct pid_links *p = pid_get(a, pid, false);
	int ok = 0, failed = 0;

	if (!p || on == !p->first_off)
		return;
	if (!on) {
		/* detaching waits for an RCU grace period per link: once per process */
		first_drop(p);
		p->first_off = true;
		pr_debug("pid %d: first collectives done, collective call probes off\n", pid);
		return;
	}
	for (int s = 0; s < a->nlibs; s++)
		if (p->slots & (1u << s))
			attach_first(a, p, s, &ok, &failed);
}

static int lib_slot(struct nccl_attach *a, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int slot;

	if (stat(path, &st)) {
		snprintf(err, errlen, "cannot use NCCL library %s: %s", path, strerror(errno));
		return -errno;
	}
	for (int i = 0; i < a->nlibs; i++)
		if (a->dev[i] == st.st_dev && a->ino[i] == st.st_ino)
			return i;
	if (a->nlibs == NT_MAX_LIBS) {
		snprintf(err, errlen, "more than %d NCCL libraries: %s not probed", NT_MAX_LIBS,
			 path);
		return -E2BIG;
	}
	slot = a->nlibs;
	if (nccllib_open(path, nccllib_cache_dir(), &a->libs[slot], err, errlen))
		return -ENOENT;
	if (tracer__set_nccl_offsets(a->tracer, slot, &a->libs[slot].offs)) {
		snprintf(err, errlen, "cannot pass the offsets of %s to the BPF programs", path);
		return -EIO;
	}
	a->dev[slot] = st.st_dev;
	a->ino[slot] = st.st_ino;
	a->nlibs++;
	if (a->cb.lib)
		a->cb.lib(a->cb.ctx, slot, &a->libs[slot], NULL);
	return slot;
}

int nccl_attach__add_lib(struct nccl_attach *a, const char *path, char *err, size_t errlen)
{
	int slot = lib_slot(a, path, err, errlen);

	return slot < 0 ? slot : 0;
}

void nccl_attach__proc(struct nccl_attach *a, int pid)
{
	struct pid_links *p = pid_get(a, pid, true);

	if (!p)
		return;
	for (int s = 0; s < a->nlibs; s++)
		attach_slot(a, p, s);
}

/* A library found in a process's maps: probed in every process of the job. */
static void attach_found(struct nccl_attach *a, char *lib)
{
	char err[512];
	int slot;

	/* replaced on disk after it was mapped: the old file is gone, stat below says so */
	if (strstr(lib, " (deleted)"))
		*strstr(lib, " (deleted)") = '\0';
	slot = lib_slot(a, lib, err, sizeof(err));
	if (slot < 0) {
		if (a->cb.lib)
			a->cb.lib(a->cb.ctx, -1, NULL, err);
		return;
	}
	/* every process of the job gets it, not only the one that loaded it first */
	for (int i = 0; i < a->npids; i++)
		attach_slot(a, &a->pids[i], slot);
}

void nccl_attach__loaded(struct nccl_attach *a, int pid, const char *path)
{
	struct pid_links *p = pid_get(a, pid, true);
	char lib[PATH_MAX];

	if (!p || !path[0])
		return;
	snprintf(lib, sizeof(lib), "%s", path);
	if (nccllib_is_verbs(lib))
		p->verbs_done = true;
	else
		p->scanned_done = true;
	attach_found(a, lib);
}

void nccl_attach__scan(struct nccl_attach *a, int pid)
{
	struct pid_links *p = pid_get(a, pid, true);
	char lib[PATH_MAX];
	static char buf[1 << 20];

	if (!p || p->scanned_done || procfs_read_maps(pid, buf, sizeof(buf)))
		return;
	/*
	 * libibverbs as well, where it is mapped: for verbs users other than NCCL (NCCL's own
	 * calls are seen through its wrappers, attached with libnccl, never late)
	 */
	if (!p->verbs_done && nccllib_find_verbs_in_maps(buf, lib, sizeof(lib)) == 0) {
		p->verbs_done = true;
		attach_found(a, lib);
	}
	if (nccllib_find_in_maps(buf, lib, sizeof(lib)))
		return;
	p->scanned_done = true;
	attach_found(a, lib);
}

void nccl_attach__exit(struct nccl_attach *a, int pid)
{
	struct pid_links *p = pid_get(a, pid, false);

	if (p) {
		pid_drop(p);
		p->scanned_done = true;
	}
}

bool nccl_attach__has(const struct nccl_attach *a, int pid)
{
	for (int i = 0; i < a->npids; i++) {
		if (a->pids[i].pid != pid)
			continue;
		if (a->pids[i].scanned_done)
			return true;
		/* libibverbs alone is not NCCL: keep looking for it */
		for (int s = 0; s < a->nlibs; s++)
			if ((a->pids[i].slots & (1u << s)) &&
			    a->libs[s].offs.lib_kind == NT_LIB_NCCL)
				return true;
		return false;
	}
	return false;
}

const struct nccl_lib *nccl_attach__lib(const struct nccl_attach *a, int slot)
{
	return slot >= 0 && slot < a->nlibs ? &a->libs[slot] : NULL;
}

int nccl_attach__nccl_slot(const struct nccl_attach *a, int pid)
{
	for (int i = 0; i < a->npids; i++)
		for (int s = 0; a->pids[i].pid == pid && s < a->nlibs; s++)
			if ((a->pids[i].slots & (1u << s)) &&
			    a->libs[s].offs.lib_kind == NT_LIB_NCCL)
				return s;
	return -1;
}
