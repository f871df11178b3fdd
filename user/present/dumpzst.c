// SPDX-License-Identifier: MIT
/* Compressed dumps: zstd frames of about a second's records (dumpzst.h) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include "present/dumpzst.h"

bool dumpzst_name(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && !strcmp(path + n - 4, ".zst");
}

/* ---- writing ---- */

struct zst_out {
	ZSTD_CCtx *cctx;
	char *buf, *frame;
	size_t len, cap, fcap;
	size_t sealed; /* the bytes of the frame compressed and not yet written */
};

void zst_out_free(struct zst_out *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->cctx);
	free(z->buf);
	free(z->frame);
	free(z);
}

struct zst_out *zst_out_new(void)
{
	struct zst_out *z = calloc(1, sizeof(*z));

	if (z && !(z->cctx = ZSTD_createCCtx())) {
		free(z);
		return NULL;
	}
	/* a frame's checksum: a corrupt one is an error, not records of garbage */
	if (z && (ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel,
						      DUMPZST_LEVEL)) ||
		  ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1)))) {
		zst_out_free(z);
		return NULL;
	}
	return z;
}

int zst_out_add(struct zst_out *z, const char *text, size_t len)
{
	if (z->len + len > z->cap) {
		size_t cap = z->cap ? z->cap : 64 * 1024;
		char *b;

		while (cap < z->len + len)
			cap *= 2;
		b = realloc(z->buf, cap);
		if (!b)
			return -ENOMEM;
		z->buf = b;
		z->cap = cap;
	}
	memcpy(z->buf + z->len, text, len);
	z->len += len;
	return z->len >= DUMPZST_MAX_BYTES;
}

size_t zst_out_bound(const struct zst_out *z, size_t len)
{
	return ZSTD_compressBound(z->len + len);
}

size_t zst_out_pending(const struct zst_out *z)
{
	return z->len;
}

ssize_t zst_out_seal(struct zst_out *z)
{
	size_t bound, n;

	z->sealed = 0;
	if (!z->len)
		return 0;
	bound = ZSTD_compressBound(z->len);
	if (bound > z->fcap) {
		char *f = realloc(z->frame, bound);

		if (!f)
			return -ENOMEM;
		z->frame = f;
		z->fcap = bound;
	}
	n = ZSTD_compress2(z->cctx, z->frame, z->fcap, z->buf, z->len);
	/* the records are gone either way: a frame half written is what a reader cuts at */
	z->len = 0;
	if (ZSTD_isError(n))
		return -EIO;
	z->sealed = n;
	return (ssize_t)n;
}

void zst_out_drop(struct zst_out *z)
{
	z->sealed = 0;
}

int zst_out_write(struct zst_out *z, int fd, uint64_t *written)
{
	size_t off = 0, n = z->sealed;

	z->sealed = 0;
	while (off < n) {
		ssize_t w = write(fd, z->frame + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		off += (size_t)w;
		if (written)
			*written += (uint64_t)w;
	}
	return 0;
}

int zst_out_flush(struct zst_out *z, int fd, uint64_t *written)
{
	ssize_t n = zst_out_seal(z);

	return n < 0 ? (int)n : zst_out_write(z, fd, written);
}

/* ---- reading ---- */

struct zst_in {
	FILE *raw;
	ZSTD_DStream *ds; /* NULL: a plain dump read through (from a pipe: its first bytes kept) */
	ZSTD_inBuffer in;
	char *inbuf;
	size_t incap, last; /* last: ZSTD_decompressStream's hint; 0 at a frame's end */
	struct zst_in_status *st;
};

/* a plain dump that could not be read again from its start (a pipe): its first bytes, then it */
static ssize_t plain_read(struct zst_in *z, char *buf, size_t size)
{
	size_t n;

	if (z->in.pos < z->in.size) {
		n = z->in.size - z->in.pos < size ? z->in.size - z->in.pos : size;
		memcpy(buf, (const char *)z->in.src + z->in.pos, n);
		z->in.pos += n;
		return (ssize_t)n;
	}
	n = fread(buf, 1, size, z->raw);
	if (!n && ferror(z->raw))
		return -1;
	return (ssize_t)n;
}

static ssize_t zst_read(void *cookie, char *buf, size_t size)
{
	struct zst_in *z = cookie;

	if (!z->ds)
		return plain_read(z, buf, size);
	for (;;) {
		ZSTD_outBuffer out = {buf, size, 0};
		size_t r;

		if (z->in.pos == z->in.size) {
			size_t n = fread(z->inbuf, 1, z->incap, z->raw);

			if (!n) {
				/* the file ends inside a frame */
				if (z->last)
					z->st->cut = true;
				return ferror(z->raw) ? -1 : 0;
			}
			z->in = (ZSTD_inBuffer){z->inbuf, n, 0};
		}
		r = ZSTD_decompressStream(z->ds, &out, &z->in);
		if (ZSTD_isError(r)) {
			snprintf(z->st->error, sizeof(z->st->error), "%s", ZSTD_getErrorName(r));
			errno = EIO;
			return -1;
		}
		z->last = r;
		if (out.pos)
			return (ssize_t)out.pos;
	}
}

static int zst_close(void *cookie)
{
	struct zst_in *z = cookie;

	fclose(z->raw);
	ZSTD_freeDStream(z->ds);
	free(z->inbuf);
	free(z);
	return 0;
}

FILE *dumpzst_open(const char *path, struct zst_in_status *st)
{
	static const unsigned char magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
	FILE *raw = fopen(path, "re"), *f;
	struct zst_in *z;
	size_t nhead;

	memset(st, 0, sizeof(*st));
	if (!raw)
		return NULL;
	z = calloc(1, sizeof(*z));
	if (!z || !(z->inbuf = malloc(z->incap = ZSTD_DStreamInSize())))
		goto oom;
	/* the first bytes say which; they stay the reader's first (a pipe is read once) */
	nhead = fread(z->inbuf, 1, sizeof(magic), raw);
	z->in = (ZSTD_inBuffer){z->inbuf, nhead, 0};
	st->compressed = nhead == sizeof(magic) && !memcmp(z->inbuf, magic, sizeof(magic));
	if (!st->compressed && !fseek(raw, 0, SEEK_SET)) {
		/* a plain file, read again from its start: stdio's own reads */
		free(z->inbuf);
		free(z);
		return raw;
	}
	if (st->compressed) {
		if (!(z->ds = ZSTD_createDStream()))
			goto oom;
		ZSTD_initDStream(z->ds);
	}
	z->raw = raw;
	z->st = st;
	f = fopencookie(z, "r", (cookie_io_functions_t){.read = zst_read, .close = zst_close});
	if (f)
		return f;
oom:
	if (z) {
		ZSTD_freeDStream(z->ds);
		free(z->inbuf);
	}
	free(z);
	fclose(raw);
	errno = ENOMEM;
	return NULL;
}
