// SPDX-License-Identifier: MIT
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "trace/mmapwatch.h"
#include "util/exits.h"

struct cpu_ring {
	int fd;
	struct perf_event_mmap_page *page; /* then the data pages */
	size_t size;			   /* of the data, a power of 2 */
};

struct mmapwatch {
	struct cpu_ring *r;
	int n;
	uint64_t lost;
	size_t page;
	/* a record that wraps around the end of its buffer, made whole (a size is 16 bits) */
	union {
		struct perf_event_header h;
		char b[65536];
	} copy;
};

/* PERF_RECORD_MMAP2 without sample_id_all: the fields before the file name */
struct mmap2_rec {
	struct perf_event_header h;
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint8_t dev_or_build_id[24];
	uint32_t prot, flags;
	char filename[];
};

struct lost_rec {
	struct perf_event_header h;
	uint64_t id, lost;
};

int mmapwatch_open(struct mmapwatch **out, char *err, size_t errlen)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_DUMMY,
		.mmap = 1,
		.mmap2 = 1,
		.watermark = 1,
		.wakeup_watermark = 1,
	};
	struct mmapwatch *w = calloc(1, sizeof(*w));
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	if (!w || ncpu < 1 || !(w->r = calloc((size_t)ncpu, sizeof(*w->r)))) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return EXIT_OSERR;
	}
	w->page = (size_t)sysconf(_SC_PAGESIZE);
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct cpu_ring *r = &w->r[w->n];
		size_t len = w->page * (1 + MMAPWATCH_PAGES);
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		void *m;

		if (fd < 0 && errno == ENODEV) /* a CPU that is not online */
			continue;
		if (fd < 0) {
			snprintf(err, errlen,
				 "cannot watch this machine's new mappings (perf_event_open on CPU "
				 "%d: "
				 "%s; it needs root or CAP_PERFMON)",
				 cpu, strerror(errno));
			mmapwatch_close(w);
			return errno == EACCES || errno == EPERM ? EXIT_NOPERM : EXIT_UNAVAILABLE;
		}
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			snprintf(err, errlen, "cannot map the perf buffer of CPU %d: %s", cpu,
				 strerror(errno));
			close(fd);
			mmapwatch_close(w);
			return EXIT_OSERR;
		}
		*r = (struct cpu_ring){.fd = fd, .page = m, .size = w->page * MMAPWATCH_PAGES};
		w->n++;
	}
	*out = w;
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

int mmapwatch_poll(struct mmapwatch *w, const char *prefix,
		   void (*fn)(void *ctx, int pid, const char *path), void *ctx)
{
	size_t plen = strlen(prefix);
	int n = 0;

	for (int i = 0; i < w->n; i++) {
		struct cpu_ring *r = &w->r[i];
		const char *data = (const char *)r->page + w->page;
		uint64_t head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = r->page->data_tail;

		while (tail < head) {
			size_t sz_read;
			const struct perf_event_header *h =
				(const void *)(data + (tail & (r->size - 1)));
			size_t off = tail & (r->size - 1);

			/* records are 8-byte aligned: a header never wraps, a record may */
			if (off + h->size > r->size) {
				size_t first = r->size - off;

				memcpy(w->copy.b, data + off, first);
				memcpy(w->copy.b + first, data, h->size - first);
				h = &w->copy.h;
			}
			if (!h->size)
				break;
			sz_read = h->size;
			if (h->type == PERF_RECORD_MMAP2 && h->size > sizeof(struct mmap2_rec)) {
				const struct mmap2_rec *m = (const void *)h;
				char path[4096];
				size_t fl = h->size - sizeof(*m);

				fl = fl < sizeof(path) - 1 ? fl : sizeof(path) - 1;
				memcpy(path, m->filename, fl);
				path[fl] = '\0';
				if (!strncmp(base_name(path), prefix, plen))
					fn(ctx, (int)m->pid, path);
			} else if (h->type == PERF_RECORD_LOST) {
				w->lost += ((const struct lost_rec *)h)->lost;
			}
			tail += sz_read;
			n++;
		}
		__atomic_store_n(&r->page->data_tail, tail, __ATOMIC_RELEASE);
	}
	return n;
}

uint64_t mmapwatch_take_lost(struct mmapwatch *w)
{
	uint64_t l = w->lost;

	w->lost = 0;
	return l;
}

void mmapwatch_close(struct mmapwatch *w)
{
	if (!w)
		return;
	for (int i = 0; i < w->n; i++) {
		munmap(w->r[i].page, w->page * (1 + MMAPWATCH_PAGES));
		close(w->r[i].fd);
	}
	free(w->r);
	free(w);
}
