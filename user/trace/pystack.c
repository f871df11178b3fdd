// SPDX-License-Identifier: MIT
/*
 * Python stacks read from outside (pystack.h). Nothing here stops the process: every read is a
 * process_vm_readv of memory the interpreter may be changing at that moment, so every value is
 * checked before it is followed (a bad pointer fails the read, a length is bounded, a walk
 * ends after a bounded number of steps) and a frame that reads as nonsense ends its stack
 * rather than inventing one. A thread blocked in a system call, which is what nccltrace asks
 * about, does not change its frames while it is read.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "util/elfsym.h"
#include "trace/procfs.h"
#include "trace/pystack.h"
#include "trace/pystack_priv.h"
#include "trace/stacks_priv.h"
#include "util/clock.h"
#include "util/grow.h"

#define MAX_THREADS_WALKED 256 /* thread states followed before the list is taken as broken */
#define MAX_FRAMES_WALKED  1024
#define MAX_LINETABLE	   (64 * 1024)
#define MAPS_LEN	   (256 * 1024)

/* What was found about one process's interpreter, kept while its file stays mapped there. */
struct pyproc {
	int pid;
	char path[256]; /* the file that holds _PyRuntime */
	uint64_t map_start;
	int rc; /* 0, or why not (error says it) */
	char error[160];
	char version[16];
	uint64_t runtime;
	struct py_layout lay;
};

struct pystacks {
	struct pyproc *p;
	int n, cap;
	char *maps;
};

/* One take: the process read, its layout, and the first error a read met */
struct reader {
	int pid;
	const struct py_layout *l;
	int err; /* -errno of the first failed read */
};

struct pystacks *pystacks__new(void)
{
	struct pystacks *ps = calloc(1, sizeof(*ps));

	if (ps && !(ps->maps = malloc(MAPS_LEN))) {
		free(ps);
		return NULL;
	}
	return ps;
}

void pystacks__free(struct pystacks *ps)
{
	if (!ps)
		return;
	free(ps->p);
	free(ps->maps);
	free(ps);
}

void pystacks__forget(struct pystacks *ps, int pid)
{
	for (int i = 0; ps && i < ps->n; i++)
		if (ps->p[i].pid == pid) {
			ps->p[i] = ps->p[--ps->n];
			return;
		}
}

static bool rd(struct reader *r, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)addr, .iov_len = len};
	ssize_t n;

	if (!addr)
		return false;
	n = process_vm_readv(r->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return true;
	if (!r->err)
		r->err = n < 0 ? -errno : -EFAULT;
	return false;
}

static uint64_t rd_ptr(struct reader *r, uint64_t addr, int off)
{
	uint64_t v = 0;

	if (off < 0 || !rd(r, addr + off, &v, sizeof(v)))
		return 0;
	return v;
}

static int64_t rd_i32(struct reader *r, uint64_t addr, int off, bool *ok)
{
	int32_t v = 0;

	*ok = off >= 0 && rd(r, addr + off, &v, sizeof(v));
	return v;
}

/* one code point as UTF-8 into out at *o, within len */
static void put_utf8(char *out, size_t len, size_t *o, uint32_t c)
{
	char b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = (char)c, n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 63)), n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 63));
		b[2] = (char)(0x80 | (c & 63)), n = 3;
	} else {
		b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 63));
		b[2] = (char)(0x80 | ((c >> 6) & 63)), b[3] = (char)(0x80 | (c & 63)), n = 4;
	}
	if (*o + n < len) {
		memcpy(out + *o, b, n);
		*o += n;
	}
}

/*
 * A str object (compact: every name and file name of a code object is) as UTF-8; "?" when it
 * does not read as one. The state bits (interned 2, kind 3, compact 1, ascii 1) are the same
 * from 3.9 to 3.13 (cpython/unicodeobject.h).
 */
static void rd_str(struct reader *r, uint64_t obj, char *out, size_t len)
{
	const struct py_layout *l = r->l;
	uint8_t data[512];
	uint32_t state = 0;
	int64_t n = 0;
	unsigned kind;
	size_t o = 0;

	snprintf(out, len, "?");
	if (!obj || !rd(r, obj + l->un_length, &n, sizeof(n)) ||
	    !rd(r, obj + l->un_state, &state, sizeof(state)))
		return;
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || n < 0 || (kind != 1 && kind != 2 && kind != 4))
		return;
	if ((size_t)n * kind > sizeof(data))
		n = sizeof(data) / kind;
	if (n && !rd(r, obj + ((state >> 6) & 1 ? l->un_ascii_size : l->un_compact_size), data,
		     (size_t)n * kind))
		return;
	for (int64_t i = 0; i < n; i++) {
		uint16_t c2;
		uint32_t c = data[i];

		if (kind == 2) {
			memcpy(&c2, data + i * 2, 2);
			c = c2;
		} else if (kind == 4) {
			memcpy(&c, data + i * 4, 4);
		}
		put_utf8(out, len, &o, c);
	}
	out[o] = '\0';
}

/* The line of the instruction at addr in code object code; 0 if unknown. */
static int code_line(struct reader *r, uint64_t code, int first, int addr)
{
	const struct py_layout *l = r->l;
	uint64_t tab = rd_ptr(r, code, l->co_linetable);
	static __thread uint8_t buf[MAX_LINETABLE];
	int64_t n = 0;

	if (!tab || !rd(r, tab + l->by_size, &n, sizeof(n)) || n < 0)
		return 0;
	if (n > MAX_LINETABLE)
		n = MAX_LINETABLE;
	if (n && !rd(r, tab + l->by_sval, buf, (size_t)n))
		return 0;
	return py_addr2line(l->minor, buf, (size_t)n, first, addr);
}

/* One frame's code: file, function, line; false when it does not read as a code object */
static bool read_frame(struct reader *r, uint64_t frame, uint64_t code, struct py_frame *f)
{
	const struct py_layout *l = r->l;
	bool ok;
	int first = (int)rd_i32(r, code, l->co_firstlineno, &ok), addr;

	if (!ok || first < 0)
		return false;
	if (l->minor <= 10) {
		/* f_lasti: bytes in 3.9, code units in 3.10, whose line table counts bytes */
		addr = (int)rd_i32(r, frame, l->fr_instr, &ok);
		if (!ok)
			return false;
		if (l->minor == 10 && addr >= 0)
			addr *= 2;
	} else {
		uint64_t instr = rd_ptr(r, frame, l->fr_instr);
		int64_t d = (int64_t)(instr - (code + l->co_code)) / 2;

		addr = d < -1 || d > (1 << 24) ? -1 : (int)d;
	}
	rd_str(r, rd_ptr(r, code, l->co_filename), f->file, sizeof(f->file));
	rd_str(r, rd_ptr(r, code, l->co_qualname >= 0 ? l->co_qualname : l->co_name), f->func,
	       sizeof(f->func));
	f->line = code_line(r, code, first, addr);
	return true;
}

static void walk_frames(struct reader *r, uint64_t frame, struct py_thread *t)
{
	const struct py_layout *l = r->l;

	for (int k = 0; frame && k < MAX_FRAMES_WALKED; k++) {
		uint64_t code = rd_ptr(r, frame, l->fr_code);
		uint8_t owner = 0, entry = l->minor <= 10;
		struct py_frame f = {0};

		if (l->fr_owner >= 0 && !rd(r, frame + l->fr_owner, &owner, 1))
			break;
		if (l->minor >= 12 && owner == PY_OWNED_BY_CSTACK) {
			/* the shim a C call into the eval loop pushes: the frame inside it is that
			 * run's outermost */
			if (t->nframes)
				t->frames[t->nframes - 1].entry = true;
			frame = rd_ptr(r, frame, l->fr_previous);
			continue;
		}
		if (l->fr_is_entry >= 0 && !rd(r, frame + l->fr_is_entry, &entry, 1))
			break;
		if (!code || !read_frame(r, frame, code, &f))
			break;
		f.entry = entry;
		if (t->nframes == PY_MAX_FRAMES) {
			t->truncated = true;
			break;
		}
		t->frames[t->nframes++] = f;
		frame = rd_ptr(r, frame, l->fr_previous);
	}
	if (t->nframes)
		t->frames[t->nframes - 1].entry = true;
}

static void walk_threads(struct reader *r, uint64_t runtime, struct py_stacks *out)
{
	const struct py_layout *l = r->l;
	uint64_t interp = rd_ptr(r, runtime, l->rt_interp_head);
	uint64_t ts = rd_ptr(r, interp, l->in_threads_head);
	uint64_t main_pt = rd_ptr(r, runtime, l->rt_main_thread);

	for (int k = 0; ts && k < MAX_THREADS_WALKED && out->nthreads < PY_MAX_THREADS; k++) {
		struct py_thread *t = &out->threads[out->nthreads];
		uint64_t frame;

		memset(t, 0, sizeof(*t));
		t->tid = (int)rd_ptr(r, ts, l->ts_native_tid);
		if (l->ts_native_tid < 0)
			t->main = main_pt && rd_ptr(r, ts, l->ts_thread_id) == main_pt;
		else
			t->main = t->tid == r->pid;
		if (t->main)
			t->tid = r->pid;
		frame = l->ts_cframe >= 0 ? rd_ptr(r, rd_ptr(r, ts, l->ts_cframe), l->cf_current)
					  : rd_ptr(r, ts, l->ts_frame);
		walk_frames(r, frame, t);
		if (t->main && out->nthreads) {
			struct py_thread tmp = *t;

			*t = out->threads[0];
			out->threads[0] = tmp;
		}
		out->nthreads++;
		ts = rd_ptr(r, ts, l->ts_next);
	}
}

/* "3.11" from "libpython3.11.so.1.0", "python3.11", "libpython3.7m.so"; -1 if none */
static int minor_of_name(const char *base)
{
	const char *p = strstr(base, "python3.");

	if (!p || !isdigit((unsigned char)p[8]))
		return -1;
	return atoi(p + 8);
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Where the file offset off of path is mapped in the maps text; 0 if nowhere */
static uint64_t mapped_at(const char *maps, const char *path, uint64_t off, uint64_t *first)
{
	uint64_t found = 0, found_o = 0;

	*first = 0;
	for (const char *line = maps; *line;) {
		const char *nl = strchr(line, '\n'), *p = strchr(line, '/');
		size_t llen = nl ? (size_t)(nl - line) : strlen(line);
		unsigned long long a, b, o;

		if (p && p < line + llen && (size_t)(line + llen - p) == strlen(path) &&
		    !strncmp(p, path, strlen(path)) &&
		    sscanf(line, "%llx-%llx %*s %llx", &a, &b, &o) == 3) {
			if (!*first)
				*first = a;
			/* the last page of one segment is mapped again as the first of the next:
			 * the mapping that starts nearest to off is its own */
			if (off >= o && off < o + (b - a) && (!found || o > found_o)) {
				found = a + (off - o);
				found_o = o;
			}
		}
		line += llen + (nl ? 1 : 0);
	}
	return found;
}

/*
 * The version and layout of the interpreter whose _PyRuntime is at p->runtime: 3.13+ from the
 * debug offsets there, else Py_Version (3.11+) or the file's name. 0, or p->error set.
 */
static int pick_layout(struct reader *r, struct pyproc *p, uint64_t py_version)
{
	uint8_t dbg[PY_DEBUG_OFFSETS_LEN];
	const struct py_layout *t;
	int minor = -1, rc;

	if (rd(r, p->runtime, dbg, sizeof(dbg))) {
		rc = pylayout_from_debug(dbg, sizeof(dbg), &p->lay, &minor);
		if (rc == 0) {
			snprintf(p->version, sizeof(p->version), "3.%d", minor);
			return 0;
		}
		if (rc == -ENOTSUP) {
			snprintf(p->error, sizeof(p->error), "CPython 3.%d: Python stack unknown",
				 minor);
			return -ENOTSUP;
		}
	}
	if (py_version >> 24 == 3)
		minor = (int)((py_version >> 16) & 0xff);
	if (minor < 0)
		minor = minor_of_name(base_of(p->path));
	t = minor >= 0 ? pylayout_table(minor) : NULL;
	if (!t) {
		if (minor >= 0)
			snprintf(p->error, sizeof(p->error), "CPython 3.%d: Python stack unknown",
				 minor);
		else
			snprintf(p->error, sizeof(p->error),
				 "CPython of unknown version (%.64s): Python stack unknown",
				 base_of(p->path));
		return -ENOTSUP;
	}
	p->lay = *t;
	p->lay.hexversion = py_version;
	snprintf(p->version, sizeof(p->version), "3.%d", minor);
	return 0;
}

/*
 * Where vaddr of lib is in the process: from the mapping of its segment's start (the runtime
 * state of 3.9 is in .bss, after the segment's file part); 0 if not mapped
 */
static uint64_t where(const struct elf_lib *lib, const char *maps, const char *path, uint64_t vaddr)
{
	uint64_t seg_vaddr, seg_off, first, at;

	if (elflib_segment_of(lib, vaddr, &seg_vaddr, &seg_off))
		return 0;
	at = mapped_at(maps, path, seg_off, &first);
	return at ? at + (vaddr - seg_vaddr) : 0;
}

/* _PyRuntime in path's symbols, where the maps place it: 0, -ENOENT, or p->error set */
static int find_runtime(struct reader *r, struct pyproc *p, const char *maps)
{
	struct elf_lib *lib;
	struct elf_sym rt, ver;
	uint64_t py_version = 0, ver_at;
	char err[160];
	int rc = elflib_open(p->path, &lib, err, sizeof(err));

	if (rc)
		return -ENOENT;
	if (elflib_find_object(lib, "_PyRuntime", &rt)) {
		elflib_close(lib);
		return -ENOENT;
	}
	p->runtime = where(lib, maps, p->path, rt.vaddr);
	/* Py_Version (3.11+): the PY_VERSION_HEX the library was built as */
	if (!elflib_find_object(lib, "Py_Version", &ver) &&
	    (ver_at = where(lib, maps, p->path, ver.vaddr)))
		rd(r, ver_at, &py_version, sizeof(py_version));
	elflib_close(lib);
	if (!p->runtime) {
		snprintf(p->error, sizeof(p->error),
			 "%.64s: _PyRuntime is not mapped where expected", base_of(p->path));
		return -EINVAL;
	}
	r->err = 0;
	return pick_layout(r, p, py_version);
}

/* The interpreter of pid: the mapped file named libpython* or python* that has _PyRuntime */
static int find_interp(struct reader *r, struct pyproc *p, const char *maps)
{
	char seen[4][256] = {{0}};
	int nseen = 0, named = -1;

	/* libpython first: a python binary linked against it has no _PyRuntime of its own */
	for (int pass = 0; pass < 2; pass++) {
		for (const char *line = maps; *line;) {
			const char *nl = strchr(line, '\n'), *path = strchr(line, '/');
			size_t llen = nl ? (size_t)(nl - line) : strlen(line);
			char file[256];
			const char *b;
			bool dup = false;
			int rc;

			line += llen + (nl ? 1 : 0);
			if (!path || path > line || (size_t)(line - path) >= sizeof(file))
				continue;
			snprintf(file, sizeof(file), "%.*s", (int)(line - path - (nl ? 1 : 0)),
				 path);
			b = base_of(file);
			if (pass == 0 ? strncmp(b, "libpython", 9) : strncmp(b, "python", 6))
				continue;
			for (int i = 0; i < nseen; i++)
				dup = dup || !strcmp(seen[i], file);
			if (dup || nseen == 4)
				continue;
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", file);
			snprintf(p->path, sizeof(p->path), "%s", file);
			rc = find_runtime(r, p, maps);
			if (rc != -ENOENT)
				return rc;
			if (named < 0)
				named = minor_of_name(b);
		}
	}
	p->path[0] = '\0';
	/* a CPython without _PyRuntime (3.6 and older): its name says which */
	if (named >= 0) {
		snprintf(p->error, sizeof(p->error), "CPython 3.%d: Python stack unknown", named);
		return -ENOTSUP;
	}
	return -ENOENT;
}

static struct pyproc *pyproc_get(struct pystacks *ps, int pid)
{
	for (int i = 0; i < ps->n; i++)
		if (ps->p[i].pid == pid)
			return &ps->p[i];
	if (grow(&ps->p, &ps->cap, ps->n, sizeof(*ps->p), 8))
		return NULL;
	memset(&ps->p[ps->n], 0, sizeof(ps->p[0]));
	ps->p[ps->n].pid = pid;
	ps->p[ps->n].rc = 1; /* not looked for yet */
	return &ps->p[ps->n++];
}

/* p up to date with pid's maps: looked for again when its interpreter's file moved or left */
static int pyproc_ready(struct pystacks *ps, struct reader *r, struct pyproc *p)
{
	uint64_t first = 0;
	int rc = procfs_read_maps(p->pid, ps->maps, MAPS_LEN);

	if (rc) {
		snprintf(p->error, sizeof(p->error), "cannot read /proc/%d/maps: %s", p->pid,
			 strerror(-rc));
		return rc;
	}
	if (p->rc <= 0 && p->path[0] && mapped_at(ps->maps, p->path, 0, &first) == p->map_start)
		return p->rc;
	p->error[0] = p->version[0] = '\0';
	p->rc = find_interp(r, p, ps->maps);
	p->map_start = p->path[0] ? mapped_at(ps->maps, p->path, 0, &first) : 0;
	if (p->rc == -ENOENT)
		p->path[0] = '\0';
	return p->rc;
}

int pystacks__take(struct pystacks *ps, int pid, struct py_stacks *out)
{
	struct pyproc *p = pyproc_get(ps, pid);
	struct reader r = {.pid = pid};
	uint64_t t0 = clock_mono_ns();
	int rc;

	memset(out, 0, offsetof(struct py_stacks, threads));
	out->pid = pid;
	out->taken_ns = t0;
	if (!p)
		return -ENOMEM;
	rc = pyproc_ready(ps, &r, p);
	snprintf(out->version, sizeof(out->version), "%s", p->version);
	/* /proc/PID/maps and process_vm_readv both need ptrace's permission */
	if (rc == -EPERM || rc == -EACCES || r.err == -EPERM) {
		char why[128];

		stacks_eperm_why(pid, pid, why, sizeof(why));
		snprintf(out->error, sizeof(out->error), "cannot read the memory of pid %d: %.120s",
			 pid, why);
		p->rc = 1; /* looked for again next time */
		return -EPERM;
	}
	if (rc) {
		snprintf(out->error, sizeof(out->error), "%s", rc == -ENOENT ? "" : p->error);
		return rc < 0 ? rc : -EINVAL;
	}
	r.l = &p->lay;
	walk_threads(&r, p->runtime, out);
	out->read_ns = clock_mono_ns() - t0;
	if (!out->nthreads && r.err) {
		snprintf(out->error, sizeof(out->error), "CPython %s: cannot read its threads: %s",
			 p->version, strerror(-r.err));
		return r.err;
	}
	return 0;
}

const struct py_thread *py_stacks_thread(const struct py_stacks *s, int tid)
{
	for (int i = 0; s && i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}
