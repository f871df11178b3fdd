// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "nccl/ncclcommscan.h"
#include "trace/procfs.h"
#include "util/clock.h"
#include "util/grow.h"

#define CHUNK_BYTES (4U << 20)
#define MAPS_BYTES  (1U << 20)
#define PAGE	    4096
/* a page's first 24 bytes: words 0 and 2, where a page-aligned or an mmapped block starts */
#define PROBE_BYTES 24
#define PROBE_IOV   1024 /* IOV_MAX */

const char *comm_cand_reject(const struct comm_cand *c)
{
	if (c->start_magic != NCCL_COMM_MAGIC)
		return "no startMagic";
	if (c->end_magic != NCCL_COMM_MAGIC)
		return "endMagic differs";
	/* ncclCommInitRankDev refuses the others; NCCL's ranks are ints, jobs far smaller */
	if (c->nranks < 1 || c->nranks > 65536)
		return "nRanks out of range";
	if (c->rank < 0 || c->rank >= c->nranks)
		return "rank out of range";
	/* getHash of the unique id (or of the parent's, for a split): never 0 once set */
	if (!c->hash)
		return "commHash not set";
	return NULL;
}

bool comm_scan_map_wanted(const char *line, uint64_t *lo, uint64_t *hi)
{
	char one[512], perms[8], path[64] = "";
	unsigned long long a, b, ino;
	size_t len = strcspn(line, "\n");

	/* this line alone: a blank path must not read the next line's first field */
	if (len >= sizeof(one))
		len = sizeof(one) - 1;
	memcpy(one, line, len);
	one[len] = '\0';
	if (sscanf(one, "%llx-%llx %7s %*s %*s %llu %63s", &a, &b, perms, &ino, path) < 4)
		return false;
	/* malloc's memory: private and writable; file-backed and device (GPU, pinned) left out */
	if (strcmp(perms, "rw-p") || ino)
		return false;
	if (path[0] && strcmp(path, "[heap]") && strncmp(path, "[anon:", 6))
		return false;
	*lo = a;
	*hi = b;
	return b > a;
}

/* The fields of a candidate at addr, in one read; false if any could not be read */
static bool read_cand(int pid, uint64_t addr, const struct nt_nccl_offsets *o, struct comm_cand *c)
{
	struct iovec local[4] = {{&c->end_magic, 8}, {&c->hash, 8}, {&c->rank, 4}, {&c->nranks, 4}};
	struct iovec remote[4] = {
		{(void *)(uintptr_t)(addr + (uint64_t)o->comm_endmagic), 8},
		{(void *)(uintptr_t)(addr + (uint64_t)o->comm_hash), 8},
		{(void *)(uintptr_t)(addr + (uint64_t)o->comm_rank), 4},
		{(void *)(uintptr_t)(addr + (uint64_t)o->comm_nranks), 4},
	};

	c->start_magic = NCCL_COMM_MAGIC;
	return process_vm_readv(pid, local, 4, remote, 4, 0) == 24;
}

/* A candidate at addr, checked; kept in out if it is a live communicator */
static void candidate(int pid, uint64_t addr, const struct nt_nccl_offsets *o,
		      struct comm_found *out, int max, int *n, struct comm_scan_stats *st)
{
	struct comm_cand c;

	st->candidates++;
	for (int i = 0; i < *n; i++)
		if (out[i].addr == addr)
			return;
	if (*n < max && read_cand(pid, addr, o, &c) && !comm_cand_reject(&c))
		out[(*n)++] = (struct comm_found){addr, c.hash, c.rank, c.nranks};
}

/*
 * The whole of lo..hi, every 8-byte word (malloc's blocks are 16-byte aligned; 8 for other
 * allocators), in chunks; returns where it stopped (hi, or earlier at a cap).
 */
static uint64_t search_map(int pid, uint64_t lo, uint64_t hi, const struct nt_nccl_offsets *o,
			   uint64_t *buf, struct comm_found *out, int max, int *n,
			   struct comm_scan_stats *st, uint64_t t0)
{
	uint64_t at = lo;

	while (at < hi) {
		size_t len = hi - at < CHUNK_BYTES ? hi - at : CHUNK_BYTES;
		struct iovec l = {buf, len}, r = {(void *)(uintptr_t)at, len};
		ssize_t got;

		if (st->bytes >= COMM_SCAN_BYTES_MAX || clock_mono_ns() - t0 >= COMM_SCAN_FULL_NS)
			return at;
		got = process_vm_readv(pid, &l, 1, &r, 1, 0);
		/* a page unmapped since the maps were read (a free): on from the next one */
		if (got <= 0) {
			at = (at + PAGE) & ~(uint64_t)(PAGE - 1);
			continue;
		}
		st->bytes += (uint64_t)got;
		for (size_t i = 0; i < (size_t)got / 8; i++)
			if (buf[i] == NCCL_COMM_MAGIC)
				candidate(pid, at + i * 8, o, out, max, n, st);
		at += (uint64_t)got;
	}
	return hi;
}

/*
 * What the full search left of lo..hi: only where glibc puts a block it mmaps (a large
 * malloc, as NCCL's ncclCalloc of its comm: the page's start plus the chunk's 16-byte header)
 * and page-aligned ones, a read of PROBE_BYTES per page. Such blocks merge with their
 * neighbours into one mapping of any size. False once the time is up.
 */
static bool probe_map(int pid, uint64_t lo, uint64_t hi, const struct nt_nccl_offsets *o,
		      uint64_t *buf, struct comm_found *out, int max, int *n,
		      struct comm_scan_stats *st, uint64_t t0)
{
	struct iovec l = {buf, 0}, r[PROBE_IOV];

	lo = (lo + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	while (lo < hi) {
		int k = 0;
		ssize_t got;

		if (clock_mono_ns() - t0 >= COMM_SCAN_NS_MAX)
			return false;
		for (; k < PROBE_IOV && lo + (uint64_t)k * PAGE < hi; k++)
			r[k] = (struct iovec){(void *)(uintptr_t)(lo + (uint64_t)k * PAGE),
					      PROBE_BYTES};
		l.iov_len = (size_t)k * PROBE_BYTES;
		got = process_vm_readv(pid, &l, 1, r, (unsigned long)k, 0);
		/* it stops at the first page it cannot read: the next batch starts after it */
		for (int i = 0; i < k && (i + 1) * PROBE_BYTES <= got; i++)
			for (int w = 0; w < PROBE_BYTES / 8; w += 2)
				if (buf[i * PROBE_BYTES / 8 + w] == NCCL_COMM_MAGIC)
					candidate(pid, lo + (uint64_t)i * PAGE + (uint64_t)w * 8, o,
						  out, max, n, st);
		st->probed_bytes += (uint64_t)k * PAGE;
		lo += (uint64_t)(got > 0 ? got / PROBE_BYTES + (got < (ssize_t)l.iov_len) : 1) *
		      PAGE;
	}
	return true;
}

struct span {
	uint64_t lo, hi;
};

static int by_size(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	uint64_t sx = x->hi - x->lo, sy = y->hi - y->lo;

	return sx < sy ? -1 : sx > sy;
}

/* The mappings the scan searches, smallest first: 0 or -errno */
static int wanted_maps(int pid, struct span **v, int *n)
{
	char *maps = malloc(MAPS_BYTES);
	int cap = 0, rc;

	*v = NULL;
	*n = 0;
	if (!maps)
		return -ENOMEM;
	rc = procfs_read_maps(pid, maps, MAPS_BYTES);
	for (char *line = maps; !rc && line && *line; line = strchr(line, '\n')) {
		struct span m;

		line += *line == '\n';
		if (!comm_scan_map_wanted(line, &m.lo, &m.hi))
			continue;
		if (grow(v, &cap, *n, sizeof(**v), 64)) {
			rc = -ENOMEM;
			break;
		}
		(*v)[(*n)++] = m;
	}
	free(maps);
	if (*n)
		qsort(*v, *n, sizeof(**v), by_size);
	return rc;
}

int comm_scan(int pid, const struct nt_nccl_offsets *o, struct comm_found *out, int max,
	      struct comm_scan_stats *st)
{
	uint64_t t0 = clock_mono_ns(), *buf;
	struct span *m = NULL;
	int n = 0, nm = 0, rc;
	bool go = true;

	memset(st, 0, sizeof(*st));
	if (!o || o->comm_endmagic <= 0 || o->comm_hash < 0 || o->comm_rank < 0 ||
	    o->comm_nranks < 0)
		return -ENOTSUP;
	buf = malloc(CHUNK_BYTES);
	rc = buf ? wanted_maps(pid, &m, &nm) : -ENOMEM;
	/* the small mappings first (arenas, mmapped blocks), whole, within the caps */
	for (int i = 0; !rc && i < nm; i++) {
		m[i].lo = search_map(pid, m[i].lo, m[i].hi, o, buf, out, max, &n, st, t0);
		st->maps += m[i].lo == m[i].hi;
	}
	/* then what is left, at the page starts only */
	for (int i = 0; !rc && i < nm; i++) {
		if (m[i].lo == m[i].hi)
			continue;
		st->capped = true;
		if (go)
			go = probe_map(pid, m[i].lo, m[i].hi, o, buf, out, max, &n, st, t0);
		st->probed += go;
		st->skipped += !go;
		st->skipped_bytes += go ? 0 : m[i].hi - m[i].lo;
	}
	free(m);
	free(buf);
	st->ns = clock_mono_ns() - t0;
	return rc ? rc : n;
}
